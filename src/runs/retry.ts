/**
 * The one retry loop of a run's provider call (no SDK retries underneath): rate limits,
 * overload, gateway trouble, timeouts and connection failures (ProviderError.retryable: 408,
 * 429, 500, 502, 503, 504, 529, unreachable) are tried again after a full-jitter exponential
 * backoff, or after exactly the wait the provider asked for (retry-after-ms, retry-after,
 * x-ms-retry-after-ms), within a budget of retries and of time. An environment's
 * `config.retries` overrides the defaults: a number (retries) or
 * `{max_retries, max_time_ms, base_delay_ms, max_delay_ms}`.
 */
import { ProviderError } from '../providers/driver.ts';

export interface RetryPolicy {
  /** Attempts after the first. */
  maxRetries: number;
  /** From the first attempt's start: no retry starts after it. */
  maxTimeMs: number;
  /** The first backoff's ceiling; each retry doubles it, up to maxDelayMs. */
  baseDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxRetries: 3,
  maxTimeMs: 60_000,
  baseDelayMs: 500,
  maxDelayMs: 30_000,
};

/** The environment's `config.retries` over the defaults; malformed values keep the default. */
export function retryPolicyOf(config: Record<string, unknown> | undefined): RetryPolicy {
  const r = config?.retries;
  const num = (v: unknown, min: number, max: number) =>
    typeof v === 'number' && Number.isFinite(v) && v >= min && v <= max ? v : undefined;
  if (typeof r === 'number')
    return { ...DEFAULT_RETRY_POLICY, maxRetries: num(Math.floor(r), 0, 10) ?? DEFAULT_RETRY_POLICY.maxRetries };
  if (!r || typeof r !== 'object') return DEFAULT_RETRY_POLICY;
  const o = r as Record<string, unknown>;
  return {
    maxRetries: num(o.max_retries, 0, 10) ?? DEFAULT_RETRY_POLICY.maxRetries,
    maxTimeMs: num(o.max_time_ms, 0, 600_000) ?? DEFAULT_RETRY_POLICY.maxTimeMs,
    baseDelayMs: num(o.base_delay_ms, 0, 60_000) ?? DEFAULT_RETRY_POLICY.baseDelayMs,
    maxDelayMs: num(o.max_delay_ms, 0, 300_000) ?? DEFAULT_RETRY_POLICY.maxDelayMs,
  };
}

/**
 * The wait before the next attempt, or undefined when there is none: the error is not
 * retryable, the retries are spent, or the wait would end past the time budget.
 * `retry` is the number of the retry about to be made (1 for the first).
 */
export function nextDelay(
  err: unknown,
  retry: number,
  elapsedMs: number,
  policy: RetryPolicy,
  random = Math.random,
): number | undefined {
  if (!(err instanceof ProviderError) || !err.retryable || retry > policy.maxRetries) return undefined;
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (retry - 1));
  const delay = err.retryAfterMs !== undefined ? err.retryAfterMs : Math.round(random() * ceiling);
  return elapsedMs + delay <= policy.maxTimeMs ? delay : undefined;
}

/** One try of a run's provider call, as the run keeps it (`attempts`). */
export interface Attempt {
  status: 'completed' | 'failed';
  /** The one re-ask of an answer that did not match result_schema. */
  repair?: true;
  /** The child run that made this attempt (virtual environments). */
  run?: string;
  error?: { code: string; message: string };
  duration_ms: number;
}
