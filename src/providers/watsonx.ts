/**
 * IBM watsonx.ai (the regional runtime API, https://<region>.ml.cloud.ibm.com).
 *
 * Authentication: the environment's key is an IBM Cloud API key, exchanged at IBM Cloud IAM
 * (`POST https://iam.cloud.ibm.com/identity/token`, grant type
 * `urn:ibm:params:oauth:grant-type:apikey`) for a bearer token that lives about an hour; the token
 * is cached (TokenCache) and shared by every run with the same key.
 *
 * Which API: the chat API (`POST /ml/v1/text/chat`, `/ml/v1/text/chat_stream`) by default.
 * Vertesia's llumiverse driver uses the older text generation API with its generic text prompt
 * ("CONTEXT: … INSTRUCTION: …", "USER:/ASSISTANT:" labels) and no decoding_method, so the model's
 * chat template is never applied and greedy decoding silently ignores the temperature; for the
 * instruct models watsonx serves today that is clearly worse, and IBM documents the chat API as the
 * way to talk to them (roles kept, penalties, seed, JSON mode). `config.api: "generation"` keeps
 * llumiverse's way (`/ml/v1/text/generation[_stream]`, the same text prompt) for models that only
 * have the text generation function.
 *
 * Configuration: endpoint URL (required), `config.project_id` or `config.space_id` (required),
 * `config.version` (API version date, default WATSONX_API_VERSION), `config.api` ("chat" |
 * "generation"), `config.iam_url` (another IAM token endpoint: IBM Cloud's private endpoint, tests).
 */
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
import { postToProvider, providerMessage, timeoutOf, trimSlashes, type ProviderResponse } from './provider-http.ts';
import { TokenCache } from './token-cache.ts';
import { schemaInstruction } from './anthropic-messages.ts';
import { conversationText } from './replicate.ts';
import {
  ToolCallAssembler,
  fromOpenAIToolCalls,
  openAIFinish,
  toOpenAIMessages,
  toOpenAITools,
  toOpenAIToolChoice,
  type WireToolCall,
  type WireToolCallDelta,
} from './openai-messages.ts';

const WATSONX_API_VERSION = '2024-05-31';
const IBM_IAM_URL = 'https://iam.cloud.ibm.com/identity/token';
const LABEL = 'watsonx.ai';

type Api = 'chat' | 'generation';

const stringConfig = (conn: ProviderConnection, name: string) => {
  const v = conn.config?.[name];
  return typeof v === 'string' && v.trim() ? v.trim() : undefined;
};

/** What every call needs: where, which version, which project or space. */
interface Target {
  base: string;
  label: string;
  version: string;
}

export class WatsonxDriver implements ModelDriver {
  readonly provider = 'watsonx';
  private readonly tokens = new TokenCache();

  async complete(conn: ProviderConnection, req: CompletionRequest, signal?: AbortSignal): Promise<Completion> {
    const api = apiOf(conn);
    const t = target(conn);
    const res = await this.call(
      conn,
      t,
      `/ml/v1/text/${api === 'chat' ? 'chat' : 'generation'}`,
      requestBody(conn, req, api),
      signal,
    );
    const answer = (await res.json()) as ChatAnswer & GenerationAnswer;
    if (api === 'chat') {
      const choice = Array.isArray(answer?.choices) ? answer.choices[0] : undefined;
      if (!choice || typeof choice.message !== 'object' || choice.message === null) {
        throw new ProviderError(
          'provider_error',
          `${t.label} answered without a choice to read (no choices[0].message)`,
          res.status,
        );
      }
      const out: Completion = { text: typeof choice.message.content === 'string' ? choice.message.content : '' };
      const calls = fromOpenAIToolCalls(choice.message.tool_calls);
      const finish = openAIFinish(choice.finish_reason, calls !== undefined);
      if (finish) out.finish_reason = toFinish(finish);
      if (calls) out.tool_use = calls;
      const usage = chatUsage(answer.usage);
      if (usage) out.token_use = usage;
      return out;
    }
    const result = Array.isArray(answer?.results) ? answer.results[0] : undefined;
    if (!result || typeof result !== 'object') {
      throw new ProviderError(
        'provider_error',
        `${t.label} answered without a result to read (no results[0])`,
        res.status,
      );
    }
    const out: Completion = { text: typeof result.generated_text === 'string' ? result.generated_text : '' };
    if (result.stop_reason) out.finish_reason = toFinish(result.stop_reason);
    const usage = generationUsage(result);
    if (usage) out.token_use = usage;
    return out;
  }

