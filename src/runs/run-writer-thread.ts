/**
 * Run writes on SQLite, on a thread of their own (runs/run-writer-worker.ts). SQLite runs inside
 * the process, so its statements, the search data and the commits of every run cost the event
 * loop that serves HTTP about half of a blocking run's time (bench/README.md); on a thread they use
 * another core. Writes are group-committed there (as by RunWriter, with plain statements:
 * runs/sqlite-run-writes.ts), and a caller's promise settles only once its write is committed.
 * A blocking run's insert that the thread would commit alone is first written to the intent log
 * (insertAhead, runs/run-intents.ts), so that its provider call need not wait for that commit.
 *
 * Writes made of SQL built here (`run`: sweeps, rare) go through this thread's own connection; two
 * connections write the file, so transactions begin IMMEDIATE (db/open.ts). If the thread stops,
 * the writes it held fail and the next write starts a new one.
 *
 * The thread exists only while runs are written (issue 22: an idle server holds no second V8 heap,
 * about 10 MB): the first write starts it, and it ends WRITER_IDLE_END_MS after the last. Until it
 * has opened its connection (a few hundred ms) writes go through this thread's connection as on a
 * single core (runs/run-writer.ts), so no run waits for it to load.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';
import { BOOT, workerEntry } from '../workers/entry.ts';
import type { Updateable } from 'kysely';
import type { RunTable } from '../db/schema.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import type { RunRow } from './model.ts';
import { RunWriter, type AheadWrite, type Op, type RunWrites } from './run-writer.ts';
import type { RunIntentLog } from './run-intents.ts';
import { applyRunWrite, prepareRunInsert, prepareRunUpdate, type Db, type PreparedRunWrite } from './store.ts';
import { toWire, type WireWrite } from './run-write-wire.ts';

/** Worker threads do not inherit the loader that runs TypeScript: the boot file (workers/boot.mjs) registers it for a .ts entry. */
const ENTRY = workerEntry('./run-writer-worker', import.meta.url);

/**
 * A write as it crosses to the thread: prepared here (encoded, with its search data but for a new
 * run's search fields, which the thread derives from its document), so the thread runs SQL and
 * little else; in arrays (runs/run-write-wire.ts), as are the replies.
 */
export type ThreadWrite = readonly [seq: number, write: WireWrite];
export type ThreadRequest = { batch: ThreadWrite[] } | { close: true };
export type ThreadReplyError = { message: string; code?: string };
/** What a write returned, or why it failed. */
export type ThreadReply =
  readonly [seq: number, value: boolean] | readonly [seq: number, value: null, error: ThreadReplyError];
/** What the thread posts: once `ready` (its connection open), then the replies to each batch. */
export type ThreadMessage = { ready: true } | { replies: ThreadReply[] };

/** The thread derives a new run's search fields from its document (runs/search-index.ts `deferFields`). */
const THREAD_FIELDS = { deferFields: true } as const;

interface Waiting {
  resolve: (v: boolean) => void;
  reject: (e: unknown) => void;
  /** The thread the write was handed to; only that thread's stopping fails it. */
  thread?: Worker;
}

/**
 * The thread's young generation, in MB (Node's `resourceLimits.maxYoungGenerationSizeMb`: V8's two
 * semi-spaces and its new large-object space together). The thread allocates a few KB per write (a
 * new run's document parsed for its search fields) and keeps nothing between batches, yet under
 * load V8 grew its young generation to about 14 MB committed (10,000 runs) and kept it until its
 * memory reducer ran, 15-120 s after the load; with 6 MB it stays at 4 MB, about 10 MB less RSS
 * after a load, with no CPU cost shown per run (bench/README.md, issue 22). The old generation
 * keeps V8's default limit: a run's document can be large (test/runs/run-writer-thread.test.ts
 * writes one of 18 MB).
 */
export const WRITER_YOUNG_GENERATION_MB = 6;

/**
 * Writes queued in one turn cross as one message at its end, or as soon as this many are queued
 * (the thread groups what has arrived into transactions of up to BATCH, runs/run-writer-worker.ts).
 * A turn that reads many requests otherwise held its first writes until its last request had run,
 * while the thread waited; sent at 8, runs/s went 108-117 % (test provider) and 127 % (upstream)
 * of the same code sending once per turn (bench/README.md, issue 17, sixth pass).
 */
const POST_AT = 8;

/** How long close() waits for writes still in flight, and then for the thread to exit. */
const CLOSE_WAIT_MS = 10_000;

/** The thread ends this long after its last write; the next write starts another. */
const WRITER_IDLE_END_MS = 30_000;

/** After a thread stopped before it was ready, writes stay on this thread's connection this long before another is tried. */
const WRITER_RESTART_BACKOFF_MS = 60_000;

export interface ThreadRunWriterOptions {
  /** WRITER_IDLE_END_MS unless given (tests). */
  idleEndMs?: number;
  /** Where insertAhead records rows; without it, every insert waits for its commit. */
  intents?: RunIntentLog;
}

