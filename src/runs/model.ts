/** The run as the interface and the official client see it, and its mapping from a row. */
import type { Attempt } from './retry.ts';
import type { SamplingOptions } from './call.ts';
import type { Selectable } from 'kysely';
import type { RunTable } from '../db/schema.ts';
import type { Ref } from '../auth/principal.ts';
import type { RunCost } from '../pricing/cost.ts';
import type { ContentPart, ThinkingPart, ToolChoice, ToolDefinition, ToolUse } from '../providers/driver.ts';
import type { StripOptions } from '../conversations/strip.ts';

export const RUN_STATUSES = ['created', 'processing', 'completed', 'failed'] as const;
type RunStatus = (typeof RUN_STATUSES)[number];

/** A run that will not change any more: `completed` or `failed`. */
export const hasEnded = (status: unknown): boolean => status === 'completed' || status === 'failed';

/** An answer's parts: its text or JSON value, and the model's reasoning (`thoughts`) when asked for. */
export type ResultPart =
  { type: 'text'; value: string } | { type: 'json'; value: unknown } | { type: 'thoughts'; value: string };

export interface TokenUse {
  prompt?: number;
  result?: number;
  total?: number;
  /** Of `prompt`, the tokens read from and written to the provider's prompt cache. */
  cache_read?: number;
  cache_write?: number;
}

export interface RunSource {
  type: string;
  label: string;
  principal_type: string;
  principal_id: string;
  client_ip: string;
}

export interface RunError {
  code: string;
  message: string;
  data?: unknown;
  /** Whether the same call may succeed if tried again (a rate limit, an outage), as Vertesia's error says. */
  retryable?: boolean;
  /** The provider's own wait before a retry. */
  retry_after_ms?: number;
}

/** The part of a run kept in the `doc` JSON column (the rest are real columns). */
export interface RunDoc {
  result: ResultPart[];
  parameters: unknown;
  prompt: Array<{ role: string; content: string | ContentPart[] }>;
  config: Record<string, unknown>;
  error?: RunError;
  source: RunSource;
  ttl: number;
  stream: boolean;
  interaction: { id: string; name: string; endpoint?: string; version?: number };
  environment: { id: string; name: string; provider: string } | null;
  result_schema?: Record<string, unknown>;
  /** The content objects the prompt shows the model (media inputs): found by run search `objects:<id>`. */
  media?: { objects: string[] };
  account: Ref;
  project: Ref;
  created_by: string;
  chunks?: number;
  /** The provider calls of a run that was retried (runs/retry.ts), in order. */
  attempts?: Attempt[];
  /** A virtual_mediator's judgement of this child run (runs/virtual.ts). */
  evaluation?: Evaluation;
  /** What the run cost (src/pricing/cost.ts), set when it ends; null when unknown. */
  cost?: RunCost | null;
  /** Answered from the result cache (runs/result-cache.ts), with the answer of run `cached_from`. */
  cached?: boolean;
  cached_from?: string;
  /** Under `do_validate: false`, an answer kept that does not match result_schema: why. */
  result_validation?: ResultValidation;
  /** The tools the run offered the model, and its tool choice. */
  tools?: ToolDefinition[];
  tool_choice?: ToolChoice;
  /** The calls the model asked for (finish_reason tool_use). */
  tool_use?: ToolUse[];
  /** The model's signed reasoning blocks (Claude), sent back unchanged with the answer in the next turn. */
  thinking?: ThinkingPart[];
  /** Of the prompt tokens, those the provider read from and wrote to its prompt cache (when any). */
  token_cache?: { read: number; write: number };
  /**
   * The run this one continues: its prompt holds only its own turn (POST /runs/tool-results,
   * /runs/user-message; a door request whose messages extend an earlier door run's).
   */
  previous_run?: string;
  /** A run of a conversation: its turn (runs/conversation-turns.ts). */
  conversation?: ConversationMark;
  /** The sampling and reasoning options its request was sent: a replanned run (runs/plan.ts) is sent them again. */
  options?: SamplingOptions;
}

/**
 * What a run of a conversation records of it: its turn (1 for the first run); `restricted` when
 * the history before it is not stored (it came in the caller's `conversation`), so it continues
 * only from the conversation the caller passes back; the strip options its request was built with.
 */
export interface ConversationMark {
  turn: number;
  restricted?: true;
  strip_options?: StripOptions;
}

interface ResultValidation {
  valid: false;
  message: string;
}

interface Evaluation {
  score: number;
  selected: boolean;
}

export interface Run {
  id: string;
  status: RunStatus;
  result: ResultPart[];
  parameters: unknown;
  interaction: unknown;
  environment: unknown;
  modelId: string | null;
  model: string | null;
  ttl: number;
  token_use: TokenUse;
  execution_time?: number;
  finish_reason?: string;
  /** Null while the run executes, and when its usage or its model's price is unknown. */
  cost: RunCost | null;
  created_at: string;
  updated_at: string;
  account: unknown;
  project: unknown;
  config: Record<string, unknown>;
  error?: RunError;
  tags: string[];
  source: RunSource;
  prompt: Array<{ role: string; content: string | ContentPart[] }>;
  parent?: string;
  /** The OpenTelemetry trace and span of the run (src/telemetry), when it was traced. */
  trace_id?: string;
  span_id?: string;
  result_schema?: Record<string, unknown>;
  tool_use?: ToolUse[];
  thinking?: ThinkingPart[];
  previous_run?: string;
  /** The conversation an answer carries (a run started with conversation: true, and every continuation). */
  conversation?: unknown;
  created_by: string;
  updated_by: string;
  chunks?: number;
  attempts?: Attempt[];
  evaluation?: Evaluation;
  cached?: boolean;
  cached_from?: string;
  result_validation?: ResultValidation;
}