  async *stream(
    conn: ProviderConnection,
    req: CompletionRequest,
    signal?: AbortSignal,
  ): AsyncGenerator<CompletionChunk> {
    const api = apiOf(conn);
    const t = target(conn);
    const path = `/ml/v1/text/${api === 'chat' ? 'chat_stream' : 'generation_stream'}`;
    const res = await this.call(conn, t, path, requestBody(conn, req, api), signal);
    let finish: string | undefined;
    let usage: TokenUsage | undefined;
    const calls = new ToolCallAssembler();
    for await (const ev of res.events()) {
      if (ev.data.trim() === '') continue;
      let data: ChatAnswer & GenerationAnswer & { errors?: unknown };
      try {
        data = JSON.parse(ev.data) as typeof data;
      } catch {
        throw new ProviderError(
          'provider_error',
          `${t.label} sent a stream event that is not JSON: ${ev.data.slice(0, 200)}`,
        );
      }
      // An error after the answer started: `event: error` with IBM's `{errors:[…], status_code}`.
      if (ev.event === 'error' || Array.isArray(data?.errors)) throw streamError(t.label, data);
      if (api === 'chat') {
        const choice = Array.isArray(data.choices) ? data.choices[0] : undefined;
        const piece = choice?.delta?.content;
        if (typeof piece === 'string' && piece !== '') yield { text: piece };
        calls.push(choice?.delta?.tool_calls);
        if (choice?.finish_reason) finish = choice.finish_reason;
        const u = chatUsage(data.usage);
        if (u) usage = u;
      } else {
        const result = Array.isArray(data.results) ? data.results[0] : undefined;
        if (!result) continue;
        if (typeof result.generated_text === 'string' && result.generated_text !== '')
          yield { text: result.generated_text };
        if (result.stop_reason && result.stop_reason !== 'not_finished') finish = result.stop_reason;
        // Each event carries the counts so far: the last one holds the totals.
        const u = generationUsage(result);
        if (u) usage = u;
      }
    }
    if (!finish)
      throw new ProviderError('provider_error', `${t.label} ended the stream before the answer was complete`);
    const toolUse = calls.result();
    const last: CompletionChunk = { finish_reason: toFinish(openAIFinish(finish, toolUse !== undefined) ?? finish) };
    if (toolUse) last.tool_use = toolUse;
    if (usage) last.token_use = usage;
    yield last;
  }

  /** The foundation models of the region that have the chat (or text generation) function. */
  async listModels(conn: ProviderConnection): Promise<ModelInfo[]> {
    const api = apiOf(conn);
    const t = target(conn);
    const filter = api === 'chat' ? 'function_text_chat' : 'function_text_generation';
    const url = `${t.base}/ml/v1/foundation_model_specs?version=${encodeURIComponent(t.version)}&filters=${filter}&limit=200`;
    // The specs are public; a key, when there is one, is sent anyway (some deployments want it).
    const headers: Record<string, string> = conn.api_key?.trim()
      ? { authorization: `Bearer ${await this.token(conn)}` }
      : {};
    const res = await postToProvider({
      label: t.label,
      url,
      method: 'GET',
      headers,
      timeoutMs: timeoutOf(conn),
      outbound: conn.outbound,
    });
    const answer = (await res.json()) as {
      resources?: { model_id?: string; label?: string; short_description?: string }[];
    };
    if (!Array.isArray(answer?.resources))
      throw new ProviderError('provider_error', `${t.label} answered a model list without resources`, res.status);
    return answer.resources
      .filter((m) => m && typeof m.model_id === 'string')
      .map((m) => {
        const info: ModelInfo = {
          id: m.model_id!,
          name: typeof m.label === 'string' && m.label ? m.label : m.model_id!,
        };
        if (typeof m.short_description === 'string' && m.short_description) info.description = m.short_description;
        return info;
      });
  }

