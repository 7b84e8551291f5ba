/**
 * The sweep step of runs: what the periodic sweeper (server.ts) asks of them. Runs lost with their
 * process (restored from its intent log, or failed `executor_lost`), outcomes this process could
 * not store (`storage_error`), streamed runs nobody streamed (`stream_not_consumed`), chunks of
 * ended streamed runs, and expired result-cache entries.
 */
import type { OrreryDialect } from '../db/dialect.ts';
import { nowIso } from '../db/ids.ts';
import type { ReplicaRegistry } from '../cluster/replicas.ts';
import { docOf, outcomeOf, tagsOf, type RunError, type RunRow } from './model.ts';
import type { RecordedRun, RunIntentLog } from './run-intents.ts';
import type { ResultCache } from './result-cache.ts';
import type { RunWrites } from './run-writer.ts';
import type { RunSignals } from './run-signals.ts';
import type { RunsInFlight } from './in-flight.ts';
import * as store from './store.ts';

export interface RunSweeperDeps {
  db: store.Db;
  dialect: OrreryDialect;
  writer: RunWrites;
  signals: RunSignals;
  replica: ReplicaRegistry;
  inFlight: RunsInFlight;
  cache: ResultCache;
  /** The intent logs the writer records rows in (SQLite): the lost-run sweep restores the runs of those that processes left. */
  intents?: RunIntentLog;
  /** How long a streamed run waits for its first subscriber. */
  streamTimeoutSeconds: number;
  /** Whether the project still exists, read in `trx` (a run is never restored into a deleted project). */
  projectExists: ProjectExists;
}

export type ProjectExists = (trx: store.Db, account: string, project: string) => Promise<boolean>;

/** The error of a run whose process died before it ended (a dead replica's `processing` row, or an entry of its intent log). */
const EXECUTOR_LOST: RunError = {
  code: 'executor_lost',
  message: 'the server process executing this run stopped before it ended; run it again',
};
/** A `processing` run of this replica that it no longer executes is failed once it is this old. */
const ORPHAN_AFTER_MS = 5000;
/** Chunks of an ended streamed run stay this long for followers on other replicas. */
const CHUNK_KEEP_MS = 5 * 60_000;

export class RunSweeper {
  /** The lost-run sweep in progress (sweepLost). */
  private lostSweep: Promise<number> | undefined;

  constructor(private readonly deps: RunSweeperDeps) {}

  /** Drops the stored chunks of runs that ended a while ago (their result holds the text). */
  async sweepChunks(): Promise<void> {
    if (this.deps.signals.crossProcess)
      await store.deleteEndedChunks(this.deps.db, new Date(Date.now() - CHUNK_KEEP_MS).toISOString());
  }

  /** Drops expired entries of the result cache. */
  sweepCache(): Promise<number> {
    return this.deps.cache.sweep();
  }

  /** Fails streamed runs that nobody streamed in time (`stream_not_consumed`). */
  async sweepUnconsumed(): Promise<number> {
    const { db, dialect, streamTimeoutSeconds, inFlight } = this.deps;
    const before = new Date(Date.now() - streamTimeoutSeconds * 1000).toISOString();
    const stale = await store.staleCreatedRuns(db, dialect, before);
    let failed = 0;
    for (const row of stale) {
      const doc = docOf(row);
      const error: RunError = {
        code: 'stream_not_consumed',
        message: `the run was created with stream: true and not streamed within ${streamTimeoutSeconds} s`,
      };
      const ok = await store.updateRun(
        db,
        dialect,
        row.id,
        { status: 'failed', updated_at: nowIso(), doc: { ...doc, error } },
        'created',
      );
      if (ok) {
        failed++;
        inFlight.pending.delete(row.id);
      }
    }
    return failed;
  }

