/**
 * Google Vertex AI (provider `vertexai`): Gemini through `generateContent` /
 * `streamGenerateContent?alt=sse`, and Claude through Anthropic's Messages API as Vertex hosts it
 * (`:rawPredict` / `:streamRawPredict`, `anthropic_version: "vertex-2023-10-16"` in the body, the
 * model in the URL), both under
 * `{base}/v1/projects/{project}/locations/{region}/publishers/{google|anthropic}/models/{model}`.
 *
 * Credentials: the environment's API key is a service account key file (its JSON). Orrery signs an
 * RS256 JWT with the account's private key and exchanges it at the account's `token_uri` for an
 * OAuth access token (the JWT bearer grant, RFC 7523, as Google documents for server-to-server
 * calls), cached until a minute before it expires. A key that is not JSON but an access token
 * (`ya29.…`) is sent as it is.
 *
 * Environment config:
 *  - `project`: the Google Cloud project (default: the service account's `project_id`);
 *  - `region`: the Vertex location (default `us-central1`; `global` uses aiplatform.googleapis.com);
 *  - `timeout_ms`, `retries`: as for every provider.
 * The endpoint URL, when set, replaces `https://{region}-aiplatform.googleapis.com` (a private
 * endpoint, a proxy, a test server). A model id may name its own location and publisher:
 * `locations/us-east5/publishers/anthropic/models/claude-sonnet-4@20250514`; a bare id starting
 * with `claude` is Claude, any other bare id is a Google (Gemini) model.
 */
import { importPKCS8, SignJWT } from 'jose';
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
import { AnthropicMessagesDriver, type AnthropicRoute } from './anthropic-messages.ts';
import {
  codeForStatus,
  isRetryableStatus,
  postToProvider,
  providerMessage,
  timeoutOf,
  trimSlashes,
} from './provider-http.ts';
import { TokenCache } from './token-cache.ts';
import {
  GeminiCallCollector,
  callSeedOf,
  toGeminiContents,
  toGeminiToolConfig,
  toGeminiTools,
  type GeminiPart,
} from './gemini-parts.ts';
import { table } from '../util/own.ts';

const VERTEX_SCOPE = 'https://www.googleapis.com/auth/cloud-platform';
const GOOGLE_TOKEN_URI = 'https://oauth2.googleapis.com/token';
const VERTEX_DEFAULT_REGION = 'us-central1';
/** The Messages API version Vertex hosts Claude under (sent in the body, not as a header). */
const VERTEX_ANTHROPIC_VERSION = 'vertex-2023-10-16';
const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
/** Google accepts assertions that live at most an hour. */
const ASSERTION_LIFETIME_S = 3600;
/** A token exchange is small; it should not wait as long as a generation may. */
const TOKEN_TIMEOUT_MS = 60_000;

/** Access tokens per service account, shared by every run of the process. */
const tokens = new TokenCache();

/**
 * The models listed for a Vertex environment without `enabled_models`. Vertex has no simple
 * per-project list of the publisher models a project may call (the Model Garden lists publishers'
 * catalogues, not what is enabled or available in a region), so this is a static list of the
 * current Gemini models and Claude models on Vertex, by the ids Google documents; any other id
 * works as a run's model.
 */
