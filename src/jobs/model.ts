/** Background jobs: what a handler receives, and how it says "do not try again". */
import type { Scope } from '../auth/principal.ts';

export interface Job<P = unknown> {
  id: string;
  kind: string;
  scope: Scope;
  /** What the job works on (an object id); one running job per subject at a time. */
  subject: string;
  payload: P;
  /** This attempt's number, from 1. */
  attempt: number;
  maxAttempts: number;
  /** The last failure of an earlier attempt, if any. */
  lastError: string | null;
}

export interface JobHandler<P = unknown> {
  /**
   * Does the work. Resolving completes the job. Throwing a `PermanentJobError` ends it at once;
   * any other error is taken as transient and the job is tried again later (with backoff) until
   * its attempts run out. The signal aborts when the server shuts down: the job is then put back
   * in the queue as it was, for this or another process to take.
   */
  run(job: Job<P>, signal: AbortSignal): Promise<void>;
  /** Called once when the job will not be tried again (a permanent error, or attempts exhausted). */
  giveUp?(job: Job<P>, err: unknown): Promise<void>;
}

export interface EnqueueInput<P = unknown> {
  kind: string;
  scope: Scope;
  subject: string;
  payload?: P;
  /** Run no sooner than this many milliseconds from now. */
  delayMs?: number;
}

/** An error that retrying cannot fix. */
export class PermanentJobError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PermanentJobError';
  }
}

/** The attempt was abandoned because the server is stopping: the job goes back to the queue. */
export class JobReleased extends Error {
  constructor() {
    super('the server is shutting down: the job was put back in the queue');
    this.name = 'JobReleased';
  }
}
