/**
 * The in-memory similarity indexes of this process, one per partition (project, owner kind,
 * type, model), loaded from the `vectors` table on first use and kept in sync on write:
 *
 * - writes made by this process update the loaded partition at once (after their commit);
 * - on PostgreSQL, writes of other replicas arrive by NOTIFY on `orrery_vectors` (sent after the
 *   commit, in commit order) and are read back before the partition's next query;
 * - a partition unused for `idleMs` is dropped and loaded again when next needed.
 *
 * With `graphs` (persisted graphs, issue 20): a partition is first looked for as a saved graph
 * (graph-file.ts, in the blob store or the data folder), checked against its header and checksum,
 * and the writes after its revision replayed onto it (rows written and tombstones, 0021); any
 * mismatch (header, checksum, count after replay) and it is loaded from the table instead. A
 * partition that reaches the exact-scan threshold without a graph takes the build lease of its
 * partition (a row in `vector_graph_leases`), builds, saves and releases it; a replica that finds
 * the lease held keeps answering exactly and polls for the published graph (or the lease's expiry).
 * Each graph is loaded, replayed, kept and searched in its own worker thread (vector-index.ts), so
 * none of that holds the event loop. Saved graphs of partitions no longer configured (a deleted
 * project, a replaced model, a disabled type) are deleted (graph-prune.ts).
 *
 * A process that misses notifications (its LISTEN connection dropped) serves slightly stale
 * neighbours until the partition is dropped for idleness; results are always re-checked against
 * the objects table, so a deleted object is never answered.
 */
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BlobStat, BlobStore } from '../blobs/blob-store.ts';
import type { DialectName } from '../db/dialect.ts';
import type { AuthReads } from '../auth/reads.ts';
import type { Notifier } from '../db/notify.ts';
import type { Scope } from '../auth/principal.ts';
import type { OwnerKind } from './embedder.ts';
import { countPartition, partitionId, partitionPage, partitionRows, type Db, type PartitionKey } from './store.ts';
import { DEFAULT_HNSW, PartitionIndex, type HnswOptions, type PartitionHooks } from './vector-index.ts';
import { GraphFileInvalid, graphFileStream, readGraphFile, type GraphHeader, type ScalarKind } from './graph-file.ts';
import {
  acquireLease,
  changedSince,
  pruneTombstones,
  releaseLease,
  settledRevision,
  tombstonesFrom,
} from './graph-sql.ts';
import { graphKeyOf, pruneGraphs } from './graph-prune.ts';

const VECTOR_CHANNEL = 'orrery_vectors';

export interface IndexOptions {
  /** Below this many vectors a partition is searched exactly (brute force); from it on, HNSW. */
  exactBelow: number;
  hnsw?: HnswOptions;
  idleMs?: number;
  /** This process (to ignore its own notifications). */
  replicaId: string;
  onError?: (err: unknown, what: string) => void;
  /** The graphs' scalar kind (default f32). */
  scalar?: ScalarKind;
  /** Saved graphs; without, every graph is built on first use and lives in memory only. */
  graphs?: GraphPersistence;
  /** Every top-k query of a partition, by how it was answered (metrics). */
  searched?: (mode: 'exact' | 'hnsw') => void;
}

export type GraphEvent = 'built' | 'saved' | 'loaded' | 'rejected' | 'lease_busy' | 'pruned';

interface GraphPersistence {
  /** Where graph files go: the blob store (S3), or a store over the data folder. */
  store: BlobStore;
  /** Key prefix in the store ('' or ending in '/'). */
  prefix: string;
  dialect: DialectName;
  /** Which partitions a project configures is in its settings (auth's rows, read through auth/reads.ts). */
  projectSettings: AuthReads['projectSettings'];
  /** The build lease (renewed while building; a crashed builder's lease expires). Default 120 s. */
  leaseMs?: number;
  /** How often a replica that found the lease held looks for the published graph. Default 5 s. */
  pollMs?: number;
  /** Tombstones older than this are pruned after a save (and older graphs rebuilt). Default 7 days. */
  tombstoneMs?: number;
  /**
   * How often every saved graph is checked against the configured partitions (graph-prune.ts);
   * the first sweep runs a minute after start. Default 6 hours; 0: only when asked (pruneGraphs).
   */
  pruneEveryMs?: number;
  /** `partition` is a partition id, or a project id for 'pruned' (whose detail is the deleted key). */
  events?: (event: GraphEvent, partition: string, detail?: string) => void;
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
  /** Writes before this revision are all in the index as loaded from the table (what a saved graph records). */
  revision: number;
  /** A saved graph is being swapped in: writes are applied and also kept in `pending` for it. */
  swapping: boolean;
  /** The saved file last tried and rejected (not tried again until it changes). */
  rejected: BlobStat | null;
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
  private pruner: NodeJS.Timeout | null = null;
  private readonly unsubscribe: () => void;
  private closed = false;

