/**
 * Async runs (POST /execute/async): the run's row is written `created` and a durable job (src/jobs)
 * executes it, so it survives its request, a restart and a `kill -9`.
 *
 * Checkpoints, in Orrery's own rows: the run row `created` and its `async_runs` row before the
 * answer; before the provider call, the call counted (`async_runs.attempts`) and the run claimed
 * `processing` by this replica; after it, the outcome stored (runs/finish.ts). The job is deleted
 * once that outcome is stored. A process that dies leaves the job leased; once the lease lapses
 * another claim takes it and finds the run:
 * - ended: nothing to do (a completed step never runs again);
 * - its call counted once and not ended: the call was in flight at the crash, and runs once more;
 * - its call counted twice: it is failed (`interrupted`) rather than called a third time.
 * Cancellation (POST /workflows/runs/:workflowId/:runId/actions/cancel): a queued run is failed
 * `cancelled` at once; a running one is stopped at its next check (every ORRERY_ASYNC_CANCEL_POLL,
 * on whichever replica runs it), its provider call aborted. Timeouts: each attempt of the call
 * (`step_timeout`, retried as a provider timeout) and the run from its call's first start across
 * restarts (`run_timeout`). Once a run ended, `onEnded` is told (events, notify_endpoints) before its
 * job is deleted, so a crash in between tells it again, and it must be idempotent.
 * The sweeps of streamed and lost runs leave these runs to their job (runs/store.ts, notAsync).
 */
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import { nowIso } from '../db/ids.ts';
import type { Principal } from '../auth/principal.ts';
import type { JobQueue } from '../jobs/queue.ts';
import { PermanentJobError, type Job } from '../jobs/model.ts';
import { docOf, hasEnded, type RunDoc, type RunError, type RunRow } from './model.ts';
import type { Plan, RunPlanner } from './plan.ts';
import type { RunWrites } from './run-writer.ts';
import type { RunsInFlight } from './in-flight.ts';
import type { RunSignals } from './run-signals.ts';
import type { RunViews } from './run-views.ts';
import type { StreamHub } from './stream-hub.ts';
import type { ChunkSink } from './virtual.ts';
import { forCreation } from './finish.ts';
import * as store from './store.ts';
import { cancelRequested, countCallStart, getAsyncRun, insertAsyncRun, requestCancel } from './async-store.ts';
import { RunStopped } from './call-bounds.ts';
import { Conflict, NotFound } from '../util/errors.ts';
import type { Scope } from '../auth/principal.ts';

const ASYNC_RUN_JOB = 'async-run';

/** A provider call in flight at a crash runs at most this many times in all. */
const MAX_CALL_STARTS = 2;

export interface AsyncRunPayload {
  /** Who started the run: its job plans and records it as them. */
  principal: Pick<Principal, 'account' | 'project' | 'keyId' | 'role' | 'via'>;
}

/** What POST /execute/async records besides the run. */
export interface AsyncExtras {
  notifyEndpoints: readonly string[];
  /** Another feature's job executes the run instead (an agent, src/agents): its kind and payload. */
  job?: { kind: string; payload: Record<string, unknown> };
}

export interface AsyncRunnerDeps {
  db: Kysely<Database>;
  dialect: OrreryDialect;
  queue: JobQueue;
  writer: RunWrites;
  signals: RunSignals;
  hub: StreamHub;
  inFlight: RunsInFlight;
  planner: RunPlanner;
  views: RunViews;
  replicaId: string;
  /** ORRERY_ASYNC_STEP_TIMEOUT, ORRERY_ASYNC_RUN_TIMEOUT, ORRERY_ASYNC_CANCEL_POLL (ms). */
  timeouts: { stepMs: number; runMs: number; cancelPollMs: number };
  /** Told once a run ended (and again after a crash before its job's end): events, notify_endpoints. */
  onEnded?: (scope: Scope, runId: string, notifyEndpoints: readonly string[]) => Promise<void>;
  /** A run's call and finish: the run as it ended (never throws for a provider failure). */
  execute(row: RunRow, doc: RunDoc, plan: Plan, live: ChunkSink): Promise<RunRow>;
}

