/**
 * One similarity index partition (one project, owner kind, embedding type and model) in memory.
 *
 * - Vectors live in one contiguous Float32Array (shared memory, so a build worker reads it without
 *   a copy), a slot per owner. Below `exactBelow` vectors a query is an exact scan of them
 *   (brute force: about 2 ms per 10,000 vectors of 384 dimensions).
 * - From `exactBelow` vectors on, a usearch HNSW graph (M 16, inner product on normalised vectors,
 *   i.e. cosine) is built in a worker thread and loaded when done; until then, queries stay exact.
 *   Writes after the build keep it in sync (remove + add), and writes during the build are
 *   replayed onto it once it is loaded.
 * - `exactAmong` scores a given candidate set exactly (the filtered search path, search.ts).
 * - With a `wantGraph` hook (index-registry.ts), crossing the threshold asks the registry instead
 *   of building: it loads a saved graph, or takes the build lease and calls `build`, or waits.
 *   `restore` makes an index from a saved graph file (graph-file.ts) without a build.
 */
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { dot } from './vectors.ts';
import type { ReadGraph, ScalarKind } from './graph-file.ts';

// usearch's ESM entry is broken on our machines; its CommonJS build works.
const require = createRequire(import.meta.url);

interface UsearchMatches { keys: BigUint64Array; distances: Float32Array }
interface UsearchIndex {
  add(keys: bigint | BigUint64Array, vectors: Float32Array, threads?: number): void;
  search(vector: Float32Array, k: number, threads: number): UsearchMatches;
  remove(keys: bigint | BigUint64Array): number[] | number;
  contains(key: bigint): boolean;
  size(): number;
  load(path: string): void;
  save(path: string): void;
}
/** usearch's quantization per scalar kind. */
const quantization = (u: UsearchModule, scalar: ScalarKind) => ({ f32: u.ScalarKind.F32, f16: u.ScalarKind.F16, i8: u.ScalarKind.I8 })[scalar];

export interface PartitionHooks {
  /** The graph's scalar kind (default f32). */
  scalar?: ScalarKind;
  /** Called once when the index reaches `exactBelow` without a graph: the caller decides (then calls `build`). */
  wantGraph?: () => void;
  /** Every `nearest` query, by how it was answered. */
  searched?: (mode: 'exact' | 'hnsw') => void;
}
interface UsearchModule {
  Index: new (config: Record<string, unknown>) => UsearchIndex;
  MetricKind: Record<string, unknown>;
  ScalarKind: Record<string, unknown>;
}
let usearchModule: UsearchModule | undefined;
const usearch = (): UsearchModule => (usearchModule ??= require('usearch') as UsearchModule);

export interface HnswOptions {
  connectivity: number;
  expansionAdd: number;
  expansionSearch: number;
  /** Build threads (0: all cores). */
  threads: number;
}

export const DEFAULT_HNSW: HnswOptions = { connectivity: 16, expansionAdd: 64, expansionSearch: 128, threads: 0 };

export interface Hit {
  ownerId: string;
  /** Cosine similarity, from -1 to 1. */
  score: number;
}

const WORKER = new URL('./hnsw-build-worker.mjs', import.meta.url);

export class PartitionIndex {
  private data: Float32Array;
  private capacity: number;
  /** Slot → owner id (null: free). */
  private owners: (string | null)[] = [];
  private readonly slots = new Map<string, number>();
  private readonly free: number[] = [];
  private hnsw: UsearchIndex | null = null;
  private build: Promise<void> | null = null;
  /** Slots written while a build runs: replayed onto the graph when it is loaded. */
  private touched: Set<number> | null = null;
  private closed = false;
  private wanted = false;
  private replaying = false;
  readonly scalar: ScalarKind;

  constructor(
    readonly dimensions: number,
    readonly exactBelow: number,
    private readonly hnswOptions: HnswOptions = DEFAULT_HNSW,
    private readonly onError: (err: unknown) => void = () => {},
    private readonly hooks: PartitionHooks = {},
  ) {
    this.scalar = hooks.scalar ?? 'f32';
    this.capacity = 1024;
    this.data = new Float32Array(new SharedArrayBuffer(this.capacity * dimensions * 4));
  }

