/**
 * Anthropic Messages API (`POST {base}/v1/messages`, anthropic-version 2023-06-01).
 */
import {
  ProviderError,
  type Completion,
  type CompletionChunk,
  type CompletionRequest,
  type ModelDriver,
  type ProviderConnection,
  type TokenUsage,
} from './driver.ts';
import {
  isRetryableStatus,
  postToProvider,
  providerMessage,
  timeoutOf,
  trimSlashes,
  type ProviderResponse,
} from './provider-http.ts';
import { table } from '../util/own.ts';
import {
  ThinkingBlockAssembler,
  ToolBlockAssembler,
  fromAnthropicBlocks,
  thinkingOf,
  toAnthropicSystem,
  toAnthropicToolChoice,
  toAnthropicTools,
  toAnthropicTurns,
  type AnthropicBlock,
} from './anthropic-blocks.ts';

const ANTHROPIC_DEFAULT_BASE_URL = 'https://api.anthropic.com';
const ANTHROPIC_VERSION = '2023-06-01';
/** Anthropic requires max_tokens; this is what Orrery asks for when the run did not say. */
const ANTHROPIC_DEFAULT_MAX_TOKENS = 4096;

/**
 * Base URL rule: like the official SDK's `baseURL`, the endpoint_url is the origin (plus any proxy
 * path) and `/v1/messages` is appended; a trailing `/v1` is dropped first so both
 * `https://proxy/anthropic` and `https://proxy/anthropic/v1` reach `…/v1/messages`.
 */
export function anthropicBaseUrl(endpointUrl: string | undefined): string {
  const given = endpointUrl?.trim();
  if (!given) return ANTHROPIC_DEFAULT_BASE_URL;
  try {
    new URL(given);
  } catch {
    throw new ProviderError(
      'provider_bad_request',
      `the endpoint URL ${JSON.stringify(endpointUrl)} is not a valid URL`,
    );
  }
  return trimSlashes(given).replace(/\/v1$/, '');
}

/** Anthropic's stop reasons in the vocabulary every other driver uses (OpenAI's). */
const FINISH: Record<string, string> = table({
  end_turn: 'stop',
  stop_sequence: 'stop',
  max_tokens: 'length',
  tool_use: 'tool_use',
});
const toFinish = (stop: string) => FINISH[stop] ?? stop;

/** Anthropic error types → codes, for `event: error` in a stream (no HTTP status to go by). */
const ERROR_TYPES: Record<string, { code: ProviderError['code']; status: number }> = table({
  invalid_request_error: { code: 'provider_bad_request', status: 400 },
  authentication_error: { code: 'provider_auth', status: 401 },
  permission_error: { code: 'provider_auth', status: 403 },
  not_found_error: { code: 'provider_bad_request', status: 404 },
  request_too_large: { code: 'provider_bad_request', status: 413 },
  rate_limit_error: { code: 'provider_rate_limited', status: 429 },
  api_error: { code: 'provider_error', status: 500 },
  overloaded_error: { code: 'provider_error', status: 529 },
});

/**
 * Where a Messages request goes and how it authenticates, for platforms that host Claude under
 * their own URLs and credentials (Claude on Vertex AI: `…:rawPredict` with a Google access token).
 */
export interface AnthropicRoute {
  url: string;
  /** For messages: "Vertex AI", "Anthropic at https://…". */
  label: string;
  headers: Record<string, string>;
  /** The platform's changes to the Messages body (Vertex: `anthropic_version` in the body, the model in the URL). */
  body?: (body: Record<string, unknown>) => Record<string, unknown>;
}

export interface AnthropicMessagesOptions {
  /** Provider id the driver answers for; default `anthropic`. */
  provider?: string;
  /** By default `{base}/v1/messages` with `x-api-key`; may fetch a token first. */
  route?: (
    conn: ProviderConnection,
    req: CompletionRequest,
    stream: boolean,
  ) => AnthropicRoute | Promise<AnthropicRoute>;
}

export class AnthropicMessagesDriver implements ModelDriver {
  readonly provider: string;

