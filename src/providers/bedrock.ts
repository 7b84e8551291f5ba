/**
 * Amazon Bedrock.
 *  - bedrock: the Runtime's Converse API, `POST {endpoint}/model/{modelId}/converse`, and
 *    ConverseStream, `…/converse-stream`, whose answer is an AWS event stream
 *    (`application/vnd.amazon.eventstream`: binary frames, each a JSON event or exception).
 *  - bedrock_mantle: Bedrock's OpenAI-compatible endpoint, `https://bedrock-mantle.{region}.api.aws/v1`,
 *    spoken through the Chat Completions driver with a Bedrock API key as the bearer.
 *
 * Credentials: the environment's key as `ACCESS_KEY_ID:SECRET_ACCESS_KEY[:SESSION_TOKEN]` (requests
 * are SigV4-signed, service `bedrock`), or a Bedrock API key (`bedrock-api-key-…` short-term,
 * `ABSK…` long-term) sent as `Authorization: Bearer`; with no key, the standard AWS chain
 * (environment variables, shared files, SSO, web identity, container and instance roles).
 * The region is `config.region`, else AWS_REGION / AWS_DEFAULT_REGION, else us-east-1.
 */
import { createHash, createHmac, type Hash, type Hmac } from 'node:crypto';
import type { SignatureV4 } from '@smithy/signature-v4';
import type { EventStreamCodec } from '@smithy/core/event-streams';
import {
  ProviderError,
  type Completion,
  type CompletionChunk,
  type CompletionRequest,
  type ModelDriver,
  type ModelInfo,
  type ProviderConnection,
  type TokenUsage,
  messageText,
} from './driver.ts';
import { OpenAIChatDriver, openAIBaseUrl } from './openai-chat.ts';
import {
  codeForStatus,
  isRetryableStatus,
  postToProvider,
  providerMessage,
  timeoutOf,
  trimSlashes,
} from './provider-http.ts';
import { schemaInstruction, thinksAdaptively } from './anthropic-messages.ts';
import { TokenCache } from './token-cache.ts';
import { table } from '../util/own.ts';
import {
  ConverseToolAssembler,
  fromConverseContent,
  hasToolBlocks,
  toConverseToolConfig,
  toConverseTurns,
} from './bedrock-blocks.ts';

const BEDROCK_DEFAULT_REGION = 'us-east-1';
/** What the environment's key must look like, for the error that says it does not. */
const KEY_FORMS =
  'ACCESS_KEY_ID:SECRET_ACCESS_KEY, ACCESS_KEY_ID:SECRET_ACCESS_KEY:SESSION_TOKEN, or a Bedrock API key (bedrock-api-key-… or ABSK…)';

export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  expiration?: Date;
}

type Auth = { kind: 'sigv4'; credentials: AwsCredentials } | { kind: 'bearer'; token: string };

// ---------------------------------------------------------------------------------------------
// Where and who

/** `config.region`, else the process's AWS region, else us-east-1. */
export function regionOf(conn: ProviderConnection): string {
  const given = conn.config?.region;
  const region =
    (typeof given === 'string' && given.trim()) ||
    process.env.AWS_REGION ||
    process.env.AWS_DEFAULT_REGION ||
    BEDROCK_DEFAULT_REGION;
  // The region becomes a host name and a signing scope: refuse anything that is not one.
  if (!/^[a-z]{2}(-[a-z0-9]+)+-\d+$/.test(region.trim())) {
    throw new ProviderError(
      'provider_bad_request',
      `the Bedrock region ${JSON.stringify(region)} is not an AWS region name (e.g. us-east-1)`,
    );
  }
  return region.trim();
}

function validUrl(given: string): string {
  try {
    new URL(given);
  } catch {
    throw new ProviderError('provider_bad_request', `the endpoint URL ${JSON.stringify(given)} is not a valid URL`);
  }
  return trimSlashes(given);
}

