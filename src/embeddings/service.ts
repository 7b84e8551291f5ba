/**
 * Embeddings of objects and runs: computing them with the project's embedder, storing them, and
 * keeping the in-memory indexes in sync.
 *
 * - Objects: an `embed-object` job (durable, retried, one at a time per object with the content
 *   job) follows every write of an object's text, name, description or properties; content
 *   processing computes the text embedding of extracted text in its `embeddings` step. A vector
 *   is recomputed only when its source's ETag or the project's model changed.
 * - A vector the caller sets (object-vectors.ts) is stored under the project's model with the
 *   stamp of the object's source at that moment, so the automatic embedder keeps it while that
 *   source and the model stay the same, and replaces it once either changes (it then describes
 *   a text the object no longer has, or a model nothing is compared with). The object's
 *   `embeddings` field reads the `vectors` rows, computed or set alike.
 * - Runs: `embedRun` answers the prompt's and the result's vectors for the run's creation; they
 *   are not stored (nothing reads them back).
 * - Changing a project's model queues an `embed-project` job that re-embeds its objects a page at
 *   a time; objects not yet re-embedded are left out of
 *   similarity results until they are (vectors of two models are never compared).
 */
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import type { Scope } from '../auth/principal.ts';
import type { JobQueue } from '../jobs/queue.ts';
import { countProjectJobs } from '../jobs/reads.ts';
import { BadRequest, Conflict, NotFound } from '../util/errors.ts';
import { embedLong } from './chunking.ts';
import type { EmbeddingType, ObjectEmbeddingType, OwnerKind } from './embedder.ts';
import type { VectorIndexes } from './index-registry.ts';
import type { RunEmbeddingHook, RunEmbeddingInput, RunVectors } from './run-embeddings.ts';
import { providerFailure } from '../providers/provider-failure.ts';
import {
  EMBEDDING_KINDS,
  isDisabled,
  type EmbeddingKind,
  type EmbeddingSettings,
  type EmbeddingSettingsStore,
  type ResolvedEmbedder,
} from './settings.ts';
import { objectSources, sourceEtag, sourceStamp, type SourceFields } from './sources.ts';
import {
  countPartition,
  deleteVectors,
  getVector,
  modelsOf,
  upsertVectors,
  vectorsOf,
  vectorStamps,
  type PartitionKey,
  type VectorRow,
} from './store.ts';
import {
  embeddingMaps,
  prepareEmbedding,
  prepareEmbeddingMap,
  toEmbedding,
  type EmbeddingMap,
  type PreparedEmbeddings,
} from './object-vectors.ts';
import { toWire } from './vectors.ts';
import { detectVectorExtension, type VectorExtension } from '../db/vector-extension.ts';
import type { PartitionIndex } from './vector-index.ts';
import { messageText, type ChatMessage } from '../providers/driver.ts';

const EMBED_OBJECT_JOB = 'embed-object';
const EMBED_PROJECT_JOB = 'embed-project';

export interface EmbeddingServiceDeps {
  db: Kysely<Database>;
  dialect: OrreryDialect;
  settings: EmbeddingSettingsStore;
  indexes: VectorIndexes;
  queue: JobQueue;
  /** The objects' rows, read by their feature (objects import embeddings, so they are given here). */
  objects: EmbeddableObjects;
  onError?: (err: unknown, what: string) => void;
}

/** What embeddings read of the objects (objects/reads.ts). */
export interface EmbeddableObjects {
  get(s: Scope, id: string): Promise<EmbeddableObject | undefined>;
  /** A page in id order after `after` (null: from the first). */
  page(s: Scope, after: string | null, limit: number): Promise<EmbeddableObject[]>;
  count(s: Scope): Promise<number>;
}

/** An object as embeddings read it. */
export interface EmbeddableObject extends SourceFields {
  id: string;
  status?: string;
  content_source?: string | null;
}

/** What `storeEmbeddings` wrote, for the indexes once committed. */
export interface StoredEmbeddings {
  objectId: string;
  rows: VectorRow[];
  reset: ObjectEmbeddingType[];
}
const PAGE = 100;

export class EmbeddingService implements RunEmbeddingHook {
  private pgvector: Promise<VectorExtension> | undefined;