  constructor(private readonly opts: AnthropicMessagesOptions = {}) {
    this.provider = opts.provider ?? 'anthropic';
  }

  async complete(conn: ProviderConnection, req: CompletionRequest, signal?: AbortSignal): Promise<Completion> {
    const { res, label } = await this.post(conn, req, false, signal);
    const answer = (await res.json()) as AnthropicMessage;
    if (!answer || typeof answer !== 'object' || !Array.isArray(answer.content)) {
      throw new ProviderError('provider_error', `${label} answered without content to read`, res.status);
    }
    const text = answer.content
      .filter((b) => b && b.type === 'text' && typeof b.text === 'string')
      .map((b) => b.text)
      .join('');
    const out: Completion = { text };
    if (req.include_thoughts) {
      const thoughts = answer.content
        .filter((b) => b && b.type === 'thinking' && typeof b.thinking === 'string')
        .map((b) => b.thinking)
        .join('\n\n');
      if (thoughts) out.thoughts = thoughts;
    }
    // Kept whatever include_thoughts says: the next turn of a tool loop must carry them back.
    const thinking = thinkingOf(answer.content);
    if (thinking) out.thinking = thinking;
    const calls = fromAnthropicBlocks(answer.content);
    if (answer.stop_reason) out.finish_reason = toFinish(answer.stop_reason);
    if (calls) {
      out.tool_use = calls;
      out.finish_reason = 'tool_use';
    }
    const usage = toTokenUsage(answer.usage, undefined);
    if (usage) out.token_use = usage;
    return out;
  }

  async *stream(
    conn: ProviderConnection,
    req: CompletionRequest,
    signal?: AbortSignal,
  ): AsyncGenerator<CompletionChunk> {
    const { res, label } = await this.post(conn, req, true, signal);
    let startUsage: AnthropicUsage | undefined;
    let deltaUsage: AnthropicUsage | undefined;
    let stop: string | undefined;
    let stopped = false;
    const calls = new ToolBlockAssembler();
    const thinking = new ThinkingBlockAssembler();
    for await (const ev of res.events()) {
      let data: StreamEvent;
      try {
        data = JSON.parse(ev.data) as StreamEvent;
      } catch {
        throw new ProviderError(
          'provider_error',
          `${label} sent a stream event that is not JSON: ${ev.data.slice(0, 200)}`,
        );
      }
      const type = typeof data?.type === 'string' ? data.type : ev.event;
      if (type === 'error') throw streamError(label, data);
      if (type === 'message_start') startUsage = data.message?.usage ?? undefined;
      else if (type === 'content_block_start') {
        calls.start(data.index ?? 0, data.content_block);
        thinking.start(data.index ?? 0, data.content_block);
      } else if (type === 'content_block_delta') {
        const d = data.delta;
        if (d?.type === 'text_delta' && typeof d.text === 'string' && d.text !== '') yield { text: d.text };
        if (d?.type === 'thinking_delta' && typeof d.thinking === 'string' && d.thinking) {
          thinking.thinking(data.index ?? 0, d.thinking);
          if (req.include_thoughts) yield { thoughts: d.thinking };
        }
        if (d?.type === 'signature_delta' && typeof d.signature === 'string')
          thinking.signature(data.index ?? 0, d.signature);
        if (d?.type === 'input_json_delta' && typeof d.partial_json === 'string')
          calls.delta(data.index ?? 0, d.partial_json);
      } else if (type === 'content_block_stop') {
        const block = thinking.stop(data.index ?? 0);
        if (block) yield { thinking_block: block };
      } else if (type === 'message_delta') {
        if (data.delta?.stop_reason) stop = data.delta.stop_reason;
        if (data.usage) deltaUsage = data.usage;
      } else if (type === 'message_stop') {
        stopped = true;
        break;
      }
      // ping and unknown future events carry nothing to keep
    }
    if (!stopped) throw new ProviderError('provider_error', `${label} ended the stream before message_stop`);
    const last: CompletionChunk = {};
    if (stop) last.finish_reason = toFinish(stop);
    const toolUse = calls.result();
    if (toolUse) {
      last.tool_use = toolUse;
      last.finish_reason = 'tool_use';
    }
    const usage = toTokenUsage(startUsage, deltaUsage);
    if (usage) last.token_use = usage;
    if (last.finish_reason || last.token_use) yield last;
  }

