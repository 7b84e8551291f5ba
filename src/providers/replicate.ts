/**
 * Replicate's HTTP API (https://api.replicate.com/v1): a run is a prediction.
 *  - model `owner/name`: `POST /v1/models/{owner}/{name}/predictions` (official models, latest version);
 *    model `owner/name:version` (or a bare 64-hex version id): `POST /v1/predictions` with `version`.
 *  - Blocking: created with `Prefer: wait` (sync mode, up to 60 s); a prediction still starting or
 *    processing in that answer is polled at `GET /v1/predictions/{id}` with a short bounded backoff
 *    until succeeded, failed or canceled. An aborted run cancels its prediction (best effort).
 *  - Streaming: created with `stream: true`, then the prediction's `urls.stream` is read as SSE
 *    (`output` events carry text pieces verbatim, `error` `{detail}`, `done` `{}` or `{"reason": …}`);
 *    afterwards one `GET` of the prediction fetches its token counts.
 * Input, as Replicate's language models take it (and Vertesia's driver sends it): `prompt`, the
 * system text as `system_prompt`, `max_new_tokens` and `max_tokens` (models name it either way),
 * `temperature`, `top_p`, `top_k`, `presence_penalty`, `frequency_penalty`, `seed` and
 * `stop_sequences` (one comma-separated string). Replicate reports no finish reason.
 *
 * The key is a Replicate API token (`Authorization: Bearer r8_…`); the endpoint URL overrides the
 * API origin. `config.system_in_prompt: true` puts the system text in the prompt ("CONTEXT: …") for
 * models that have no system_prompt input.
 */
import {
  ProviderError,
  type ChatMessage,
  type Completion,
  type CompletionChunk,
  type CompletionRequest,
  type ModelDriver,
  type ModelInfo,
  type ProviderConnection,
  type TokenUsage,
  messageText,
} from './driver.ts';
import { postToProvider, providerMessage, timeoutOf, trimSlashes } from './provider-http.ts';
import { schemaInstruction } from './anthropic-messages.ts';

const REPLICATE_DEFAULT_BASE_URL = 'https://api.replicate.com';

/** Polling backoff: the first wait, then doubling up to the ceiling. */
const POLL_FIRST_MS = 250;
const POLL_MAX_MS = 2_000;

/**
 * Replicate's API lists models by collection, not by kind, so the listing is this documented list
 * of popular official language models (each runs as `owner/name` at its latest version).
 */
const REPLICATE_LANGUAGE_MODELS: readonly ModelInfo[] = [
  { id: 'meta/meta-llama-3-70b-instruct', name: 'Meta Llama 3 70B Instruct' },
  { id: 'meta/meta-llama-3-8b-instruct', name: 'Meta Llama 3 8B Instruct' },
  { id: 'meta/meta-llama-3.1-405b-instruct', name: 'Meta Llama 3.1 405B Instruct' },
  { id: 'meta/llama-4-maverick-instruct', name: 'Meta Llama 4 Maverick Instruct' },
  { id: 'meta/llama-4-scout-instruct', name: 'Meta Llama 4 Scout Instruct' },
  { id: 'mistralai/mixtral-8x7b-instruct-v0.1', name: 'Mixtral 8x7B Instruct v0.1' },
  { id: 'mistralai/mistral-7b-instruct-v0.2', name: 'Mistral 7B Instruct v0.2' },
  { id: 'ibm-granite/granite-3.3-8b-instruct', name: 'IBM Granite 3.3 8B Instruct' },
  { id: 'deepseek-ai/deepseek-r1', name: 'DeepSeek R1' },
  { id: 'deepseek-ai/deepseek-v3', name: 'DeepSeek V3' },
  { id: 'anthropic/claude-3.7-sonnet', name: 'Claude 3.7 Sonnet (through Replicate)' },
  { id: 'openai/gpt-4o-mini', name: 'GPT-4o mini (through Replicate)' },
];

const FINISHED = new Set(['succeeded', 'failed', 'canceled', 'aborted']);

export class ReplicateDriver implements ModelDriver {
  readonly provider = 'replicate';

