/**
 * OpenAI-compatible embeddings (`POST {base}/embeddings`): OpenAI itself and every server that
 * speaks the same wire (Ollama, vLLM, llama.cpp, LM Studio, …). Same base-URL rule, HTTP edge and
 * error translation as the chat driver (providers/openai-chat.ts, provider-http.ts), so failures
 * are ProviderErrors with the provider's own words.
 */
import { ProviderError, type ProviderConnection } from '../providers/driver.ts';
import { openAIBaseUrl } from '../providers/openai-chat.ts';
import { postToProvider, timeoutOf } from '../providers/provider-http.ts';
import { scrubbedError } from '../providers/scrubbing-driver.ts';
import type { Embedder } from './embedder.ts';
import { normalise } from './vectors.ts';

export interface OpenAIEmbeddingsOptions {
  provider: 'openai' | 'openai_compatible';
  model: string;
  dimensions: number;
  connection: ProviderConnection;
}

const OPENAI_BASE = 'https://api.openai.com/v1';
/** ≈ 2,000 tokens: under every common embedding model's context (OpenAI 8,191; nomic 2,048 with margin). */
const MAX_INPUT_CHARS = 6_000;

export class OpenAIEmbedder implements Embedder {
  readonly model: string;
  readonly dimensions: number;
  readonly supportsImages = false;
  readonly maxInputChars = MAX_INPUT_CHARS;

  constructor(private readonly opts: OpenAIEmbeddingsOptions) {
    this.model = opts.model;
    this.dimensions = opts.dimensions;
  }

  async embed(texts: string[], signal?: AbortSignal): Promise<Float32Array[]> {
    if (!texts.length) return [];
    const vectors = await requestEmbeddings(this.opts, texts, signal);
    for (const v of vectors) {
      if (v.length !== this.dimensions) {
        throw new ProviderError(
          'provider_error',
          `${label(this.opts)} answered ${v.length} dimensions for model ${this.model}, expected ${this.dimensions}: the model changed; set the project's embeddings again`,
        );
      }
    }
    return vectors;
  }
}

const label = (o: Pick<OpenAIEmbeddingsOptions, 'provider' | 'connection'>) =>
  o.connection.endpoint_url
    ? `${o.provider === 'openai' ? 'OpenAI' : 'OpenAI-compatible server'} at ${openAIBaseUrl(o.connection.endpoint_url)}`
    : 'OpenAI';

/** One call; answers the vectors in input order, normalised (not every server normalises). */
export async function requestEmbeddings(
  o: Pick<OpenAIEmbeddingsOptions, 'provider' | 'connection' | 'model'>,
  texts: string[],
  signal?: AbortSignal,
): Promise<Float32Array[]> {
  const given = o.connection.endpoint_url?.trim();
  if (!given && o.provider === 'openai_compatible') {
    throw new ProviderError(
      'provider_bad_request',
      "OpenAI-compatible server needs an endpoint URL (the server's base URL, e.g. http://localhost:11434/v1); the environment has none",
    );
  }
  const base = given ? openAIBaseUrl(given) : OPENAI_BASE;
  const name = label(o);
  const headers: Record<string, string> = {};
  if (o.connection.api_key) headers.authorization = `Bearer ${o.connection.api_key}`;
  else if (o.provider === 'openai')
    throw new ProviderError('provider_auth', `${name} needs an API key; the environment has none`);
  const res = await postToProvider({
    label: name,
    url: `${base}/embeddings`,
    headers,
    signal,
    timeoutMs: Math.min(timeoutOf(o.connection), 120_000),
    body: { model: o.model, input: texts, encoding_format: 'float' },
    outbound: o.connection.outbound,
  }).catch((err: unknown) => {
    // Not a driver call, so scrubbed here as the registry's drivers are.
    throw scrubbedError(err, o.connection);
  });
  const answer = (await res.json()) as { data?: Array<{ index?: number; embedding?: unknown }> };
  if (!Array.isArray(answer?.data) || answer.data.length !== texts.length) {
    throw new ProviderError(
      'provider_error',
      `${name} answered ${Array.isArray(answer?.data) ? answer.data.length : 'no'} embeddings for ${texts.length} inputs`,
      res.status,
    );
  }
  const out = new Array<Float32Array>(texts.length);
  answer.data.forEach((d, i) => {
    const at = typeof d.index === 'number' ? d.index : i;
    if (
      !Array.isArray(d.embedding) ||
      !d.embedding.every((x) => typeof x === 'number') ||
      at < 0 ||
      at >= texts.length
    ) {
      throw new ProviderError(
        'provider_error',
        `${name} answered an embedding that is not an array of numbers (base64 encoding is not read)`,
        res.status,
      );
    }
    const v = Float32Array.from(d.embedding as number[]);
    normalise(v);
    out[at] = v;
  });
  if (out.some((v) => !v))
    throw new ProviderError(
      'provider_error',
      `${name} answered embeddings with repeated or missing indexes`,
      res.status,
    );
  return out;
}
