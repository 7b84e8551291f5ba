/**
 * The call step of a run: the provider asked (with its retries, runs/retry.ts), the answer checked
 * against result_schema (mended, asked again once), or the answer served from the result cache, or
 * a virtual environment's entries run (runs/call-virtual.ts). Never throws for a provider's or an
 * answer's failure: that is the run's outcome, stored by the finish step (runs/finish.ts).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { boundErrorMessage } from '../util/error-message.ts';
import {
  ProviderError,
  type ChatMessage,
  type CompletionRequest,
  type ThinkingPart,
  type TokenUsage,
  type ToolUse,
} from '../providers/driver.ts';
import type { RunTools } from '../conversations/run-tools.ts';
import type { Metrics } from '../http/metrics.ts';
import type { RunCost } from '../pricing/cost.ts';
import type { ReasoningOptions } from '../providers/option-sets.ts';
import type { ResultPart, RunDoc, RunError, RunRow } from './model.ts';
import type { Plan, ProviderPlan } from './plan.ts';
import { InvalidResult, parseResult, parseUnvalidated, repairMessages } from './result-schema.ts';
import { nextDelay, retryPolicyOf, type Attempt } from './retry.ts';
import { STEP_TIMEOUT_RETRYABLE, stepSignal, stepTimeoutError, stoppedError } from './call-bounds.ts';
import type { CachedAnswer } from './result-cache.ts';
import type { RunSignals } from './run-signals.ts';
import { textOf, type ChunkSink } from './virtual.ts';
import type { VirtualCaller } from './call-virtual.ts';
import type { Telemetry } from '../telemetry/hooks.ts';

export type SamplingOptions = Pick<
  CompletionRequest,
  | 'temperature'
  | 'max_tokens'
  | 'top_p'
  | 'top_k'
  | 'presence_penalty'
  | 'frequency_penalty'
  | 'seed'
  | 'stop'
  | keyof ReasoningOptions
> & {
  /** Options the caller set that the model refuses, left out as llumiverse leaves them out (the run's `config.dropped`). */
  dropped?: string[];
};

/** What a provider is asked: a model, a message list, sampling options, and the shape of the answer. */
export interface RunTurn {
  model: string;
  messages: ChatMessage[];
  options: SamplingOptions;
  resultSchema?: Record<string, unknown>;
  /** The tools the model may call, and how it must choose. */
  tools?: RunTools;
}

/**
 * The provider request of a run, built from its message list. Every request a run sends (its call,
 * a streamed run's call rebuilt in another process, a virtual run's mediators) is built here, or
 * derived from one built here with another message list (withMessages) or model.
 */
export function buildRequest(turn: RunTurn): CompletionRequest {
  const { dropped: _dropped, ...options } = turn.options;
  return {
    model: turn.model,
    messages: turn.messages,
    ...options,
    ...(turn.resultSchema ? { result_schema: turn.resultSchema } : {}),
    ...turn.tools,
  };
}

/** `request` with another message list (a re-ask), all else as it was. */
function withMessages(request: CompletionRequest, messages: ChatMessage[]): CompletionRequest {
  return { ...request, messages };
}

/** What one execution produced, before it is stored. */
export interface Outcome {
  result: ResultPart[];
  error?: RunError;
  usage?: TokenUsage;
  finishReason?: string;
  attempts: Attempt[];
  chunks: number;
  /** Set by a virtual run (its children's) and a cache hit (nothing); a provider call's cost is priced from its usage. */
  cost?: RunCost | null;
  /** The run whose answer a cache hit served. */
  cachedFrom?: string;
  /** The tool calls the model asked for. */
  toolUse?: ToolUse[];
  /** The model's signed reasoning blocks (Claude), kept to go back with the answer. */
  thinking?: ThinkingPart[];
  /** Under `do_validate: false`, why the answer kept does not match result_schema (the run's `result_validation`). */
  invalid?: string;
}

export interface RunCallerDeps {
  metrics: Metrics;
  signals: RunSignals;
  virtual: VirtualCaller;
  /** A span per attempt of a retried run (src/telemetry). */
  telemetry: Telemetry;
}

export class RunCaller {
  constructor(private readonly deps: RunCallerDeps) {}

  /** The run's outcome: from the cache, from a virtual environment's entries, or from its provider. */
  async call(row: RunRow, doc: RunDoc, plan: Plan, live: ChunkSink | undefined): Promise<Outcome> {
    if (plan.cached) return this.fromCache(row, plan.cached, live);
    if (plan.kind === 'virtual') return this.deps.virtual.call(row, doc, plan, live);
    return this.callProvider(row, plan, live, doc.environment?.provider ?? 'unknown');
  }