/** The Runtime's base URL: the environment's endpoint_url (a VPC endpoint, a proxy), else the region's. */
function runtimeEndpoint(conn: ProviderConnection, region: string): string {
  const given = conn.endpoint_url?.trim();
  return given ? validUrl(given) : `https://bedrock-runtime.${region}.amazonaws.com`;
}

/** The control plane (model listing): `config.models_endpoint`, else the endpoint_url, else the region's. */
function controlEndpoint(conn: ProviderConnection, region: string): string {
  const models = conn.config?.models_endpoint;
  if (typeof models === 'string' && models.trim()) return validUrl(models.trim());
  const given = conn.endpoint_url?.trim();
  return given ? validUrl(given) : `https://bedrock.${region}.amazonaws.com`;
}

/** The environment's key: AWS access keys for SigV4, or a Bedrock API key; never echoed in errors. */
export function parseKey(key: string, conn: ProviderConnection, label: string): Auth {
  const k = key.trim().replace(/^Bearer\s+/i, '');
  if (conn.config?.auth === 'api_key' || k.startsWith('bedrock-api-key-') || k.startsWith('ABSK'))
    return { kind: 'bearer', token: k };
  const parts = k.split(':');
  // Access key ids are 16 to 128 upper-case letters and digits (IAM's AccessKey type).
  if (
    (parts.length === 2 || parts.length === 3) &&
    /^[A-Z0-9]{16,128}$/.test(parts[0]) &&
    parts.slice(1).every((p) => p !== '')
  ) {
    return {
      kind: 'sigv4',
      credentials: {
        accessKeyId: parts[0],
        secretAccessKey: parts[1],
        ...(parts[2] ? { sessionToken: parts[2] } : {}),
      },
    };
  }
  throw new ProviderError(
    'provider_auth',
    `${label}: the environment's API key is not in a form Bedrock takes; expected ${KEY_FORMS}`,
  );
}

let chain: Promise<() => Promise<AwsCredentials>> | undefined;

/** The AWS SDK's default chain, loaded on first use only (start-up never pays for it); it caches and refreshes. */
async function chainCredentials(label: string): Promise<AwsCredentials> {
  chain ??= import('@aws-sdk/credential-provider-node').then((m) => m.defaultProvider());
  try {
    return await (
      await chain
    )();
  } catch (err) {
    chain = undefined; // a later run may find credentials that appeared since (a mounted role, a login)
    const said = err instanceof Error ? err.message : String(err);
    throw new ProviderError(
      'provider_auth',
      `${label}: the environment has no API key and the AWS credential chain found no credentials: ${said}`,
    );
  }
}

async function authOf(conn: ProviderConnection, label: string): Promise<Auth> {
  if (conn.api_key?.trim()) return parseKey(conn.api_key, conn, label);
  return { kind: 'sigv4', credentials: await chainCredentials(label) };
}

// ---------------------------------------------------------------------------------------------
// SigV4

type SourceData = string | ArrayBuffer | ArrayBufferView;
const bytesOf = (d: SourceData): Buffer =>
  typeof d === 'string'
    ? Buffer.from(d, 'utf8')
    : ArrayBuffer.isView(d)
      ? Buffer.from(d.buffer, d.byteOffset, d.byteLength)
      : Buffer.from(d);

/** The hash SignatureV4 asks for: SHA-256, or HMAC-SHA-256 when constructed with a secret. */
class Sha256 {
  private readonly h: Hash | Hmac;
  constructor(secret?: SourceData) {
    this.h = secret === undefined ? createHash('sha256') : createHmac('sha256', bytesOf(secret));
  }
  update(data: SourceData): void {
    this.h.update(bytesOf(data));
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.h.digest());
  }
}

/** The AWS signing and event-stream libraries load with the first Bedrock call, not at start-up. */
let aws: Promise<{ SignatureV4: typeof SignatureV4; codec: EventStreamCodec }> | undefined;
const loadAws = () =>
  (aws ??= Promise.all([import('@smithy/signature-v4'), import('@smithy/core/event-streams')]).then(([sig, es]) => ({
    SignatureV4: sig.SignatureV4,
    codec: new es.EventStreamCodec(
      (bytes) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'),
      (text) => new Uint8Array(Buffer.from(text, 'utf8')),
    ),
  })));

