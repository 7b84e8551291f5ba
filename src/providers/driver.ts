/**
 * What Orrery needs from a model provider. Every provider (openai, openai_compatible, anthropic,
 * test, …) implements this; the run service never sees a provider SDK.
 */
export type ChatRole = 'system' | 'user' | 'assistant';

export interface ChatMessage {
  role: ChatRole;
  content: string;
}

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
  finish_reason?: string;
  token_use?: TokenUsage;
}

/** One piece of a streamed completion; the final piece may carry only usage and finish_reason. */
export interface CompletionChunk {
  text?: string;
  finish_reason?: string;
  token_use?: TokenUsage;
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
