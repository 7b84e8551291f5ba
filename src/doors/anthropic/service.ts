/**
 * The Anthropic door's rules: a Messages request checked and turned into a run of the built-in
 * interaction `sys:anthropic` (runs/door-runs.ts) on the environment and model it addresses,
 * through the normal run path (virtual environments, retries, the result cache, limits, cost);
 * token counts for `count_tokens`, estimated by Orrery without a provider call.
 */
import type { Principal } from '../../auth/principal.ts';
import type { ChatMessage } from '../../providers/driver.ts';
import type { CallerInfo, RunService } from '../../runs/service.ts';
import type { Run } from '../../runs/model.ts';
import { normaliseTags } from '../../runs/plan.ts';
import type { ModelAddressing } from '../openai/addressing.ts';
import type { ConversationLinks } from '../openai/conversation-links.ts';
import { AnthropicRequestError, unsupported } from './errors.ts';
import {
  readCacheControl,
  readMessages,
  readStopSequences,
  readSystem,
  readToolChoice,
  readTools,
} from './messages.ts';
import { estimateTokens, type TokenCounter } from './token-count.ts';

const DOOR = 'anthropic';

type Json = Record<string, unknown>;

/** Fields of a Messages request the door applies (or accepts, as documented). */
const APPLIED = new Set([
  'model',
  'messages',
  'max_tokens',
  'system',
  'metadata',
  'stop_sequences',
  'stream',
  'temperature',
  'top_p',
  'top_k',
  'tools',
  'tool_choice',
  'thinking',
  'output_config',
  'cache_control',
]);

/** Anthropic fields the door does not apply, and why (a 400 naming them). */
const NOT_APPLIED: Record<string, string> = {
  service_tier: "Anthropic's service tiers do not apply behind Orrery",
  container: 'code execution containers are an Anthropic server feature',
  mcp_servers: "Anthropic's MCP connector is a server feature; Orrery serves MCP at /mcp",
  context_management: 'context editing is an Anthropic server feature',
  speed: "Anthropic's fast mode does not apply behind Orrery",
  inference_geo: "Anthropic's inference regions do not apply behind Orrery; pick the environment instead",
  diagnostics: "Anthropic's diagnostics do not apply behind Orrery",
  user_profile_id: 'use metadata.user_id (recorded as a user:<id> tag)',
  workspace_id: 'the key names the project',
};

/** Fields of a count_tokens request. */
const COUNTED = new Set([
  'model',
  'messages',
  'system',
  'tools',
  'tool_choice',
  'thinking',
  'output_config',
  'cache_control',
]);

/** Anthropic's least thinking budget; the most is below max_tokens. */
const MIN_THINKING_BUDGET = 1024;

/** A user id (metadata.user_id) at most this long; it becomes the tag user:<id>. */
const MAX_USER = 256;
/** Bound on the x-orrery-tags header's tags. */
const MAX_HEADER_TAGS = 32;

export interface MessagesCall {
  run: Run;
  /** The model as the request named it (answered back as `model`). */
  model: string;
  stream: boolean;
  /**
   * The request's cache_control breakpoints: `forwarded` to a Claude provider, `not_applied` for
   * one without such caching (answered in the x-orrery-prompt-cache header); undefined: none given.
   */
  promptCache?: 'forwarded' | 'not_applied';
  /** Records the run's conversation once it completed, for the next turn to extend. */
  ended(final: Run): void;
}

export interface AnthropicDoorDeps {
  runs: RunService;
  addressing: ModelAddressing;
  links: ConversationLinks;
  countTokens: TokenCounter;
}

export class AnthropicDoor {
  constructor(private readonly deps: AnthropicDoorDeps) {}

  /** POST /v1/messages: the run, blocking (ended) or streamed (created, to follow). */
  async messages(p: Principal, body: Json, caller: CallerInfo, tagHeader: unknown): Promise<MessagesCall> {
    checkFields(body, APPLIED);
    const { env, model } = await this.deps.addressing.resolve(p, body.model);
    const messages = conversationOf(body);
    const tools = readTools(body.tools);
    const toolChoice = readToolChoice(body.tool_choice, Boolean(tools?.length));
    const breakpoints = countBreakpoints(messages, tools);
    const promptCache =
      breakpoints === 0 ? undefined : takesCacheControl(env.provider, model) ? 'forwarded' : 'not_applied';
    const budget = readThinking(body.thinking);
    const resultSchema = readOutputConfig(body.output_config);
    const stream = readFlag(body.stream, 'stream');
    const options = samplingOf(body);
    if (toolChoice) options.tool_choice = toolChoice;
    if (budget !== undefined) {
      if (budget >= (options.max_tokens as number))
        throw new AnthropicRequestError(
          `thinking.budget_tokens: ${budget} must be less than max_tokens (${String(options.max_tokens)}), which counts the thinking too`,
        );
      options.thinking_budget_tokens = budget;
      // Claude takes no temperature but 1 with thinking on: unset unless the caller asked (then Claude refuses it).
      if (body.temperature === undefined || body.temperature === null) delete options.temperature;
    }
    const tags = tagsOf(tagHeader, body.metadata);
    const link = await this.deps.links.find(p, env.id, model, messages);
    const run = await this.deps.runs.executeMessages(
      p,
      {
        interaction: `sys:${DOOR}`,
        stream,
        tags,
        config: { environment: env.id, model, model_options: options },
        ...(resultSchema ? { result_schema: resultSchema } : {}),
        ...(tools ? { tool_definitions: tools } : {}),
      },
      caller,
      {
        door: DOOR,
        messages,
        ...(link ? { stored: messages.slice(link.length), previousRun: link.runId } : {}),
      },
    );
    const ended = (final: Run) => this.deps.links.remember(p, env.id, model, messages, final);
    if (!stream) ended(run);
    return { run, model: body.model as string, stream, ended, ...(promptCache ? { promptCache } : {}) };
  }

