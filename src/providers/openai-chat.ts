/**
 * OpenAI Chat Completions (`POST {base}/chat/completions`): OpenAI itself and every server that
 * speaks the same wire (Ollama, vLLM, llama.cpp, LM Studio, Groq, Together, Mistral, xAI, OpenRouter).
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
} from './driver.ts';
import { codeForStatus, postToProvider, providerMessage, timeoutOf, trimSlashes } from './provider-http.ts';
import { MODEL_LIST_TIMEOUT_MS, modelList } from './model-list.ts';
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

export interface OpenAIChatOptions {
  /** Provider id this driver answers for: openai, openai_compatible, groq, … */
  provider: string;
  /** Human name for messages ("OpenAI", "Groq"). */
  name: string;
  /** Used when the environment has no endpoint_url; without one, endpoint_url is required. */
  defaultBaseUrl?: string;
  /** Refuse to call without a key (hosted APIs); local servers usually need none. */
  requiresApiKey: boolean;
  /** OpenAI deprecated `max_tokens` for `max_completion_tokens` (reasoning models refuse the old name); most compatible servers only know `max_tokens`. */
  maxTokensField: 'max_tokens' | 'max_completion_tokens';
  /** Send `stream_options: {include_usage: true}`; off for servers that reject unknown fields. Overridable with `conn.config.stream_usage`. */
  streamUsage: boolean;
  /**
   * Where a chat completion goes and how it authenticates, for APIs that put the model in the URL
   * or take another header (Azure); by default `{base}/chat/completions` with a bearer key.
   */
  route?: (conn: ProviderConnection, model: string) => ChatRoute;
}

export interface ChatRoute {
  url: string;
  /** For messages: "Azure OpenAI at https://…". */
  label: string;
  headers: Record<string, string>;
  /** Whether the body names the model (Azure deployment URLs do instead). */
  modelInBody: boolean;
  /** Where the server lists its models (`GET …/models`), when it has such a list. */
  modelsUrl?: string;
}

/**
 * Base URL rule: an endpoint_url is used as the base, as given, like the official SDKs' `baseURL`
 * (`http://host:8000/v1`, `https://api.groq.com/openai/v1`, `https://openrouter.ai/api/v1`), and
 * `/chat/completions` is appended. Only a bare origin (no path, e.g. `http://localhost:11434`) gets
 * `/v1` added, since no known server serves chat completions at the root.
 */
export function openAIBaseUrl(endpointUrl: string): string {
  const trimmed = trimSlashes(endpointUrl.trim());
  let url: URL;
  try {
    url = new URL(trimmed);
  } catch {
    throw new ProviderError(
      'provider_bad_request',
      `the endpoint URL ${JSON.stringify(endpointUrl)} is not a valid URL`,
    );
  }
  return url.pathname === '/' || url.pathname === '' ? `${trimmed}/v1` : trimmed;
}

export class OpenAIChatDriver implements ModelDriver {
  readonly provider: string;

  constructor(private readonly opts: OpenAIChatOptions) {
    this.provider = opts.provider;
  }

  async complete(conn: ProviderConnection, req: CompletionRequest, signal?: AbortSignal): Promise<Completion> {
    const route = this.routeOf(conn, req.model);
    const { label } = route;
    const res = await this.post(conn, route, this.body(conn, req, false, route), signal);
    const answer = (await res.json()) as ChatCompletion;
    const choice = Array.isArray(answer?.choices) ? answer.choices[0] : undefined;
    if (!choice || typeof choice.message !== 'object' || choice.message === null) {
      throw new ProviderError(
        'provider_error',
        `${label} answered without a choice to read (no choices[0].message)`,
        res.status,
      );
    }
    const m = choice.message;
    // A refusal comes with content null; its words are still the answer the run should record.
    const text = typeof m.content === 'string' ? m.content : typeof m.refusal === 'string' ? m.refusal : '';
    const out: Completion = { text };
    // Compatible servers (DeepSeek, vLLM, Groq, OpenRouter) return the model's reasoning beside its answer.
    const thoughts = reasoningOf(m);
    if (req.include_thoughts && thoughts) out.thoughts = thoughts;
    const calls = fromOpenAIToolCalls(m.tool_calls);
    const finish = openAIFinish(choice.finish_reason, calls !== undefined);
    if (finish) out.finish_reason = finish;
    if (calls) out.tool_use = calls;
    const usage = toTokenUsage(answer.usage);
    if (usage) out.token_use = usage;
    return out;
  }

