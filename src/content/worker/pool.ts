/**
 * A small pool of content worker threads. Parsing and drawing untrusted files happens there, one
 * task per thread at a time, so that a hostile file cannot block the event loop or grow the
 * server's heap:
 *
 * - each thread has a heap limit (`resourceLimits`); a parser that goes past it ends its thread
 *   (`memory_limit`), and the pool starts a fresh one;
 * - each task has a deadline; past it the thread is terminated (`step_timeout`), which stops even
 *   a parser stuck in a loop;
 * - an aborted task (the server is shutting down) terminates its thread as well.
 *
 * Threads are reused (their libraries stay loaded), started on demand and ended after IDLE_END_MS
 * without a task: each holds its own heap, pdf.js, the tokenizer's tables and its canvas buffers
 * (the two held about 150 MB after the footprint benchmark's load), which a server between bursts
 * of uploads should give back soon, not a minute later.
 */
import { Worker } from 'node:worker_threads';
import { BOOT, workerEntry } from '../../workers/entry.ts';
import { ContentError } from '../errors.ts';
import type { WorkerReply, WorkerTask } from './protocol.ts';

const ENTRY = workerEntry('./content-worker', import.meta.url);
/**
 * Idle time after which a thread is ended. A burst keeps its threads (each task starts within
 * it); a thread started again costs its start (loading pdf.js and the tokenizer: its first task
 * answers after about 0.45 s, 0.5 s of CPU, compiled build), which task deadlines do not count.
 */
export const IDLE_END_MS = 10_000;

export interface PoolOptions {
  size: number;
  /** Heap limit of one thread, in MB. */
  memoryMb: number;
  /** Threads idle this long are ended (they are started again on demand); IDLE_END_MS by default. */
  idleMs?: number;
}

interface Pending {
  task: WorkerTask;
  timeoutMs: number;
  signal?: AbortSignal;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

interface Slot {
  worker: Worker;
  /** The thread has loaded its libraries: task deadlines start from there, not from the boot. */
  ready: boolean;
  busy: Pending | null;
  idleSince: number;
  /** Set when the thread is being ended on purpose (timeout, abort, idle). */
  ending: ContentError | Error | null;
}

let nextId = 1;

export class WorkerPool {
  private readonly slots = new Set<Slot>();
  private readonly queue: Pending[] = [];
  private readonly reaper: NodeJS.Timeout;
  private closed = false;

  constructor(private readonly opts: PoolOptions) {
    const idleMs = opts.idleMs ?? IDLE_END_MS;
    // Checked four times per idle time, so a thread ends at most a quarter of it late.
    this.reaper = setInterval(() => {
      for (const s of this.slots) if (s.ready && !s.busy && Date.now() - s.idleSince >= idleMs) void this.end(s, new Error('idle'));
    }, Math.max(50, idleMs / 4));
    this.reaper.unref();
  }

  /** Threads alive now. */
  get threads(): number {
    return this.slots.size;
  }