  /** POST /v1/messages/count_tokens: the request checked as a call would be, its tokens estimated (no run). */
  async countTokens(p: Principal, body: Json): Promise<{ input_tokens: number }> {
    checkFields(body, COUNTED);
    await this.deps.addressing.resolve(p, body.model);
    const messages = conversationOf(body);
    const tools = readTools(body.tools);
    readToolChoice(body.tool_choice, Boolean(tools?.length));
    countBreakpoints(messages, tools);
    readThinking(body.thinking);
    readOutputConfig(body.output_config);
    return { input_tokens: await estimateTokens(messages, tools, this.deps.countTokens) };
  }
}

/**
 * The system text, then the messages; an assistant turn of text alone as its text (as a run's
 * answer reads back). A top-level `cache_control` is Anthropic's automatic breakpoint: on the last
 * block of the request.
 */
function conversationOf(body: Json): ChatMessage[] {
  const system = readSystem(body.system);
  const messages = readMessages(body.messages).map((m): ChatMessage => {
    if (m.role !== 'assistant' || typeof m.content === 'string') return m;
    if (!m.content.every((c) => c.type === 'text' && !c.cache_control)) return m;
    return { role: 'assistant', content: m.content.map((c) => (c.type === 'text' ? c.text : '')).join('') };
  });
  const automatic = readCacheControl(body.cache_control, 'cache_control');
  if (automatic) {
    const last = messages[messages.length - 1];
    const parts =
      typeof last.content === 'string' ? [{ type: 'text' as const, text: last.content }] : [...last.content];
    const end = parts.length - 1;
    if (end < 0 || parts[end].type === 'thinking')
      throw new AnthropicRequestError(
        'cache_control: the last message has no block to cache; put cache_control on a block',
      );
    parts[end] = { ...parts[end], cache_control: automatic } as (typeof parts)[number];
    messages[messages.length - 1] = { ...last, content: parts } as ChatMessage;
  }
  return system ? [system, ...messages] : messages;
}

/** Anthropic's most cache_control breakpoints in one request (its API refuses more). */
const MAX_BREAKPOINTS = 4;

/** The request's cache breakpoints, at most MAX_BREAKPOINTS. */
function countBreakpoints(messages: ChatMessage[], tools: Json[] | undefined): number {
  let n = (tools ?? []).filter((t) => t.cache_control).length;
  for (const m of messages)
    if (typeof m.content !== 'string') n += m.content.filter((p) => p.type !== 'thinking' && p.cache_control).length;
  if (n > MAX_BREAKPOINTS)
    throw new AnthropicRequestError(
      `cache_control: ${n} blocks have cache_control; at most ${MAX_BREAKPOINTS} breakpoints in a request`,
    );
  return n;
}

/** Providers that take Claude's cache_control breakpoints: Anthropic, and Claude on Vertex AI. */
const takesCacheControl = (provider: string, model: string): boolean =>
  provider === 'anthropic' || (provider === 'vertexai' && /(^|\/)claude/i.test(model));

function checkFields(body: Json, known: Set<string>): void {
  for (const key of Object.keys(body)) {
    if (known.has(key)) continue;
    const why = NOT_APPLIED[key];
    if (why !== undefined) {
      if (body[key] === null || body[key] === undefined) continue;
      throw unsupported(key, why);
    }
    throw new AnthropicRequestError(`${key}: Extra inputs are not permitted`);
  }
}

/**
 * Extended thinking: `{type: "enabled", budget_tokens}` becomes the run's thinking budget (the
 * model's signed thinking blocks are answered and kept for the next turn); `adaptive` is refused.
 */