  constructor(private readonly deps: EmbeddingServiceDeps) {
    deps.queue.register<null>(EMBED_OBJECT_JOB, {
      run: (job, signal) => this.embedObjectById(job.scope, job.subject, signal),
    });
    deps.queue.register<{ model: string; force?: ObjectEmbeddingType[] }>(EMBED_PROJECT_JOB, {
      run: (job, signal) => this.reembedProject(job.scope, job.payload?.model, signal, job.payload?.force),
    });
  }

  get settings(): EmbeddingSettingsStore {
    return this.deps.settings;
  }

  resolve(s: Scope): Promise<ResolvedEmbedder> {
    return this.deps.settings.resolve(s);
  }

  // ---- objects ----

  /** After an object's write committed (text, name, description or properties may have changed). */
  async objectWritten(s: Scope, objectId: string): Promise<void> {
    await this.deps.queue.enqueue({ kind: EMBED_OBJECT_JOB, scope: s, subject: objectId, payload: null });
  }

  /** After an object's deletion committed. */
  async objectDeleted(s: Scope, objectId: string): Promise<void> {
    await deleteVectors(this.deps.db, s, 'object', objectId);
    this.deps.indexes.removed(s, 'object', [objectId]);
  }

  private async embedObjectById(s: Scope, id: string, signal: AbortSignal): Promise<void> {
    const row = await this.objectRow(s, id);
    if (!row) return;
    // Content being processed: its `embeddings` step embeds the extracted text; do the rest now.
    const processing = !!row.content_source && (row.status === 'created' || row.status === 'processing');
    await this.embedObject(s, row, { signal, skip: processing ? ['text'] : [] });
  }

  /**
   * Computes and stores the object's text and properties vectors whose source or model changed,
   * and drops those whose source is now empty. `text` overrides the stored text (content
   * processing passes the text it just extracted).
   */
  async embedObject(
    s: Scope,
    o: EmbeddableObject,
    opts: {
      signal?: AbortSignal;
      skip?: ObjectEmbeddingType[];
      force?: ObjectEmbeddingType[];
      resolved?: ResolvedEmbedder;
    } = {},
  ): Promise<void> {
    const { embedder, settings } = opts.resolved ?? (await this.resolve(s));
    const sources = objectSources(o);
    const stamps = await vectorStamps(this.deps.db, s, 'object', o.id);
    const todo: Array<{ type: ObjectEmbeddingType; source: string; etag: string }> = [];
    const drop: string[] = [];
    for (const type of ['text', 'properties'] as const) {
      if (opts.skip?.includes(type) || isDisabled(settings, type)) continue;
      const source = sources[type];
      const stamp = stamps.find((x) => x.type === type);
      const etag = sourceEtag(source ?? '');
      if (!source) {
        // Nothing to embed: only a vector the caller set for this empty source, of this model, stays.
        if (stamp && (stamp.etag !== etag || stamp.model !== embedder.model)) drop.push(type);
        continue;
      }
      if (!stamp || stamp.model !== embedder.model || stamp.etag !== etag || opts.force?.includes(type))
        todo.push({ type, source, etag });
    }
    if (drop.length) {
      await deleteVectors(this.deps.db, s, 'object', o.id, drop);
      this.deps.indexes.removed(s, 'object', [o.id], drop);
    }
    if (!todo.length) return;
    const vectors = await embedLong(
      embedder,
      todo.map((t) => t.source),
      opts.signal,
    );
    const rows: VectorRow[] = [];
    todo.forEach((t, i) => {
      const vector = vectors[i];
      if (vector)
        rows.push({ ownerKind: 'object', ownerId: o.id, type: t.type, model: embedder.model, etag: t.etag, vector });
    });
    // A vector the caller set for the same source meanwhile stays (keepSameSource).
    this.indexWritten(s, await upsertVectors(this.deps.db, s, rows, { keepSameSource: true }));
  }

  // ---- the `embeddings` field of objects (object-vectors.ts) ----

  /** The `embeddings` field of these objects: their vectors, in one query per 500 objects. */
  async embeddingsOf(s: Scope, objectIds: readonly string[]): Promise<Map<string, EmbeddingMap>> {
    if (!objectIds.length) return new Map();
    return embeddingMaps(await vectorsOf(this.deps.db, s, 'object', objectIds));
  }

