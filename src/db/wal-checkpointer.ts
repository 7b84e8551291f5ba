/**
 * Checkpoints of SQLite's write-ahead log on a thread of their own, off every request's path.
 *
 * A connection checkpoints inside the commit that takes the log past `wal_autocheckpoint` pages:
 * it copies the log into the database file and syncs it, and the write (a run's row, a stream's
 * claim) waits meanwhile. That was the tail of the time to a stream's first chunk (bench/README.md,
 * issue 17). Connections now checkpoint themselves only past FALLBACK_CHECKPOINT_PAGES
 * (db/sqlite-handle.ts), and this thread, started by a run write and ended when they stop,
 * checkpoints every `everyMs` with PASSIVE checkpoints, which neither wait for nor block readers and
 * writers. Under a steady load the log is rarely all copied at the moment a write begins, so it
 * is not reused and grows to the fallback, where a connection's own checkpoint has only the last
 * pages to copy.
 * Durability is unchanged: a commit is in the log (synchronous=NORMAL) and a checkpoint syncs the
 * database file before the log is reused, whoever runs it.
 */
import { Worker } from 'node:worker_threads';

const ENTRY = new URL('./wal-checkpoint-worker.mjs', import.meta.url);

export interface CheckpointTiming {
  /** How often the thread checkpoints while writes go on. */
  everyMs: number;
  /** How long without writes before the thread ends (its memory goes back to the system). */
  idleEndMs: number;
  /** After the thread failed, how long writes start no other (a failure per write would start a thread per write). */
  retryAfterMs: number;
}

/**
 * Every 25 ms: each checkpoint then has less to copy and sync, and the writes that wait on the
 * file system while it syncs (ext4 here) wait less. Against 100 ms (bench/README.md, issue 17,
 * fifth pass): blocking runs at 32 connections 110 % of the throughput, their p99 29 -> 16 ms; a
 * paced 400 runs/s, p99 10-17 -> 8-11 ms.
 */
const DEFAULT_TIMING: CheckpointTiming = { everyMs: 25, idleEndMs: 10_000, retryAfterMs: 60_000 };

/** How long close() waits for the thread to finish a checkpoint in progress. */
const CLOSE_WAIT_MS = 5_000;

export class WalCheckpointer {
  private thread: Worker | undefined;
  private closed = false;
  private failedAt = -Infinity;
  /** Told why the thread stopped early (the server logs it); the connections' own checkpoints go on. */
  onError: (message: string) => void = () => {};

  constructor(
    private readonly file: string,
    private readonly timing: CheckpointTiming = DEFAULT_TIMING,
  ) {}

  /** Whether the thread is running (tests). */
  get running(): boolean {
    return this.thread !== undefined;
  }

  /** Something was written: the thread runs (started now if it had ended). Cheap when it runs. */
  wrote(): void {
    if (this.thread || this.closed || performance.now() - this.failedAt < this.timing.retryAfterMs) return;
    let thread: Worker;
    try {
      // Plain JavaScript: none of the process's node flags (a TypeScript loader under tsx) is needed.
      thread = new Worker(ENTRY, {
        workerData: { file: this.file, everyMs: this.timing.everyMs, idleEndMs: this.timing.idleEndMs },
        execArgv: [],
      });
    } catch (err) {
      // Never the write's failure: the connections' own checkpoints go on meanwhile.
      this.failed((err as Error).message);
      return;
    }
    thread.unref(); // never what keeps the process alive
    thread.on('message', (m: { error?: string }) => m.error && this.failed(m.error));
    thread.on('error', (err) => this.failed(err.message));
    thread.on('exit', () => {
      if (this.thread === thread) this.thread = undefined;
    });
    this.thread = thread;
  }

  private failed(message: string): void {
    this.failedAt = performance.now();
    this.onError(message);
  }

  /** Ends the thread after the checkpoint in progress, if any; later writes start none. */
  async close(): Promise<void> {
    this.closed = true;
    const thread = this.thread;
    if (!thread) return;
    const exited = new Promise<void>((resolve) => thread.once('exit', () => resolve()));
    thread.postMessage({ close: true });
    const timer = setTimeout(() => void thread.terminate(), CLOSE_WAIT_MS);
    await exited;
    clearTimeout(timer);
  }
}
