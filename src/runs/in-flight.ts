/**
 * What this process holds of the runs it executes, shared by the steps of a run (plan, call,
 * finish, stream, sweep): which runs it executes, which it created and nobody streams yet, and
 * which it answered before their row was committed.
 */
import type { RecordedRun } from './run-intents.ts';
import type { RunRow } from './model.ts';
import type { Plan } from './plan.ts';
import type { RunTrace } from '../telemetry/hooks.ts';

export class RunsInFlight {
  /**
   * Runs this process executes, from just before their `processing` row is written until their
   * outcome is stored. A `processing` row of this replica that is not here was orphaned by a write
   * that failed (the lost-run sweep fails it). Subscribers of this process share one claim
   * (runs/stream.ts), so an id is held once.
   */
  readonly executing = new Set<string>();
  /** Streamed runs that this process created, as written, with their plans and spans, kept until their stream starts. */
  readonly pending = new Map<string, { row: RunRow; plan: Plan; trace?: RunTrace }>();
  /** The storing of runs answered before their commit (runs/finish.ts, endAhead); each settles once, stored or not. */
  readonly storing = new Set<Promise<void>>();
  /** Runs answered before their commit whose storing failed: each lost-run sweep tries again (runs/sweep.ts). */
  readonly unstored = new Map<string, RecordedRun & { stored(): void }>();
  /** Calls of RunService.start() in flight (a blocking run is in `executing` only once its row is written). */
  starting = 0;

  /** Holds `done` (a storing that settles once, stored or not) until it settles. */
  track(done: Promise<void>): void {
    this.storing.add(done);
    void done.finally(() => this.storing.delete(done));
  }

  /**
   * Resolves once every run this process answered before its row was committed has been stored
   * (or its write failed); undefined when there is none. Reads wait for it (runs/read-barrier.ts),
   * so that a run is read as it was answered.
   */
  whenStored(): Promise<void> | undefined {
    return this.storing.size ? Promise.all(this.storing).then(() => {}) : undefined;
  }
}
