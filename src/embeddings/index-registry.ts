/**
 * The in-memory similarity indexes of this process, one per partition (project, owner kind,
 * type, model), loaded from the `vectors` table on first use and kept in sync on write:
 *
 * - writes made by this process update the loaded partition at once (after their commit);
 * - on PostgreSQL, writes of other replicas arrive by NOTIFY on `orrery_vectors` (sent after the
 *   commit, in commit order) and are read back before the partition's next query;
 * - a partition unused for `idleMs` is dropped and loaded again when next needed.
 *
 * A process that misses notifications (its LISTEN connection dropped) serves slightly stale
 * neighbours until the partition is dropped for idleness; results are always re-checked against
 * the objects table, so a deleted object is never answered.
 */
import type { Notifier } from '../db/notify.ts';
import type { Scope } from '../auth/principal.ts';
import type { OwnerKind } from './embedder.ts';
import { partitionId, partitionPage, partitionRows, type Db, type PartitionKey } from './store.ts';
import { DEFAULT_HNSW, PartitionIndex, type HnswOptions } from './vector-index.ts';

export const VECTOR_CHANNEL = 'orrery_vectors';

export interface IndexOptions {
  /** Below this many vectors a partition is searched exactly (brute force); from it on, HNSW. */
  exactBelow: number;
  hnsw?: HnswOptions;
  idleMs?: number;
  /** This process (to ignore its own notifications). */
  replicaId: string;
  onError?: (err: unknown, what: string) => void;
}

interface Loaded {
  key: PartitionKey;
  index: PartitionIndex | null;
  loading: Promise<PartitionIndex> | null;
  /** Writes seen while loading: applied once loaded (value null: removed). */
  pending: Map<string, Float32Array | null>;
  /** Owners another replica wrote: read back before the next query. */
  stale: Set<string>;
  usedAt: number;
}

interface Signal {
  r: string;
  /** Partition id, or `project|kind` for removals from every partition of a kind. */
  p: string;
  o: string[];
  d?: 1;
}

const PAGE = 2000;
/** NOTIFY payloads stay under PostgreSQL's 8,000 bytes. */
const OWNERS_PER_SIGNAL = 200;

export class VectorIndexes {
  private readonly loaded = new Map<string, Loaded>();
  private readonly sweeper: NodeJS.Timeout;
  private readonly unsubscribe: () => void;

  constructor(
    private readonly db: Db,
    private readonly notifier: Notifier,
    private readonly opts: IndexOptions,
  ) {
    this.unsubscribe = notifier.crossProcess ? notifier.subscribe(VECTOR_CHANNEL, (payload) => this.heard(payload)) : () => {};
    this.sweeper = setInterval(() => this.evictIdle(), Math.min(60_000, opts.idleMs ?? 600_000));
    this.sweeper.unref();
  }

  /** The partition's index, loaded if needed and brought up to date; null when it holds nothing yet and `dimensions` is not known. */
  async get(key: PartitionKey, dimensions?: number): Promise<PartitionIndex | null> {
    const id = partitionId(key);
    let entry = this.loaded.get(id);
    if (!entry) {
      entry = { key, index: null, loading: null, pending: new Map(), stale: new Set(), usedAt: Date.now() };
      this.loaded.set(id, entry);
    }
    entry.usedAt = Date.now();
    if (!entry.index) {
      entry.loading ??= this.load(entry, dimensions).finally(() => {
        entry!.loading = null;
      });
      try {
        await entry.loading;
      } catch (err) {
        this.loaded.delete(id);
        throw err;
      }
    }
    if (entry.stale.size) await this.refresh(entry);
    return entry.index && entry.index.dimensions > 0 ? entry.index : null;
  }

  /** After a committed write of vectors of one partition by this process. */
  written(key: PartitionKey, vectors: ReadonlyArray<{ ownerId: string; vector: Float32Array }>): void {
    const entry = this.loaded.get(partitionId(key));
    if (entry) {
      for (const { ownerId, vector } of vectors) {
        if (entry.loading) entry.pending.set(ownerId, vector);
        else this.apply(entry, ownerId, vector);
      }
    }
    this.signal({ r: this.opts.replicaId, p: partitionId(key), o: vectors.map((v) => v.ownerId) });
  }