const VERTEX_MODELS: readonly ModelInfo[] = [
  { id: 'gemini-2.5-pro', name: 'Gemini 2.5 Pro', description: 'Google Gemini 2.5 Pro' },
  { id: 'gemini-2.5-flash', name: 'Gemini 2.5 Flash', description: 'Google Gemini 2.5 Flash' },
  { id: 'gemini-2.5-flash-lite', name: 'Gemini 2.5 Flash-Lite', description: 'Google Gemini 2.5 Flash-Lite' },
  { id: 'gemini-2.0-flash-001', name: 'Gemini 2.0 Flash', description: 'Google Gemini 2.0 Flash' },
  { id: 'gemini-2.0-flash-lite-001', name: 'Gemini 2.0 Flash-Lite', description: 'Google Gemini 2.0 Flash-Lite' },
  { id: 'claude-opus-4-1@20250805', name: 'Claude Opus 4.1', description: 'Anthropic Claude Opus 4.1 on Vertex AI' },
  { id: 'claude-opus-4@20250514', name: 'Claude Opus 4', description: 'Anthropic Claude Opus 4 on Vertex AI' },
  {
    id: 'claude-sonnet-4-5@20250929',
    name: 'Claude Sonnet 4.5',
    description: 'Anthropic Claude Sonnet 4.5 on Vertex AI',
  },
  { id: 'claude-sonnet-4@20250514', name: 'Claude Sonnet 4', description: 'Anthropic Claude Sonnet 4 on Vertex AI' },
  { id: 'claude-haiku-4-5@20251001', name: 'Claude Haiku 4.5', description: 'Anthropic Claude Haiku 4.5 on Vertex AI' },
  {
    id: 'claude-3-7-sonnet@20250219',
    name: 'Claude 3.7 Sonnet',
    description: 'Anthropic Claude 3.7 Sonnet on Vertex AI',
  },
  { id: 'claude-3-5-haiku@20241022', name: 'Claude 3.5 Haiku', description: 'Anthropic Claude 3.5 Haiku on Vertex AI' },
];

// ---------------------------------------------------------------------------------------------
// Credentials

interface ServiceAccount {
  client_email: string;
  private_key: string;
  private_key_id?: string;
  token_uri: string;
  project_id?: string;
}

type Credential = { kind: 'service_account'; account: ServiceAccount } | { kind: 'access_token'; token: string };

const EXPECTED_KEY =
  "Vertex AI needs a Google service account key as the environment's API key: the JSON of the key file " +
  '({"type":"service_account","project_id":…,"private_key_id":…,"private_key":"-----BEGIN PRIVATE KEY-----…","client_email":…,"token_uri":…})';