  /** Validates the `embeddings` of a create or update payload, before anything is written. */
  async prepareEmbeddings(s: Scope, input: unknown): Promise<PreparedEmbeddings> {
    return prepareEmbeddingMap(input, await this.resolve(s));
  }

  /**
   * In the object's write transaction: stores the caller's vectors, stamped with the sources the
   * object has after that write, and forgets the types given as null. `embeddingsStored` follows
   * the commit.
   */
  async storeEmbeddings(
    trx: Kysely<Database>,
    s: Scope,
    objectId: string,
    prepared: PreparedEmbeddings,
    sources: SourceFields,
  ): Promise<StoredEmbeddings> {
    const rows: VectorRow[] = prepared.set.map((v) => ({
      ownerKind: 'object',
      ownerId: objectId,
      type: v.type,
      model: prepared.model,
      etag: sourceStamp(sources, v.type),
      callerEtag: v.callerEtag,
      vector: v.vector,
    }));
    const reset = prepared.reset.filter((t) => !prepared.set.some((v) => v.type === t));
    if (reset.length) await deleteVectors(trx, s, 'object', objectId, reset);
    await upsertVectors(trx, s, rows);
    return { objectId, rows, reset };
  }

  /** After the transaction of `storeEmbeddings` committed (the object's write queues the embed job). */
  embeddingsStored(s: Scope, stored: StoredEmbeddings): void {
    if (stored.reset.length) this.deps.indexes.removed(s, 'object', [stored.objectId], stored.reset);
    this.indexWritten(s, stored.rows);
  }

  /** `PUT /objects/:id/embeddings/:type` (the client's `objects.setEmbedding`): answers `{<type>: embedding}`. */
  async setObjectEmbedding(s: Scope, objectId: string, type: string, body: unknown): Promise<EmbeddingMap> {
    const object = await this.objectRow(s, objectId);
    if (!object) throw new NotFound('object', objectId);
    const resolved = await this.resolve(s);
    const v = prepareEmbedding(type, body, resolved, 'body');
    const row: VectorRow = {
      ownerKind: 'object',
      ownerId: objectId,
      type: v.type,
      model: resolved.settings.model,
      etag: sourceStamp(object, v.type),
      callerEtag: v.callerEtag,
      vector: v.vector,
    };
    await upsertVectors(this.deps.db, s, [row]);
    if (!(await this.objectExists(s, objectId))) {
      // Deleted meanwhile: its deletion may have cleared its vectors before this one landed.
      await deleteVectors(this.deps.db, s, 'object', objectId);
      throw new NotFound('object', objectId);
    }
    this.indexWritten(s, [row]);
    // A write of the object's text that raced with this one leaves a stamp of the old text: the
    // embed job sees it and embeds the new text (and does nothing when the stamp is current).
    await this.objectWritten(s, objectId);
    return { [v.type]: toEmbedding(row) };
  }

  /** The query vector of an object for a type: its stored one, or computed now from its sources. */
  async objectVector(
    s: Scope,
    objectId: string,
    type: ObjectEmbeddingType,
    resolved: ResolvedEmbedder,
  ): Promise<Float32Array | null> {
    const stored = await getVector(this.deps.db, s, 'object', objectId, type);
    if (stored && stored.model === resolved.settings.model) return stored.vector;
    const row = await this.objectRow(s, objectId);
    if (!row) throw new NotFound('object', objectId);
    const source = objectSources(row)[type as 'text' | 'properties'];
    if (!source) return null;
    try {
      return (await embedLong(resolved.embedder, [source]))[0];
    } catch (err) {
      throw providerFailure(err, 'embed the object to compare', false);
    }
  }

  async objectExists(s: Scope, objectId: string): Promise<boolean> {
    return !!(await this.objectRow(s, objectId));
  }

  /** A text query's vector (chunked and combined like an object's text). */
  async textVector(s: Scope, text: string, resolved: ResolvedEmbedder): Promise<Float32Array | null> {
    try {
      return (await embedLong(resolved.embedder, [text]))[0];
    } catch (err) {
      throw providerFailure(err, 'embed the query text', false);
    }
  }

  /** The index of a project's vectors of one kind and type, for its current model (null: none yet). */
  async index(
    s: Scope,
    kind: OwnerKind,
    type: EmbeddingType,
    settings: EmbeddingSettings,
  ): Promise<PartitionIndex | null> {
    return this.deps.indexes.get({ scope: s, kind, type, model: settings.model }, settings.dimensions);
  }

