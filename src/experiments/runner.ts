/**
 * The job that runs an experiment (kind `experiment`, subject the experiment's id) on the durable
 * queue of async runs (src/jobs): it takes the queued cells in item order, `concurrency` at a time,
 * and for each makes an ordinary run of the variant (tagged with the experiment) and scores it
 * with every evaluator. A cell's outcome is written as it ends, so a job stopped by a shutdown
 * (released to the queue) or a crash (its lease lapses) resumes with the cells not yet ended: the
 * ones `running` when it stopped start again (their runs, if made, stay as ordinary runs).
 *
 * Limits and quotas: each run is admitted by the limiter as a request that executes. Over a
 * per-minute limit the cell waits for its window; over the daily cost quota the experiment stops
 * `failed` with the limiter's message and its queued cells stay queued (re-running an item
 * resumes them). An evaluator that throws gives no score: the cell records its error, is
 * `failed`, and the experiment goes on.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Principal } from '../auth/principal.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import type { JobQueue } from '../jobs/queue.ts';
import { JobReleased, type Job } from '../jobs/model.ts';
import { OrreryError } from '../util/errors.ts';
import * as store from './store.ts';
import type { CellRow, CellScores, Db, ExperimentRow, ItemRow } from './store.ts';

const EXPERIMENT_JOB = 'experiment';

/** Queued cells read at once; the pool takes from them. */
const BATCH = 200;
/** How often a running experiment reads whether it was canceled. */
const CANCEL_POLL_MS = 500;
/** The longest wait for a per-minute limit's window before the cell is admitted again. */
const MAX_PACING_WAIT_MS = 60_000;

/** The run an experiment made (runs/model.ts Run, the fields read). */
export interface RunLike {
  id: string;
  status: string;
  result?: Array<{ type: string; value: unknown }>;
  execution_time?: number;
  token_use?: { prompt?: number; result?: number; total?: number } | null;
  cost?: { total?: number } | null;
  error?: { message?: string } | null;
}

interface Evaluation {
  score?: { id: string; value: number | boolean | string };
  error?: { message: string };
}

export interface RunnerDeps {
  db: Db;
  dialect: OrreryDialect;
  queue: JobQueue;
  /** An ordinary blocking run (runs/service.ts create): `interaction` is an id. */
  run(
    p: Principal,
    input: { interaction: string; data: Record<string, unknown>; tags: string[]; config?: Record<string, unknown> },
  ): Promise<RunLike>;
  /** Scores run `runId` with the evaluator at `version`, recorded on the run (or its error). */
  evaluate(
    p: Principal,
    evaluator: { id: string; version: number },
    run: RunLike,
    item: { data: Record<string, unknown>; expected?: unknown },
  ): Promise<Evaluation>;
  /** The limiter's admission of one execution (throws its 429). */
  admit(p: Principal): Promise<void>;
  onError?(err: unknown, what: string): void;
}

interface Payload {
  /** Unused: the principal is the experiment's own (its row), read again at each attempt. */
  experiment?: string;
}

/** The daily quota was reached: the experiment stops. */
class QuotaReached extends Error {}

export class ExperimentRunner {
  constructor(private readonly deps: RunnerDeps) {
    deps.queue.register<Payload>(EXPERIMENT_JOB, {
      run: (job, signal) => this.run(job, signal),
      giveUp: async (job, err) => {
        const message = err instanceof Error ? err.message : String(err);
        await store.setStatus(deps.db, job.scope, job.subject, 'failed', ['queued', 'running'], message);
      },
    });
  }

  /** Queues the experiment's job; pass `trx` to enqueue inside the caller's transaction. */
  async enqueue(exp: Pick<ExperimentRow, 'id' | 'account_id' | 'project_id'>): Promise<void> {
    await this.deps.queue.enqueue({
      kind: EXPERIMENT_JOB,
      scope: { account: exp.account_id, project: exp.project_id },
      subject: exp.id,
      payload: {},
    });
  }