  /**
   * An index made from a saved graph (graph-file.ts read it; its graph part is at `graphPath`).
   * Throws when usearch cannot load it or it does not hold the owners the file says.
   */
  static restore(read: ReadGraph, graphPath: string, exactBelow: number, hnswOptions: HnswOptions, onError: (err: unknown) => void, hooks: PartitionHooks): PartitionIndex {
    const index = new PartitionIndex(read.header.dimensions, exactBelow, hnswOptions, onError, hooks);
    index.data = read.data;
    index.capacity = read.capacity;
    index.owners = read.owners;
    for (let slot = 0; slot < read.owners.length; slot++) {
      const owner = read.owners[slot];
      if (owner === null) index.free.push(slot);
      else if (index.slots.has(owner)) throw new Error(`owner ${owner} is in two slots`);
      else index.slots.set(owner, slot);
    }
    const graph = index.newGraph();
    graph.load(graphPath);
    if (graph.size() !== index.slots.size) throw new Error(`the graph holds ${graph.size()} vectors, the file ${index.slots.size}`);
    index.hnsw = graph;
    return index;
  }

  /**
   * Saves the live graph to `path` (synchronously: usearch writes it while the event loop waits)
   * and answers the slot → owner table it holds; null without a graph.
   */
  saveGraph(path: string): Array<string | null> | null {
    if (!this.hnsw) return null;
    this.hnsw.save(path);
    return this.owners.slice();
  }

  /** The slot → owner table (a copy) and the live vectors, for saving the graph just built. */
  snapshot(): { owners: Array<string | null>; data: Float32Array } {
    return { owners: this.owners.slice(), data: this.data };
  }

  get size(): number {
    return this.slots.size;
  }

  /** 'exact' below the threshold or while the graph is being built, else 'hnsw'. */
  get mode(): 'exact' | 'hnsw' {
    return this.hnsw ? 'hnsw' : 'exact';
  }

  /** Resolves when a build in progress is done (benchmarks and tests). */
  async ready(): Promise<void> {
    while (this.build) await this.build;
  }

  has(ownerId: string): boolean {
    return this.slots.has(ownerId);
  }

  /** The stored vector of an owner (a copy). */
  vectorOf(ownerId: string): Float32Array | undefined {
    const slot = this.slots.get(ownerId);
    if (slot === undefined) return undefined;
    return this.data.slice(slot * this.dimensions, (slot + 1) * this.dimensions);
  }

  upsert(ownerId: string, vector: Float32Array): void {
    if (vector.length !== this.dimensions) throw new Error(`vector of ${vector.length} dimensions in an index of ${this.dimensions}`);
    let slot = this.slots.get(ownerId);
    const existed = slot !== undefined;
    if (slot === undefined) {
      slot = this.free.pop() ?? this.owners.length;
      if (slot === this.owners.length) this.owners.push(null);
      this.grow(slot + 1);
      this.slots.set(ownerId, slot);
      this.owners[slot] = ownerId;
    }
    this.data.set(vector, slot * this.dimensions);
    this.touched?.add(slot);
    if (this.hnsw) {
      if (existed) this.hnsw.remove(BigInt(slot));
      this.hnsw.add(BigInt(slot), vector, 1);
    }
    this.maybeBuild();
  }