export class AsyncRunner {
  /** Plans of runs created here whose job has not started yet (a restarted process plans again). */
  private readonly plans = new Map<string, Plan>();

  constructor(private readonly deps: AsyncRunnerDeps) {
    deps.queue.register<AsyncRunPayload>(ASYNC_RUN_JOB, {
      run: (job) => this.run(job),
      giveUp: (job, err) => this.giveUp(job, err),
    });
  }

  /** After the run's row is written: its checkpoint row and its job, in one transaction. */
  async enqueue(p: Principal, row: RunRow, plan: Plan, extras: AsyncExtras): Promise<void> {
    const { db, dialect, queue } = this.deps;
    const scope = { account: row.account_id, project: row.project_id };
    const principal = { account: p.account, project: p.project, keyId: p.keyId, role: p.role, via: p.via };
    if (!extras.job) this.plans.set(row.id, plan);
    const job = extras.job ?? { kind: ASYNC_RUN_JOB, payload: {} };
    try {
      await db.transaction().execute(async (trx) => {
        await insertAsyncRun(trx, dialect, scope, row.id, extras.notifyEndpoints);
        await queue.enqueue<AsyncRunPayload>(
          { kind: job.kind, scope, subject: row.id, payload: { ...job.payload, principal } },
          trx,
        );
      });
    } catch (err) {
      this.plans.delete(row.id);
      throw err;
    }
    queue.wake();
  }

  private async run(job: Job<AsyncRunPayload>): Promise<void> {
    const { db, dialect, writer, hub, inFlight, planner, views, replicaId } = this.deps;
    const id = job.subject;
    const p = job.payload.principal as Principal;
    const row = await store.getRun(db, dialect, job.scope, id);
    const checkpoint = await getAsyncRun(db, id);
    // Gone with its project, or ended (its outcome stored before a crash took the job's deletion).
    if (!row || !checkpoint) return this.forget(id);
    if (hasEnded(row.status)) return this.ended(row);
    if (checkpoint.cancel_requested) return void (await this.fail(row, cancelled('before', checkpoint.cancel_reason)));
    const starts = Number(checkpoint.attempts);
    if (starts >= MAX_CALL_STARTS) return void (await this.fail(row, interrupted(starts)));
    const { stepMs, runMs, cancelPollMs } = this.deps.timeouts;
    const deadline = (checkpoint.started_at ? Date.parse(checkpoint.started_at) : Date.now()) + runMs;
    if (Date.now() >= deadline) return void (await this.fail(row, runTimeout(runMs)));
    inFlight.executing.add(id);
    const claimed = await writer
      .update(id, { status: 'processing', updated_at: nowIso(), executor: replicaId }, row.status)
      .catch((err) => {
        inFlight.executing.delete(id);
        throw err;
      });
    if (!claimed) {
      inFlight.executing.delete(id);
      throw new Error(`run ${id} changed under its job`);
    }
    let plan: Plan;
    try {
      plan = this.plans.get(id) ?? (await planner.replan(p, row));
    } catch (err) {
      inFlight.executing.delete(id);
      throw new PermanentJobError(`run ${id} could not be planned again: ${(err as Error).message}`, { cause: err });
    }
    // The checkpoint before the call, once nothing but the call is left: a failure before it (the
    // database away) is retried without counting as a call.
    const counted = await countCallStart(db, id, starts).catch((err) => {
      inFlight.executing.delete(id);
      throw err;
    });
    if (!counted) {
      inFlight.executing.delete(id);
      throw new Error(`run ${id}: its checkpoint changed under its job`);
    }
    this.plans.delete(id);
    const live = hub.open(id);
    const running: RunRow = { ...row, status: 'processing', executor: replicaId };
    // What stops the call: the run's deadline, and its cancellation asked on any replica.
    const stop = new AbortController();
    const timer = setTimeout(() => stop.abort(new RunStopped(runTimeout(runMs))), deadline - Date.now());
    const poll = setInterval(
      () =>
        void cancelRequested(db, id).then(
          (asked) => asked && stop.abort(new RunStopped(cancelled('during', asked.reason))),
          () => {}, // the database away: asked again at the next tick
        ),
      cancelPollMs,
    );
    let final: RunRow;
    try {
      final = await this.deps.execute(
        running,
        docOf(row),
        { ...plan, bounds: { signal: stop.signal, stepTimeoutMs: stepMs } },
        live,
      );
    } catch (err) {
      hub.close(id, undefined);
      throw err;
    } finally {
      clearTimeout(timer);
      clearInterval(poll);
    }
    hub.close(id, await views.withEmbeddings(final, await views.expand(p, final).catch(() => forCreation(final))));
    await this.ended(final);
  }