/**
 * The headers that authenticate one request: SigV4 over method, path, query, host, the given
 * headers and the exact body (sent as is, as `rawBody`), or the bearer key.
 */
async function authHeaders(
  auth: Auth,
  region: string,
  method: 'GET' | 'POST',
  url: string,
  headers: Record<string, string>,
  body?: string,
): Promise<Record<string, string>> {
  if (auth.kind === 'bearer') return { ...headers, authorization: `Bearer ${auth.token}` };
  const u = new URL(url);
  const { SignatureV4 } = await loadAws();
  const signer = new SignatureV4({ service: 'bedrock', region, credentials: auth.credentials, sha256: Sha256 });
  const signed = await signer.sign({
    method,
    protocol: u.protocol,
    hostname: u.hostname,
    ...(u.port ? { port: Number(u.port) } : {}),
    path: u.pathname,
    query: Object.fromEntries(u.searchParams),
    headers: { ...headers, host: u.host },
    ...(body !== undefined ? { body } : {}),
  });
  // undici sends the same host from the URL; it refuses to be handed one.
  const { host: _host, ...out } = signed.headers;
  return out;
}

// ---------------------------------------------------------------------------------------------
// Converse

/** Converse's stop reasons in the vocabulary every other driver uses (OpenAI's). */
const FINISH: Record<string, string> = table({
  end_turn: 'stop',
  stop_sequence: 'stop',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  guardrail_intervened: 'content_filter',
  content_filtered: 'content_filter',
  tool_use: 'tool_use',
});
const toFinish = (stop: string) => FINISH[stop] ?? stop;

/** ConverseStream's exception events → codes, with the HTTP status the same error would have had. */
const EXCEPTIONS: Record<string, { code: ProviderError['code']; status: number }> = table({
  validationException: { code: 'provider_bad_request', status: 400 },
  accessDeniedException: { code: 'provider_auth', status: 403 },
  resourceNotFoundException: { code: 'provider_bad_request', status: 404 },
  modelTimeoutException: { code: 'provider_error', status: 408 },
  modelStreamErrorException: { code: 'provider_error', status: 424 },
  throttlingException: { code: 'provider_rate_limited', status: 429 },
  serviceQuotaExceededException: { code: 'provider_rate_limited', status: 429 },
  modelNotReadyException: { code: 'provider_error', status: 429 },
  internalServerException: { code: 'provider_error', status: 500 },
  serviceUnavailableException: { code: 'provider_error', status: 503 },
});

/**
 * top_k is no Converse field: each model family takes it in `additionalModelRequestFields` under
 * its own name (as Vertesia's driver sends it). Families not listed refuse unknown fields, so it is
 * left out for them.
 */
function topKFields(model: string, topK: number): Record<string, unknown> | undefined {
  const m = model.toLowerCase();
  if (m.includes('anthropic.') || m.includes('claude')) return { top_k: topK };
  if (m.includes('amazon.nova')) return { inferenceConfig: { topK } };
  if (m.includes('cohere.command')) return { k: topK };
  if (m.includes('mistral.mistral-7b') || m.includes('mistral.mixtral')) return { top_k: topK };
  return undefined;
}

/**
 * Claude's thinking and effort travel in `additionalModelRequestFields` in the Messages API's own
 * form (llumiverse's Bedrock Claude options); the option sets allow them only on Claude models.
 */
function claudeThinkingFields(req: CompletionRequest): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (req.effort && thinksAdaptively(req.model))
    out.thinking = { type: 'adaptive', display: req.include_thoughts ? 'summarized' : 'omitted' };
  else if (req.thinking_budget_tokens !== undefined)
    out.thinking = { type: 'enabled', budget_tokens: req.thinking_budget_tokens };
  if (req.effort) out.output_config = { effort: req.effort };
  return out;
}

/**
 * The Converse request. The schema travels as an instruction in the system text: Converse's own
 * `outputConfig` is refused by several families (Claude, Nova, Llama), and the run service
 * validates the answer either way.
 */