  private objectRow(s: Scope, id: string): Promise<EmbeddableObject | undefined> {
    return this.deps.objects.get(s, id);
  }

  // ---- runs ----

  async embedRun(s: Scope, run: RunEmbeddingInput): Promise<RunVectors | null> {
    try {
      const resolved = await (this.deps.settings.peek(s) ?? this.deps.settings.resolve(s));
      if (!resolved.settings.runs) return null;
      // Answered, not stored: nothing in the interface reads a run's vectors back, and writing two
      // vectors per run cost a third of the blocking run throughput on SQLite (bench/README.md).
      const [input, result] = await this.runVectors(resolved, run);
      const out: RunVectors = {};
      if (input) out.input_embedding = toWire(input);
      if (result) out.result_embedding = toWire(result);
      return out;
    } catch (err) {
      this.report(err, `embed run ${run.id}`);
      return null;
    }
  }

  private async runVectors(resolved: ResolvedEmbedder, run: RunEmbeddingInput): Promise<Array<Float32Array | null>> {
    const texts = [promptText(run.prompt), resultText(run.result)];
    const { embedder } = resolved;
    let vectors: (Float32Array | null)[];
    if (embedder.embedNow) {
      // The built-in embedder: microseconds, no I/O, on the request path.
      vectors = texts.map((t) => {
        if (!t) return null;
        const v = embedder.embedNow!(t);
        return v.some((x) => x !== 0) ? v : null;
      });
    } else {
      vectors = await embedLong(embedder, texts);
    }
    return vectors;
  }

  // ---- settings ----

  /** `PUT /projects/:id {embeddings}`: the settings to store (validated against the provider). */
  async prepareSettings(s: Scope, input: unknown): Promise<EmbeddingSettings> {
    return this.deps.settings.prepare(s, input, await this.deps.settings.settings(s));
  }

  /** Deletes the saved graphs of every partition no longer configured (index-registry.ts also does it every few hours). */
  pruneGraphs(): Promise<number> {
    return this.deps.indexes.pruneGraphs();
  }

  /** After the settings were stored: a new model re-embeds the project in the background. */
  async settingsChanged(s: Scope, before: EmbeddingSettings, after: EmbeddingSettings): Promise<void> {
    this.deps.settings.forget(s.project);
    // A replaced model or a disabled type: its saved graphs go (rebuilt from the table if needed again).
    if (before.model !== after.model || (after.disabled ?? []).some((t) => !before.disabled?.includes(t))) {
      await this.deps.indexes
        .pruneGraphs(s.project)
        .catch((err) => this.report(err, `prune the similarity graphs of project ${s.project}`));
    }
    // Only a new model re-embeds; runs made while run embeddings were off stay without vectors.
    if (before.model !== after.model || before.environment !== after.environment) {
      await this.deps.queue.enqueue({
        kind: EMBED_PROJECT_JOB,
        scope: s,
        subject: `embeddings:${s.project}`,
        payload: { model: after.model },
      });
    }
  }

  /**
   * The client's `embeddings.recalculate(type)`: every object's vector of that type is computed
   * again in the background (a job; `status` counts it in progress until it is done).
   */
  async recalculate(s: Scope, type: string): Promise<{ status: string; message: string }> {
    const kind = embeddingKindOf(type);
    const { settings, embedder } = await this.resolve(s);
    if (isDisabled(settings, kind))
      throw new Conflict(
        `${kind} embeddings are disabled in this project: activate them first (POST /embeddings/${kind}/enable)`,
      );
    if (kind === 'image')
      throw new Conflict(
        `the project's embedding model ${embedder.model} embeds no images: there is nothing to recalculate`,
      );
    await this.deps.queue.enqueue({
      kind: EMBED_PROJECT_JOB,
      scope: s,
      subject: `embeddings:${s.project}:${kind}`,
      payload: { model: settings.model, force: [kind] },
    });
    return {
      status: 'processing',
      message: `${kind} embeddings of every object are being computed again with ${settings.model}; embeddings.status("${kind}") shows the progress`,
    };
  }