  /**
   * Many writes at once (the replay onto a saved graph): the graph learns them in one multi-threaded
   * `add` rather than one at a time. `null`: removed.
   */
  applyMany(changes: ReadonlyArray<readonly [string, Float32Array | null]>, threads = availableParallelism()): void {
    const graph = this.hnsw;
    // Detached while the table is updated: upsert/remove leave the graph alone (and build nothing).
    this.hnsw = null;
    this.replaying = true;
    const added = new Set<number>();
    try {
      for (const [owner, vector] of changes) {
        const slot = this.slots.get(owner);
        if (slot !== undefined && graph?.contains(BigInt(slot))) graph.remove(BigInt(slot));
        if (vector && vector.length === this.dimensions) {
          this.upsert(owner, vector);
          added.add(this.slots.get(owner)!);
        } else {
          this.remove(owner);
          if (slot !== undefined) added.delete(slot);
        }
      }
    } finally {
      this.hnsw = graph;
      this.replaying = false;
    }
    if (!graph || !added.size) return;
    const keys = new BigUint64Array(added.size);
    const vectors = new Float32Array(added.size * this.dimensions);
    let i = 0;
    for (const slot of added) {
      keys[i] = BigInt(slot);
      vectors.set(this.data.subarray(slot * this.dimensions, (slot + 1) * this.dimensions), i * this.dimensions);
      i++;
    }
    graph.add(keys, vectors, Math.max(1, threads));
  }

  remove(ownerId: string): void {
    const slot = this.slots.get(ownerId);
    if (slot === undefined) return;
    this.slots.delete(ownerId);
    this.owners[slot] = null;
    this.free.push(slot);
    this.touched?.add(slot);
    if (this.hnsw) this.hnsw.remove(BigInt(slot));
  }

  /**
   * The `k` nearest owners, best first: exact below the threshold, else from the HNSW graph
   * (approximate; the graph searches with ef = max(expansionSearch, k)).
   */
  nearest(query: Float32Array, k: number): Hit[] {
    if (k <= 0 || this.slots.size === 0) return [];
    if (!this.hnsw) return this.scan(query, k);
    this.hooks.searched?.('hnsw');
    const found = this.hnsw.search(query, Math.min(k, this.slots.size), 1);
    const hits: Hit[] = [];
    for (let i = 0; i < found.keys.length; i++) {
      const owner = this.owners[Number(found.keys[i])];
      // usearch pads a short answer with the maximum key; a freed slot is not an answer.
      if (owner) hits.push({ ownerId: owner, score: 1 - found.distances[i] });
    }
    return hits;
  }

  /** Exact top `k` among the given owners (those without a vector here are skipped). */
  exactAmong(query: Float32Array, owners: Iterable<string>, k: number): Hit[] {
    const top = new TopK(k);
    for (const owner of owners) {
      const slot = this.slots.get(owner);
      if (slot !== undefined) top.offer(slot, dot(query, this.data, slot * this.dimensions, this.dimensions));
    }
    return top.sorted().map(([slot, score]) => ({ ownerId: this.owners[slot]!, score }));
  }

  /** Exact top `k` of the whole partition. */
  scan(query: Float32Array, k: number): Hit[] {
    this.hooks.searched?.('exact');
    const top = new TopK(k);
    const d = this.dimensions;
    for (let slot = 0; slot < this.owners.length; slot++) {
      if (this.owners[slot] !== null) top.offer(slot, dot(query, this.data, slot * d, d));
    }
    return top.sorted().map(([slot, score]) => ({ ownerId: this.owners[slot]!, score }));
  }

  close(): void {
    this.closed = true;
    this.hnsw = null;
  }

  private grow(slots: number): void {
    if (slots <= this.capacity) return;
    let capacity = this.capacity;
    while (capacity < slots) capacity *= 2;
    const next = new Float32Array(new SharedArrayBuffer(capacity * this.dimensions * 4));
    next.set(this.data);
    // A build worker keeps reading the old buffer: the slots it was given are unchanged there,
    // or touched (and replayed).
    this.data = next;
    this.capacity = capacity;
  }

  /** True once the graph answers (built, or restored). */
  get hasGraph(): boolean {
    return this.hnsw !== null;
  }

  /** The threshold is reached (checked after loading, when no write may follow). */
  check(): void {
    this.maybeBuild();
  }

  private maybeBuild(): void {
    if (this.hnsw || this.build || this.closed || this.replaying || this.slots.size < this.exactBelow) return;
    if (this.hooks.wantGraph) {
      if (!this.wanted) {
        this.wanted = true;
        this.hooks.wantGraph();
      }
      return;
    }
    void this.startBuild();
  }