function credentialOf(conn: ProviderConnection): Credential {
  const key = conn.api_key?.trim();
  if (!key) throw new ProviderError('provider_auth', `${EXPECTED_KEY}; the environment has none`);
  if (!key.startsWith('{')) {
    const bare = key.replace(/^Bearer\s+/i, '');
    if (/^ya29\.[\w.-]+$/.test(bare)) return { kind: 'access_token', token: bare };
    throw new ProviderError(
      'provider_auth',
      `${EXPECTED_KEY}; the key given is neither (nor an OAuth access token, ya29.…)`,
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(key);
  } catch {
    throw new ProviderError('provider_auth', `${EXPECTED_KEY}; the key given is not valid JSON`);
  }
  const sa = (parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? parsed : {}) as Record<string, unknown>;
  if (sa.type !== 'service_account') {
    const said = typeof sa.type === 'string' ? `a key of type "${sa.type}"` : 'JSON without "type":"service_account"';
    throw new ProviderError('provider_auth', `${EXPECTED_KEY}; the key given is ${said}`);
  }
  const missing = ['client_email', 'private_key'].filter((f) => typeof sa[f] !== 'string' || !(sa[f] as string).trim());
  if (missing.length)
    throw new ProviderError('provider_auth', `${EXPECTED_KEY}; the service account key has no ${missing.join(' or ')}`);
  const tokenUri = typeof sa.token_uri === 'string' && sa.token_uri.trim() ? sa.token_uri.trim() : GOOGLE_TOKEN_URI;
  try {
    new URL(tokenUri);
  } catch {
    throw new ProviderError(
      'provider_auth',
      `the service account's token_uri ${JSON.stringify(tokenUri)} is not a valid URL`,
    );
  }
  return {
    kind: 'service_account',
    account: {
      client_email: sa.client_email as string,
      private_key: sa.private_key as string,
      private_key_id: typeof sa.private_key_id === 'string' && sa.private_key_id ? sa.private_key_id : undefined,
      token_uri: tokenUri,
      project_id: typeof sa.project_id === 'string' && sa.project_id ? sa.project_id : undefined,
    },
  };
}

/** What the token cache is keyed by (hashed there): the account, its key and where it is exchanged. */
const cacheKeyOf = (sa: ServiceAccount) => `${sa.client_email}\n${sa.token_uri}\n${sa.private_key}`;

/** The bearer token for a run: the cached one, or a fresh exchange of a signed assertion. */
async function accessToken(conn: ProviderConnection, cred: Credential): Promise<string> {
  if (cred.kind === 'access_token') return cred.token;
  const sa = cred.account;
  // No run's abort signal here: runs waiting on the same exchange must not lose it to another's cancel.
  return tokens.get(cacheKeyOf(sa), async () => {
    let key: Awaited<ReturnType<typeof importPKCS8>>;
    try {
      key = await importPKCS8(sa.private_key, 'RS256');
    } catch {
      throw new ProviderError(
        'provider_auth',
        `the private_key of the service account ${sa.client_email} is not an RSA private key in PKCS#8 PEM (-----BEGIN PRIVATE KEY-----)`,
      );
    }
    const now = Math.floor(Date.now() / 1000);
    const assertion = await new SignJWT({ scope: VERTEX_SCOPE })
      .setProtectedHeader({ alg: 'RS256', typ: 'JWT', ...(sa.private_key_id ? { kid: sa.private_key_id } : {}) })
      .setIssuer(sa.client_email)
      .setAudience(sa.token_uri)
      .setIssuedAt(now)
      .setExpirationTime(now + ASSERTION_LIFETIME_S)
      .sign(key);
    const label = `Google's token endpoint (${sa.token_uri})`;
    let answer: unknown;
    try {
      const res = await postToProvider({
        label,
        url: sa.token_uri,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        rawBody: new URLSearchParams({ grant_type: JWT_BEARER, assertion }).toString(),
        timeoutMs: Math.min(timeoutOf(conn), TOKEN_TIMEOUT_MS),
        outbound: conn.outbound,
      });
      answer = await res.json();
    } catch (err) {
      // A refused assertion (invalid_grant: bad signature, unknown or disabled account, deleted key)
      // is a credential problem; rate limits, 5xx and network failures keep their own codes.
      if (
        err instanceof ProviderError &&
        err.upstreamStatus !== undefined &&
        codeForStatus(err.upstreamStatus) === 'provider_bad_request'
      ) {
        throw new ProviderError(
          'provider_auth',
          `Vertex AI could not get an access token for ${sa.client_email}: ${err.message}`,
          err.upstreamStatus,
        );
      }
      throw err;
    }
    const a = (answer ?? {}) as { access_token?: unknown; expires_in?: unknown };
    if (typeof a.access_token !== 'string' || !a.access_token) {
      throw new ProviderError('provider_auth', `${label} answered without an access_token`);
    }
    const expiresInS = typeof a.expires_in === 'number' && a.expires_in > 0 ? a.expires_in : 3600;
    return { token: a.access_token, expiresInS };
  });
}

// ---------------------------------------------------------------------------------------------
// Where a call goes

interface Target {
  /** `{base}/v1/projects/…/models/{model}`, to which `:method` is appended. */
  modelUrl: string;
  label: string;
  publisher: 'google' | 'anthropic';
}

const stringConfig = (conn: ProviderConnection, name: string) => {
  const v = conn.config?.[name];
  return typeof v === 'string' && v.trim() ? v.trim() : undefined;
};

/** `[projects/P/][locations/R/]publishers/X/models/M`, as Vertex names publisher models. */
const MODEL_PATH = /^(?:projects\/([^/]+)\/)?(?:locations\/([^/]+)\/)?publishers\/([^/]+)\/models\/([^/]+)$/;
const REGION = /^[a-z][a-z0-9-]*$/;

/** Path segments keep `@` (Claude's `claude-sonnet-4@20250514`) as Google's own URLs show it. */
const segment = (s: string) => encodeURIComponent(s).replace(/%40/g, '@');

function targetOf(conn: ProviderConnection, model: string, cred: Credential): Target {
  const m = MODEL_PATH.exec(model.trim());
  const name = m ? m[4] : model.trim();
  if (!name)
    throw new ProviderError(
      'provider_bad_request',
      'Vertex AI needs a model id (e.g. gemini-2.5-flash); the run has none',
    );
  const publisher = m ? m[3] : /^claude/i.test(name) ? 'anthropic' : 'google';
  if (publisher !== 'google' && publisher !== 'anthropic') {
    throw new ProviderError(
      'provider_bad_request',
      `Orrery's Vertex AI driver runs Google (Gemini) and Anthropic (Claude) models; publisher "${publisher}" of ${JSON.stringify(model)} is not supported`,
    );
  }
  const region = (m?.[2] ?? stringConfig(conn, 'region') ?? VERTEX_DEFAULT_REGION).toLowerCase();
  if (!REGION.test(region))
    throw new ProviderError(
      'provider_bad_request',
      `Vertex AI region ${JSON.stringify(region)} is not a Google Cloud location (e.g. us-central1, europe-west1, global)`,
    );
  const project =
    m?.[1] ?? stringConfig(conn, 'project') ?? (cred.kind === 'service_account' ? cred.account.project_id : undefined);
  if (!project) {
    throw new ProviderError(
      'provider_bad_request',
      "Vertex AI needs a Google Cloud project: set the environment's config.project (or use a service account key that has a project_id)",
    );
  }
  let base: string;
  let label = 'Vertex AI';
  const given = conn.endpoint_url?.trim();
  if (given) {
    try {
      new URL(given);
    } catch {
      throw new ProviderError('provider_bad_request', `the endpoint URL ${JSON.stringify(given)} is not a valid URL`);
    }
    base = trimSlashes(given).replace(/\/v1$/, '');
    label = `Vertex AI at ${base}`;
  } else {
    base = region === 'global' ? 'https://aiplatform.googleapis.com' : `https://${region}-aiplatform.googleapis.com`;
  }
  return {
    modelUrl: `${base}/v1/projects/${segment(project)}/locations/${segment(region)}/publishers/${publisher}/models/${segment(name)}`,
    label,
    publisher,
  };
}

// ---------------------------------------------------------------------------------------------
// The driver

export class VertexAIDriver implements ModelDriver {
  readonly provider = 'vertexai';

  /** Claude on Vertex: the Messages driver on Vertex's URLs, with the Google token. */
  private readonly claude = new AnthropicMessagesDriver({
    provider: 'vertexai',
    route: async (conn, req, stream): Promise<AnthropicRoute> => {
      const cred = credentialOf(conn);
      const target = targetOf(conn, req.model, cred);
      return {
        url: `${target.modelUrl}:${stream ? 'streamRawPredict' : 'rawPredict'}`,
        label: target.label,
        headers: { authorization: `Bearer ${await accessToken(conn, cred)}` },
        body: ({ model: _model, ...body }) => ({ anthropic_version: VERTEX_ANTHROPIC_VERSION, ...body }),
      };
    },
  });

  async complete(conn: ProviderConnection, req: CompletionRequest, signal?: AbortSignal): Promise<Completion> {
    const cred = credentialOf(conn);
    const target = targetOf(conn, req.model, cred);
    try {
      if (target.publisher === 'anthropic') return await this.claude.complete(conn, req, signal);
      const res = await postToProvider({
        label: target.label,
        url: `${target.modelUrl}:generateContent`,
        headers: { authorization: `Bearer ${await accessToken(conn, cred)}` },
        body: geminiBody(req),
        signal,
        timeoutMs: timeoutOf(conn),
        outbound: conn.outbound,
      });
      const answer = (await res.json()) as GenerateContentResponse;
      const calls = new GeminiCallCollector(callSeedOf(req.messages));
      const piece = readGemini(target.label, answer, res.status, calls);
      if (!piece.candidate)
        throw new ProviderError('provider_error', `${target.label} answered without a candidate to read`, res.status);
      const out: Completion = { text: piece.text };
      if (piece.thoughts && req.include_thoughts) out.thoughts = piece.thoughts;
      if (piece.finish) out.finish_reason = piece.finish;
      const toolUse = calls.result();
      if (toolUse) {
        out.tool_use = toolUse;
        out.finish_reason = 'tool_use';
      }
      if (piece.usage) out.token_use = piece.usage;
      return out;
    } catch (err) {
      throw forgetRefused(cred, err);
    }
  }

  async *stream(
    conn: ProviderConnection,
    req: CompletionRequest,
    signal?: AbortSignal,
  ): AsyncGenerator<CompletionChunk> {
    const cred = credentialOf(conn);
    const target = targetOf(conn, req.model, cred);
    try {
      if (target.publisher === 'anthropic') {
        yield* this.claude.stream(conn, req, signal);
        return;
      }
      const { label } = target;
      const res = await postToProvider({
        label,
        url: `${target.modelUrl}:streamGenerateContent?alt=sse`,
        headers: { authorization: `Bearer ${await accessToken(conn, cred)}` },
        body: geminiBody(req),
        signal,
        timeoutMs: timeoutOf(conn),
        outbound: conn.outbound,
      });
      let finish: string | undefined;
      let usage: TokenUsage | undefined;
      const calls = new GeminiCallCollector(callSeedOf(req.messages));
      for await (const ev of res.events()) {
        if (ev.data.trim() === '') continue;
        let data: GenerateContentResponse;
        try {
          data = JSON.parse(ev.data) as GenerateContentResponse;
        } catch {
          throw new ProviderError(
            'provider_error',
            `${label} sent a stream piece that is not JSON: ${ev.data.slice(0, 200)}`,
          );
        }
        const piece = readGemini(label, data, undefined, calls);
        if (piece.text) yield { text: piece.text };
        if (piece.thoughts && req.include_thoughts) yield { thoughts: piece.thoughts };
        if (piece.finish) finish = piece.finish;
        if (piece.usage) usage = piece.usage;
      }
      // Vertex ends an SSE stream without a terminator; the last piece's finishReason proves it whole.
      if (!finish)
        throw new ProviderError(
          'provider_error',
          `${label} ended the stream before the answer was complete (no finishReason)`,
        );
      const last: CompletionChunk = { finish_reason: finish };
      const toolUse = calls.result();
      if (toolUse) {
        last.tool_use = toolUse;
        last.finish_reason = 'tool_use';
      }
      if (usage) last.token_use = usage;
      yield last;
    } catch (err) {
      throw forgetRefused(cred, err);
    }
  }

  async listModels(): Promise<ModelInfo[]> {
    return VERTEX_MODELS.map((m) => ({ ...m }));
  }
}

/** Vertex refused the token (401: revoked, expired early): the next run exchanges a fresh one. */
function forgetRefused(cred: Credential, err: unknown): unknown {
  if (cred.kind === 'service_account' && err instanceof ProviderError && err.upstreamStatus === 401)
    tokens.drop(cacheKeyOf(cred.account));
  return err;
}

// ---------------------------------------------------------------------------------------------
// Gemini's wire

/**
 * The GenerateContentRequest: system messages become `systemInstruction`; the other turns keep
 * their order as `user` / `model` contents, consecutive turns of one role merged into one content,
 * tool calls and results as function parts (gemini-parts.ts). A result schema asks for JSON with
 * `responseJsonSchema`, which takes any JSON Schema (`responseSchema` takes only Vertex's OpenAPI subset).
 */
function geminiBody(req: CompletionRequest): Record<string, unknown> {
  const system = req.messages.filter((m) => m.role === 'system');
  const body: Record<string, unknown> = { contents: toGeminiContents(req.messages.filter((m) => m.role !== 'system')) };
  if (system.length) body.systemInstruction = { parts: system.map((m) => ({ text: messageText(m) })) };
  if (req.tools && req.tools.length > 0) body.tools = toGeminiTools(req.tools);
  if (req.tool_choice && req.tools && req.tools.length > 0) body.toolConfig = toGeminiToolConfig(req.tool_choice);
  const g: Record<string, unknown> = {};
  if (req.temperature !== undefined) g.temperature = req.temperature;
  if (req.max_tokens !== undefined) g.maxOutputTokens = req.max_tokens;
  if (req.top_p !== undefined) g.topP = req.top_p;
  if (req.top_k !== undefined) g.topK = req.top_k;
  if (req.stop && req.stop.length > 0) g.stopSequences = req.stop;
  if (req.presence_penalty !== undefined) g.presencePenalty = req.presence_penalty;
  if (req.frequency_penalty !== undefined) g.frequencyPenalty = req.frequency_penalty;
  if (req.seed !== undefined) g.seed = req.seed;
  if (req.result_schema) {
    g.responseMimeType = 'application/json';
    g.responseJsonSchema = req.result_schema;
  }
  const thinking = geminiThinking(req);
  if (thinking) g.thinkingConfig = thinking;
  if (Object.keys(g).length) body.generationConfig = g;
  return body;
}

/**
 * `thinkingConfig`, as llumiverse's geminiThinkingConfig: a budget as given (0 turns thinking
 * off); an effort as Gemini 3's `thinkingLevel`, or, on earlier models, the budget llumiverse
 * gives that effort; thoughts returned only when asked for.
 */
function geminiThinking(req: CompletionRequest): Record<string, unknown> | undefined {
  const includeThoughts = req.include_thoughts === true;
  const budget = req.thinking_budget_tokens;
  if (budget !== undefined) return budget === 0 ? undefined : { includeThoughts, thinkingBudget: budget };
  if (req.effort) {
    const version = /gemini-(\d+)/i.exec(req.model);
    if (version && Number(version[1]) >= 3) return { includeThoughts, thinkingLevel: req.effort.toUpperCase() };
    return { includeThoughts, thinkingBudget: geminiBudgetForEffort(req.model, req.effort) };
  }
  return includeThoughts ? { includeThoughts } : undefined;
}

function geminiBudgetForEffort(model: string, effort: string): number {
  const lite = model.includes('flash-lite');
  const flash = model.includes('flash') && !lite;
  const pro = model.includes('pro');
  if (effort === 'minimal' || effort === 'low') return pro ? 128 : lite ? 512 : flash ? 1 : 1024;
  if (effort === 'medium') return 8192;
  return pro ? 32768 : flash || lite ? 24576 : 8192;
}

/** Gemini's finish reasons in the vocabulary every other driver uses (OpenAI's). */
const FINISH: Record<string, string> = table({
  STOP: 'stop',
  MAX_TOKENS: 'length',
  SAFETY: 'content_filter',
  RECITATION: 'content_filter',
  BLOCKLIST: 'content_filter',
  PROHIBITED_CONTENT: 'content_filter',
  SPII: 'content_filter',
  IMAGE_SAFETY: 'content_filter',
});
const toFinish = (reason: string) => FINISH[reason] ?? reason.toLowerCase();

interface GeminiPiece {
  candidate: boolean;
  text: string;
  /** Thought summaries, which Gemini sends only when `includeThoughts` asked for them. */
  thoughts?: string;
  finish?: string;
  usage?: TokenUsage;
}

/** One GenerateContentResponse (a whole answer, or one piece of a stream). */
function readGemini(
  label: string,
  answer: GenerateContentResponse,
  status: number | undefined,
  calls: GeminiCallCollector,
): GeminiPiece {
  if (!answer || typeof answer !== 'object')
    throw new ProviderError(
      'provider_error',
      `${label} answered something that is not a GenerateContentResponse`,
      status,
    );
  if (answer.error !== undefined && answer.error !== null) throw answerError(label, answer);
  const candidate = Array.isArray(answer.candidates) ? answer.candidates[0] : undefined;
  const blocked = answer.promptFeedback?.blockReason;
  if (!candidate && blocked && blocked !== 'BLOCKED_REASON_UNSPECIFIED') {
    const why = answer.promptFeedback?.blockReasonMessage;
    throw new ProviderError(
      'provider_bad_request',
      `${label} blocked the prompt (${blocked})${why ? `: ${why}` : ''}`,
      status,
    );
  }
  const parts = Array.isArray(candidate?.content?.parts) ? candidate.content.parts : [];
  calls.push(parts);
  // Thought summaries (`thought: true`) are the model's reasoning, not its answer.
  const text = parts
    .filter((p) => p && typeof p.text === 'string' && p.thought !== true)
    .map((p) => p.text as string)
    .join('');
  const thoughts = parts
    .filter((p) => p && typeof p.text === 'string' && p.thought === true)
    .map((p) => p.text as string)
    .join('');
  const out: GeminiPiece = { candidate: candidate !== undefined, text };
  if (thoughts) out.thoughts = thoughts;
  const reason = candidate?.finishReason;
  if (typeof reason === 'string' && reason && reason !== 'FINISH_REASON_UNSPECIFIED') out.finish = toFinish(reason);
  const usage = toTokenUsage(answer.usageMetadata);
  if (usage) out.usage = usage;
  return out;
}

/**
 * `usageMetadata` → token_use. The result counts the answer and the model's thinking
 * (`thoughtsTokenCount`, billed as output), so prompt + result = total.
 */
function toTokenUsage(u: UsageMetadata | undefined): TokenUsage | undefined {
  if (!u || typeof u !== 'object') return undefined;
  const out: TokenUsage = {};
  if (typeof u.promptTokenCount === 'number') out.prompt = u.promptTokenCount;
  if (typeof u.candidatesTokenCount === 'number' || typeof u.thoughtsTokenCount === 'number') {
    out.result = (u.candidatesTokenCount ?? 0) + (u.thoughtsTokenCount ?? 0);
  }
  // Thinking tokens are in result above, cached content in prompt; both priced apart (src/pricing).
  if (u.thoughtsTokenCount) out.reasoning = u.thoughtsTokenCount;
  if (u.cachedContentTokenCount) out.cache_read = u.cachedContentTokenCount;
  if (typeof u.totalTokenCount === 'number') out.total = u.totalTokenCount;
  else if (out.prompt !== undefined && out.result !== undefined) out.total = out.prompt + out.result;
  return Object.keys(out).length > 0 ? out : undefined;
}

/** An `{error:{code,message,status}}` inside a 2xx answer or a stream: the error's own code decides. */
function answerError(label: string, answer: GenerateContentResponse): ProviderError {
  const err = answer.error as { code?: unknown } | string;
  const said = providerMessage(answer) ?? 'unknown error';
  const code = typeof err === 'object' && typeof err.code === 'number' ? err.code : 500;
  return new ProviderError(codeForStatus(code), `${label} failed mid-answer: ${said}`, code, isRetryableStatus(code));
}

interface UsageMetadata {
  promptTokenCount?: number;
  candidatesTokenCount?: number;
  thoughtsTokenCount?: number;
  cachedContentTokenCount?: number;
  totalTokenCount?: number;
}

interface GenerateContentResponse {
  candidates?: {
    content?: { role?: string; parts?: GeminiPart[] };
    finishReason?: string;
  }[];
  promptFeedback?: { blockReason?: string; blockReasonMessage?: string };
  usageMetadata?: UsageMetadata;
  error?: unknown;
}