  /**
   * One authenticated POST. A 401 with a cached token (revoked, or expired early) drops it and
   * tries once more with a fresh one; a 401 with a token just issued is the answer.
   */
  private async call(
    conn: ProviderConnection,
    t: Target,
    path: string,
    body: Record<string, unknown>,
    signal: AbortSignal | undefined,
  ): Promise<ProviderResponse> {
    const url = `${t.base}${path}?version=${encodeURIComponent(t.version)}`;
    for (let attempt = 0; ; attempt++) {
      let fresh = false;
      const token = await this.token(conn, () => (fresh = true));
      try {
        return await postToProvider({
          label: t.label,
          url,
          headers: { authorization: `Bearer ${token}` },
          body,
          signal,
          timeoutMs: timeoutOf(conn),
          outbound: conn.outbound,
        });
      } catch (err) {
        if (err instanceof ProviderError && err.upstreamStatus === 401) {
          this.tokens.drop(credentialOf(conn));
          if (!fresh && attempt === 0) continue;
        }
        throw err;
      }
    }
  }

  /** The IAM bearer token for the environment's API key, from the cache or a new exchange. */
  private token(conn: ProviderConnection, onIssue?: () => void): Promise<string> {
    const key = conn.api_key?.trim();
    if (!key) throw new ProviderError('provider_auth', `${LABEL} needs an IBM Cloud API key; the environment has none`);
    return this.tokens.get(credentialOf(conn), async () => {
      onIssue?.();
      return exchange(conn, key);
    });
  }
}

/** The cache key: the same API key at another IAM endpoint is another credential. */
const credentialOf = (conn: ProviderConnection) => `${iamUrlOf(conn)}\n${conn.api_key?.trim() ?? ''}`;
const iamUrlOf = (conn: ProviderConnection) => stringConfig(conn, 'iam_url') ?? IBM_IAM_URL;

/** IBM Cloud IAM: API key → `{access_token, expires_in}`. A refused key is provider_auth with IBM's words. */
async function exchange(conn: ProviderConnection, apiKey: string): Promise<{ token: string; expiresInS: number }> {
  const label = 'IBM Cloud IAM';
  let res: ProviderResponse;
  try {
    res = await postToProvider({
      label,
      url: iamUrlOf(conn),
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      rawBody: new URLSearchParams({ grant_type: 'urn:ibm:params:oauth:grant-type:apikey', apikey: apiKey }).toString(),
      timeoutMs: Math.min(timeoutOf(conn), 60_000),
      outbound: conn.outbound,
    });
  } catch (err) {
    // IAM answers 400 (BXNIM0415E "Provided API key could not be found") for an unknown key.
    if (
      err instanceof ProviderError &&
      (err.upstreamStatus === 400 || err.upstreamStatus === 401 || err.upstreamStatus === 403)
    ) {
      throw new ProviderError('provider_auth', `${LABEL}: ${err.message}`, err.upstreamStatus);
    }
    throw err;
  }
  const answer = (await res.json()) as { access_token?: unknown; expires_in?: unknown; expiration?: unknown };
  if (typeof answer?.access_token !== 'string' || !answer.access_token) {
    throw new ProviderError('provider_error', `${label} answered without an access_token`, res.status);
  }
  const expiresInS =
    typeof answer.expires_in === 'number'
      ? answer.expires_in
      : typeof answer.expiration === 'number'
        ? answer.expiration - Date.now() / 1000
        : 0;
  return { token: answer.access_token, expiresInS };
}