  constructor(
    private readonly db: Db,
    private readonly notifier: Notifier,
    private readonly opts: IndexOptions,
  ) {
    this.unsubscribe = notifier.crossProcess
      ? notifier.subscribe(VECTOR_CHANNEL, (payload) => this.heard(payload))
      : () => {};
    this.sweeper = setInterval(() => this.evictIdle(), Math.min(60_000, opts.idleMs ?? 600_000));
    this.sweeper.unref();
    const every = opts.graphs?.pruneEveryMs ?? 6 * 3_600_000;
    if (opts.graphs && every > 0) {
      // Catches what a crash or another replica left behind (deletions and settings changes prune at once).
      const sweep = (after: number) => {
        if (this.closed) return;
        this.pruner = setTimeout(() => {
          this.pruneGraphs()
            .catch((err) => this.opts.onError?.(err, 'prune saved similarity graphs'))
            .finally(() => sweep(every));
        }, after);
        this.pruner.unref();
      };
      sweep(Math.min(60_000, every));
    }
  }

  /**
   * Deletes the saved graphs of partitions no longer configured (graph-prune.ts) and drops them from
   * memory: of one project (deleted, or its embedding settings changed), or of every project.
   */
  async pruneGraphs(project?: string): Promise<number> {
    const g = this.opts.graphs;
    if (!g) return 0;
    const { deleted, kept } = await pruneGraphs({
      store: g.store,
      prefix: g.prefix,
      projectSettings: g.projectSettings,
      project,
    });
    for (const d of deleted) g.events?.('pruned', d.project, d.key);
    for (const [id, entry] of this.loaded) {
      const p = entry.key.scope.project;
      if (entry.loading || !kept.has(p) || kept.get(p)?.has(id)) continue;
      entry.index?.close();
      this.loaded.delete(id);
    }
    return deleted.length;
  }