  private async run(job: Job<Payload>, signal: AbortSignal): Promise<void> {
    const { db, dialect } = this.deps;
    const s = job.scope;
    const exp = await store.getExperiment(db, dialect, s, job.subject);
    if (!exp || exp.status === 'canceled' || exp.status === 'completed' || exp.status === 'failed') return;
    await store.setStatus(db, s, exp.id, 'running', ['queued', 'running']);
    // One job per experiment at a time: cells left running were a stopped attempt's.
    await store.moveCells(db, exp.id, 'running', 'queued');
    const p = exp.principal as unknown as Principal;
    let canceled = false;
    const poll = setInterval(
      () =>
        void store.getExperiment(db, dialect, s, exp.id).then(
          (e) => (canceled = !e || e.status === 'canceled'),
          () => {}, // the database away: read again at the next tick
        ),
      CANCEL_POLL_MS,
    );
    const stopped = () => canceled || signal.aborted;
    try {
      for (;;) {
        if (stopped()) break;
        const cells = await store.queuedCells(db, dialect, s, exp.id, BATCH);
        if (!cells.length) break;
        const items = new Map(
          (await store.getItems(db, dialect, s, exp.id, { ids: [...new Set(cells.map((c) => c.item_id))] })).map(
            (i) => [i.item_id, i],
          ),
        );
        let next = 0;
        const worker = async () => {
          while (next < cells.length && !stopped()) {
            const cell = cells[next++];
            await this.runCell(exp, p, cell, items.get(cell.item_id)!, signal);
          }
        };
        await Promise.all(Array.from({ length: Math.min(exp.concurrency, cells.length) }, worker));
      }
    } catch (err) {
      if (err instanceof QuotaReached) {
        await store.moveCells(db, exp.id, 'running', 'queued');
        await store.setStatus(db, s, exp.id, 'failed', ['running'], err.message);
        return;
      }
      throw err;
    } finally {
      clearInterval(poll);
    }
    if (signal.aborted) throw new JobReleased();
    if (canceled) return;
    const left = await store.countCells(db, s, exp.id);
    if (left.queued === 0 && left.running === 0) await store.setStatus(db, s, exp.id, 'completed', ['running']);
  }

  /** Waits out per-minute limits (bounded); the daily quota stops the experiment. */
  private async admit(p: Principal, signal: AbortSignal): Promise<void> {
    for (;;) {
      try {
        return await this.deps.admit(p);
      } catch (err) {
        if (!(err instanceof OrreryError) || err.status !== 429) throw err;
        const details = (err.details ?? {}) as { window?: string; retry_after_ms?: number };
        if (details.window === 'day') throw new QuotaReached(`the experiment stopped: ${err.message}`);
        await sleep(Math.min(MAX_PACING_WAIT_MS, Math.max(100, details.retry_after_ms ?? 1000)), undefined, {
          signal,
        }).catch(() => {});
        if (signal.aborted) throw new JobReleased();
      }
    }
  }

  private async runCell(exp: ExperimentRow, p: Principal, cell: CellRow, item: ItemRow, signal: AbortSignal) {
    const { db, dialect } = this.deps;
    const variant = exp.variants.find((v) => v.name === cell.variant)!;
    await this.admit(p, signal);
    const claimed = await store.updateCell(db, dialect, cell, { status: 'running', attempts: cell.attempts + 1 }, [
      'queued',
    ]);
    if (!claimed) return; // canceled meanwhile
    let run: RunLike;
    try {
      run = await this.deps.run(p, {
        interaction: variant.interaction_id,
        data: item.data,
        tags: ['experiment', `experiment:${exp.id}`, `variant:${variant.name}`],
        ...(variant.config ? { config: variant.config } : {}),
      });
    } catch (err) {
      // A refusal (the interaction version deleted since, its input invalid): the cell failed.
      // Anything else (the database away) puts the cell back and is the job's to retry.
      if (err instanceof OrreryError && err.status < 500 && err.status !== 429) {
        await store.updateCell(db, dialect, cell, { status: 'failed', error: err.message }, ['running']);
        return;
      }
      await store.updateCell(db, dialect, cell, { status: 'queued' }, ['running']);
      throw err;
    }
    const figures = {
      run_id: run.id,
      latency_ms: typeof run.execution_time === 'number' ? run.execution_time : null,
      prompt_tokens: run.token_use?.prompt ?? null,
      result_tokens: run.token_use?.result ?? null,
      cost: typeof run.cost?.total === 'number' ? run.cost.total : null,
    };
    if (run.status !== 'completed') {
      const error = run.error?.message ?? `the run ended ${run.status}`;
      await store.updateCell(db, dialect, cell, { ...figures, status: 'failed', error }, ['running']);
      return;
    }
    const scores: CellScores = {};
    for (const ev of exp.evaluators) {
      const out = await this.deps
        .evaluate(p, ev, run, { data: item.data, ...(item.expected !== undefined ? { expected: item.expected } : {}) })
        .catch((err: Error): Evaluation => {
          // The evaluator refused the run (deleted since, a score of the wrong kind): its error, recorded.
          if (err instanceof OrreryError && err.status < 500) return { error: { message: err.message } };
          throw err;
        });
      scores[ev.name] = out.score ? { value: out.score.value, score: out.score.id } : { error: out.error!.message };
    }
    const failed = Object.values(scores).some((v) => 'error' in v);
    await store.updateCell(
      db,
      dialect,
      cell,
      { ...figures, scores, error: null, status: failed ? 'failed' : 'completed' },
      ['running'],
    );
  }
}