  async complete(conn: ProviderConnection, req: CompletionRequest, signal?: AbortSignal): Promise<Completion> {
    const api = apiOf(conn);
    let prediction = await this.create(conn, api, req, false, signal);
    if (!FINISHED.has(String(prediction.status))) {
      try {
        prediction = await this.poll(conn, api, prediction, signal);
      } catch (err) {
        if (signal?.aborted) this.cancel(conn, api, prediction);
        throw err;
      }
    }
    return finished(api.label, prediction);
  }

  async *stream(
    conn: ProviderConnection,
    req: CompletionRequest,
    signal?: AbortSignal,
  ): AsyncGenerator<CompletionChunk> {
    const api = apiOf(conn);
    const prediction = await this.create(conn, api, req, true, signal);
    const streamUrl = prediction.urls?.stream;
    if (typeof streamUrl !== 'string' || !streamUrl) {
      // A model that cannot stream: wait for it and hand back the whole answer as one piece.
      const done = finished(
        api.label,
        FINISHED.has(String(prediction.status)) ? prediction : await this.poll(conn, api, prediction, signal),
      );
      if (done.text) yield { text: done.text };
      if (done.token_use) yield { token_use: done.token_use };
      return;
    }
    let ended = false;
    try {
      const res = await postToProvider({
        label: api.label,
        url: streamUrl,
        method: 'GET',
        // The stream URL needs no token; it is sent only to the API's own origin.
        headers: {
          accept: 'text/event-stream',
          'cache-control': 'no-store',
          ...(sameOrigin(streamUrl, api.base) ? api.headers : {}),
        },
        signal,
        timeoutMs: timeoutOf(conn),
        outbound: conn.outbound,
      });
      for await (const ev of res.events()) {
        const kind = ev.event ?? 'message';
        if (kind === 'output') {
          if (ev.data !== '') yield { text: ev.data };
        } else if (kind === 'error') {
          ended = true;
          let said: string | undefined;
          try {
            said = providerMessage(JSON.parse(ev.data));
          } catch {
            said = ev.data.trim() || undefined;
          }
          throw new ProviderError(
            'provider_error',
            `${api.label}: prediction ${prediction.id} failed: ${said ?? 'unknown error'}`,
          );
        } else if (kind === 'done') {
          ended = true;
          let reason: unknown;
          try {
            reason = (JSON.parse(ev.data || '{}') as { reason?: unknown })?.reason;
          } catch {
            // `done` with data that is not JSON: nothing to read from it
          }
          if (reason === 'canceled' || reason === 'error') {
            throw new ProviderError(
              'provider_error',
              `${api.label}: prediction ${prediction.id} ${reason === 'canceled' ? 'was canceled' : 'failed'}`,
            );
          }
          break;
        }
        // other events (comments, heartbeats) carry nothing
      }
    } finally {
      if (!ended) this.cancel(conn, api, prediction);
    }
    if (!ended)
      throw new ProviderError(
        'provider_error',
        `${api.label} ended the stream of prediction ${prediction.id} before its done event`,
      );
    // The token counts are on the finished prediction: one cheap GET; a failure only loses them.
    const usage = await this.get(conn, api, prediction, signal).then(
      (p) => usageOf(p),
      (err) => {
        if (signal?.aborted) throw err;
        return undefined;
      },
    );
    if (usage) yield { token_use: usage };
  }

  async listModels(): Promise<ModelInfo[]> {
    return REPLICATE_LANGUAGE_MODELS.map((m) => ({ ...m }));
  }

  private async create(
    conn: ProviderConnection,
    api: Api,
    req: CompletionRequest,
    stream: boolean,
    signal: AbortSignal | undefined,
  ): Promise<Prediction> {
    const { url, version } = routeOf(api.base, req.model);
    const body: Record<string, unknown> = { ...(version ? { version } : {}), input: inputOf(conn, req) };
    if (stream) body.stream = true;
    const res = await postToProvider({
      label: api.label,
      url,
      // Sync mode: the answer waits (up to 60 s) for the prediction to finish.
      headers: { ...api.headers, ...(stream ? {} : { prefer: 'wait' }) },
      body,
      signal,
      timeoutMs: timeoutOf(conn),
      outbound: conn.outbound,
    });
    return readPrediction(api.label, await res.json(), res.status);
  }