  /** A cache hit: the stored answer, streamed whole to a live run; no provider call, no tokens, no cost. */
  private fromCache(row: RunRow, cached: CachedAnswer, live: ChunkSink | undefined): Outcome {
    const text = textOf(cached.result);
    let chunks = 0;
    if (live && text) {
      live.push(text);
      chunks = 1;
      this.deps.signals.chunk(row.id, 1, text);
    }
    return {
      result: cached.result,
      usage: { prompt: 0, result: 0, total: 0 },
      ...(cached.finishReason ? { finishReason: cached.finishReason } : {}),
      attempts: [],
      chunks,
      cost: {
        input: 0,
        output: 0,
        cache_read: 0,
        cache_write: 0,
        reasoning: 0,
        total: 0,
        currency: 'USD',
        price_table: 'result cache',
      },
      cachedFrom: cached.runId,
      ...(cached.toolUse ? { toolUse: cached.toolUse } : {}),
    };
  }

  /** The provider call with its retries (runs/retry.ts), then the answer against result_schema. */
  private async callProvider(
    row: RunRow,
    plan: ProviderPlan,
    live: ChunkSink | undefined,
    provider: string,
  ): Promise<Outcome> {
    const started = performance.now();
    let text = '';
    let thoughts = '';
    let usage: TokenUsage | undefined;
    let finishReason: string | undefined;
    let toolUse: ToolUse[] | undefined;
    let thinking: ThinkingPart[] = [];
    let chunks = 0;
    let error: RunError | undefined;
    let result: ResultPart[] = [];
    const policy = retryPolicyOf(plan.connection.config);
    const attempts: Attempt[] = [];
    // One retry loop (runs/retry.ts); a stream is never retried once a chunk reached a subscriber.
    for (let retry = 0; ; retry++) {
      const attemptStart = performance.now();
      const step = stepSignal(plan.bounds);
      try {
        if (live) {
          for await (const chunk of plan.driver.stream(plan.connection, plan.request, step.signal)) {
            if (chunk.text) {
              text += chunk.text;
              chunks++;
              live.push(chunk.text);
              this.deps.signals.chunk(row.id, chunks, chunk.text);
            }
            if (chunk.thoughts) thoughts += chunk.thoughts;
            if (chunk.token_use) usage = chunk.token_use;
            if (chunk.finish_reason) finishReason = chunk.finish_reason;
            if (chunk.tool_use) toolUse = chunk.tool_use;
            if (chunk.thinking_block) {
              thinking.push(chunk.thinking_block);
              live.thinking?.(chunk.thinking_block);
            }
          }
        } else {
          const completion = await plan.driver.complete(plan.connection, plan.request, step.signal);
          text = completion.text;
          thoughts = completion.thoughts ?? '';
          usage = completion.token_use;
          finishReason = completion.finish_reason;
          toolUse = completion.tool_use;
          thinking = completion.thinking ?? [];
        }
        attempts.push({ status: 'completed', duration_ms: Math.round(performance.now() - attemptStart) });
        if (retry > 0) this.deps.telemetry.attempt(retry + 1, attemptStart);
        result = [{ type: 'text', value: text }];
        break;
      } catch (err) {
        // An async run stopped (cancelled, out of time) or its step out of time (runs/call-bounds.ts).
        const stopped = stoppedError(plan.bounds);
        const timedOut = !stopped && step.timedOut();
        const failure = stopped ?? (timedOut ? stepTimeoutError(plan.bounds!.stepTimeoutMs) : toRunError(err));
        attempts.push({
          status: 'failed',
          error: { code: failure.code, message: failure.message },
          duration_ms: Math.round(performance.now() - attemptStart),
        });
        this.deps.telemetry.attempt(retry + 1, attemptStart, failure);
        const retryable = timedOut ? STEP_TIMEOUT_RETRYABLE : err;
        const delay =
          chunks > 0 || stopped ? undefined : nextDelay(retryable, retry + 1, performance.now() - started, policy);
        if (delay === undefined) {
          error = failure;
          if (text) result = [{ type: 'text', value: text }];
          break;
        }
        this.deps.metrics.providerRetries.inc({ provider, code: failure.code });
        // A stop during the backoff ends the run at once (the next attempt sees it).
        await sleep(delay, undefined, plan.bounds ? { signal: plan.bounds.signal } : undefined).catch(() => {});
        const late = stoppedError(plan.bounds);
        if (late) {
          error = late;
          break;
        }
      }
    }
    // prompt_cache_mode "required": a Claude answer that neither wrote nor read the cache fails the run.
    if (!error && plan.request.prompt_cache?.required && !usage?.cache_write && !usage?.cache_read)
      error = {
        code: 'prompt_cache_missed',
        message:
          'config.prompt_cache_mode is "required" and the provider reported no cache write or read (a prompt shorter than the model\'s minimum cacheable length is not cached)',
      };
    let invalid: string | undefined;
    if (!error && plan.request.result_schema && plan.validate === false) {
      // Vertesia's do_validate: false: the answer as the model gave it, no re-ask; recorded as not matching.
      const kept = unvalidatedResult(text, plan.request.result_schema);
      result = kept.result;
      invalid = kept.invalid;
    } else if (!error && plan.request.result_schema) {
      const structured = await this.structuredResult(plan, text, finishReason, attempts);
      if ('error' in structured) {
        error = structured.error;
        result = [{ type: 'text', value: structured.text }];
      } else {
        result = [{ type: 'json', value: structured.value }];
      }
      if (structured.usage) usage = addUsage(usage, structured.usage);
      if (structured.finishReason) finishReason = structured.finishReason;
    }
    // The reasoning comes before the answer, as the model wrote it, in a part of its own.
    if (thoughts) result = [{ type: 'thoughts', value: thoughts }, ...result];
    return {
      result,
      error,
      usage,
      finishReason,
      attempts,
      chunks,
      ...(toolUse ? { toolUse } : {}),
      ...(thinking.length ? { thinking } : {}),
      ...(invalid ? { invalid } : {}),
    };
  }

