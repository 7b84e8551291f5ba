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
 * A cancellation asked for before the call fails the run `cancelled` and makes no call.
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
import { countCallStart, getAsyncRun, insertAsyncRun } from './async-store.ts';

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
    if (!row || !checkpoint || hasEnded(row.status)) return this.forget(id);
    if (checkpoint.cancel_requested) return this.fail(row, CANCELLED);
    const starts = Number(checkpoint.attempts);
    if (starts >= MAX_CALL_STARTS) return this.fail(row, interrupted(starts));
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
    let final: RunRow;
    try {
      final = await this.deps.execute(running, docOf(row), plan, live);
    } catch (err) {
      hub.close(id, undefined);
      throw err;
    }
    hub.close(id, await views.withEmbeddings(final, await views.expand(p, final).catch(() => forCreation(final))));
  }

  /** The job will not be tried again: its run is failed with the job's last error, if it has not ended. */
  private async giveUp(job: Job<AsyncRunPayload>, err: unknown): Promise<void> {
    const row = await store.getRun(this.deps.db, this.deps.dialect, job.scope, job.subject);
    this.forget(job.subject);
    if (!row || hasEnded(row.status)) return;
    const message = err instanceof Error ? err.message : String(err);
    await this.fail(row, { code: 'async_failed', message: `the async run could not be executed: ${message}` });
  }

  private async fail(row: RunRow, error: RunError): Promise<void> {
    const { dialect, writer, signals } = this.deps;
    this.forget(row.id);
    await writer.run(async (trx) => {
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
  }

  private forget(id: string): void {
    this.plans.delete(id);
  }
}

const CANCELLED: RunError = { code: 'cancelled', message: 'the run was cancelled before its provider call' };

const interrupted = (starts: number): RunError => ({
  code: 'interrupted',
  message: `the server stopped during this run's provider call ${starts} times; it is not called again: run it again`,
});