  private async reembedProject(
    s: Scope,
    model: string | undefined,
    signal: AbortSignal,
    force?: ObjectEmbeddingType[],
  ): Promise<void> {
    this.deps.settings.forget(s.project);
    const resolved = await this.resolve(s);
    const stillCurrent = async () => {
      const now = await this.deps.settings.settings(s);
      return !model || now.model === model;
    };
    let after: string | null = null;
    for (;;) {
      signal.throwIfAborted();
      if (!(await stillCurrent())) return; // a newer change queued its own job
      const rows = await this.deps.objects.page(s, after, PAGE);
      for (const row of rows) await this.embedObject(s, row, { signal, resolved, force });
      await yieldToRequests();
      if (rows.length < PAGE) break;
      after = rows[rows.length - 1].id;
    }
  }

  // ---- status ----

  /** `GET /embeddings/:type/status` (the official client's `embeddings.status`). */
  async status(s: Scope, type: string): Promise<Record<string, unknown>> {
    embeddingKindOf(type);
    const { settings, embedder } = await this.resolve(s);
    const key: PartitionKey = { scope: s, kind: 'object', type: type as EmbeddingType, model: settings.model };
    const [jobs, objects, withVectors, models] = await Promise.all([
      countProjectJobs(this.deps.db, s, [EMBED_OBJECT_JOB, EMBED_PROJECT_JOB, 'content']),
      this.deps.objects.count(s),
      countPartition(this.deps.db, key),
      modelsOf(this.deps.db, s, 'object', type),
    ]);
    const inProgress = jobs;
    const index = await this.deps.indexes.get(key, settings.dimensions);
    return {
      status:
        isDisabled(settings, type) || (type === 'image' && !embedder.supportsImages)
          ? 'disabled'
          : inProgress
            ? 'processing'
            : 'ready',
      enabled: !isDisabled(settings, type),
      embeddingRunsInProgress: inProgress,
      totalIndexableObjects: objects,
      embeddingsModels: models.length ? models : [settings.model],
      objectsWithEmbeddings: withVectors,
      model: settings.model,
      dimensions: settings.dimensions,
      environment: settings.environment,
      runs: settings.runs,
      vectorIndex: {
        status: index?.size ? (index.mode === 'hnsw' || index.size < index.exactBelow ? 'READY' : 'PENDING') : 'ABSENT',
        name: `${s.project}/${type}/${settings.model}`,
        type: index?.mode === 'hnsw' ? 'usearch-hnsw' : 'exact',
        // pgvector: reported, not used (the in-process index serves both databases).
        pgvector: await (this.pgvector ??= detectVectorExtension(this.deps.db, this.deps.dialect).catch(
          () => 'absent' as const,
        )),
      },
    };
  }

  // ---- internals ----

  private indexWritten(s: Scope, rows: readonly VectorRow[]): void {
    const groups = new Map<string, { key: PartitionKey; vectors: Array<{ ownerId: string; vector: Float32Array }> }>();
    for (const r of rows) {
      const id = `${r.ownerKind}|${r.type}|${r.model}`;
      let g = groups.get(id);
      if (!g) groups.set(id, (g = { key: { scope: s, kind: r.ownerKind, type: r.type, model: r.model }, vectors: [] }));
      g.vectors.push({ ownerId: r.ownerId, vector: r.vector });
    }
    for (const g of groups.values()) this.deps.indexes.written(g.key, g.vectors);
  }

  private report(err: unknown, what: string): void {
    this.deps.onError?.(err, what);
  }
}

/** Background re-embedding leaves room between pages for requests (SQLite has one connection). */
const yieldToRequests = () => new Promise((r) => setTimeout(r, 10));

function promptText(prompt: RunEmbeddingInput['prompt']): string {
  return prompt
    .map((m) => (m ? messageText(m as ChatMessage) : ''))
    .filter(Boolean)
    .join('\n\n');
}

function resultText(result: RunEmbeddingInput['result']): string {
  return result
    .map((p) => (typeof p.value === 'string' ? p.value : p.value === undefined ? '' : JSON.stringify(p.value)))
    .filter(Boolean)
    .join('\n\n');
}

export function embeddingKindOf(type: string): EmbeddingKind {
  if (!(EMBEDDING_KINDS as readonly string[]).includes(type))
    throw new BadRequest(`embedding type must be ${EMBEDDING_KINDS.join(', ')}, got ${JSON.stringify(type)}`);
  return type as EmbeddingKind;
}