  run<T>(task: WorkerTask, timeoutMs: number, signal?: AbortSignal): Promise<T> {
    if (this.closed) return Promise.reject(new Error('the content worker pool is closed'));
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ task, timeoutMs, signal, resolve: resolve as (v: unknown) => void, reject });
      this.dispatch();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.reaper);
    for (const p of this.queue.splice(0)) p.reject(new Error('the content worker pool is closed'));
    await Promise.all([...this.slots].map((s) => this.end(s, new Error('the content worker pool is closed'))));
  }

  private dispatch(): void {
    while (this.queue.length) {
      const slot = [...this.slots].find((s) => s.ready && !s.busy && !s.ending);
      if (!slot) {
        // Start as many threads as there are tasks waiting (up to the size); the ready message dispatches.
        const booting = [...this.slots].filter((s) => !s.ready && !s.ending).length;
        if (this.slots.size < this.opts.size && booting < this.queue.length) {
          this.spawn();
          continue;
        }
        return;
      }
      const next = this.queue.shift()!;
      if (next.signal?.aborted) {
        next.reject(next.signal.reason);
        continue;
      }
      this.start(slot, next);
    }
  }

  private spawn(): Slot {
    const worker = new Worker(BOOT, {
      workerData: { entry: ENTRY },
      // The parent's flags are for the parent (test runner, --import): the boot file sets up its own.
      execArgv: [],
      resourceLimits: { maxOldGenerationSizeMb: this.opts.memoryMb, maxYoungGenerationSizeMb: Math.min(64, Math.max(16, Math.floor(this.opts.memoryMb / 8))), stackSizeMb: 8 },
      stdout: true,
      stderr: true,
    });
    // Libraries' chatter (pdf.js warnings) stays out of the server's log.
    worker.stdout.resume();
    worker.stderr.resume();
    const slot: Slot = { worker, ready: false, busy: null, idleSince: Date.now(), ending: null };
    worker.on('message', (reply: WorkerReply | { ready: true }) => {
      if ('ready' in reply) {
        slot.ready = true;
        slot.idleSince = Date.now();
        this.dispatch();
      } else this.onReply(slot, reply);
    });
    worker.on('error', (err: Error & { code?: string }) => this.onDeath(slot, err));
    worker.on('exit', (code) => this.onDeath(slot, new Error(`the content worker thread exited with code ${code}`)));
    worker.unref();
    this.slots.add(slot);
    return slot;
  }

  private start(slot: Slot, p: Pending): void {
    slot.busy = p;
    slot.worker.ref();
    const id = nextId++;
    (p as Pending & { id?: number; timer?: NodeJS.Timeout; onAbort?: () => void }).id = id;
    const timer = setTimeout(() => {
      const took = p.timeoutMs >= 1000 ? `${Math.round(p.timeoutMs / 100) / 10} s` : `${p.timeoutMs} ms`;
      void this.end(slot, new ContentError('step_timeout', `the step took longer than ${took} (ORRERY_CONTENT_STEP_TIMEOUT); it was stopped`));
    }, p.timeoutMs);
    const onAbort = () => void this.end(slot, p.signal!.reason instanceof Error ? p.signal!.reason : new Error('aborted'));
    p.signal?.addEventListener('abort', onAbort, { once: true });
    Object.assign(p, { timer, onAbort });
    slot.worker.postMessage({ ...p.task, id });
  }

  private settle(slot: Slot): Pending | null {
    const p = slot.busy as (Pending & { timer?: NodeJS.Timeout; onAbort?: () => void }) | null;
    if (!p) return null;
    clearTimeout(p.timer);
    if (p.onAbort) p.signal?.removeEventListener('abort', p.onAbort);
    slot.busy = null;
    slot.idleSince = Date.now();
    slot.worker.unref();
    return p;
  }

  private onReply(slot: Slot, reply: WorkerReply): void {
    const p = this.settle(slot);
    if (p) {
      if (reply.ok) p.resolve(reply.result);
      else if (reply.error.name === 'ContentError') p.reject(new ContentError(reply.error.code as never, reply.error.message));
      else p.reject(Object.assign(new Error(reply.error.message), { name: reply.error.name }));
    }
    this.dispatch();
  }

  /** A thread ended: on purpose (`ending`), or by itself (out of memory, a crash). */
  private onDeath(slot: Slot, err: Error & { code?: string }): void {
    if (!this.slots.has(slot)) return;
    this.slots.delete(slot);
    if (!slot.ready && !slot.ending) {
      // It could not even start: fail what waits rather than start threads in a loop.
      for (const q of this.queue.splice(0)) q.reject(new Error(`a content worker thread could not start: ${err.message}`));
    }
    const p = this.settle(slot);
    if (p) {
      let reason: unknown = slot.ending ?? err;
      if (!slot.ending) {
        reason = err.code === 'ERR_WORKER_OUT_OF_MEMORY'
          ? new ContentError('memory_limit', 'parsing the file used more memory than a content worker may (ORRERY_CONTENT_WORKER_MEMORY); it was stopped')
          : new ContentError('corrupt_file', `the file made its parser fail: ${err.message}`);
      }
      p.reject(reason);
    }
    if (!this.closed) this.dispatch();
  }

  private async end(slot: Slot, why: ContentError | Error): Promise<void> {
    if (slot.ending) return;
    slot.ending = why;
    try {
      await slot.worker.terminate();
    } finally {
      this.onDeath(slot, why);
    }
  }
}