  /** After a committed delete of owners' vectors (of the given types, or all), of every model. */
  removed(scope: Scope, kind: OwnerKind, ownerIds: readonly string[], types?: readonly string[]): void {
    const prefixes = types ? types.map((t) => `${scope.project}|${kind}|${t}|`) : [`${scope.project}|${kind}|`];
    for (const p of prefixes) {
      this.dropOwners(p, ownerIds);
      this.signal({ r: this.opts.replicaId, p, o: [...ownerIds], d: 1 });
    }
  }

  close(): void {
    clearInterval(this.sweeper);
    this.unsubscribe();
    for (const e of this.loaded.values()) e.index?.close();
    this.loaded.clear();
  }

  private async load(entry: Loaded, dimensions?: number): Promise<PartitionIndex> {
    let index: PartitionIndex | null = null;
    let after: string | null = null;
    for (;;) {
      const page = await partitionPage(this.db, entry.key, after, PAGE);
      for (const row of page) {
        index ??= this.create(row.vector.length);
        if (row.vector.length === index.dimensions) index.upsert(row.ownerId, row.vector);
      }
      if (page.length < PAGE) break;
      after = page[page.length - 1].ownerId;
    }
    index ??= this.create(dimensions ?? 0);
    entry.index = index;
    for (const [owner, vector] of entry.pending) this.apply(entry, owner, vector);
    entry.pending.clear();
    return index;
  }

  private create(dimensions: number): PartitionIndex {
    return new PartitionIndex(dimensions, this.opts.exactBelow, this.opts.hnsw ?? DEFAULT_HNSW, (err) => this.opts.onError?.(err, 'build a similarity index'));
  }

  private apply(entry: Loaded, ownerId: string, vector: Float32Array | null): void {
    let index = entry.index;
    if (!index) return;
    if (vector && index.dimensions === 0) {
      // An empty partition learns its dimensions from its first vector.
      index = this.create(vector.length);
      entry.index = index;
    }
    if (vector && vector.length === index.dimensions) index.upsert(ownerId, vector);
    else index.remove(ownerId);
  }

  private async refresh(entry: Loaded): Promise<void> {
    const owners = [...entry.stale];
    entry.stale.clear();
    const rows = await partitionRows(this.db, entry.key, owners);
    for (const owner of owners) this.apply(entry, owner, rows.get(owner) ?? null);
  }

  private dropOwners(prefix: string, ownerIds: readonly string[]): void {
    for (const [id, entry] of this.loaded) {
      if (!id.startsWith(prefix)) continue;
      for (const owner of ownerIds) {
        if (entry.loading) entry.pending.set(owner, null);
        else entry.index?.remove(owner);
      }
    }
  }

  private heard(payload: string): void {
    let s: Signal;
    try {
      s = JSON.parse(payload) as Signal;
    } catch {
      return;
    }
    if (s.r === this.opts.replicaId || !Array.isArray(s.o)) return;
    if (s.d) {
      this.dropOwners(s.p, s.o);
      return;
    }
    const entry = this.loaded.get(s.p);
    // Read back when next queried (also covers a write that landed while loading).
    if (entry) for (const o of s.o) entry.stale.add(o);
  }

  private signal(s: Signal): void {
    if (!this.notifier.crossProcess || !s.o.length) return;
    for (let i = 0; i < s.o.length; i += OWNERS_PER_SIGNAL) {
      this.notifier.publish(VECTOR_CHANNEL, JSON.stringify({ ...s, o: s.o.slice(i, i + OWNERS_PER_SIGNAL) }))
        .catch((err) => this.opts.onError?.(err, 'signal a vector write to other replicas'));
    }
  }

  private evictIdle(): void {
    const before = Date.now() - (this.opts.idleMs ?? 600_000);
    for (const [id, entry] of this.loaded) {
      if (entry.usedAt < before && !entry.loading) {
        entry.index?.close();
        this.loaded.delete(id);
      }
    }
  }
}