export function converseBody(req: CompletionRequest): Record<string, unknown> {
  const system = req.messages.filter((m) => m.role === 'system').map((m) => ({ text: messageText(m) }));
  if (req.result_schema) system.push({ text: schemaInstruction(req.result_schema) });
  const messages = toConverseTurns(req.messages.filter((m) => m.role !== 'system'));
  const body: Record<string, unknown> = { messages };
  if (system.length > 0) body.system = system;
  const tools = req.tools?.length
    ? toConverseToolConfig(req.tools, req.tool_choice, hasToolBlocks(messages))
    : undefined;
  if (tools) body.toolConfig = tools;
  const inference: Record<string, unknown> = {};
  if (req.max_tokens !== undefined) inference.maxTokens = req.max_tokens;
  // Claude's thinking budget is part of maxTokens: unset, the answer keeps room beside it.
  else if (req.thinking_budget_tokens !== undefined) inference.maxTokens = req.thinking_budget_tokens + 4096;
  if (req.temperature !== undefined) inference.temperature = req.temperature;
  if (req.top_p !== undefined) inference.topP = req.top_p;
  if (req.stop && req.stop.length > 0) inference.stopSequences = req.stop;
  if (Object.keys(inference).length > 0) body.inferenceConfig = inference;
  const extra: Record<string, unknown> = {
    ...(req.top_k !== undefined ? topKFields(req.model, req.top_k) : {}),
    ...claudeThinkingFields(req),
  };
  if (Object.keys(extra).length > 0) body.additionalModelRequestFields = extra;
  // presence/frequency penalties and seed have no Converse field and no common per-model one.
  return body;
}

interface ConverseUsage {
  inputTokens?: number;
  outputTokens?: number;
  totalTokens?: number;
  cacheReadInputTokens?: number;
  cacheWriteInputTokens?: number;
}

/** `inputTokens` excludes cache reads and writes, so prompt = input + both. */
function toTokenUsage(u: ConverseUsage | null | undefined): TokenUsage | undefined {
  if (!u || typeof u !== 'object') return undefined;
  const out: TokenUsage = {};
  if (typeof u.inputTokens === 'number')
    out.prompt = u.inputTokens + (u.cacheReadInputTokens ?? 0) + (u.cacheWriteInputTokens ?? 0);
  if (typeof u.outputTokens === 'number') out.result = u.outputTokens;
  // Counted in prompt above and priced apart (src/pricing).
  if (u.cacheReadInputTokens) out.cache_read = u.cacheReadInputTokens;
  if (u.cacheWriteInputTokens) out.cache_write = u.cacheWriteInputTokens;
  if (typeof u.totalTokens === 'number') out.total = u.totalTokens;
  else if (out.prompt !== undefined && out.result !== undefined) out.total = out.prompt + out.result;
  return Object.keys(out).length > 0 ? out : undefined;
}

const textOf = (content: unknown): string =>
  Array.isArray(content)
    ? content
        .filter(
          (b): b is { text: string } =>
            !!b && typeof b === 'object' && typeof (b as { text?: unknown }).text === 'string',
        )
        .map((b) => b.text)
        .join('')
    : '';

/** The `reasoningContent.reasoningText.text` of a Converse answer's blocks (Claude's thinking). */
const reasoningOf = (content: unknown): string =>
  Array.isArray(content)
    ? content
        .map((b) => (b as { reasoningContent?: { reasoningText?: { text?: unknown } } } | null)?.reasoningContent)
        .map((r) => r?.reasoningText?.text)
        .filter((t): t is string => typeof t === 'string')
        .join('\n\n')
    : '';

// ---------------------------------------------------------------------------------------------
// Event streams

export interface StreamMessage {
  /** `event`, `exception` or `error`. */
  messageType: string;
  /** The event's or exception's type (`contentBlockDelta`, `throttlingException`), or the error code. */
  type: string;
  body: unknown;
}

