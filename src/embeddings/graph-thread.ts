/**
 * The main thread's handle on a partition's graph worker (graph-worker.mjs): requests answered by
 * promise, writes posted without waiting (the worker applies everything in posting order, so a
 * later search sees them). The worker is unref'd while nothing waits on it, so an idle graph never
 * keeps a process alive.
 */
import { Worker } from 'node:worker_threads';
import type { ScalarKind } from './graph-file.ts';
import type { HnswOptions } from './vector-index.ts';

const WORKER = new URL('./graph-worker.mjs', import.meta.url);

export interface GraphThreadOptions {
  dimensions: number;
  scalar: ScalarKind;
  hnsw: HnswOptions;
  /** The worker failed (a write it could not apply, or it stopped): the graph is no longer trusted. */
  onFailure: (err: Error) => void;
}

export interface GraphMatches {
  keys: BigUint64Array;
  distances: Float32Array;
}

interface Waiting {
  resolve: (value: any) => void;
  reject: (err: Error) => void;
}

/** A vector that owns its buffer: posting a view would copy (or share) the whole buffer behind it. */
const own = (v: Float32Array): Float32Array =>
  v.byteOffset === 0 && v.byteLength === v.buffer.byteLength && !(v.buffer instanceof SharedArrayBuffer)
    ? v
    : v.slice();

class GraphClosed extends Error {
  constructor() {
    super('the similarity graph was closed');
    this.name = 'GraphClosed';
  }
}

export class GraphThread {
  private readonly worker: Worker;
  private readonly waiting = new Map<number, Waiting>();
  private nextId = 1;
  private stopped: Error | null = null;

  constructor(private readonly opts: GraphThreadOptions) {
    this.worker = new Worker(WORKER, {
      workerData: { dimensions: opts.dimensions, scalar: opts.scalar, options: opts.hnsw },
      execArgv: [],
    });
    this.worker.unref();
    this.worker.on('message', (m: { id: number; result?: unknown; error?: string; op?: string }) => {
      if (m.error !== undefined) {
        const err = new Error(`similarity graph ${m.op ?? 'request'}: ${m.error}`);
        const w = this.waiting.get(m.id);
        // A failed write leaves the graph behind the table: stop trusting it.
        if (!w) return this.fail(err, true);
        this.settle(m.id);
        w.reject(err);
        return;
      }
      this.waiting.get(m.id)?.resolve(m.result);
      this.settle(m.id);
    });
    this.worker.on('error', (err) => this.fail(err, true));
    this.worker.on('exit', (code) =>
      this.fail(new Error(`the similarity graph worker stopped with code ${code}`), true),
    );
  }

  build(buffer: SharedArrayBuffer, slots: Int32Array, savePath?: string): Promise<{ size: number }> {
    return this.request({ op: 'build', buffer, slots, savePath });
  }

  load(path: string): Promise<{ size: number }> {
    return this.request({ op: 'load', path });
  }

  /** Many writes at once; resolves once the graph holds them. */
  apply(remove: BigUint64Array, keys: BigUint64Array, vectors: Float32Array): Promise<{ size: number }> {
    return this.request({ op: 'apply', remove, keys, vectors }, [
      remove.buffer,
      keys.buffer,
      vectors.buffer,
    ] as ArrayBuffer[]);
  }

  /** The `k` nearest (and a few more, best first) from a search with a candidate list of `ef`. */
  search(query: Float32Array, k: number, ef: number): Promise<GraphMatches> {
    return this.request({ op: 'search', query: own(query), k, ef });
  }

  save(path: string): Promise<{ size: number }> {
    return this.request({ op: 'save', path });
  }

  upsert(key: number, vector: Float32Array): void {
    this.post({ op: 'upsert', key, vector: own(vector) });
  }

  remove(key: number): void {
    this.post({ op: 'remove', key });
  }

  close(): void {
    if (this.stopped) return;
    this.fail(new GraphClosed(), false);
    void this.worker.terminate();
  }

  private post(message: Record<string, unknown>): void {
    if (!this.stopped) this.worker.postMessage(message);
  }

  private request<T>(message: Record<string, unknown>, transfer: ArrayBuffer[] = []): Promise<T> {
    if (this.stopped) return Promise.reject(this.stopped);
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      // Awaited work keeps the process alive (a build in a benchmark); idle graphs do not.
      if (!this.waiting.size) this.worker.ref();
      this.waiting.set(id, { resolve, reject });
      this.worker.postMessage({ ...message, id }, transfer);
    });
  }

  private settle(id: number): void {
    this.waiting.delete(id);
    if (!this.waiting.size && !this.stopped) this.worker.unref();
  }

  private fail(err: Error, report: boolean): void {
    if (this.stopped) return;
    this.stopped = err;
    for (const w of this.waiting.values()) w.reject(err);
    this.waiting.clear();
    if (report) {
      void this.worker.terminate();
      this.opts.onFailure(err);
    }
  }
}