function apiOf(conn: ProviderConnection): Api {
  const api = stringConfig(conn, 'api');
  if (api === undefined || api === 'chat') return 'chat';
  if (api === 'generation' || api === 'text_generation') return 'generation';
  throw new ProviderError(
    'provider_bad_request',
    `${LABEL}: config.api must be "chat" or "generation", not ${JSON.stringify(api)}`,
  );
}

function target(conn: ProviderConnection): Target {
  const given = conn.endpoint_url?.trim();
  if (!given) {
    throw new ProviderError(
      'provider_bad_request',
      `${LABEL} needs the regional endpoint URL (e.g. https://us-south.ml.cloud.ibm.com); the environment has none`,
    );
  }
  try {
    new URL(given);
  } catch {
    throw new ProviderError('provider_bad_request', `the endpoint URL ${JSON.stringify(given)} is not a valid URL`);
  }
  // Accept the URL with IBM's API prefix as well: https://us-south.ml.cloud.ibm.com/ml/v1.
  const base = trimSlashes(given).replace(/\/ml\/v1$/, '');
  return { base, label: `${LABEL} at ${base}`, version: stringConfig(conn, 'version') ?? WATSONX_API_VERSION };
}

/** `project_id` or `space_id`: every inference call runs in one of them. */
function scopeOf(conn: ProviderConnection): Record<string, string> {
  const project = stringConfig(conn, 'project_id');
  if (project) return { project_id: project };
  const space = stringConfig(conn, 'space_id');
  if (space) return { space_id: space };
  throw new ProviderError(
    'provider_bad_request',
    `${LABEL} needs a project or deployment space: set config.project_id (or config.space_id) on the environment`,
  );
}

function requestBody(conn: ProviderConnection, req: CompletionRequest, api: Api): Record<string, unknown> {
  const scope = scopeOf(conn);
  if (api === 'chat') {
    // The chat API's messages are Chat Completions' (tool_calls, tool messages), but a system message is text only.
    const messages = toOpenAIMessages(req.messages, LABEL).map((m) =>
      m.role === 'system' && Array.isArray(m.content)
        ? { role: 'system', content: (m.content as { text?: string }[]).map((p) => p.text ?? '').join('\n\n') }
        : m,
    );
    const body: Record<string, unknown> = { model_id: req.model, ...scope, messages };
    if (req.tools && req.tools.length > 0) {
      body.tools = toOpenAITools(req.tools);
      if (req.tool_choice) body.tool_choice_option = toOpenAIToolChoice(req.tool_choice, 'watsonx');
    }
    if (req.max_tokens !== undefined) body.max_tokens = req.max_tokens;
    if (req.temperature !== undefined) body.temperature = req.temperature;
    if (req.top_p !== undefined) body.top_p = req.top_p;
    // The chat API has no top_k; it is left out.
    if (req.presence_penalty !== undefined) body.presence_penalty = req.presence_penalty;
    if (req.frequency_penalty !== undefined) body.frequency_penalty = req.frequency_penalty;
    if (req.seed !== undefined) body.seed = req.seed;
    if (req.stop && req.stop.length > 0) body.stop = req.stop;
    if (req.result_schema) {
      // JSON mode makes the answer JSON; the schema itself travels as a system instruction.
      body.response_format = { type: 'json_object' };
      const instruction = schemaInstruction(req.result_schema);
      const firstNonSystem = messages.findIndex((m) => m.role !== 'system');
      const systemCount = firstNonSystem === -1 ? messages.length : firstNonSystem;
      if (systemCount > 0)
        messages[systemCount - 1] = {
          role: 'system',
          content: `${String(messages[systemCount - 1].content)}\n\n${instruction}`,
        };
      else messages.unshift({ role: 'system', content: instruction });
    }
    return body;
  }
  const parameters: Record<string, unknown> = {
    // Greedy decoding ignores temperature, top_p and top_k: sample whenever the temperature asks for it.
    decoding_method: req.temperature !== undefined && req.temperature > 0 ? 'sample' : 'greedy',
  };
  if (req.max_tokens !== undefined) parameters.max_new_tokens = req.max_tokens;
  if (req.temperature !== undefined && req.temperature > 0) parameters.temperature = req.temperature;
  if (req.top_p !== undefined) parameters.top_p = req.top_p;
  if (req.top_k !== undefined) parameters.top_k = req.top_k;
  if (req.seed !== undefined) parameters.random_seed = req.seed;
  if (req.stop && req.stop.length > 0) parameters.stop_sequences = req.stop;
  return { model_id: req.model, ...scope, input: `${generationPrompt(req)}\n`, parameters };
}

