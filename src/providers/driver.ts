/**
 * What Orrery needs from a model provider. Every provider (openai, openai_compatible, anthropic,
 * test, …) implements this; the run service never sees a provider SDK.
 */
import type { ReasoningOptions } from './option-sets.ts';

export type ChatRole = 'system' | 'user' | 'assistant' | 'tool';

/**
 * A message is plain text or a list of parts. Plain text is what templates render and goes on the
 * wire exactly as before; parts carry what text cannot: media by reference, tool calls and their
 * results, and the model's thinking. Media parts hold a URL or an object reference, never bytes,
 * so a stored prompt stays small.
 */
export type ContentPart = TextPart | ImagePart | DocumentPart | ToolUsePart | ToolResultPart | ThinkingPart;

/**
 * A prompt-cache breakpoint on a block (Anthropic's `cache_control`): the prompt up to and
 * including it is cached. Sent to Claude; other providers cache on their own or not at all.
 */
export interface CacheControl {
  type: 'ephemeral';
  ttl?: '5m' | '1h';
}

interface Cacheable {
  cache_control?: CacheControl;
}

interface TextPart extends Cacheable {
  type: 'text';
  text: string;
}

interface ImagePart extends Cacheable {
  type: 'image';
  /** An https or data URL, or `store:<object id>` for a content object. */
  url: string;
  media_type?: string;
  /** What a stored prompt keeps of a media input (src/media); providers are not sent it. */
  object?: MediaObjectRef;
}

interface DocumentPart extends Cacheable {
  type: 'document';
  url: string;
  media_type?: string;
  name?: string;
  object?: MediaObjectRef;
}

/**
 * A media input as a run stores it: the object (its id and content etag) or, for a `data:` URL,
 * the digest of its bytes; the type and size that were sent.
 */
export interface MediaObjectRef {
  id?: string;
  revision?: string;
  sha256?: string;
  type: string;
  size: number;
  /**
   * Sent in another form because the model cannot take this one: the PDF's extracted `text`, or
   * its `rendition` (the page drawn as an image). Absent: sent as it is.
   */
  fallback?: 'text' | 'rendition';
  /**
   * Sent converted for the provider (src/media/convert.ts): the form's name, the JPEG's type, size
   * and pixels, and whether it came from the cache (no conversion in this run). Absent: sent as it is.
   */
  converted?: { form: string; type: string; size: number; width: number; height: number; cached: boolean };
}

/** The model asked for a tool: `ToolUse` as llumiverse and Vertesia name it. */
interface ToolUsePart extends ToolUse, Cacheable {
  type: 'tool_use';
}

export interface ToolResultPart extends Cacheable {
  type: 'tool_result';
  tool_use_id: string;
  content: string;
  is_error?: boolean;
}

/**
 * The model's reasoning as a block of its answer. Anthropic signs each block and requires it back
 * unchanged in the next turn (in a tool loop, with thinking on); a block its safety system
 * encrypted is `redacted` (its opaque data), with no text.
 */
export interface ThinkingPart {
  type: 'thinking';
  text: string;
  /** The provider's signature over the thinking (Anthropic), needed to send it back. */
  signature?: string;
  /** A `redacted_thinking` block's encrypted data (Anthropic); `text` is empty. */
  redacted?: string;
}

export interface ChatMessage {
  role: ChatRole;
  content: string | ContentPart[];
}

/** A tool the model may call (Vertesia's `ToolDefinition`). */
export interface ToolDefinition extends Cacheable {
  name: string;
  description?: string;
  /** JSON Schema of the tool's arguments (an object schema). */
  input_schema: Record<string, unknown>;
}

/**
 * One call the model asked for. `id` is the provider's call id; `tool_input` the parsed arguments.
 * Arguments the model wrote that are not a JSON object are kept as `tool_input_text` with
 * `tool_input_invalid: true` (and `tool_input: null`), so the caller can answer with an error result.
 */
export interface ToolUse {
  id: string;
  tool_name: string;
  tool_input: Record<string, unknown> | null;
  tool_input_text?: string;
  tool_input_invalid?: true;
  /** Gemini's signature over the thinking that led to the call; sent back with the call (llumiverse's name). */
  thought_signature?: string;
}

/** Orrery's tool choice (llumiverse's Mistral option, taken for every provider): `any` and `required` are one. */
export type ToolChoice = 'auto' | 'none' | 'any' | 'required';

/** The text of a message: its string, or its text parts joined (for drivers that speak only text). */
export function messageText(m: ChatMessage): string {
  if (typeof m.content === 'string') return m.content;
  return m.content
    .map((p) => (p.type === 'text' ? p.text : p.type === 'tool_result' ? p.content : ''))
    .filter((t) => t !== '')
    .join('\n\n');
}

/**
 * Arguments as a model wrote them (a JSON text) into `ToolUse` fields: an object parses to
 * `tool_input`; anything else (cut-off JSON, an array, a number) is kept as text with the flag.
 */
export function toolInputOf(
  text: string | undefined,
): Pick<ToolUse, 'tool_input' | 'tool_input_text' | 'tool_input_invalid'> {
  if (text === undefined || text.trim() === '') return { tool_input: {} };
  try {
    const v: unknown = JSON.parse(text);
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) return { tool_input: v as Record<string, unknown> };
  } catch {
    // kept as text below
  }
  return { tool_input: null, tool_input_text: text, tool_input_invalid: true };
}

/** The JSON text of a call's arguments, for wires that carry them as text. */
export const toolInputText = (t: ToolUse): string =>
  t.tool_input_invalid && t.tool_input_text !== undefined ? t.tool_input_text : JSON.stringify(t.tool_input ?? {});