export class ThreadRunWriter implements RunWrites {
  private worker: Worker | undefined;
  /** The worker has opened its connection: writes go to it (before, through `local`). */
  private ready = false;
  private readyWaiters: Array<{ resolve: () => void; reject: (e: Error) => void }> = [];
  private idleTimer: NodeJS.Timeout | undefined;
  private failedStartAt = -Infinity;
  private readonly idleEndMs: number;
  private seq = 0;
  private outbox: Array<{ seq: number; write: PreparedRunWrite }> = [];
  private scheduled = false;
  private readonly waiting = new Map<number, Waiting>();
  private idle: Array<() => void> = [];
  private readonly local: RunWriter;
  private closing: Promise<void> | undefined;
  private readonly intents: RunIntentLog | undefined;

  constructor(
    private readonly file: string,
    db: Db,
    private readonly dialect: OrreryDialect,
    options: ThreadRunWriterOptions = {},
  ) {
    this.local = new RunWriter(db, dialect);
    this.idleEndMs = options.idleEndMs ?? WRITER_IDLE_END_MS;
    this.intents = options.intents;
  }

  /** Starts the thread if none runs; resolves once it takes writes (tests; writes start it themselves). */
  started(): Promise<void> {
    if (this.ready) return Promise.resolve();
    this.start();
    if (!this.worker)
      return Promise.reject(new Error('the run writer thread could not start (writes go through the main connection)'));
    this.worker.ref(); // until it is ready: someone waits for it
    return new Promise((resolve, reject) => this.readyWaiters.push({ resolve, reject }));
  }

  async insert(row: RunRow, tags: readonly string[]): Promise<void> {
    await this.send(prepareRunInsert(this.dialect, row, tags, THREAD_FIELDS));
  }

  /**
   * With nothing else queued or in flight, this insert would be committed alone and its caller
   * would wait a whole round trip to the thread (0.3-0.5 ms of a lone run's 1 ms): it is written to
   * the intent log first. Under load it joins the others' commit as before; not waiting then cost
   * more CPU per run than it saved (bench/README.md, issue 17, ninth pass).
   */
  insertAhead(row: RunRow, tags: readonly string[]): AheadWrite {
    const write = prepareRunInsert(this.dialect, row, tags, THREAD_FIELDS);
    const doc = 'insert' in write ? write.insert.rows[0]?.doc : undefined;
    const alone = this.ready && !this.closing && !this.waiting.size && !this.outbox.length;
    const settle = alone && typeof doc === 'string' ? this.intents?.record(row, doc, 'start') : undefined;
    const committed = this.send(write).then(() => (settle?.(), true));
    return { recorded: settle !== undefined, committed, stored: () => settle?.() };
  }

  /**
   * The end of a run whose insert was recorded: the run as it ended goes to the intent log too, so
   * that its caller may answer before this update commits (the thread applies it after the insert,
   * which it received first). The caller settles the entry (stored()) once the run's end is
   * stored, by this update or otherwise (RunService.storeAhead).
   */
  updateAhead(ended: RunRow, patch: Updateable<RunTable>): AheadWrite {
    const write = prepareRunUpdate(this.dialect, ended.id, patch);
    const doc = 'update' in write ? write.update.set.doc : undefined;
    const settle = !this.closing && typeof doc === 'string' ? this.intents?.record(ended, doc, 'end') : undefined;
    return { recorded: settle !== undefined, committed: this.send(write), stored: () => settle?.() };
  }

  async update(id: string, patch: Updateable<RunTable>, fromStatus?: string): Promise<boolean> {
    return this.send(prepareRunUpdate(this.dialect, id, patch, fromStatus));
  }

  run(op: Op): Promise<boolean> {
    return this.local.run(op);
  }

  /** Waits for the writes in flight, then closes the thread's connection; later writes fail. */
  close(): Promise<void> {
    this.closing ??= this.shutDown();
    return this.closing;
  }

  private async shutDown(): Promise<void> {
    clearTimeout(this.idleTimer);
    await this.local.drain();
    const idle = new Promise<void>((r) => (this.waiting.size || this.outbox.length ? this.idle.push(r) : r()));
    await Promise.race([idle, sleep(CLOSE_WAIT_MS, undefined, { ref: false })]);
    const worker = this.worker;
    this.worker = undefined;
    // A thread still loading will never take writes now: nobody waits for it.
    for (const w of this.readyWaiters.splice(0))
      w.reject(new Error('the run writer is closed (the server is shutting down)'));
    // threadId is -1 once the thread is gone, possibly before its 'exit' event.
    if (!worker || worker.threadId === -1) return;
    const exited = new Promise<void>((r) => worker.once('exit', () => r()));
    worker.ref(); // until it has closed its connection
    worker.postMessage({ close: true } satisfies ThreadRequest);
    if (
      await Promise.race([exited.then(() => true), sleep(CLOSE_WAIT_MS, undefined, { ref: false }).then(() => false)])
    )
      return;
    await worker.terminate();
  }