  /** The partition's index, loaded if needed and brought up to date; null when it holds nothing yet and `dimensions` is not known. */
  async get(key: PartitionKey, dimensions?: number): Promise<PartitionIndex | null> {
    const id = partitionId(key);
    let entry = this.loaded.get(id);
    if (!entry) {
      entry = {
        key,
        index: null,
        loading: null,
        pending: new Map(),
        stale: new Set(),
        usedAt: Date.now(),
        revision: 0,
        swapping: false,
        rejected: null,
      };
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
    this.closed = true;
    clearInterval(this.sweeper);
    if (this.pruner) clearTimeout(this.pruner);
    this.unsubscribe();
    for (const e of this.loaded.values()) e.index?.close();
    this.loaded.clear();
  }

  private async load(entry: Loaded, dimensions?: number): Promise<PartitionIndex> {
    const saved = this.opts.graphs ? await this.restore(entry, dimensions) : null;
    if (saved) {
      entry.index = saved;
    } else {
      if (this.opts.graphs) entry.revision = await settledRevision(this.db, this.opts.graphs.dialect);
      let index: PartitionIndex | null = null;
      let after: string | null = null;
      for (;;) {
        const page = await partitionPage(this.db, entry.key, after, PAGE);
        for (const row of page) {
          index ??= this.create(row.vector.length, entry);
          if (row.vector.length === index.dimensions) index.upsert(row.ownerId, row.vector);
        }
        if (page.length < PAGE) break;
        after = page[page.length - 1].ownerId;
      }
      entry.index = index ?? this.create(dimensions ?? 0, entry);
    }
    for (const [owner, vector] of entry.pending) this.apply(entry, owner, vector);
    entry.pending.clear();
    return entry.index;
  }

  private create(dimensions: number, entry: Loaded): PartitionIndex {
    return new PartitionIndex(
      dimensions,
      this.opts.exactBelow,
      this.opts.hnsw ?? DEFAULT_HNSW,
      (err) => this.opts.onError?.(err, 'build a similarity index'),
      this.hooks(entry),
    );
  }

  private hooks(entry: Loaded): PartitionHooks {
    return {
      scalar: this.opts.scalar,
      searched: this.opts.searched,
      // A graph is wanted: decided once the partition is loaded (so the build sees all of it).
      wantGraph: this.opts.graphs
        ? () =>
            void Promise.resolve(entry.loading)
              .catch(() => {})
              .then(() => this.planGraph(entry))
              .catch((err) => this.opts.onError?.(err, 'build or load a similarity graph'))
        : undefined,
    };
  }

  private apply(entry: Loaded, ownerId: string, vector: Float32Array | null): void {
    let index = entry.index;
    if (!index) return;
    if (entry.swapping) entry.pending.set(ownerId, vector);
    if (vector && index.dimensions === 0) {
      // An empty partition learns its dimensions from its first vector.
      index = this.create(vector.length, entry);
      entry.index = index;
    }
    if (vector && vector.length === index.dimensions) index.upsert(ownerId, vector);
    else index.remove(ownerId);
  }

  private graphKey(key: PartitionKey): string {
    return graphKeyOf(this.opts.graphs!.prefix, key.scope.project, partitionId(key));
  }

  private event(e: GraphEvent, key: PartitionKey, detail?: string): void {
    this.opts.graphs?.events?.(e, partitionId(key), detail);
  }

  /**
   * The partition from its saved graph, with the writes after it replayed; null when there is
   * none, or it does not match (then it is rebuilt, and overwritten once built).
   */
  private async restore(entry: Loaded, dimensions?: number): Promise<PartitionIndex | null> {
    const g = this.opts.graphs!;
    const k = entry.key;
    const key = this.graphKey(k);
    const found = await g.store.stat(key);
    if (!found || (entry.rejected && sameFile(entry.rejected, found))) return null;
    const dir = await mkdtemp(join(tmpdir(), 'orrery-graph-'));
    try {
      const floor = await tombstonesFrom(this.db);
      const now = await settledRevision(this.db, g.dialect);
      const hnsw = this.opts.hnsw ?? DEFAULT_HNSW;
      const expect = (h: GraphHeader): string | null =>
        h.partition !== partitionId(k)
          ? `it is of partition ${h.partition}`
          : dimensions !== undefined && dimensions > 0 && h.dimensions !== dimensions
            ? `${h.dimensions} dimensions, not ${dimensions}`
            : h.scalar !== (this.opts.scalar ?? 'f32')
              ? `scalar kind ${h.scalar}, not ${this.opts.scalar ?? 'f32'}`
              : h.connectivity !== hnsw.connectivity || h.expansionAdd !== hnsw.expansionAdd
                ? 'built with other HNSW parameters'
                : h.revision > now
                  ? `revision ${h.revision} is ahead of the database (${now})`
                  : h.revision + 1 < floor
                    ? `revision ${h.revision} is older than the kept tombstones (${floor})`
                    : null;
      const graphPath = join(dir, 'graph.usearch');
      const t0 = performance.now();
      const read = await readGraphFile((await g.store.get(key)) as AsyncIterable<Buffer>, graphPath, expect);
      let index: PartitionIndex;
      try {
        index = await PartitionIndex.restore(
          read,
          graphPath,
          this.opts.exactBelow,
          hnsw,
          (err) => this.opts.onError?.(err, 'build a similarity index'),
          this.hooks(entry),
        );
      } catch (err) {
        throw new GraphFileInvalid((err as Error).message);
      }
      const t1 = performance.now();
      let changed: string[];
      let t2: number;
      try {
        // Replay: every owner written or deleted after the saved revision gets its current row.
        changed = await changedSince(this.db, k, read.header.revision);
        const rows = await partitionRows(this.db, k, changed);
        await index.applyMany(changed.map((owner) => [owner, rows.get(owner) ?? null] as const));
        t2 = performance.now();
        const count = await countPartition(this.db, k);
        if (count !== index.size)
          throw new GraphFileInvalid(
            `${index.size} vectors after replaying ${changed.length} changes, the table has ${count}`,
          );
      } catch (err) {
        // Its graph worker ends with it.
        index.close();
        throw err;
      }
      entry.revision = now;
      const secs = (a: number, b: number) => ((b - a) / 1000).toFixed(2);
      this.event(
        'loaded',
        k,
        `${changed.length} replayed; read ${secs(t0, t1)} s, replay ${secs(t1, t2)} s, count ${secs(t2, performance.now())} s`,
      );
      // Many changes replayed: save the graph as it is now, so the next start replays few.
      if (changed.length > Math.max(1000, index.size / 10)) {
        void this.resave(k, index, now).catch((err) => this.opts.onError?.(err, 'save a similarity graph'));
      }
      return index;
    } catch (err) {
      entry.rejected = found;
      this.event('rejected', k, (err as Error).message);
      if (!(err instanceof GraphFileInvalid)) this.opts.onError?.(err, 'load a saved similarity graph');
      return null;
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  /** The partition reached the threshold: build it under the lease, or wait for who holds it. */
  private async planGraph(entry: Loaded): Promise<void> {
    const g = this.opts.graphs!;
    const id = partitionId(entry.key);
    const leaseMs = g.leaseMs ?? 120_000;
    let busyTold = false;
    const current = () =>
      !this.closed && this.loaded.get(id) === entry && entry.index !== null && !entry.index.hasGraph;
    while (current()) {
      if (await acquireLease(this.db, id, this.opts.replicaId, leaseMs)) {
        const renew = setInterval(
          () => {
            acquireLease(this.db, id, this.opts.replicaId, leaseMs).catch((err) =>
              this.opts.onError?.(err, 'renew a graph build lease'),
            );
          },
          Math.max(50, leaseMs / 3),
        );
        renew.unref();
        let released = false;
        const release = async () => {
          if (released) return;
          released = true;
          clearInterval(renew);
          await releaseLease(this.db, id, this.opts.replicaId).catch((err) =>
            this.opts.onError?.(err, 'release a graph build lease'),
          );
        };
        try {
          // Published by a replica whose lease we now follow (or since we loaded)? Load it rather than build.
          if (await this.swapIn(entry)) return;
          const index = entry.index!;
          const revision = entry.revision;
          // Built: told before the save, which takes a while; the lease goes as soon as the graph is
          // published (a restart right after must not find it held).
          await index.startBuild((path, owners) => {
            this.event('built', entry.key);
            return this.save(entry.key, index, revision, path, owners, release);
          });
        } finally {
          await release();
        }
        return;
      }
      if (!busyTold) this.event('lease_busy', entry.key);
      busyTold = true;
      await new Promise((r) => setTimeout(r, g.pollMs ?? 5000).unref());
      if (current() && (await this.swapIn(entry))) return;
    }
  }

  /** Loads the saved graph (if any, and new) in place of the entry's exact index; true when it answers now. */
  private async swapIn(entry: Loaded): Promise<boolean> {
    const old = entry.index;
    if (!old) return false;
    entry.swapping = true;
    entry.pending.clear();
    try {
      const saved = await this.restore(entry, old.dimensions);
      if (!saved || entry.index !== old || this.closed) {
        saved?.close();
        return false;
      }
      for (const [owner, vector] of entry.pending) {
        if (vector && vector.length === saved.dimensions) saved.upsert(owner, vector);
        else saved.remove(owner);
      }
      entry.index = saved;
      old.close();
      return true;
    } finally {
      entry.swapping = false;
      entry.pending.clear();
    }
  }

  private async resave(k: PartitionKey, index: PartitionIndex, revision: number): Promise<void> {
    const dir = await mkdtemp(join(tmpdir(), 'orrery-graph-'));
    try {
      const path = join(dir, 'graph.usearch');
      const owners = await index.saveGraph(path);
      if (owners) await this.save(k, index, revision, path, owners);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  /** Publishes a graph; `published` runs once it is in the store, before the `saved` event. */
  private async save(
    k: PartitionKey,
    index: PartitionIndex,
    revision: number,
    graphPath: string,
    owners: Array<string | null>,
    published?: () => Promise<void>,
  ): Promise<void> {
    const g = this.opts.graphs!;
    const hnsw = this.opts.hnsw ?? DEFAULT_HNSW;
    const graphBytes = (await stat(graphPath)).size;
    const body = graphFileStream({
      header: {
        partition: partitionId(k),
        project: k.scope.project,
        kind: k.kind,
        type: k.type,
        model: k.model,
        dimensions: index.dimensions,
        scalar: index.scalar,
        connectivity: hnsw.connectivity,
        expansionAdd: hnsw.expansionAdd,
        revision,
        savedAt: new Date().toISOString(),
      },
      owners,
      data: index.snapshot().data,
      graphPath,
      graphBytes,
    });
    await g.store.put(this.graphKey(k), body);
    await published?.();
    this.event('saved', k);
    await pruneTombstones(this.db, new Date(Date.now() - (g.tombstoneMs ?? 7 * 86_400_000)).toISOString()).catch(
      (err) => this.opts.onError?.(err, 'prune vector tombstones'),
    );
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
        else this.apply(entry, owner, null);
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
      this.notifier
        .publish(VECTOR_CHANNEL, JSON.stringify({ ...s, o: s.o.slice(i, i + OWNERS_PER_SIGNAL) }))
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

const sameFile = (a: BlobStat, b: BlobStat) =>
  a.size === b.size && a.modifiedAt.getTime() === b.modifiedAt.getTime() && a.etag === b.etag;
