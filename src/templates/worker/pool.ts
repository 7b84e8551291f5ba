/**
 * Worker threads that compile handlebars templates and render jst templates in their sandboxes
 * (jst-sandbox.ts), so that neither compiling nor template code runs on the server's event loop:
 * a hostile template burns its CPU budget in a worker while every other request is served.
 *
 * Threads start on first use, up to the pool's size, end after IDLE_END_MS without a task (an
 * idle server gives their memory back), and take one task at a time, so each task's watchdog
 * times that task alone. Tasks wait in a queue served project by project in turn, and a project
 * keeps at most `size - 1` threads busy (one with a pool of one), so that with two or more
 * threads a project looping its templates at their CPU bound slows itself, never another
 * project (util/fair-queue.ts). The sandbox interrupts JavaScript at its CPU budget,
 * and a thread still silent a second later (a long built-in call such as a huge `repeat`, which
 * QuickJS cannot interrupt) is terminated and replaced.
 */
import { Worker } from 'node:worker_threads';
import { BOOT, workerEntry } from '../../workers/entry.ts';
import type { CompileRequest, RenderOutcome, SandboxLimits } from './jst-sandbox.ts';
import type { TemplateTask, TemplateWorkerData, WorkerMessage } from './protocol.ts';
import { FairQueue } from '../../util/fair-queue.ts';

const ENTRY = workerEntry('./template-worker', import.meta.url);
/** Time on top of the CPU budget before a silent thread is terminated. */
const WATCHDOG_MARGIN_MS = 1000;
/** A thread idle this long is ended (its QuickJS and V8 heap given back); the next task starts one again. */
const IDLE_END_MS = 30_000;

interface Queued {
  tenant: string;
  task: TemplateTask;
  resolve: (o: RenderOutcome) => void;
}

interface Thread {
  worker: Worker;
  ready: boolean;
  busy: (Queued & { timer: NodeJS.Timeout }) | null;
  /** Ends the thread once it has been idle IDLE_END_MS (unref'd: never keeps the process alive). */
  idle: NodeJS.Timeout | null;
}

let nextId = 1;

export interface TemplatePoolOptions {
  size: number;
  limits: SandboxLimits;
  /** Idle time after which a thread is ended (IDLE_END_MS; tests shorten it). */
  idleEndMs?: number;
}

export class TemplatePool {
  private readonly threads = new Set<Thread>();
  /** Threads running now (booting, busy or idle). */
  get threadCount(): number {
    return this.threads.size;
  }
  private readonly queue = new FairQueue<Queued>();
  /** Busy threads per tenant. */
  private readonly busyOf = new Map<string, number>();
  private closed = false;

  constructor(private readonly opts: TemplatePoolOptions) {}

  /** Renders a jst template with `data` (a JSON-able object) for the run's model. */
  render(template: CompileRequest, data: unknown, model: string, tenant = ''): Promise<RenderOutcome> {
    return this.send(tenant, { id: nextId++, jst: template, data: JSON.stringify(data ?? {}), model });
  }

  /** Handlebars' precompiled spec of a template (the outcome's text), or its syntax error. */
  compileHandlebars(content: string, tenant = ''): Promise<RenderOutcome> {
    return this.send(tenant, { id: nextId++, handlebars: content });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const q of this.queue.drain()) q.resolve(shutDown());
    await Promise.all([...this.threads].map((t) => this.end(t, shutDown())));
  }

  private send(tenant: string, task: TemplateTask): Promise<RenderOutcome> {
    if (this.closed) return Promise.resolve(shutDown());
    return new Promise<RenderOutcome>((resolve) => {
      this.queue.push(tenant, { tenant, task, resolve });
      this.dispatch();
    });
  }

  /** A tenant may take a free thread while it holds fewer than all but one of them. */
  private readonly mayStart = (tenant: string): boolean =>
    (this.busyOf.get(tenant) ?? 0) < Math.max(1, this.opts.size - 1);

  private dispatch(): void {
    for (const thread of this.threads) {
      if (!this.queue.length) return;
      if (!thread.ready || thread.busy) continue;
      const next = this.queue.shift(this.mayStart);
      if (!next) break;
      this.start(thread, next.item);
    }
    const booting = [...this.threads].filter((t) => !t.ready).length;
    if (this.queue.length > booting && this.threads.size < this.opts.size) this.spawn();
  }

  private done(thread: Thread): Queued | null {
    const busy = thread.busy;
    if (!busy) return null;
    thread.busy = null;
    clearTimeout(busy.timer);
    const n = (this.busyOf.get(busy.tenant) ?? 1) - 1;
    if (n > 0) this.busyOf.set(busy.tenant, n);
    else this.busyOf.delete(busy.tenant);
    return busy;
  }

  private start(thread: Thread, queued: Queued): void {
    const limit = this.opts.limits.cpuMs + WATCHDOG_MARGIN_MS;
    const timer = setTimeout(() => {
      void this.end(thread, {
        ok: false,
        kind: 'timeout',
        message: `the template ran longer than ${this.opts.limits.cpuMs} ms (its sandbox was stopped)`,
      });
    }, limit);
    thread.busy = { ...queued, timer };
    this.busyOf.set(queued.tenant, (this.busyOf.get(queued.tenant) ?? 0) + 1);
    if (thread.idle) clearTimeout(thread.idle);
    thread.idle = null;
    thread.worker.ref();
    thread.worker.postMessage(queued.task);
  }

  private spawn(): void {
    const workerData: TemplateWorkerData = { entry: ENTRY, limits: this.opts.limits };
    const worker = new Worker(BOOT, { workerData, execArgv: [], stdout: true, stderr: true });
    worker.stdout.resume();
    worker.stderr.resume();
    const thread: Thread = { worker, ready: false, busy: null, idle: null };
    worker.on('message', (m: WorkerMessage) => {
      if ('ready' in m) thread.ready = true;
      else if (thread.busy && thread.busy.task.id === m.id) {
        const done = this.done(thread)!;
        worker.unref();
        done.resolve(m.outcome);
      }
      this.dispatch();
      if (thread.ready && !thread.busy && !thread.idle && this.threads.has(thread)) {
        thread.idle = setTimeout(() => void this.end(thread, shutDown()), this.opts.idleEndMs ?? IDLE_END_MS);
        thread.idle.unref();
      }
    });
    const die = (err: Error) =>
      void this.end(thread, { ok: false, kind: 'error', message: `the template sandbox failed: ${err.message}` });
    worker.on('error', die);
    worker.on('exit', (code) => die(new Error(`its thread exited with code ${code}`)));
    worker.unref();
    this.threads.add(thread);
  }

  /** Ends a thread: its task gets `outcome`; waiting tasks go to other threads or a new one. */
  private async end(thread: Thread, outcome: RenderOutcome): Promise<void> {
    if (!this.threads.delete(thread)) return;
    if (thread.idle) clearTimeout(thread.idle);
    thread.idle = null;
    this.done(thread)?.resolve(outcome);
    await thread.worker.terminate().catch(() => {});
    if (!this.closed) this.dispatch();
  }
}

const shutDown = (): RenderOutcome => ({ ok: false, kind: 'error', message: 'the template sandbox is shut down' });
