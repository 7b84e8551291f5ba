/**
 * One similarity index partition (one project, owner kind, embedding type and model) in memory.
 *
 * - Vectors live in one contiguous Float32Array (shared memory, so a build worker reads it without
 *   a copy), a slot per owner. Below `exactBelow` vectors a query is an exact scan of them
 *   (brute force: about 2 ms per 10,000 vectors of 384 dimensions).
 * - From `exactBelow` vectors on, a usearch HNSW graph (M 16, inner product on normalised vectors,
 *   i.e. cosine) is built, loaded, kept and searched in its own worker thread (graph-thread.ts):
 *   a build, a load or a replay never holds the event loop. Until it is built, queries stay exact.
 *   Every write is posted to the worker, which applies them in order (writes during a build right
 *   after it), so a search sees every write made before it.
 * - `exactAmong` scores a given candidate set exactly (the filtered search path, search.ts).
 * - With a `wantGraph` hook (index-registry.ts), crossing the threshold asks the registry instead
 *   of building: it loads a saved graph, or takes the build lease and calls `build`, or waits.
 *   `restore` makes an index from a saved graph file (graph-file.ts) without a build.
 */
import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dot } from './vectors.ts';
import { GraphThread } from './graph-thread.ts';
import type { ReadGraph, ScalarKind } from './graph-file.ts';

export interface PartitionHooks {
  /** The graph's scalar kind (default f32). */
  scalar?: ScalarKind;
  /** Called once when the index reaches `exactBelow` without a graph: the caller decides (then calls `build`). */
  wantGraph?: () => void;
  /** Every `nearest` query, by how it was answered. */
  searched?: (mode: 'exact' | 'hnsw') => void;
}
export interface HnswOptions {
  connectivity: number;
  expansionAdd: number;
  expansionSearch: number;
  /** Build threads (0: all cores). */
  threads: number;
}

/**
 * M 16; ef_construction 128: at a million vectors a graph built with 64 tops out at recall@10
 * 0.95 whatever the search's ef, one built with 128 reaches 0.99 (bench/README.md, issue 20), for
 * about 1.5 times the build time.
 */
export const DEFAULT_HNSW: HnswOptions = { connectivity: 16, expansionAdd: 128, expansionSearch: 128, threads: 0 };

/** Up to this many vectors a graph searches with `expansionSearch` as it is. */
const EXPANSION_REFERENCE = 100_000;

/**
 * The candidate list (ef) of a graph search over `size` vectors: `expansionSearch` up to 100,000,
 * then growing as the square root of size / 100,000 (405 at a million). A fixed ef loses recall as
 * the graph grows: with ef 128, recall@10 is 0.998-1.000 at 100,000 vectors of 384 dimensions and
 * 0.94-0.95 at 1,000,000, where ef 384-405 gives 0.99 (bench/README.md, issue 20) for about twice
 * the query time.
 */
export function searchExpansion(size: number, expansionSearch: number): number {
  if (size <= EXPANSION_REFERENCE) return expansionSearch;
  return Math.ceil(expansionSearch * Math.sqrt(size / EXPANSION_REFERENCE));
}

export interface Hit {
  ownerId: string;
  /** Cosine similarity, from -1 to 1. */
  score: number;
}

export class PartitionIndex {
  private data: Float32Array;
  private capacity: number;
  /** Slot → owner id (null: free). */
  private owners: (string | null)[] = [];
  private readonly slots = new Map<string, number>();
  private readonly free: number[] = [];
  /** Slot → the count of slot frees when it was last freed: a search answered after its slot changed owner skips it. */
  private readonly freedAt: number[] = [];
  private frees = 0;
  /** The graph's worker, from the start of its build (or load) on: every write is posted to it. */
  private graph: GraphThread | null = null;
  /** The graph answers queries (built or loaded; writes posted before any query are applied first). */
  private answering = false;
  private build: Promise<void> | null = null;
  private closed = false;
  private wanted = false;
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
  static async restore(
    read: ReadGraph,
    graphPath: string,
    exactBelow: number,
    hnswOptions: HnswOptions,
    onError: (err: unknown) => void,
    hooks: PartitionHooks,
  ): Promise<PartitionIndex> {
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
    try {
      const { size } = await graph.load(graphPath);
      if (size !== index.slots.size) throw new Error(`the graph holds ${size} vectors, the file ${index.slots.size}`);
    } catch (err) {
      graph.close();
      throw err;
    }
    index.graph = graph;
    index.answering = true;
    return index;
  }