  /**
   * The answer against result_schema: parsed, mended (jsonrepair), validated; when it still fails,
   * asked again once with the validator's words, unless the answer stopped on length (a longer
   * answer would be cut off again). The re-ask is an attempt of the run (`repair: true`).
   */
  private async structuredResult(
    plan: ProviderPlan,
    text: string,
    finishReason: string | undefined,
    attempts: Attempt[],
  ): Promise<
    | { value: unknown; usage?: TokenUsage; finishReason?: string }
    | { error: RunError; text: string; usage?: TokenUsage; finishReason?: string }
  > {
    const schema = plan.request.result_schema!;
    let problem: InvalidResult;
    try {
      return { value: parseResult(text, schema).value };
    } catch (err) {
      if (!(err instanceof InvalidResult)) throw err;
      problem = err;
    }
    if (finishReason === 'length') {
      return {
        error: {
          code: 'invalid_result',
          message: `${problem.message} (the answer stopped on max_tokens, so it was not asked again)`,
        },
        text,
      };
    }
    const started = performance.now();
    let second;
    try {
      second = await plan.driver.complete(
        plan.connection,
        withMessages(plan.request, repairMessages(plan.request.messages, text, problem)),
      );
    } catch (err) {
      const failure = toRunError(err);
      attempts.push({
        status: 'failed',
        repair: true,
        error: { code: failure.code, message: failure.message },
        duration_ms: Math.round(performance.now() - started),
      });
      return {
        error: { code: 'invalid_result', message: `${problem.message}; asking again failed: ${failure.message}` },
        text,
      };
    }
    const more = { usage: second.token_use, finishReason: second.finish_reason };
    try {
      const { value } = parseResult(second.text, schema);
      attempts.push({ status: 'completed', repair: true, duration_ms: Math.round(performance.now() - started) });
      return { value, ...more };
    } catch (err) {
      if (!(err instanceof InvalidResult)) throw err;
      const message = `${err.message} (asked again once after: ${problem.message})`;
      attempts.push({
        status: 'failed',
        repair: true,
        error: { code: 'invalid_result', message },
        duration_ms: Math.round(performance.now() - started),
      });
      return { error: { code: 'invalid_result', message }, text: second.text, ...more };
    }
  }
}

/** An answer under `do_validate: false`: JSON when it parses, else its text; `invalid` says why it does not match. */
function unvalidatedResult(text: string, schema: Record<string, unknown>): { result: ResultPart[]; invalid?: string } {
  try {
    return { result: [{ type: 'json', value: parseResult(text, schema).value }] };
  } catch (err) {
    if (!(err instanceof InvalidResult)) throw err;
    const value = parseUnvalidated(text);
    return {
      result: [value === undefined ? { type: 'text', value: text } : { type: 'json', value }],
      invalid: err.message,
    };
  }
}

/**
 * A failure as the run records it, with Vertesia's `retryable` (and `retry_after_ms`), which
 * `@vertesia/workflow` reads to decide whether to run the activity again.
 */
function toRunError(err: unknown): RunError {
  if (err instanceof ProviderError)
    return {
      code: err.code,
      message: boundErrorMessage(err.message),
      ...(err.upstreamStatus ? { data: { upstream_status: err.upstreamStatus } } : {}),
      retryable: err.retryable,
      ...(err.retryAfterMs !== undefined ? { retry_after_ms: err.retryAfterMs } : {}),
    };
  return {
    code: 'execution_error',
    message: boundErrorMessage((err as Error)?.message ?? String(err)),
    retryable: false,
  };
}

/** Token use of two calls (a run and its re-ask), unknown where either is unknown. */
function addUsage(a: TokenUsage | undefined, b: TokenUsage): TokenUsage | undefined {
  if (!a) return undefined;
  const sum = (x?: number, y?: number) => (x === undefined || y === undefined ? undefined : x + y);
  // Absent cache and reasoning counts are zero, not unknown: the provider reports them only when used.
  const extra = (x?: number, y?: number) => (x || y ? (x ?? 0) + (y ?? 0) : undefined);
  const out: TokenUsage = {
    prompt: sum(a.prompt, b.prompt),
    result: sum(a.result, b.result),
    total: sum(a.total, b.total),
  };
  for (const k of ['cache_read', 'cache_write', 'reasoning'] as const) {
    const v = extra(a[k], b[k]);
    if (v !== undefined) out[k] = v;
  }
  return out;
}