  /** Writes queued in one turn of the event loop cross to the thread as one message (POST_AT at most). */
  private send(write: PreparedRunWrite): Promise<boolean> {
    if (this.closing) return Promise.reject(new Error('the run writer is closed (the server is shutting down)'));
    if (!this.ready) {
      this.start();
      return this.writeHere(write);
    }
    return new Promise<boolean>((resolve, reject) => {
      const seq = ++this.seq;
      this.waiting.set(seq, { resolve, reject });
      this.outbox.push({ seq, write });
      if (this.outbox.length >= POST_AT) this.post();
      else if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => {
          this.scheduled = false;
          this.post();
        });
      }
    });
  }

  /** A write through this thread's connection, batched as on a single core (runs/run-writer.ts). */
  private writeHere(write: PreparedRunWrite): Promise<boolean> {
    return this.local.run((trx) => applyRunWrite(trx, this.dialect, write));
  }

  private post(): void {
    const batch = this.outbox;
    this.outbox = [];
    if (!batch.length) return;
    const thread = this.worker;
    if (!thread || !this.ready) {
      // The thread stopped since these were queued: they never reached it, so they are written here.
      for (const w of batch) {
        this.writeHere(w.write).then(
          (v) => this.settle(w.seq, (x) => x.resolve(v)),
          (err) => this.settle(w.seq, (x) => x.reject(err)),
        );
      }
      return;
    }
    try {
      thread.ref();
      thread.postMessage({
        batch: batch.map(({ seq, write }): ThreadWrite => [seq, toWire(write)]),
      } satisfies ThreadRequest);
      for (const w of batch) {
        const waiting = this.waiting.get(w.seq);
        if (waiting) waiting.thread = thread;
      }
    } catch (err) {
      // A row that cannot be copied to the thread (it never can be stored either).
      for (const w of batch) this.settle(w.seq, (x) => x.reject(err));
    }
  }

  /** Starts a thread unless one runs or is starting (or one failed to start within WRITER_RESTART_BACKOFF_MS). */
  private start(): void {
    if (this.worker || this.closing || performance.now() - this.failedStartAt < WRITER_RESTART_BACKOFF_MS) return;
    let worker: Worker;
    try {
      worker = new Worker(BOOT, {
        workerData: { entry: ENTRY, file: this.file },
        execArgv: [],
        resourceLimits: { maxYoungGenerationSizeMb: WRITER_YOUNG_GENERATION_MB },
      });
    } catch {
      this.failedStartAt = performance.now(); // writes go on through this thread's connection
      return;
    }
    worker.on('message', (msg: ThreadMessage) => {
      if ('ready' in msg) {
        if (this.worker !== worker) return;
        this.ready = true;
        if (!this.waiting.size && !this.outbox.length) worker.unref();
        for (const w of this.readyWaiters.splice(0)) w.resolve();
        this.idleLater();
        return;
      }
      for (const [seq, value, error] of msg.replies) {
        this.settle(seq, (w) =>
          error
            ? w.reject(Object.assign(new Error(error.message), error.code ? { code: error.code } : {}))
            : w.resolve(value ?? false),
        );
      }
    });
    // 'error' then 'exit' for a thread that throws: the first one fails its writes, the second finds none.
    const stopped = (why: string) => {
      if (this.worker === worker) {
        if (!this.ready) {
          this.failedStartAt = performance.now();
          for (const w of this.readyWaiters.splice(0))
            w.reject(new Error(`the run writer thread stopped (${why}) before it was ready`));
        }
        this.worker = undefined;
        this.ready = false;
      }
      // Writes handed to this thread may or may not be committed; their callers must not wait forever.
      for (const [seq, w] of [...this.waiting]) {
        if (w.thread === worker)
          this.settle(seq, (x) => x.reject(new Error(`the run writer thread stopped (${why}) before answering`)));
      }
    };
    worker.on('error', (err) => stopped(err.message));
    worker.on('exit', (code) => stopped(`exit code ${code}`));
    // Only writes in flight keep the process alive (post() refs the thread, settle() unrefs it).
    worker.unref();
    this.worker = worker;
  }

  /**
   * Ends the thread WRITER_IDLE_END_MS after its last write settled: one timer, pushed back each
   * time the thread has nothing left (a busy thread is never ended; endIdle checks).
   */
  private idleLater(): void {
    if (!this.ready || this.closing || this.waiting.size || this.outbox.length) return;
    if (this.idleTimer) this.idleTimer.refresh();
    else {
      this.idleTimer = setTimeout(() => this.endIdle(), this.idleEndMs);
      this.idleTimer.unref();
    }
  }

  private endIdle(): void {
    const worker = this.worker;
    if (!worker || !this.ready || this.closing || this.waiting.size || this.outbox.length) return;
    this.worker = undefined;
    this.ready = false;
    // It holds no write: it closes its connection and exits; the next write starts another.
    worker.postMessage({ close: true } satisfies ThreadRequest);
  }

  private settle(seq: number, fn: (w: Waiting) => void): void {
    const w = this.waiting.get(seq);
    if (!w) return;
    this.waiting.delete(seq);
    fn(w);
    if (!this.waiting.size && !this.outbox.length) {
      this.worker?.unref();
      for (const wake of this.idle.splice(0)) wake();
      this.idleLater();
    }
  }
}