/**
 * Frames from a body that arrives in arbitrary pieces: each frame starts with its total length
 * (4 bytes, big-endian), so pieces accumulate until a whole frame is there. The codec checks both CRCs.
 */
export async function* decodeEventStream(
  pieces: AsyncIterable<Uint8Array>,
  label: string,
): AsyncGenerator<StreamMessage> {
  const { codec } = await loadAws();
  let buf = Buffer.alloc(0);
  for await (const piece of pieces) {
    buf = buf.length === 0 ? Buffer.from(piece) : Buffer.concat([buf, piece]);
    while (buf.length >= 4) {
      const total = buf.readUInt32BE(0);
      if (total < 16)
        throw new ProviderError('provider_error', `${label} sent a malformed event-stream frame (length ${total})`);
      if (buf.length < total) break;
      const frame = buf.subarray(0, total);
      buf = buf.subarray(total);
      let decoded: ReturnType<EventStreamCodec['decode']>;
      try {
        decoded = codec.decode(frame);
      } catch (err) {
        throw new ProviderError(
          'provider_error',
          `${label} sent a malformed event-stream frame: ${err instanceof Error ? err.message : String(err)}`,
        );
      }
      const header = (name: string) => {
        const h = decoded.headers[name];
        return h && h.type === 'string' ? h.value : undefined;
      };
      const messageType = header(':message-type') ?? 'event';
      const text = Buffer.from(decoded.body.buffer, decoded.body.byteOffset, decoded.body.byteLength).toString('utf8');
      let body: unknown = text;
      try {
        body = text === '' ? {} : JSON.parse(text);
      } catch {
        // an exception's body may be plain text; keep it as the message
      }
      if (messageType === 'error') {
        yield { messageType, type: header(':error-code') ?? 'InternalError', body: header(':error-message') ?? body };
      } else {
        yield {
          messageType,
          type: header(messageType === 'exception' ? ':exception-type' : ':event-type') ?? '',
          body,
        };
      }
    }
  }
  if (buf.length > 0)
    throw new ProviderError('provider_error', `${label} ended the stream in the middle of an event-stream frame`);
}

function streamException(label: string, m: StreamMessage): ProviderError {
  const known = EXCEPTIONS[m.type] ?? EXCEPTIONS[`${m.type.charAt(0).toLowerCase()}${m.type.slice(1)}`];
  const said = providerMessage(m.body) ?? m.type;
  const message = `${label} failed mid-stream: ${m.type}: ${said}`;
  if (known)
    return new ProviderError(
      known.code,
      message,
      known.status,
      isRetryableStatus(known.status) || known.status === 424,
    );
  // An exception this table does not know: an HTTP status in the body, if any, decides.
  const status = (m.body as { originalStatusCode?: unknown } | null)?.originalStatusCode;
  if (typeof status === 'number')
    return new ProviderError(codeForStatus(status), message, status, isRetryableStatus(status));
  return new ProviderError('provider_error', message, undefined, true);
}

// ---------------------------------------------------------------------------------------------
// The driver

export class BedrockConverseDriver implements ModelDriver {
  readonly provider = 'bedrock';

  async complete(conn: ProviderConnection, req: CompletionRequest, signal?: AbortSignal): Promise<Completion> {
    const { res, label } = await this.post(conn, req, 'converse', signal);
    const answer = (await res.json()) as ConverseResponse;
    const message = answer?.output?.message;
    if (!message || typeof message !== 'object' || !Array.isArray(message.content)) {
      throw new ProviderError(
        'provider_error',
        `${label} answered without a message to read (no output.message.content)`,
        res.status,
      );
    }
    const out: Completion = { text: textOf(message.content) };
    const thoughts = req.include_thoughts ? reasoningOf(message.content) : '';
    if (thoughts) out.thoughts = thoughts;
    if (typeof answer.stopReason === 'string') out.finish_reason = toFinish(answer.stopReason);
    const calls = fromConverseContent(message.content);
    if (calls) {
      out.tool_use = calls;
      out.finish_reason = 'tool_use';
    }
    const usage = toTokenUsage(answer.usage);
    if (usage) out.token_use = usage;
    return out;
  }