  /**
   * Stores the runs of stopped processes' intent logs, then fails `processing` runs whose executing
   * replica stopped beating (`executor_lost`), and those of this replica that it no longer
   * executes: their outcome could not be stored (`storage_error`). Throws, once all that is done,
   * if a run of an intent log could not be stored (its log is kept for the next sweep). A sweep
   * asked for while one runs (a slow one outlasting the sweeper's interval) is that one: two at
   * once would read the same logs and rows and store or fail the same runs twice.
   */
  sweepLost(): Promise<number> {
    this.lostSweep ??= this.sweepLostOnce().finally(() => (this.lostSweep = undefined));
    return this.lostSweep;
  }

  private async sweepLostOnce(): Promise<number> {
    const { db, dialect, writer, signals, replica, inFlight, intents } = this.deps;
    const alive = await replica.alive();
    // First the intent logs of dead processes: a run answered there whose insert had committed has
    // a `processing` row, which must be stored as answered, not failed as executor_lost below; one
    // whose entry could not be stored yet is left for the next sweep.
    const swept = intents ? await intents.sweep(alive, (run) => this.restoreLost(run)) : undefined;
    let failed = swept?.restored ?? 0;
    const lost = (await store.runsExecutedBy(db, dialect, alive)).filter((r) => !swept?.unrestored.has(r.id));
    const settled = new Date(Date.now() - ORPHAN_AFTER_MS).toISOString();
    const mine = (await store.runsOfExecutor(db, dialect, replica.id, settled)).filter(
      (r) => !inFlight.executing.has(r.id),
    );
    for (const row of [...lost, ...mine]) {
      const doc = docOf(row);
      const error: RunError =
        row.executor === replica.id
          ? { code: 'storage_error', message: 'the server could not store how this run ended; run it again' }
          : EXECUTOR_LOST;
      const ok = await writer.run(async (trx) => {
        const updated = await store.updateRun(
          trx,
          dialect,
          row.id,
          { status: 'failed', updated_at: nowIso(), executor: null, doc: { ...doc, error } },
          'processing',
        );
        if (updated) await signals.ended(row.id, trx);
        return updated;
      });
      if (ok) failed++;
    }
    // Runs this process answered and could not store yet: from their entries, as a sweep would after a crash.
    for (const [id, run] of inFlight.unstored) {
      try {
        await this.restoreLost(run);
      } catch {
        continue; // the next sweep tries again
      }
      inFlight.unstored.delete(id);
      run.stored();
      inFlight.executing.delete(id);
    }
    if (swept?.error) {
      // Said once the rest is done: the server logs it, and the next sweep tries again.
      throw new Error(
        `could not store ${swept.unrestored.size} run(s) from the intent log of a stopped process (kept for the next sweep): ${(swept.error as Error)?.message ?? swept.error}`,
        { cause: swept.error },
      );
    }
    return failed;
  }

  /**
   * A run of an intent log (runs/run-intents.ts) whose process died, or could not store it. Its
   * start with no row (that process died before its insert committed): stored `failed`. Its end
   * (answered before its commit): its `processing` row updated, or the run inserted as it ended.
   * Never inserted into a project deleted meanwhile (its runs went with it).
   */
  private restoreLost(run: RecordedRun): Promise<boolean> {
    const { dialect, writer, signals } = this.deps;
    const row: RunRow =
      run.kind === 'end'
        ? { ...run.row, doc: run.doc }
        : {
            ...run.row,
            status: 'failed',
            updated_at: nowIso(),
            executor: null,
            doc: { ...run.doc, error: EXECUTOR_LOST },
          };
    return writer.run(async (trx) => {
      if (await store.runExists(trx, row.id)) {
        if (run.kind !== 'end') return false;
        if (!(await store.updateRun(trx, dialect, row.id, outcomeOf(row), 'processing'))) return false;
      } else if (await this.deps.projectExists(trx, row.account_id, row.project_id)) {
        await store.insertRun(trx, dialect, row, tagsOf(row));
      } else return false;
      await signals.ended(row.id, trx);
      return true;
    });
  }
}
