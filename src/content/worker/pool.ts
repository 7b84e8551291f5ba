/**
 * A small pool of content worker processes. Parsing, probing and drawing untrusted files (pdf.js,
 * canvas, sharp, the office and e-mail extractors, music-metadata) and counting tokens happen
 * there, one task per process at a time, so that a hostile file cannot block the event loop, grow
 * the server's heap or leave its native libraries and malloc arenas in the server's memory:
 *
 * - each process has a heap limit (`--max-old-space-size`); a parser that goes past it ends its
 *   process (`memory_limit`), and the pool starts a fresh one;
 * - each task has a deadline; past it the process is killed (`step_timeout`), which stops even a
 *   parser stuck in a loop or a libvips call (sharp cannot be stopped otherwise); a task made of
 *   phases (renditions: the page, the fitted source, each encoding) gets a deadline per phase;
 * - an aborted task (the server is shutting down) kills its process as well;
 * - a process that dies by itself (a crash, killed from outside) fails its task (`corrupt_file`),
 *   and the next task gets a fresh process.
 *
 * An object's bytes are copied to a process once for all its steps: a process keeps the last input
 * it was given, and a task whose input (the same Uint8Array, unchanged) a free process holds goes
 * to that process without its bytes (a 150 MB image is not copied three times).
 *
 * Processes are reused (their libraries stay loaded), started on demand and ended after
 * IDLE_END_MS without a task. Each holds its own heap, pdf.js, the tokenizer's tables, canvas and
 * libvips buffers and glibc's malloc arenas; threads gave their heaps back when they ended but the
 * native memory stayed in the server (bench/README.md, issue 22), while a process that exits gives
 * everything back to the system. They run with MALLOC_ARENA_MAX=2 (read by glibc at exec), which
 * bounds what libvips' threads keep while a burst lasts.
 */