  private async get(
    conn: ProviderConnection,
    api: Api,
    prediction: Prediction,
    signal: AbortSignal | undefined,
  ): Promise<Prediction> {
    const res = await postToProvider({
      label: api.label,
      url: `${api.base}/v1/predictions/${encodeURIComponent(prediction.id)}`,
      method: 'GET',
      headers: api.headers,
      signal,
      timeoutMs: timeoutOf(conn),
      outbound: conn.outbound,
    });
    return readPrediction(api.label, await res.json(), res.status);
  }

  /** GET the prediction until it has finished, waiting 250 ms, 500 ms, 1 s, then 2 s between looks; within the timeout. */
  private async poll(
    conn: ProviderConnection,
    api: Api,
    prediction: Prediction,
    signal: AbortSignal | undefined,
  ): Promise<Prediction> {
    const deadline = Date.now() + timeoutOf(conn);
    let wait = POLL_FIRST_MS;
    let current = prediction;
    while (!FINISHED.has(String(current.status))) {
      if (Date.now() + wait > deadline) {
        this.cancel(conn, api, current);
        throw new ProviderError(
          'provider_unreachable',
          `${api.label}: prediction ${current.id} did not finish within ${timeoutOf(conn)} ms (status ${String(current.status)})`,
          undefined,
          true,
        );
      }
      await sleep(wait, signal);
      wait = Math.min(wait * 2, POLL_MAX_MS);
      current = await this.get(conn, api, current, signal);
    }
    return current;
  }

  /** Best effort: a prediction nobody waits for should not keep running (and billing). */
  private cancel(conn: ProviderConnection, api: Api, prediction: Prediction): void {
    if (!prediction.id || FINISHED.has(String(prediction.status))) return;
    postToProvider({
      label: api.label,
      url: `${api.base}/v1/predictions/${encodeURIComponent(prediction.id)}/cancel`,
      headers: api.headers,
      body: {},
      timeoutMs: 10_000,
      outbound: conn.outbound,
    })
      .then(
        (res) => res.json(),
        () => undefined,
      )
      .catch(() => undefined);
  }
}

interface Api {
  base: string;
  label: string;
  headers: Record<string, string>;
}

function apiOf(conn: ProviderConnection): Api {
  const given = conn.endpoint_url?.trim();
  let base = REPLICATE_DEFAULT_BASE_URL;
  if (given) {
    try {
      new URL(given);
    } catch {
      throw new ProviderError('provider_bad_request', `the endpoint URL ${JSON.stringify(given)} is not a valid URL`);
    }
    base = trimSlashes(given).replace(/\/v1$/, '');
  }
  const label = given ? `Replicate at ${base}` : 'Replicate';
  const token = conn.api_key?.trim();
  if (!token) throw new ProviderError('provider_auth', `${label} needs an API token; the environment has none`);
  return { base, label, headers: { authorization: `Bearer ${token.replace(/^Bearer\s+/i, '')}` } };
}

/** `owner/name` → the model's predictions; `owner/name:version` or a version id → /v1/predictions with it. */
function routeOf(base: string, model: string): { url: string; version?: string } {
  const m = model.trim();
  if (/^[0-9a-f]{64}$/i.test(m)) return { url: `${base}/v1/predictions`, version: m };
  const match = /^([^/\s:]+)\/([^/\s:]+)(?::([^/\s:]+))?$/.exec(m);
  if (!match) {
    throw new ProviderError(
      'provider_bad_request',
      `Replicate models are named owner/name or owner/name:version, not ${JSON.stringify(model)}`,
    );
  }
  const [, owner, name, version] = match;
  if (version) return { url: `${base}/v1/predictions`, version };
  return { url: `${base}/v1/models/${encodeURIComponent(owner)}/${encodeURIComponent(name)}/predictions` };
}