  async *stream(
    conn: ProviderConnection,
    req: CompletionRequest,
    signal?: AbortSignal,
  ): AsyncGenerator<CompletionChunk> {
    const route = this.routeOf(conn, req.model);
    const { label } = route;
    const res = await this.post(conn, route, this.body(conn, req, true, route), signal);
    let finish: string | undefined;
    let usage: TokenUsage | undefined;
    let done = false;
    const calls = new ToolCallAssembler();
    for await (const ev of res.events()) {
      if (ev.data === '[DONE]') {
        done = true;
        break;
      }
      if (ev.data.trim() === '') continue;
      let chunk: ChatCompletionChunk;
      try {
        chunk = JSON.parse(ev.data) as ChatCompletionChunk;
      } catch {
        throw new ProviderError(
          'provider_error',
          `${label} sent a stream piece that is not JSON: ${ev.data.slice(0, 200)}`,
        );
      }
      if (chunk.error !== undefined && chunk.error !== null) throw streamError(label, chunk);
      const choice = Array.isArray(chunk.choices) ? chunk.choices[0] : undefined;
      const piece = choice?.delta?.content;
      if (typeof piece === 'string' && piece !== '') yield { text: piece };
      if (req.include_thoughts && choice?.delta) {
        const thought = reasoningOf(choice.delta);
        if (thought) yield { thoughts: thought };
      }
      calls.push(choice?.delta?.tool_calls);
      if (choice?.finish_reason) finish = choice.finish_reason;
      const u = toTokenUsage(chunk.usage);
      if (u) usage = u;
    }
    // Some compatible servers omit [DONE]; a finish_reason still proves the answer is whole.
    if (!done && !finish) {
      throw new ProviderError('provider_error', `${label} ended the stream before the answer was complete`);
    }
    const last: CompletionChunk = {};
    const toolUse = calls.result();
    const finishReason = openAIFinish(finish, toolUse !== undefined);
    if (finishReason) last.finish_reason = finishReason;
    if (toolUse) last.tool_use = toolUse;
    if (usage) last.token_use = usage;
    if (last.finish_reason || last.token_use) yield last;
  }

  /**
   * `GET {base}/models`: OpenAI, Groq, Mistral, xAI, Ollama, vLLM and TGI answer `{data: [{id}]}`,
   * Together a bare array. Undefined where the API has no list (Azure deployment URLs).
   */
  async listModels(conn: ProviderConnection, signal?: AbortSignal): Promise<ModelInfo[] | undefined> {
    const route = this.routeOf(conn, '');
    if (!route.modelsUrl) return undefined;
    const res = await postToProvider({
      label: route.label,
      url: route.modelsUrl,
      method: 'GET',
      headers: route.headers,
      signal,
      timeoutMs: Math.min(timeoutOf(conn), MODEL_LIST_TIMEOUT_MS),
      outbound: conn.outbound,
    });
    return modelList(await res.json(), route.label);
  }

  /** The default route: `{base}/chat/completions` with `Authorization: Bearer <key>`. */
  private routeOf(conn: ProviderConnection, model: string): ChatRoute {
    if (this.opts.route) return this.opts.route(conn, model);
    const { base, label } = this.target(conn);
    const headers: Record<string, string> = {};
    if (conn.api_key) headers.authorization = `Bearer ${conn.api_key}`;
    else if (this.opts.requiresApiKey) {
      throw new ProviderError('provider_auth', `${label} needs an API key; the environment has none`);
    }
    return { url: `${base}/chat/completions`, label, headers, modelInBody: true, modelsUrl: `${base}/models` };
  }

  private target(conn: ProviderConnection): { base: string; label: string } {
    const given = conn.endpoint_url?.trim();
    if (given) {
      const base = openAIBaseUrl(given);
      // A custom endpoint is named in messages: "which server?" is the first question.
      return { base, label: `${this.opts.name} at ${base}` };
    }
    if (!this.opts.defaultBaseUrl) {
      throw new ProviderError(
        'provider_bad_request',
        `${this.opts.name} needs an endpoint URL (the server's base URL, e.g. http://localhost:11434/v1); the environment has none`,
      );
    }
    return { base: this.opts.defaultBaseUrl, label: this.opts.name };
  }

  private body(
    conn: ProviderConnection,
    req: CompletionRequest,
    stream: boolean,
    route: ChatRoute,
  ): Record<string, unknown> {
    const body: Record<string, unknown> = {
      ...(route.modelInBody ? { model: req.model } : {}),
      messages: toOpenAIMessages(req.messages, route.label, req.image_detail),
    };
    if (req.tools && req.tools.length > 0) body.tools = toOpenAITools(req.tools);
    if (req.tool_choice) body.tool_choice = toOpenAIToolChoice(req.tool_choice, this.provider);
    if (req.temperature !== undefined) body.temperature = req.temperature;
    if (req.top_p !== undefined) body.top_p = req.top_p;
    // top_k is not part of Chat Completions; OpenAI refuses unknown fields, so it is left out.
    if (req.presence_penalty !== undefined) body.presence_penalty = req.presence_penalty;
    if (req.frequency_penalty !== undefined) body.frequency_penalty = req.frequency_penalty;
    if (req.seed !== undefined) body.seed = req.seed;
    if (req.effort !== undefined) body.reasoning_effort = req.effort;
    if (req.prompt_cache_key !== undefined) body.prompt_cache_key = req.prompt_cache_key;
    if (req.max_tokens !== undefined) body[maxTokensFieldOf(conn) ?? this.opts.maxTokensField] = req.max_tokens;
    if (req.stop && req.stop.length > 0) body.stop = req.stop;
    if (req.result_schema) {
      // strict:false because OpenAI's strict mode accepts only a subset of JSON Schema.
      body.response_format = {
        type: 'json_schema',
        json_schema: { name: 'result', schema: req.result_schema, strict: false },
      };
    }
    if (stream) {
      body.stream = true;
      const wantUsage =
        typeof conn.config?.stream_usage === 'boolean' ? conn.config.stream_usage : this.opts.streamUsage;
      if (wantUsage) body.stream_options = { include_usage: true };
    }
    return body;
  }