  async *stream(
    conn: ProviderConnection,
    req: CompletionRequest,
    signal?: AbortSignal,
  ): AsyncGenerator<CompletionChunk> {
    const { res, label } = await this.post(conn, req, 'converse-stream', signal);
    let stop: string | undefined;
    let usage: TokenUsage | undefined;
    let stopped = false;
    const calls = new ConverseToolAssembler();
    for await (const m of decodeEventStream(res.bytes(), label)) {
      if (m.messageType !== 'event') throw streamException(label, m);
      const data = (m.body && typeof m.body === 'object' ? m.body : {}) as StreamEvent;
      if (m.type === 'contentBlockStart') {
        calls.start(data.contentBlockIndex ?? 0, data.start);
      } else if (m.type === 'contentBlockDelta') {
        const text = data.delta?.text;
        if (typeof text === 'string' && text !== '') yield { text };
        const thought = data.delta?.reasoningContent?.text;
        if (req.include_thoughts && typeof thought === 'string' && thought !== '') yield { thoughts: thought };
        if (data.delta?.toolUse) calls.delta(data.contentBlockIndex ?? 0, data.delta.toolUse.input);
      } else if (m.type === 'messageStop') {
        stopped = true;
        if (typeof data.stopReason === 'string') stop = data.stopReason;
      } else if (m.type === 'metadata') {
        usage = toTokenUsage(data.usage) ?? usage;
      }
      // messageStart, contentBlockStop and future events carry nothing to keep.
    }
    if (!stopped) throw new ProviderError('provider_error', `${label} ended the stream before messageStop`);
    const last: CompletionChunk = {};
    if (stop) last.finish_reason = toFinish(stop);
    const toolUse = calls.result();
    if (toolUse) {
      last.tool_use = toolUse;
      last.finish_reason = 'tool_use';
    }
    if (usage) last.token_use = usage;
    if (last.finish_reason || last.token_use) yield last;
  }

  /** Foundation models that answer text, plus the system inference profiles over them (current Claude models run only through those). */
  async listModels(conn: ProviderConnection, signal?: AbortSignal): Promise<ModelInfo[]> {
    const region = regionOf(conn);
    const base = controlEndpoint(conn, region);
    const label =
      conn.endpoint_url?.trim() || conn.config?.models_endpoint ? `Bedrock at ${base}` : `Bedrock (${region})`;
    const auth = await authOf(conn, label);
    const get = async (url: string) => {
      const headers = await authHeaders(auth, region, 'GET', url, { accept: 'application/json' });
      const res = await postToProvider({
        label,
        url,
        method: 'GET',
        headers,
        signal,
        timeoutMs: Math.min(timeoutOf(conn), 60_000),
        outbound: conn.outbound,
      });
      return res.json();
    };
    const listed = (await get(`${base}/foundation-models?byOutputModality=TEXT`)) as {
      modelSummaries?: FoundationModel[];
    };
    const text = (listed?.modelSummaries ?? []).filter(
      (m) =>
        typeof m?.modelId === 'string' && (!Array.isArray(m.outputModalities) || m.outputModalities.includes('TEXT')),
    );
    const out: ModelInfo[] = text
      .filter((m) => !Array.isArray(m.inferenceTypesSupported) || m.inferenceTypesSupported.includes('ON_DEMAND'))
      .map((m) => ({
        id: m.modelId!,
        name: [m.providerName, m.modelName].filter(Boolean).join(' ') || m.modelId!,
        ...(m.modelLifecycle?.status === 'LEGACY' ? { description: 'Legacy model' } : {}),
      }));
    const textIds = new Set(text.map((m) => m.modelId!));
    // Profiles need their own permission (bedrock:ListInferenceProfiles); without it, the foundation models still list.
    for (const p of await this.profiles(get, base).catch(() => [] as InferenceProfile[])) {
      const over = (p.models ?? []).map((x) => x.modelArn?.split('/').pop()).filter((id): id is string => !!id);
      if (typeof p.inferenceProfileId === 'string' && p.status !== 'INACTIVE' && over.some((id) => textIds.has(id))) {
        out.push({
          id: p.inferenceProfileId,
          name: p.inferenceProfileName ?? p.inferenceProfileId,
          ...(p.description ? { description: p.description } : {}),
        });
      }
    }
    return out;
  }