  private label(conn: ProviderConnection): string {
    return conn.endpoint_url?.trim() ? `Anthropic at ${anthropicBaseUrl(conn.endpoint_url)}` : 'Anthropic';
  }

  /** The default route: Anthropic's own API with the environment's key. */
  private defaultRoute(conn: ProviderConnection): AnthropicRoute {
    const label = this.label(conn);
    if (!conn.api_key) throw new ProviderError('provider_auth', `${label} needs an API key; the environment has none`);
    return {
      label,
      url: `${anthropicBaseUrl(conn.endpoint_url)}/v1/messages`,
      headers: { 'x-api-key': conn.api_key, 'anthropic-version': ANTHROPIC_VERSION },
    };
  }

  private async post(
    conn: ProviderConnection,
    req: CompletionRequest,
    stream: boolean,
    signal: AbortSignal | undefined,
  ): Promise<{ res: ProviderResponse; label: string }> {
    const route = this.opts.route ? await this.opts.route(conn, req, stream) : this.defaultRoute(conn);
    const body = requestBody(req, stream);
    const res = await postToProvider({
      label: route.label,
      url: route.url,
      headers: route.headers,
      body: route.body ? route.body(body) : body,
      signal,
      timeoutMs: timeoutOf(conn),
      outbound: conn.outbound,
    });
    return { res, label: route.label };
  }
}

/** The Messages request: system text goes top-level, turns stay in order. */
function requestBody(req: CompletionRequest, stream: boolean): Record<string, unknown> {
  const system = toAnthropicSystem(
    req.messages.filter((m) => m.role === 'system'),
    req.result_schema ? [schemaInstruction(req.result_schema)] : [],
  );
  const budget = req.thinking_budget_tokens;
  const body: Record<string, unknown> = {
    model: req.model,
    // The thinking budget is part of max_tokens: unset, the answer keeps its default room beside it.
    max_tokens: req.max_tokens ?? (budget ?? 0) + ANTHROPIC_DEFAULT_MAX_TOKENS,
    messages: toAnthropicTurns(req.messages.filter((m) => m.role !== 'system')),
  };
  const thinking = claudeThinking(req);
  if (thinking) body.thinking = thinking;
  if (req.effort) body.output_config = { effort: req.effort };
  if (req.tools && req.tools.length > 0) body.tools = toAnthropicTools(req.tools);
  if (req.tool_choice) body.tool_choice = toAnthropicToolChoice(req.tool_choice);
  if (system !== undefined) body.system = system;
  if (req.temperature !== undefined) body.temperature = req.temperature;
  if (req.top_p !== undefined) body.top_p = req.top_p;
  if (req.top_k !== undefined) body.top_k = req.top_k;
  if (req.stop && req.stop.length > 0) body.stop_sequences = req.stop;
  if (req.prompt_cache) placeBreakpoints(body, req.prompt_cache);
  if (stream) body.stream = true;
  return body;
}

/**
 * The run's cache breakpoints, as llumiverse places them: on the last system block and the last
 * tool (the prompt before the messages, which repeats from call to call).
 */
function placeBreakpoints(body: Record<string, unknown>, cache: NonNullable<CompletionRequest['prompt_cache']>): void {
  const mark = { type: 'ephemeral', ...(cache.ttl ? { ttl: cache.ttl } : {}) };
  if (typeof body.system === 'string') body.system = [{ type: 'text', text: body.system }];
  const system = body.system as Array<Record<string, unknown>> | undefined;
  if (system?.length) system[system.length - 1] = { ...system[system.length - 1], cache_control: mark };
  const tools = body.tools as Array<Record<string, unknown>> | undefined;
  if (tools?.length) tools[tools.length - 1] = { ...tools[tools.length - 1], cache_control: mark };
}