function readThinking(value: unknown): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value))
    throw new AnthropicRequestError('thinking: expected {type: "enabled", budget_tokens} or {type: "disabled"}');
  const t = value as Json;
  if (t.type === 'disabled') {
    for (const key of Object.keys(t))
      if (key !== 'type')
        throw new AnthropicRequestError(`thinking.${key.slice(0, 64)}: Extra inputs are not permitted`);
    return undefined;
  }
  if (t.type === 'adaptive') throw unsupported('thinking', 'adaptive thinking; send {type: "enabled", budget_tokens}');
  if (t.type !== 'enabled')
    throw new AnthropicRequestError(`thinking.type: ${JSON.stringify(t.type)}; expected "enabled" or "disabled"`);
  for (const key of Object.keys(t))
    if (key !== 'type' && key !== 'budget_tokens')
      throw new AnthropicRequestError(`thinking.${key.slice(0, 64)}: Extra inputs are not permitted`);
  const budget = t.budget_tokens;
  if (!Number.isSafeInteger(budget) || (budget as number) < MIN_THINKING_BUDGET)
    throw new AnthropicRequestError(
      `thinking.budget_tokens: an integer of at least ${MIN_THINKING_BUDGET} (Anthropic's minimum) is required`,
    );
  return budget as number;
}

/** `output_config`: its JSON Schema format as the run's result schema; effort is not relayed. */
function readOutputConfig(value: unknown): Json | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value))
    throw new AnthropicRequestError('output_config: Input should be a valid dictionary');
  const c = value as Json;
  for (const key of Object.keys(c))
    if (key !== 'format' && key !== 'effort')
      throw new AnthropicRequestError(`output_config.${key.slice(0, 64)}: Extra inputs are not permitted`);
  if (c.effort !== undefined && c.effort !== null)
    throw unsupported('output_config.effort', 'set reasoning options on the environment instead');
  if (c.format === undefined || c.format === null) return undefined;
  const f = c.format as Json;
  if (typeof f !== 'object' || Array.isArray(f) || f.type !== 'json_schema')
    throw new AnthropicRequestError('output_config.format: expected {type: "json_schema", schema}');
  if (typeof f.schema !== 'object' || f.schema === null || Array.isArray(f.schema))
    throw new AnthropicRequestError('output_config.format.schema: a JSON Schema object');
  return f.schema as Json;
}

function readFlag(value: unknown, field: string): boolean {
  if (value === undefined || value === null) return false;
  if (typeof value !== 'boolean') throw new AnthropicRequestError(`${field}: Input should be a valid boolean`);
  return value;
}

const number = (value: unknown, field: string, min: number, max: number): number | undefined => {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !(value >= min && value <= max))
    throw new AnthropicRequestError(`${field}: Input should be a number from ${min} to ${max}`);
  return value;
};

const positiveInteger = (value: unknown, field: string): number | undefined => {
  if (value === undefined || value === null) return undefined;
  if (!Number.isSafeInteger(value) || (value as number) < 1)
    throw new AnthropicRequestError(`${field}: Input should be a positive integer`);
  return value as number;
};

/** The sampling fields as a run's model options; without a temperature, Anthropic's default (1). */
function samplingOf(body: Json): Json {
  const maxTokens = positiveInteger(body.max_tokens, 'max_tokens');
  if (maxTokens === undefined) throw new AnthropicRequestError('max_tokens: Field required');
  const out: Json = { temperature: number(body.temperature, 'temperature', 0, 1) ?? 1, max_tokens: maxTokens };
  const topP = number(body.top_p, 'top_p', 0, 1);
  if (topP !== undefined) out.top_p = topP;
  const topK = positiveInteger(body.top_k, 'top_k');
  if (topK !== undefined) out.top_k = topK;
  const stop = readStopSequences(body.stop_sequences);
  if (stop) out.stop = stop;
  return out;
}

/** Tags of a door run: the x-orrery-tags header's, `metadata.user_id` as user:<id>. */
function tagsOf(header: unknown, metadata: unknown): string[] {
  const tags = normaliseTags(typeof header === 'string' ? header : undefined);
  if (tags.length > MAX_HEADER_TAGS)
    throw new AnthropicRequestError(`x-orrery-tags has ${tags.length} tags; at most ${MAX_HEADER_TAGS}`);
  if (metadata === undefined || metadata === null) return tags;
  if (typeof metadata !== 'object' || Array.isArray(metadata))
    throw new AnthropicRequestError('metadata: Input should be a valid dictionary');
  for (const [k, v] of Object.entries(metadata as Json)) {
    if (k !== 'user_id') throw new AnthropicRequestError(`metadata.${k.slice(0, 64)}: Extra inputs are not permitted`);
    if (v === null || v === undefined) continue;
    if (typeof v !== 'string' || v.length > MAX_USER || v.includes(','))
      throw new AnthropicRequestError(
        `metadata.user_id: a string of at most ${MAX_USER} characters without commas (it becomes the tag user:<id>)`,
      );
    if (v) tags.push(`user:${v}`);
  }
  return tags;
}