/** The search columns (0003) are derived by the store and never read back as part of a run. */
type SearchColumn =
  | 'search_fields'
  | 'search_rowid'
  | 'search_tsv'
  | 'interaction_name'
  | 'environment_name'
  | 'cost_total'
  | 'expires_at'
  | 'previous_run';
/** The trace columns (0026) are optional: rows made before them (imports, tests) hold none. */
type TraceColumn = 'trace_id' | 'span_id';
export type RunRow = Omit<Selectable<RunTable>, SearchColumn | TraceColumn> & Partial<Pick<RunTable, TraceColumn>>;

/** The columns a run is read back from (without the optional trace columns): a RunRow's own. */
export const RUN_ROW_COLUMNS = [
  'id',
  'account_id',
  'project_id',
  'interaction_id',
  'environment_id',
  'model_id',
  'status',
  'parent_id',
  'finish_reason',
  'execution_time',
  'token_prompt',
  'token_result',
  'token_total',
  'tags',
  'created_at',
  'updated_at',
  'doc',
] as const satisfies readonly (keyof RunRow)[];

/**
 * The columns a run's end sets: RunService.execute's patch, and what the lost-run sweep sets when
 * it stores a run answered from its intent-log entry (RunService.restoreLost).
 */
export type RunOutcome = Pick<
  RunRow,
  | 'status'
  | 'updated_at'
  | 'finish_reason'
  | 'execution_time'
  | 'token_prompt'
  | 'token_result'
  | 'token_total'
  | 'doc'
  | 'executor'
>;

/** A run's outcome columns, as it ended. */
export const outcomeOf = (r: RunOutcome): RunOutcome => ({
  status: r.status,
  updated_at: r.updated_at,
  finish_reason: r.finish_reason,
  execution_time: r.execution_time,
  token_prompt: r.token_prompt,
  token_result: r.token_result,
  token_total: r.token_total,
  doc: r.doc,
  executor: r.executor,
});

/** Rows reach the service decoded (runs/store.ts), so `doc` and `tags` are plain values. */
export const docOf = (row: RunRow): RunDoc => row.doc as RunDoc;
export const tagsOf = (row: RunRow): string[] => (row.tags as string[] | null) ?? [];

// Keys set one by one on an empty literal, not spread in: a literal that starts with a spread
// costs a hidden class per call for every key after it (runs/search-index.ts, withColumns).
const tokenUse = (r: RunRow): TokenUse => {
  const use: TokenUse = {};
  if (r.token_prompt !== null) use.prompt = r.token_prompt;
  if (r.token_result !== null) use.result = r.token_result;
  if (r.token_total !== null) use.total = r.token_total;
  const cache = docOf(r).token_cache;
  if (cache) {
    use.cache_read = cache.read;
    use.cache_write = cache.write;
  }
  return use;
};

/** The full run, with refs as stored; callers expand or flatten interaction/environment. */
export function toRun(r: RunRow): Run {
  const d = docOf(r);
  return {
    id: r.id,
    status: r.status as RunStatus,
    result: d.result,
    parameters: d.parameters,
    interaction: d.interaction,
    environment: d.environment,
    modelId: r.model_id,
    model: r.model_id,
    ttl: d.ttl,
    token_use: tokenUse(r),
    ...(r.execution_time !== null ? { execution_time: r.execution_time } : {}),
    ...(r.finish_reason !== null ? { finish_reason: r.finish_reason } : {}),
    cost: d.cost ?? null,
    created_at: r.created_at,
    updated_at: r.updated_at,
    account: d.account,
    project: d.project,
    config: d.config,
    ...(d.error ? { error: d.error } : {}),
    tags: tagsOf(r),
    source: d.source,
    prompt: d.prompt,
    ...(r.parent_id ? { parent: r.parent_id } : {}),
    ...(r.trace_id ? { trace_id: r.trace_id, span_id: r.span_id ?? undefined } : {}),
    ...(d.result_schema ? { result_schema: d.result_schema } : {}),
    created_by: d.created_by,
    updated_by: d.created_by,
    ...(d.chunks !== undefined ? { chunks: d.chunks } : {}),
    ...(d.attempts ? { attempts: d.attempts } : {}),
    ...(d.evaluation ? { evaluation: d.evaluation } : {}),
    ...(d.cached ? { cached: true, cached_from: d.cached_from } : {}),
    ...(d.result_validation ? { result_validation: d.result_validation } : {}),
    ...(d.tool_use ? { tool_use: d.tool_use } : {}),
    ...(d.thinking ? { thinking: d.thinking } : {}),
    ...(d.previous_run ? { previous_run: d.previous_run } : {}),
  };
}

/** A run reference (list and search items): no result, parameters or prompt (decisions.md). */
export function toRunRef(r: RunRow) {
  const d = docOf(r);
  return {
    id: r.id,
    status: r.status as RunStatus,
    interaction: { id: d.interaction.id, name: d.interaction.name },
    environment: d.environment ? { id: d.environment.id, name: d.environment.name } : null,
    modelId: r.model_id,
    model: r.model_id,
    tags: tagsOf(r),
    parent: r.parent_id ?? undefined,
    ...(d.evaluation ? { evaluation: d.evaluation } : {}),
    ...(d.cached ? { cached: true, cached_from: d.cached_from } : {}),
    finish_reason: r.finish_reason ?? undefined,
    token_use: tokenUse(r),
    execution_time: r.execution_time ?? undefined,
    cost: d.cost ?? null,
    source: d.source,
    account: d.account,
    project: d.project,
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}

export type RunRef = ReturnType<typeof toRunRef>;