  private post(
    conn: ProviderConnection,
    route: ChatRoute,
    body: Record<string, unknown>,
    signal: AbortSignal | undefined,
  ) {
    return postToProvider({
      label: route.label,
      url: route.url,
      headers: route.headers,
      body,
      signal,
      timeoutMs: timeoutOf(conn),
      outbound: conn.outbound,
    });
  }
}

/** The reasoning text a compatible server sends beside the answer: `reasoning_content` (DeepSeek, vLLM) or `reasoning` (Groq, OpenRouter). */
function reasoningOf(m: { reasoning_content?: unknown; reasoning?: unknown }): string | undefined {
  const r = typeof m.reasoning_content === 'string' ? m.reasoning_content : m.reasoning;
  return typeof r === 'string' && r !== '' ? r : undefined;
}

/** `config.max_tokens_field`: `max_tokens` or `max_completion_tokens`, for a server that knows only one. */
function maxTokensFieldOf(conn: ProviderConnection): 'max_tokens' | 'max_completion_tokens' | undefined {
  const f = conn.config?.max_tokens_field;
  return f === 'max_tokens' || f === 'max_completion_tokens' ? f : undefined;
}

/** `usage` → token_use; absent or null usage gives undefined, so "unknown" never reads as zero. */
function toTokenUsage(u: OpenAIUsage | null | undefined): TokenUsage | undefined {
  if (!u || typeof u !== 'object') return undefined;
  const out: TokenUsage = {};
  if (typeof u.prompt_tokens === 'number') out.prompt = u.prompt_tokens;
  if (typeof u.completion_tokens === 'number') out.result = u.completion_tokens;
  if (typeof u.total_tokens === 'number') out.total = u.total_tokens;
  else if (out.prompt !== undefined && out.result !== undefined) out.total = out.prompt + out.result;
  // Parts of prompt / completion, priced apart (src/pricing/cost.ts); zeros are left out.
  const cached = u.prompt_tokens_details?.cached_tokens;
  const reasoning = u.completion_tokens_details?.reasoning_tokens;
  if (typeof cached === 'number' && cached > 0) out.cache_read = cached;
  if (typeof reasoning === 'number' && reasoning > 0) out.reasoning = reasoning;
  return Object.keys(out).length > 0 ? out : undefined;
}

/** A `data: {"error": …}` line: the stream has no HTTP status left, so the error's type/code decides. */
function streamError(label: string, chunk: ChatCompletionChunk): ProviderError {
  const err = chunk.error as { type?: unknown; code?: unknown; status?: unknown } | string;
  const said = providerMessage(chunk) ?? 'unknown error';
  const message = `${label} failed mid-stream: ${said}`;
  if (typeof err === 'object') {
    if (typeof err.status === 'number') return new ProviderError(codeForStatus(err.status), message, err.status);
    const kind = `${String(err.type ?? '')} ${String(err.code ?? '')}`;
    if (/rate_limit/.test(kind)) return new ProviderError('provider_rate_limited', message, undefined, true);
    if (/invalid_api_key|authentication|permission/.test(kind)) return new ProviderError('provider_auth', message);
    if (/invalid_request|not_found|context_length/.test(kind))
      return new ProviderError('provider_bad_request', message);
  }
  return new ProviderError('provider_error', message, undefined, true);
}

interface OpenAIUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  total_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number | null } | null;
  completion_tokens_details?: { reasoning_tokens?: number | null } | null;
}

interface ChatCompletion {
  choices?: {
    message?: {
      content?: string | null;
      refusal?: string | null;
      tool_calls?: WireToolCall[] | null;
      reasoning_content?: string | null;
      reasoning?: string | null;
    } | null;
    finish_reason?: string | null;
  }[];
  usage?: OpenAIUsage | null;
}

interface ChatCompletionChunk {
  choices?: {
    delta?: {
      content?: string | null;
      tool_calls?: WireToolCallDelta[] | null;
      reasoning_content?: string | null;
      reasoning?: string | null;
    };
    finish_reason?: string | null;
  }[];
  usage?: OpenAIUsage | null;
  error?: unknown;
}