/**
 * Claude's thinking, as llumiverse resolves it (drivers/src/shared/claude-thinking.ts): adaptive
 * when an effort is given to a model that thinks adaptively (Opus and Sonnet 4.6 onwards, Claude
 * 5), extended with `thinking_budget_tokens`, otherwise none.
 */
function claudeThinking(req: CompletionRequest): Record<string, unknown> | undefined {
  if (req.effort && thinksAdaptively(req.model))
    return { type: 'adaptive', display: req.include_thoughts ? 'summarized' : 'omitted' };
  if (req.thinking_budget_tokens !== undefined) return { type: 'enabled', budget_tokens: req.thinking_budget_tokens };
  return undefined;
}

/** `claude-opus-4-6…`, `claude-sonnet-4-6…` and any Claude 5; `claude-3-7-sonnet…` style ids are older. */
export function thinksAdaptively(model: string): boolean {
  const m = /claude-(opus|sonnet|haiku)-(\d+)(?:-(\d{1,2}))?(?=$|[-@:.])/i.exec(model);
  if (!m) return false;
  const major = Number(m[2]);
  const minor = Number(m[3] ?? 0);
  if (major >= 5) return true;
  return major === 4 && minor >= 6 && m[1]!.toLowerCase() !== 'haiku';
}

/** 2023-06-01 has no response_format, so the schema travels as an instruction. */
export function schemaInstruction(schema: Record<string, unknown>): string {
  return (
    'Answer only with a JSON value that conforms to the following JSON Schema. ' +
    'Do not add any other text, explanation or Markdown code fences.\n' +
    JSON.stringify(schema)
  );
}

/**
 * `input_tokens` excludes cached prompt tokens, so prompt = input + cache writes + cache reads.
 * In a stream, message_start holds the input side and message_delta the cumulative output.
 */
function toTokenUsage(start: AnthropicUsage | undefined, delta: AnthropicUsage | undefined): TokenUsage | undefined {
  const pick = (k: keyof AnthropicUsage) => {
    const d = delta?.[k];
    if (typeof d === 'number') return d;
    const s = start?.[k];
    return typeof s === 'number' ? s : undefined;
  };
  const input = pick('input_tokens');
  const output = pick('output_tokens');
  const out: TokenUsage = {};
  if (input !== undefined)
    out.prompt = input + (pick('cache_creation_input_tokens') ?? 0) + (pick('cache_read_input_tokens') ?? 0);
  if (output !== undefined) out.result = output;
  // Counted in prompt above and priced apart (src/pricing).
  const cacheRead = pick('cache_read_input_tokens');
  const cacheWrite = pick('cache_creation_input_tokens');
  if (cacheRead) out.cache_read = cacheRead;
  if (cacheWrite) out.cache_write = cacheWrite;
  if (out.prompt !== undefined && out.result !== undefined) out.total = out.prompt + out.result;
  return Object.keys(out).length > 0 ? out : undefined;
}

function streamError(label: string, data: StreamEvent): ProviderError {
  const type = typeof data.error?.type === 'string' ? data.error.type : 'api_error';
  const known = ERROR_TYPES[type] ?? ERROR_TYPES.api_error;
  const said = providerMessage(data) ?? type;
  return new ProviderError(
    known.code,
    `${label} failed mid-stream: ${said}`,
    undefined,
    isRetryableStatus(known.status),
  );
}

interface AnthropicUsage {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
}

interface AnthropicMessage {
  content?: AnthropicBlock[];
  stop_reason?: string | null;
  usage?: AnthropicUsage;
}

interface StreamEvent {
  type?: string;
  message?: { usage?: AnthropicUsage | null };
  index?: number;
  content_block?: AnthropicBlock;
  delta?: {
    type?: string;
    text?: string;
    thinking?: string;
    signature?: string;
    partial_json?: string;
    stop_reason?: string | null;
  };
  usage?: AnthropicUsage;
  error?: { type?: string; message?: string };
}