export interface CompletionRequest {
  model: string;
  messages: ChatMessage[];
  /** Sampling temperature; the run service always passes one (default 0.7). */
  temperature?: number;
  max_tokens?: number;
  top_p?: number;
  /** Sample from the K likeliest tokens; for providers that have it (Anthropic, Gemini, Bedrock's Claude, watsonx, Replicate). */
  top_k?: number;
  /** -2 to 2, OpenAI's sense; drivers whose provider lacks them leave them out. */
  presence_penalty?: number;
  frequency_penalty?: number;
  seed?: number;
  stop?: string[];
  /** When set, the model must answer a JSON value that conforms to this JSON Schema. */
  result_schema?: Record<string, unknown>;
  /** Tools the model may call; drivers send them in their provider's wire form. */
  tools?: ToolDefinition[];
  /** Whether and how the model must call a tool; unset leaves it to the provider (auto). */
  tool_choice?: ToolChoice;
  /** Reasoning options, checked against the model's option set (option-sets.ts) before a driver sees them. */
  effort?: ReasoningOptions['effort'];
  thinking_budget_tokens?: number;
  include_thoughts?: boolean;
  image_detail?: ReasoningOptions['image_detail'];
  /** Cache breakpoints at the end of the system prompt and of the tools (Claude); `required` fails a run that cached nothing. */
  prompt_cache?: ReasoningOptions['prompt_cache'];
  /** OpenAI's `prompt_cache_key`. */
  prompt_cache_key?: string;
}

export interface TokenUsage {
  /** All input tokens, cached ones included (as OpenAI counts them). */
  prompt?: number;
  /** All output tokens, reasoning ones included. */
  result?: number;
  total?: number;
  /** Of `prompt`: tokens read from the provider's prompt cache (priced apart, src/pricing/cost.ts). */
  cache_read?: number;
  /** Of `prompt`: tokens written to the provider's prompt cache. */
  cache_write?: number;
  /** Of `result`: reasoning (thinking) tokens. */
  reasoning?: number;
}

export interface Completion {
  /** The whole text answered by the model (for result_schema: the JSON text). */
  text: string;
  /** Normalised: `tool_use` when the model asked for tools. */
  finish_reason?: string;
  token_use?: TokenUsage;
  /** The calls the model asked for, in its order; absent when none. */
  tool_use?: ToolUse[];
  /** The model's reasoning, when `include_thoughts` asked for it and the provider returned it. */
  thoughts?: string;
  /** The signed reasoning blocks of the answer, in order, to send back with it (whatever include_thoughts says). */
  thinking?: ThinkingPart[];
}

/** One piece of a streamed completion; the final piece may carry only usage and finish_reason. */
export interface CompletionChunk {
  text?: string;
  /** A piece of the model's reasoning (with `include_thoughts`); never part of `text`. */
  thoughts?: string;
  finish_reason?: string;
  token_use?: TokenUsage;
  /** On the final piece: the whole calls, assembled from the provider's deltas. */
  tool_use?: ToolUse[];
  /** A reasoning block of the answer, whole (signed), as soon as the provider closed it. */
  thinking_block?: ThinkingPart;
}

/** Where and how to reach the provider: from the execution environment. */
export interface ProviderConnection {
  endpoint_url?: string;
  /** Decrypted provider API key, if the environment has one. */
  api_key?: string;
  config?: Record<string, unknown>;
  /** The server's outbound HTTP layer (pooled connections, the egress policy). */
  outbound?: import('./outbound.ts').Outbound;
}

export interface ModelInfo {
  id: string;
  name: string;
  description?: string;
}

export interface ModelDriver {
  readonly provider: string;
  complete(conn: ProviderConnection, req: CompletionRequest, signal?: AbortSignal): Promise<Completion>;
  stream(conn: ProviderConnection, req: CompletionRequest, signal?: AbortSignal): AsyncIterable<CompletionChunk>;
  /**
   * The provider's models: from its API where it has a list, else a documented static list.
   * Undefined where the provider cannot say (Azure deployments): the environment's own models stand.
   */
  listModels?(conn: ProviderConnection, signal?: AbortSignal): Promise<ModelInfo[] | undefined>;
}

export interface ProviderInfo {
  id: string;
  name: string;
  description: string;
  /** True for the offline `test` provider, so listings can label it. */
  test: boolean;
  requires_endpoint_url: boolean;
  requires_api_key: boolean;
}

/**
 * A provider call that failed. Drivers translate SDK/network errors into this, so the run
 * service can record `error: {code, message}` and answer a clear status.
 *  - `provider_unreachable`: connection refused, DNS, timeout.
 *  - `provider_auth`: the provider refused the credentials (401/403).
 *  - `provider_bad_request`: the provider refused the request (400/404/422, e.g. unknown model).
 *  - `provider_rate_limited`: 429.
 *  - `provider_error`: anything else the provider answered (5xx, malformed answer).
 *  - `egress_refused`: the egress policy (ORRERY_EGRESS) refused the endpoint's address; nothing was sent.
 *  - `provider_result_too_large`: the answer passed ORRERY_MAX_RESULT_SIZE; the call was cut there.
 */
export type ProviderErrorCode =
  | 'provider_unreachable'
  | 'provider_auth'
  | 'provider_bad_request'
  | 'provider_rate_limited'
  | 'provider_error'
  | 'provider_result_too_large'
  | 'egress_refused';

export class ProviderError extends Error {
  constructor(
    readonly code: ProviderErrorCode,
    message: string,
    /** HTTP status the provider answered, when it answered. */
    readonly upstreamStatus?: number,
    /** Worth trying again (rate limits, overload, timeouts, connection failures). */
    readonly retryable = false,
    /** The wait the provider asked for before trying again (retry-after headers), in ms. */
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = 'ProviderError';
  }
}