  /**
   * Asks for an async run's cancellation: a queued run is failed `cancelled` now, a running one
   * at its next check. Answers whether it ended here.
   */
  async cancel(s: Scope, id: string, reason: string | null): Promise<boolean> {
    const { db, dialect } = this.deps;
    const row = await store.getRun(db, dialect, s, id);
    if (!row) throw new NotFound('run', id);
    if (hasEnded(row.status)) throw new Conflict(`run ${id} already ended (${row.status}): there is nothing to cancel`);
    if (!(await requestCancel(db, s, id, reason)))
      throw new Conflict(
        `run ${id} was not started by POST /execute/async: only async runs can be cancelled (a blocking run ends with its request)`,
      );
    return row.status === 'created' && (await this.fail(row, cancelled('before', reason)));
  }

  /** The job will not be tried again: its run is failed with the job's last error, if it has not ended. */
  private async giveUp(job: Job<AsyncRunPayload>, err: unknown): Promise<void> {
    const row = await store.getRun(this.deps.db, this.deps.dialect, job.scope, job.subject);
    this.forget(job.subject);
    if (!row || hasEnded(row.status)) return;
    const message = err instanceof Error ? err.message : String(err);
    await this.fail(row, { code: 'async_failed', message: `the async run could not be executed: ${message}` });
  }

  private async fail(row: RunRow, error: RunError): Promise<boolean> {
    const { dialect, writer, signals } = this.deps;
    this.forget(row.id);
    const failed = await writer.run(async (trx) => {
      const updated = await store.updateRun(
        trx,
        dialect,
        row.id,
        { status: 'failed', updated_at: nowIso(), executor: null, doc: { ...docOf(row), error } },
        row.status,
      );
      if (updated) await signals.ended(row.id, trx);
      return updated;
    });
    if (failed) await this.ended(row);
    return Boolean(failed);
  }

  /** The run ended: its listeners told (their failure is the job's, tried again). */
  private async ended(row: RunRow): Promise<void> {
    this.forget(row.id);
    const { onEnded, db, dialect } = this.deps;
    if (!onEnded) return;
    const stored = (await getAsyncRun(db, row.id))?.notify_endpoints;
    const endpoints = (stored ? dialect.fromJson(stored) : []) as string[];
    await onEnded({ account: row.account_id, project: row.project_id }, row.id, endpoints);
  }

  private forget(id: string): void {
    this.plans.delete(id);
  }
}

const cancelled = (when: 'before' | 'during', reason: string | null): RunError => ({
  code: 'cancelled',
  message: `the run was cancelled ${when} its provider call${reason ? `: ${reason}` : ''}`,
});

const runTimeout = (ms: number): RunError => ({
  code: 'run_timeout',
  message: `the run took longer than its run timeout (${ms / 1000} s from its provider call's first start, ORRERY_ASYNC_RUN_TIMEOUT)`,
});

const interrupted = (starts: number): RunError => ({
  code: 'interrupted',
  message: `the server stopped during this run's provider call ${starts} times; it is not called again: run it again`,
});