  private async profiles(get: (url: string) => Promise<unknown>, base: string): Promise<InferenceProfile[]> {
    const out: InferenceProfile[] = [];
    let next: string | undefined;
    for (let page = 0; page < 20; page++) {
      const q = `typeEquals=SYSTEM_DEFINED&maxResults=1000${next ? `&nextToken=${encodeURIComponent(next)}` : ''}`;
      const answer = (await get(`${base}/inference-profiles?${q}`)) as {
        inferenceProfileSummaries?: InferenceProfile[];
        nextToken?: string;
      };
      out.push(...(answer?.inferenceProfileSummaries ?? []));
      next = answer?.nextToken;
      if (!next) break;
    }
    return out;
  }

  private async post(
    conn: ProviderConnection,
    req: CompletionRequest,
    op: 'converse' | 'converse-stream',
    signal: AbortSignal | undefined,
  ) {
    const region = regionOf(conn);
    const base = runtimeEndpoint(conn, region);
    const label = conn.endpoint_url?.trim() ? `Bedrock at ${base}` : `Bedrock (${region})`;
    const auth = await authOf(conn, label);
    // Model ids may be ARNs or inference profiles: one path segment, encoded.
    const url = `${base}/model/${encodeURIComponent(req.model)}/${op}`;
    const rawBody = JSON.stringify(converseBody(req));
    const accept = op === 'converse' ? 'application/json' : 'application/vnd.amazon.eventstream';
    const headers = await authHeaders(
      auth,
      region,
      'POST',
      url,
      { 'content-type': 'application/json', accept },
      rawBody,
    );
    try {
      const res = await postToProvider({
        label,
        url,
        headers,
        rawBody,
        signal,
        timeoutMs: timeoutOf(conn),
        outbound: conn.outbound,
      });
      return { res, label };
    } catch (err) {
      // 424 is Bedrock's ModelErrorException: the model failed on its side, not a request to fix.
      if (err instanceof ProviderError && err.upstreamStatus === 424)
        throw new ProviderError('provider_error', err.message, 424, true);
      throw err;
    }
  }
}

interface ConverseResponse {
  output?: { message?: { role?: string; content?: unknown[] } | null };
  stopReason?: string;
  usage?: ConverseUsage;
}

interface StreamEvent {
  contentBlockIndex?: number;
  start?: { toolUse?: { toolUseId?: string; name?: string } };
  delta?: { text?: string; toolUse?: { input?: unknown }; reasoningContent?: { text?: string } };
  stopReason?: string;
  usage?: ConverseUsage;
}

interface FoundationModel {
  modelId?: string;
  modelName?: string;
  providerName?: string;
  outputModalities?: string[];
  inferenceTypesSupported?: string[];
  modelLifecycle?: { status?: string };
}

interface InferenceProfile {
  inferenceProfileId?: string;
  inferenceProfileName?: string;
  description?: string;
  status?: string;
  models?: { modelArn?: string }[];
}

// ---------------------------------------------------------------------------------------------
// Bedrock Mantle

/** Short-term Bedrock API keys live 12 hours at most (AWS's token generators). */
const TOKEN_TTL_S = 43_200;
const mantleTokens = new TokenCache();

/**
 * A short-term Bedrock API key from AWS credentials, as AWS's bedrock-token-generator libraries
 * make it: a SigV4-presigned `POST https://bedrock.amazonaws.com/?Action=CallWithBearerToken`
 * (12 hours), without its scheme, plus `&Version=1`, base64, prefixed `bedrock-api-key-`.
 */