  /**
   * Builds the graph in the worker and answers from it once loaded. `save` gets the worker's
   * graph file (keys are slots) and the slot → owner table it was built from, before it is deleted. Resolves true when the graph answers.
   */
  startBuild(save?: (graphPath: string, owners: Array<string | null>) => Promise<void>): Promise<boolean> {
    if (this.hnsw) return Promise.resolve(true);
    if (this.closed) return Promise.resolve(false);
    if (!this.build) {
      this.build = this.buildGraph(save)
        .catch((err) => this.onError(err))
        .finally(() => {
          this.build = null;
        });
    }
    return this.build.then(() => this.hnsw !== null);
  }

  private newGraph(): UsearchIndex {
    const u = usearch();
    return new u.Index({
      dimensions: this.dimensions, metric: u.MetricKind.IP, quantization: quantization(u, this.scalar),
      connectivity: this.hnswOptions.connectivity, expansion_add: this.hnswOptions.expansionAdd, expansion_search: this.hnswOptions.expansionSearch,
    });
  }

  private async buildGraph(save?: (graphPath: string, owners: Array<string | null>) => Promise<void>): Promise<void> {
    const slots = Int32Array.from(this.slots.values());
    // The owners the graph file will hold (a write after this point is replayed when it is loaded).
    const ownersAtStart = save ? this.owners.slice() : [];
    this.touched = new Set();
    const dir = mkdtempSync(join(tmpdir(), 'orrery-hnsw-'));
    const path = join(dir, 'index.usearch');
    try {
      const worker = new Worker(WORKER, {
        workerData: { buffer: this.data.buffer, dimensions: this.dimensions, slots, path, options: this.hnswOptions, scalar: this.scalar },
        execArgv: [],
      });
      await new Promise<void>((resolve, reject) => {
        worker.once('message', () => resolve());
        worker.once('error', reject);
        worker.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`the index build worker stopped with code ${code}`))));
      });
      if (this.closed) return;
      const graph = this.newGraph();
      graph.load(path);
      // Writes made while the worker built: the graph learns them now.
      for (const slot of this.touched) {
        const key = BigInt(slot);
        if (graph.contains(key)) graph.remove(key);
        if (this.owners[slot] !== null) graph.add(key, this.data.slice(slot * this.dimensions, (slot + 1) * this.dimensions), 1);
      }
      this.hnsw = graph;
      this.touched = null;
      if (save) await save(path, ownersAtStart).catch((err) => this.onError(err));
    } finally {
      this.touched = null;
      rmSync(dir, { recursive: true, force: true });
    }
  }
}

/** The k best (slot, score) pairs seen: a binary min-heap on score. */
class TopK {
  private readonly slots: number[] = [];
  private readonly scores: number[] = [];

  constructor(private readonly k: number) {}

  offer(slot: number, score: number): void {
    if (this.k <= 0) return;
    if (this.slots.length < this.k) {
      this.slots.push(slot);
      this.scores.push(score);
      this.up(this.slots.length - 1);
    } else if (score > this.scores[0]) {
      this.slots[0] = slot;
      this.scores[0] = score;
      this.down(0);
    }
  }

  sorted(): Array<[number, number]> {
    return this.slots.map((s, i): [number, number] => [s, this.scores[i]]).sort((a, b) => b[1] - a[1] || a[0] - b[0]);
  }

  private up(i: number): void {
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (this.scores[p] <= this.scores[i]) return;
      this.swap(i, p);
      i = p;
    }
  }

  private down(i: number): void {
    const n = this.slots.length;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < n && this.scores[l] < this.scores[m]) m = l;
      if (r < n && this.scores[r] < this.scores[m]) m = r;
      if (m === i) return;
      this.swap(i, m);
      i = m;
    }
  }

  private swap(a: number, b: number): void {
    [this.slots[a], this.slots[b]] = [this.slots[b], this.slots[a]];
    [this.scores[a], this.scores[b]] = [this.scores[b], this.scores[a]];
  }
}