  /**
   * Saves the live graph to `path` (in its worker) and answers the slot → owner table it holds:
   * taken when the save is posted, i.e. after the same writes as the graph saved. Null without a graph.
   */
  async saveGraph(path: string): Promise<Array<string | null> | null> {
    const graph = this.answering ? this.graph : null;
    if (!graph) return null;
    const owners = this.owners.slice();
    await graph.save(path);
    return owners;
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
    return this.answering ? 'hnsw' : 'exact';
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
    const slot = this.place(ownerId, vector);
    this.graph?.upsert(slot, vector);
    this.maybeBuild();
  }

  /** Writes `vector` into the owner's slot (a new one if it has none); answers the slot. */
  private place(ownerId: string, vector: Float32Array): number {
    if (vector.length !== this.dimensions)
      throw new Error(`vector of ${vector.length} dimensions in an index of ${this.dimensions}`);
    let slot = this.slots.get(ownerId);
    if (slot === undefined) {
      slot = this.free.pop() ?? this.owners.length;
      if (slot === this.owners.length) this.owners.push(null);
      this.grow(slot + 1);
      this.slots.set(ownerId, slot);
      this.owners[slot] = ownerId;
    }
    this.data.set(vector, slot * this.dimensions);
    return slot;
  }

  /** Frees the owner's slot; answers it (undefined: the owner had none). */
  private unplace(ownerId: string): number | undefined {
    const slot = this.slots.get(ownerId);
    if (slot === undefined) return undefined;
    this.slots.delete(ownerId);
    this.owners[slot] = null;
    this.free.push(slot);
    this.freedAt[slot] = ++this.frees;
    return slot;
  }

  /**
   * Many writes at once (the replay onto a saved graph): the graph's worker learns them in one
   * multi-threaded `add` rather than one at a time; resolves once it holds them. `null`: removed.
   */
  async applyMany(changes: ReadonlyArray<readonly [string, Float32Array | null]>): Promise<void> {
    const removed = new Set<number>();
    const added = new Set<number>();
    for (const [owner, vector] of changes) {
      if (vector && vector.length === this.dimensions) {
        added.add(this.place(owner, vector));
      } else {
        const slot = this.unplace(owner);
        if (slot !== undefined) {
          added.delete(slot);
          removed.add(slot);
        }
      }
    }
    const graph = this.graph;
    if (graph && (added.size || removed.size)) {
      const keys = new BigUint64Array(added.size);
      const vectors = new Float32Array(added.size * this.dimensions);
      let i = 0;
      for (const slot of added) {
        keys[i] = BigInt(slot);
        vectors.set(this.data.subarray(slot * this.dimensions, (slot + 1) * this.dimensions), i * this.dimensions);
        i++;
      }
      await graph.apply(
        BigUint64Array.from(
          [...removed].filter((s) => !added.has(s)),
          BigInt,
        ),
        keys,
        vectors,
      );
    }
    this.maybeBuild();
  }

  remove(ownerId: string): void {
    const slot = this.unplace(ownerId);
    if (slot !== undefined) this.graph?.remove(slot);
  }

