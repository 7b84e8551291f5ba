/**
 * Group commit for run writes (DESIGN principle 4: batch what can be batched). Concurrent requests
 * queue their inserts and updates; one transaction per event-loop turn applies them all, so a
 * commit (and its WAL write or fsync) is shared by every run in flight instead of paid by each.
 * A caller's promise settles only once its write is committed: a run row exists before any provider
 * call (or, on SQLite's thread, an entry of the intent log: runs/run-intents.ts). If a batch
 * fails, its writes are retried one by one so an error reaches only the request that caused it.
 */
import type { Updateable } from 'kysely';
import type { RunTable } from '../db/schema.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import type { RunRow } from './model.ts';
import { applyRunWrite, prepareRunInsert, prepareRunUpdate, type Db } from './store.ts';
import { fullTextLast } from './search-index.ts';

export type Op = (trx: Db) => Promise<boolean>;

/** A write that may have been recorded in the intent log ahead of its commit (RunWrites.insertAhead, updateAhead). */
export interface AheadWrite {
  /** The row is in the intent log (runs/run-intents.ts): its caller need not wait for `committed`. */
  readonly recorded: boolean;
  /** What the write returned once committed (an insert: true). */
  readonly committed: Promise<boolean>;
  /** The run's row was stored another way (written whole after a write failed): its entry is no longer needed. */
  stored(): void;
}

/** What the run service needs of a run writer: this one, or the thread of runs/run-writer-thread.ts. */
export interface RunWrites {
  insert(row: RunRow, tags: readonly string[]): Promise<void>;
  /** An insert recorded in the intent log first when that saves its caller the commit's wait (runs/run-writer-thread.ts). */
  insertAhead?(row: RunRow, tags: readonly string[]): AheadWrite;
  /** The update that ends a run recorded ahead (`ended`: the run with `patch` applied), recorded in the intent log as well when it can be. */
  updateAhead?(ended: RunRow, patch: Updateable<RunTable>): AheadWrite;
  /** Resolves to false when `fromStatus` is given and the run was no longer in it. */
  update(id: string, patch: Updateable<RunTable>, fromStatus?: string): Promise<boolean>;
  /** Any other write, applied in the next batch; resolves to what `op` returns. */
  run(op: Op): Promise<boolean>;
  /** Waits for every queued write, then lets go of what the writer holds (shutdown). */
  close(): Promise<void>;
}

/** `writes`, with `wrote` told of each write as it is handed over (the WAL checkpointer, db/wal-checkpointer.ts). */
export const signallingWrites = (writes: RunWrites, sink: { wrote(): void }): RunWrites => ({
  insert: (row, tags) => (sink.wrote(), writes.insert(row, tags)),
  ...(writes.insertAhead
    ? { insertAhead: (row: RunRow, tags: readonly string[]) => (sink.wrote(), writes.insertAhead!(row, tags)) }
    : {}),
  ...(writes.updateAhead
    ? { updateAhead: (ended: RunRow, patch: Updateable<RunTable>) => (sink.wrote(), writes.updateAhead!(ended, patch)) }
    : {}),
  update: (id, patch, fromStatus) => (sink.wrote(), writes.update(id, patch, fromStatus)),
  run: (op) => (sink.wrote(), writes.run(op)),
  close: () => writes.close(),
});

interface Pending {
  op: Op;
  resolve: (v: boolean) => void;
  reject: (e: unknown) => void;
}

/** At most this many writes share a transaction, so one commit never grows without bound. */
const MAX_BATCH = 256;

export class RunWriter implements RunWrites {
  private queue: Pending[] = [];
  private scheduled = false;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Db,
    private readonly dialect: OrreryDialect,
    private readonly maxBatch = MAX_BATCH,
  ) {}

  async insert(row: RunRow, tags: readonly string[]): Promise<void> {
    const write = prepareRunInsert(this.dialect, row, tags);
    await this.enqueue((trx) => applyRunWrite(trx, this.dialect, write));
  }

  /** Resolves to false when `fromStatus` is given and the run was no longer in it. */
  async update(id: string, patch: Updateable<RunTable>, fromStatus?: string): Promise<boolean> {
    const write = prepareRunUpdate(this.dialect, id, patch, fromStatus);
    return this.enqueue((trx) => applyRunWrite(trx, this.dialect, write));
  }

  /** Any other write, applied in the next batch; resolves to what `op` returns. */
  run(op: Op): Promise<boolean> {
    return this.enqueue(op);
  }

  close(): Promise<void> {
    return this.drain();
  }

  /** Waits for every queued write. */
  async drain(): Promise<void> {
    while (this.queue.length || this.scheduled) await this.flushing.then(() => new Promise((r) => setImmediate(r)));
    await this.flushing;
  }

  private enqueue(op: Op): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      this.queue.push({ op, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => {
          this.flushing = this.flushing.then(() => this.flush());
        });
      }
    });
  }

  private async flush(): Promise<void> {
    this.scheduled = false;
    while (this.queue.length) {
      const batch = this.queue.splice(0, this.maxBatch);
      try {
        const results = await this.db.transaction().execute((trx) =>
          fullTextLast(trx, async () => {
            const out: boolean[] = [];
            for (const p of batch) out.push(await p.op(trx));
            return out;
          }),
        );
        batch.forEach((p, i) => p.resolve(results[i]));
      } catch {
        for (const p of batch) {
          try {
            p.resolve(await this.db.transaction().execute((trx) => p.op(trx)));
          } catch (err) {
            p.reject(err);
          }
        }
      }
    }
  }
}
