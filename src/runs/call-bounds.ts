/**
 * The bounds of an async run's provider call (runs/async.ts): a signal that stops it (its
 * cancellation, its run timeout) and a timeout per step (each attempt of the call). A stopped
 * call's error is the signal's reason; a step that times out is retried like a provider timeout.
 */
import { ProviderError } from '../providers/driver.ts';
import type { RunError } from './model.ts';

export interface CallBounds {
  /** Aborted with a RunStopped when the run must stop. */
  signal: AbortSignal;
  /** Each attempt of the provider call stops after this long. */
  stepTimeoutMs: number;
}

/** The reason a run's call was stopped, as the run's error. */
export class RunStopped extends Error {
  constructor(readonly error: RunError) {
    super(error.message);
    this.name = 'RunStopped';
  }
}

/** One attempt's signal: the run's, and the step timeout. */
export function stepSignal(bounds: CallBounds | undefined): { signal?: AbortSignal; timedOut(): boolean } {
  if (!bounds) return { timedOut: () => false };
  const timer = AbortSignal.timeout(bounds.stepTimeoutMs);
  return { signal: AbortSignal.any([bounds.signal, timer]), timedOut: () => timer.aborted && !bounds.signal.aborted };
}

/** The run's error when its call was stopped, else undefined. */
export function stoppedError(bounds: CallBounds | undefined): RunError | undefined {
  if (!bounds?.signal.aborted) return undefined;
  const reason: unknown = bounds.signal.reason;
  return reason instanceof RunStopped ? reason.error : { code: 'cancelled', message: 'the run was stopped' };
}

export const stepTimeoutError = (ms: number): RunError => ({
  code: 'step_timeout',
  message: `the provider call took longer than the step timeout (${ms / 1000} s, ORRERY_ASYNC_STEP_TIMEOUT)`,
});

/** How the retry policy sees a step that timed out: a retryable provider timeout. */
export const STEP_TIMEOUT_RETRYABLE = new ProviderError('provider_unreachable', 'step timeout', 408, true);