export async function bedrockApiKey(credentials: AwsCredentials, region: string, now = new Date()): Promise<string> {
  const { SignatureV4 } = await loadAws();
  const signer = new SignatureV4({ service: 'bedrock', region, credentials, sha256: Sha256 });
  const presigned = await signer.presign(
    {
      method: 'POST',
      protocol: 'https:',
      hostname: 'bedrock.amazonaws.com',
      path: '/',
      query: { Action: 'CallWithBearerToken' },
      headers: { host: 'bedrock.amazonaws.com' },
    },
    { expiresIn: TOKEN_TTL_S, signingDate: now },
  );
  const query = Object.entries(presigned.query ?? {})
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`)
    .join('&');
  return `bedrock-api-key-${Buffer.from(`bedrock.amazonaws.com/?${query}&Version=1`, 'utf8').toString('base64')}`;
}

/** `https://bedrock-mantle.{region}.api.aws/v1`, or the endpoint_url read as an OpenAI base URL. */
function mantleBaseUrl(conn: ProviderConnection): string {
  const given = conn.endpoint_url?.trim();
  return given ? openAIBaseUrl(given) : `https://bedrock-mantle.${regionOf(conn)}.api.aws/v1`;
}

const mantleLabel = (conn: ProviderConnection) =>
  conn.endpoint_url?.trim() ? `Bedrock Mantle at ${mantleBaseUrl(conn)}` : `Bedrock Mantle (${regionOf(conn)})`;

/** The bearer for Mantle: a Bedrock API key as given, or one made from AWS credentials (cached until shortly before it lapses). */
async function mantleBearer(conn: ProviderConnection): Promise<string> {
  const label = mantleLabel(conn);
  const auth = await authOf(conn, label);
  if (auth.kind === 'bearer') return auth.token;
  const region = regionOf(conn);
  const c = auth.credentials;
  const lives = c.expiration
    ? Math.min(TOKEN_TTL_S, Math.floor((c.expiration.getTime() - Date.now()) / 1000))
    : TOKEN_TTL_S;
  return mantleTokens.get(`${region}\0${c.accessKeyId}\0${c.secretAccessKey}\0${c.sessionToken ?? ''}`, async () => ({
    token: await bedrockApiKey(c, region),
    expiresInS: lives,
  }));
}

/**
 * Bedrock Mantle through Chat Completions (`{base}/chat/completions`, model in the body). Vertesia's
 * driver also sends OpenAI GPT, Grok and Gemma 4 models through Mantle's Responses API and Claude
 * through its Messages API; Orrery speaks Chat Completions to all of them.
 */
export class BedrockMantleDriver implements ModelDriver {
  readonly provider = 'bedrock_mantle';
  private readonly chat = new OpenAIChatDriver({
    provider: 'bedrock_mantle',
    name: 'Bedrock Mantle',
    requiresApiKey: true,
    maxTokensField: 'max_tokens',
    streamUsage: true,
    // The bearer was resolved (and made, for AWS credentials) before the call: see withBearer.
    route: (conn) => {
      const base = mantleBaseUrl(conn);
      return {
        url: `${base}/chat/completions`,
        label: mantleLabel(conn),
        headers: { authorization: `Bearer ${conn.api_key}` },
        modelInBody: true,
        modelsUrl: `${base}/models`,
      };
    },
  });

  async complete(conn: ProviderConnection, req: CompletionRequest, signal?: AbortSignal): Promise<Completion> {
    return this.chat.complete(await withBearer(conn), req, signal);
  }

  async *stream(
    conn: ProviderConnection,
    req: CompletionRequest,
    signal?: AbortSignal,
  ): AsyncGenerator<CompletionChunk> {
    yield* this.chat.stream(await withBearer(conn), req, signal);
  }

  /** Mantle lists its models as OpenAI does, `GET {base}/models`. */
  async listModels(conn: ProviderConnection, signal?: AbortSignal): Promise<ModelInfo[] | undefined> {
    return this.chat.listModels(await withBearer(conn), signal);
  }
}

const withBearer = async (conn: ProviderConnection): Promise<ProviderConnection> => ({
  ...conn,
  api_key: await mantleBearer(conn),
});