/** llumiverse's generic text prompt: "CONTEXT: system", the turns, "IMPORTANT: the schema". */
function generationPrompt(req: CompletionRequest): string {
  const system = req.messages.filter((m) => m.role === 'system').map(messageText);
  const turns = req.messages.filter((m) => m.role !== 'system');
  const isChat = turns.some((m) => m.role === 'assistant');
  const out: string[] = [];
  if (system.length > 0) out.push(`CONTEXT: ${system.join('\n')}`);
  if (turns.length > 0) out.push((system.length > 0 && !isChat ? 'INSTRUCTION: ' : '') + conversationText(turns));
  if (req.result_schema) out.push(`IMPORTANT: ${schemaInstruction(req.result_schema)}`);
  return out.join('\n');
}

/** IBM's reasons in OpenAI's words: eos_token / stop_sequence → stop, max_tokens / token_limit → length. */
function toFinish(reason: string): string {
  switch (reason) {
    case 'eos_token':
    case 'stop_sequence':
      return 'stop';
    case 'max_tokens':
    case 'token_limit':
      return 'length';
    default:
      return reason;
  }
}

function chatUsage(u: ChatAnswer['usage']): TokenUsage | undefined {
  if (!u || typeof u !== 'object') return undefined;
  const out: TokenUsage = {};
  if (typeof u.prompt_tokens === 'number') out.prompt = u.prompt_tokens;
  if (typeof u.completion_tokens === 'number') out.result = u.completion_tokens;
  if (typeof u.total_tokens === 'number') out.total = u.total_tokens;
  else if (out.prompt !== undefined && out.result !== undefined) out.total = out.prompt + out.result;
  return Object.keys(out).length > 0 ? out : undefined;
}

function generationUsage(r: GenerationResult): TokenUsage | undefined {
  const out: TokenUsage = {};
  if (typeof r.input_token_count === 'number') out.prompt = r.input_token_count;
  if (typeof r.generated_token_count === 'number') out.result = r.generated_token_count;
  if (out.prompt !== undefined && out.result !== undefined) out.total = out.prompt + out.result;
  return Object.keys(out).length > 0 ? out : undefined;
}

function streamError(label: string, data: unknown): ProviderError {
  const said = providerMessage(data) ?? 'unknown error';
  const status = (data as { status_code?: unknown })?.status_code;
  const message = `${label} failed mid-stream: ${said}`;
  if (status === 429) return new ProviderError('provider_rate_limited', message, 429, true);
  if (typeof status === 'number' && status >= 400 && status < 500)
    return new ProviderError('provider_bad_request', message, status);
  return new ProviderError('provider_error', message, typeof status === 'number' ? status : undefined, true);
}

interface ChatAnswer {
  choices?: {
    message?: { content?: string | null; tool_calls?: WireToolCall[] | null } | null;
    delta?: { content?: string | null; tool_calls?: WireToolCallDelta[] | null };
    finish_reason?: string | null;
  }[];
  usage?: { prompt_tokens?: number; completion_tokens?: number; total_tokens?: number } | null;
}

interface GenerationResult {
  generated_text?: string;
  generated_token_count?: number;
  input_token_count?: number;
  stop_reason?: string;
}

interface GenerationAnswer {
  results?: GenerationResult[];
}