function inputOf(conn: ProviderConnection, req: CompletionRequest): Record<string, unknown> {
  const system = req.messages.filter((m) => m.role === 'system').map(messageText);
  const turns = req.messages.filter((m) => m.role !== 'system');
  const parts: string[] = [];
  const systemInPrompt = conn.config?.system_in_prompt === true;
  if (systemInPrompt && system.length > 0) parts.push(`CONTEXT: ${system.join('\n')}`);
  if (turns.length > 0) parts.push(conversationText(turns));
  // Not every model has a system_prompt input; every one reads the prompt (Vertesia's formatter puts it there too).
  if (req.result_schema) parts.push(`IMPORTANT: ${schemaInstruction(req.result_schema)}`);
  const input: Record<string, unknown> = { prompt: parts.join('\n') };
  if (!systemInPrompt && system.length > 0) input.system_prompt = system.join('\n\n');
  if (req.max_tokens !== undefined) {
    input.max_new_tokens = req.max_tokens;
    input.max_tokens = req.max_tokens;
  }
  if (req.temperature !== undefined) input.temperature = req.temperature;
  if (req.top_p !== undefined) input.top_p = req.top_p;
  if (req.top_k !== undefined) input.top_k = req.top_k;
  if (req.presence_penalty !== undefined) input.presence_penalty = req.presence_penalty;
  if (req.frequency_penalty !== undefined) input.frequency_penalty = req.frequency_penalty;
  if (req.seed !== undefined) input.seed = req.seed;
  if (req.stop && req.stop.length > 0) input.stop_sequences = req.stop.join(',');
  return input;
}

/**
 * The turns as one text, as Vertesia's generic text formatter renders them: user turns as they
 * are when the conversation is a single exchange; with assistant turns, each turn labelled
 * `USER:` / `ASSISTANT:`. Turns are joined by newlines.
 */
export function conversationText(turns: ChatMessage[]): string {
  const isChat = turns.some((m) => m.role === 'assistant');
  return turns
    .filter((m) => m.role !== 'system')
    .map((m) =>
      m.role === 'assistant' ? `ASSISTANT: ${messageText(m)}` : isChat ? `USER: ${messageText(m)}` : messageText(m),
    )
    .join('\n');
}

function readPrediction(label: string, body: unknown, status: number): Prediction {
  const p = body as Prediction;
  if (!p || typeof p !== 'object' || typeof p.id !== 'string' || typeof p.status !== 'string') {
    throw new ProviderError('provider_error', `${label} answered something that is not a prediction`, status);
  }
  return p;
}

/** A finished prediction → the completion, or the prediction's own error. */
function finished(label: string, p: Prediction): Completion {
  if (p.status === 'failed') {
    const said = typeof p.error === 'string' ? p.error : p.error ? JSON.stringify(p.error) : 'no reason given';
    throw new ProviderError('provider_error', `${label}: prediction ${p.id} failed: ${said}`);
  }
  if (p.status !== 'succeeded')
    throw new ProviderError('provider_error', `${label}: prediction ${p.id} was ${p.status}`);
  let text: string;
  if (typeof p.output === 'string') text = p.output;
  else if (Array.isArray(p.output) && p.output.every((x) => typeof x === 'string')) text = p.output.join('');
  else if (p.output === null || p.output === undefined) text = '';
  else
    throw new ProviderError(
      'provider_error',
      `${label}: prediction ${p.id} answered an output that is not text: ${JSON.stringify(p.output).slice(0, 200)}`,
    );
  const out: Completion = { text };
  const usage = usageOf(p);
  if (usage) out.token_use = usage;
  return out;
}

function usageOf(p: Prediction): TokenUsage | undefined {
  const m = p.metrics;
  if (!m || typeof m !== 'object') return undefined;
  const out: TokenUsage = {};
  if (typeof m.input_token_count === 'number') out.prompt = m.input_token_count;
  if (typeof m.output_token_count === 'number') out.result = m.output_token_count;
  if (out.prompt !== undefined && out.result !== undefined) out.total = out.prompt + out.result;
  return Object.keys(out).length > 0 ? out : undefined;
}

function sameOrigin(url: string, base: string): boolean {
  try {
    return new URL(url).origin === new URL(base).origin;
  } catch {
    return false;
  }
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

interface Prediction {
  id: string;
  status: string;
  output?: unknown;
  error?: unknown;
  urls?: { get?: string; cancel?: string; stream?: string };
  metrics?: { input_token_count?: number; output_token_count?: number };
}