  /**
   * The `k` nearest owners, best first: exact below the threshold, else from the HNSW graph
   * (approximate; its ef grows with the partition, `searchExpansion`, unless `ef` is given) in its worker.
   */
  async nearest(query: Float32Array, k: number, ef?: number): Promise<Hit[]> {
    if (k <= 0 || this.slots.size === 0) return [];
    const graph = this.answering ? this.graph : null;
    if (!graph) return this.scan(query, k);
    const asOf = this.frees;
    let found;
    try {
      found = await graph.search(
        query,
        Math.min(k, this.slots.size),
        Math.max(k, ef ?? searchExpansion(this.slots.size, this.hnswOptions.expansionSearch)),
      );
    } catch {
      // Closed (replaced by a newer graph, evicted) or failed meanwhile: the vectors are still here.
      return this.scan(query, k);
    }
    this.hooks.searched?.('hnsw');
    const hits: Hit[] = [];
    for (let i = 0; i < found.keys.length && hits.length < k; i++) {
      const slot = Number(found.keys[i]);
      // usearch pads a short answer with the maximum key; a freed slot is not an answer, nor one
      // freed (and perhaps given to another owner) while the worker searched.
      const owner = this.owners[slot];
      if (owner && (this.freedAt[slot] ?? 0) <= asOf) hits.push({ ownerId: owner, score: 1 - found.distances[i] });
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
    this.answering = false;
    this.graph?.close();
    this.graph = null;
  }

  private grow(slots: number): void {
    if (slots <= this.capacity) return;
    let capacity = this.capacity;
    while (capacity < slots) capacity *= 2;
    const next = new Float32Array(new SharedArrayBuffer(capacity * this.dimensions * 4));
    next.set(this.data);
    // A building worker keeps reading the old buffer: the slots it was given are unchanged there,
    // or written since (and those writes were posted to it, applied after the build).
    this.data = next;
    this.capacity = capacity;
  }

  /** True once the graph answers (built, or restored). */
  get hasGraph(): boolean {
    return this.answering;
  }

  /** The threshold is reached (checked after loading, when no write may follow). */
  check(): void {
    this.maybeBuild();
  }

  private maybeBuild(): void {
    if (this.graph || this.build || this.closed || this.slots.size < this.exactBelow) return;
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
   * Builds the graph in its worker and answers from it once built. `save` gets the graph file the
   * worker saved (keys are slots) and the slot → owner table it was built from, before it is deleted. Resolves true when the graph answers.
   */
  startBuild(save?: (graphPath: string, owners: Array<string | null>) => Promise<void>): Promise<boolean> {
    if (this.answering) return Promise.resolve(true);
    if (this.closed) return Promise.resolve(false);
    if (!this.build) {
      this.build = this.buildGraph(save)
        .catch((err) => this.onError(err))
        .finally(() => {
          this.build = null;
        });
    }
    return this.build.then(() => this.answering);
  }

  private newGraph(): GraphThread {
    const graph: GraphThread = new GraphThread({
      dimensions: this.dimensions,
      scalar: this.scalar,
      hnsw: this.hnswOptions,
      // Behind the table now: answer exactly (a failed build is reported by startBuild).
      onFailure: (err) => {
        if (this.graph !== graph) return;
        const answered = this.answering;
        this.graph = null;
        this.answering = false;
        if (!answered) return;
        this.onError(err);
        // Wanted again (a rebuild, or a saved graph) on the next write.
        this.wanted = false;
      },
    });
    return graph;
  }

  private async buildGraph(save?: (graphPath: string, owners: Array<string | null>) => Promise<void>): Promise<void> {
    const slots = Int32Array.from(this.slots.values());
    // The owners the graph file will hold (a write after this point is replayed when it is loaded).
    const ownersAtStart = save ? this.owners.slice() : [];
    // Synchronously up to the posted build: a write after `slots` was taken must be posted behind it.
    const dir = mkdtempSync(join(tmpdir(), 'orrery-hnsw-'));
    const path = join(dir, 'index.usearch');
    const graph = this.newGraph();
    this.graph = graph;
    try {
      await graph.build(this.data.buffer as SharedArrayBuffer, slots, save ? path : undefined);
      if (this.closed || this.graph !== graph) return;
      this.answering = true;
      if (save) await save(path, ownersAtStart).catch((err) => this.onError(err));
    } catch (err) {
      if (this.graph === graph) this.graph = null;
      graph.close();
      throw err;
    } finally {
      await rm(dir, { recursive: true, force: true });
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