import { fork, type ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import { BOOT, workerEntry } from '../../workers/entry.ts';
import { ContentError } from '../errors.ts';
import type { WorkerReady, WorkerReply, WorkerRequest, WorkerTask } from './protocol.ts';

const ENTRY = workerEntry('./content-worker', import.meta.url);
/**
 * Idle time after which a process is ended. A burst keeps its processes (each task starts within
 * it); a process started again costs its start (loading pdf.js and the tokenizer: its first task
 * answers after about 0.5 s, compiled build), which task deadlines do not count.
 */
export const IDLE_END_MS = 10_000;

export interface PoolOptions {
  size: number;
  /** Heap limit of one process, in MB. */
  memoryMb: number;
  /** Processes idle this long are ended (they are started again on demand); IDLE_END_MS by default. */
  idleMs?: number;
  /** Environment of the processes: the server's, with MALLOC_ARENA_MAX=2 unless set there. */
  env?: NodeJS.ProcessEnv;
}

interface Pending {
  task: WorkerTask;
  timeoutMs: number;
  signal?: AbortSignal;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
  id?: number;
  timer?: NodeJS.Timeout;
  onAbort?: () => void;
}

interface Slot {
  child: ChildProcess;
  /** The process has loaded its libraries: task deadlines start from there, not from the boot. */
  ready: boolean;
  busy: Pending | null;
  idleSince: number;
  /** Set when the process is being ended on purpose (timeout, abort, idle). */
  ending: ContentError | Error | null;
  /** Resolves when the process has exited. */
  exited: Promise<void>;
  /** The end of its stderr (V8 reports an exhausted heap there). */
  stderr: string;
  /** The input the process keeps from its last task that had one (`inputKeys`). */
  held: number | null;
}

const OUT_OF_MEMORY = /heap out of memory|Reached heap limit|Allocation failed/i;

let nextId = 1;
/** Input byte arrays given to the pool, by identity: the key a process holding one is asked for. */
const inputKeys = new WeakMap<Uint8Array, number>();
let nextKey = 1;
const inputOf = (task: WorkerTask): Uint8Array | undefined => ('bytes' in task ? task.bytes : undefined);

export class WorkerPool {
  private readonly slots = new Set<Slot>();
  private readonly queue: Pending[] = [];
  private readonly reaper: NodeJS.Timeout;
  private closed = false;

  constructor(private readonly opts: PoolOptions) {
    const idleMs = opts.idleMs ?? IDLE_END_MS;
    // Checked four times per idle time, so a process ends at most a quarter of it late.
    this.reaper = setInterval(
      () => {
        for (const s of this.slots)
          if (s.ready && !s.busy && Date.now() - s.idleSince >= idleMs) void this.end(s, new Error('idle'));
      },
      Math.max(50, idleMs / 4),
    );
    this.reaper.unref();
  }

  /** Processes alive now. */
  get processes(): number {
    return this.slots.size;
  }

  /** The process ids of the processes alive now. */
  get pids(): number[] {
    return [...this.slots].map((s) => s.child.pid).filter((p): p is number => p !== undefined);
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
      const free = [...this.slots].filter((s) => s.ready && !s.busy && !s.ending);
      const input = inputOf(this.queue[0].task);
      const key = input && inputKeys.get(input);
      // A process holding the task's input, or any free one.
      const slot = free.find((s) => key !== undefined && s.held === key) ?? free[0];
      if (!slot) {
        // Start as many processes as there are tasks waiting (up to the size); the ready message dispatches.
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
    const env: NodeJS.ProcessEnv = { MALLOC_ARENA_MAX: '2', ...(this.opts.env ?? process.env) };
    // The server's own flags (a test runner's, a memory limit for the server) are not the worker's.
    delete env.NODE_OPTIONS;
    delete env.NODE_TEST_CONTEXT;
    const child = fork(BOOT, [ENTRY], {
      execArgv: [`--max-old-space-size=${this.opts.memoryMb}`],
      serialization: 'advanced',
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      env,
    });
    let exit!: () => void;
    const slot: Slot = {
      child,
      ready: false,
      busy: null,
      idleSince: Date.now(),
      ending: null,
      exited: new Promise((r) => (exit = r)),
      stderr: '',
      held: null,
    };
    // Libraries' chatter stays out of the server's log; its end is kept to tell why a process died.
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (s: string) => {
      slot.stderr = (slot.stderr + s).slice(-4096);
    });
    child.on('message', (reply: WorkerReply | WorkerReady) => {
      if ('ready' in reply) {
        slot.ready = true;
        slot.idleSince = Date.now();
        this.setRef(slot, false);
        this.dispatch();
      } else if ('lap' in reply) this.lap(slot, reply.id);
      else this.onReply(slot, reply);
    });
    child.on('error', (err: Error & { code?: string }) => {
      // Could not start, or a message could not be sent: the process is of no more use.
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      if (child.pid === undefined) {
        exit();
        this.onDeath(slot, err);
      }
    });
    // 'close': the process exited and its stderr is read to the end (an out-of-memory report included).
    child.on('close', (code, signal) => {
      exit();
      this.onDeath(
        slot,
        new Error(`the content worker process ${signal ? `was killed by ${signal}` : `exited with code ${code}`}`),
      );
    });
    // Started for a task waiting: it keeps the event loop alive until ready (then as long as it is busy).
    this.setRef(slot, true);
    this.slots.add(slot);
    return slot;
  }

  /** A busy process keeps the server's event loop alive (as a pending task should); an idle one does not. */
  private setRef(slot: Slot, on: boolean): void {
    const handles = [slot.child, slot.child.channel, slot.child.stderr as Socket | null] as (
      { ref(): void; unref(): void } | null | undefined
    )[];
    for (const h of handles) {
      if (on) h?.ref?.();
      else h?.unref?.();
    }
  }

  private timeout(slot: Slot, p: Pending): NodeJS.Timeout {
    return setTimeout(() => {
      const took = p.timeoutMs >= 1000 ? `${Math.round(p.timeoutMs / 100) / 10} s` : `${p.timeoutMs} ms`;
      void this.end(
        slot,
        new ContentError(
          'step_timeout',
          `the step took longer than ${took} (ORRERY_CONTENT_STEP_TIMEOUT); it was stopped`,
        ),
      );
    }, p.timeoutMs);
  }

  private start(slot: Slot, p: Pending): void {
    slot.busy = p;
    this.setRef(slot, true);
    p.id = nextId++;
    p.timer = this.timeout(slot, p);
    p.onAbort = () => void this.end(slot, p.signal!.reason instanceof Error ? p.signal!.reason : new Error('aborted'));
    p.signal?.addEventListener('abort', p.onAbort, { once: true });
    const msg: WorkerRequest = { ...p.task, id: p.id };
    const input = inputOf(p.task);
    if (input && 'bytes' in msg) {
      let key = inputKeys.get(input);
      if (key === undefined) inputKeys.set(input, (key = nextKey++));
      msg.held = key;
      if (slot.held === key) (msg as { bytes?: Uint8Array }).bytes = undefined;
      else slot.held = key;
    }
    // A failed send (the process just died) is reported by its exit.
    slot.child.send(msg, (err) => {
      if (err && slot.busy === p)
        void this.end(
          slot,
          new ContentError('corrupt_file', `the task could not be given to a content worker process: ${err.message}`),
        );
    });
  }

  /** One phase of the task is done: the next phase gets a full deadline. */
  private lap(slot: Slot, id: number): void {
    const p = slot.busy;
    if (!p || p.id !== id || slot.ending) return;
    clearTimeout(p.timer);
    p.timer = this.timeout(slot, p);
  }

  private settle(slot: Slot): Pending | null {
    const p = slot.busy;
    if (!p) return null;
    clearTimeout(p.timer);
    if (p.onAbort) p.signal?.removeEventListener('abort', p.onAbort);
    slot.busy = null;
    slot.idleSince = Date.now();
    this.setRef(slot, false);
    return p;
  }

  private onReply(slot: Slot, reply: Exclude<WorkerReply, { lap: true }>): void {
    if (slot.busy?.id !== reply.id) return;
    const p = this.settle(slot)!;
    if (reply.ok) p.resolve(reply.result);
    else if (reply.error.name === 'ContentError')
      p.reject(new ContentError(reply.error.code as never, reply.error.message));
    else p.reject(Object.assign(new Error(reply.error.message), { name: reply.error.name }));
    this.dispatch();
  }

  /** A process ended: on purpose (`ending`), or by itself (out of memory, a crash, killed from outside). */
  private onDeath(slot: Slot, err: Error & { code?: string }): void {
    if (!this.slots.has(slot)) return;
    this.slots.delete(slot);
    const outOfMemory = OUT_OF_MEMORY.test(slot.stderr);
    if (!slot.ready && !slot.ending) {
      // It could not even start: fail what waits rather than start processes in a loop.
      const why = outOfMemory
        ? 'its heap limit (ORRERY_CONTENT_WORKER_MEMORY) is too small to load the libraries'
        : err.message;
      for (const q of this.queue.splice(0)) q.reject(new Error(`a content worker process could not start: ${why}`));
    }
    const p = this.settle(slot);
    if (p) {
      let reason: unknown = slot.ending ?? err;
      if (!slot.ending) {
        reason = outOfMemory
          ? new ContentError(
              'memory_limit',
              'parsing the file used more memory than a content worker may (ORRERY_CONTENT_WORKER_MEMORY); it was stopped',
            )
          : new ContentError('corrupt_file', `the file made its parser fail: ${err.message}`);
      }
      p.reject(reason);
    }
    if (!this.closed) this.dispatch();
  }

  private async end(slot: Slot, why: ContentError | Error): Promise<void> {
    if (slot.ending) return slot.exited;
    slot.ending = why;
    // Settled now, not at the exit: the task's caller hears of its deadline at the deadline.
    const p = this.settle(slot);
    if (p) p.reject(why);
    // Whoever waits for the end is not left with an event loop that has nothing to wait for.
    this.setRef(slot, true);
    slot.child.kill('SIGKILL');
    await slot.exited;
  }
}
