/**
 * Content objects: create (or replace), retrieve with projection, update with if-match, delete
 * (and the blob when nothing points at it any more), text and content source. Listing,
 * querying and export are in `listing.ts` and `export.ts`.
 *
 * Writes follow "bytes first, row after, old bytes last": a record only points at a blob that
 * is tracked (its row is locked while the record is written), and a blob is deleted only after
 * the transaction that removed its last reference has committed.
 *
 * `embeddings` in a payload are vectors the caller sets: validated before the write, stored in
 * its transaction (the `vectors` table, through the embeddings hook), indexed after commit.
 */
import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import { newId, nowIso } from '../db/ids.ts';
import { actorOf, scopeOf, type Principal, type Scope } from '../auth/principal.ts';
import { can, requirePermission } from '../auth/permissions.ts';
import { BadRequest, Conflict, NotFound, OrreryError, PreconditionFailed } from '../http/errors.ts';
import { Value } from '@sinclair/typebox/value';
import { ObjectBody } from './schemas.ts';
import type { BlobService, ClaimedBlob } from '../blobs/blob-service.ts';
import type { ObjectTypeService } from './types-service.ts';
import { noProcessing, type ContentChange, type ObjectProcessingHook } from './processing-hook.ts';
import type { ObjectEmbeddingsHook, PreparedEmbeddings, StoredEmbeddings } from './embeddings-hook.ts';
import { patchOf, type InputContext, type ObjectPatch } from './input.ts';
import { toRecord } from './dto.ts';
import { parseSelect, project } from './projection.ts';
import {
  countBySource,
  deleteObject,
  detachChildren,
  getObject,
  getWholeObject,
  headOf,
  insertObject,
  objectExists,
  promoteHead,
  revisionsOf,
  updateObject,
} from './store.ts';
import type { ContentSource, ObjectInput, ObjectRecord, ObjectRow } from './model.ts';
import { changesOf, type AuditEntry, type AuditLog } from '../audit/log.ts';

export interface ObjectServiceDeps {
  db: Kysely<Database>;
  dialect: OrreryDialect;
  blobs: BlobService;
  types: ObjectTypeService;
  /** Whether a run of the caller's project exists (for `run`); unchecked when absent. */
  runExists?: (p: Principal, id: string) => Promise<boolean>;
  processing?: ObjectProcessingHook;
  /** The renditions content processing made of an object (records whose parent is the object). */
  renditions?: {
    list(p: Principal, id: string): Promise<ObjectRecord[]>;
    record(p: Principal, renditionId: string): Promise<ObjectRecord | undefined>;
  };
  /** Where failures after commit (blob cleanup, the processing hook) are reported. */
  onBackgroundError?: (err: unknown, what: string) => void;
  /** Embeddings (src/embeddings): told after writes and deletions, and the store of the `embeddings` field. */
  embeddings?: ObjectEmbeddingsHook;
  /** The audit trail: deletions are recorded in their own transaction. */
  audit?: AuditLog;
  /** Largest `properties` an object stores, in bytes of JSON (src/limits/inline-json.ts); 1 MiB when absent. */
  maxInlineJson?: number;
}

export interface WrittenObject {
  record: ObjectRecord;
  /** The record's ETag header value. */
  etag: string;
}

const MAX_CAS_RETRIES = 5;

/** The most revisions `GET /objects/:id/revisions` answers (the newest). */
export const MAX_REVISIONS = 1000;

/** `update` with the client's `createRevision`: the label of the new revision (`revisionLabel`). */
export interface NewRevision {
  label?: string;
}

const newEtag = () => randomBytes(12).toString('base64url');

export class ObjectService {
  private readonly processing: ObjectProcessingHook;

  constructor(private readonly deps: ObjectServiceDeps) {
    this.processing = deps.processing ?? noProcessing;
  }

  private get db() {
    return this.deps.db;
  }

  async create(p: Principal, input: ObjectInput): Promise<WrittenObject> {
    if (input.id !== undefined && input.id !== null && input.id !== '') return this.replace(p, String(input.id), input);
    const s = scopeOf(p);
    const patch = await patchOf(input, this.inputContext(p), 'create');
    const name = patch.name ?? (patch.content as ContentSource | null | undefined)?.name;
    if (!name) throw new BadRequest('body must have property "name" (or content with a name)');
    const vectors = await this.prepareEmbeddings(s, input);
    const now = nowIso();
    const id = newId();
    const row: ObjectRow = {
      ...emptyRow(),
      ...patch,
      id,
      account_id: s.account,
      project_id: s.project,
      name,
      status: 'created',
      revision_root: id,
      etag: newEtag(),
      created_by: actorOf(p),
      updated_by: actorOf(p),
      created_at: now,
      updated_at: now,
    };
    const stored = await this.withClaimedContent(p, s, row.id, row, () =>
      this.db.transaction().execute(async (trx) => {
        await this.holdBlob(trx, s, row.content_source);
        await insertObject(trx, this.deps.dialect, row);
        return this.storeEmbeddings(trx, s, row, vectors);
      }),
    );
    this.embeddingsStored(s, stored);
    if (row.content)
      this.afterCommit(s, {
        objectId: row.id,
        content: row.content as ContentSource,
        previous: null,
        reason: 'created',
      });
    this.embed(s, row.id);
    return this.written(s, row);
  }

  /** `POST /objects` with the id of an existing object: a new record in its place (same id and creation). */
  private async replace(p: Principal, id: string, input: ObjectInput): Promise<WrittenObject> {
    // Replacing changes an existing object: what PUT /objects/:id needs, whichever route asks.
    requirePermission(p.role, 'content:write', 'POST /objects with the id of an existing object (a replace)');
    const s = scopeOf(p);
    const patch = await patchOf(input, { ...this.inputContext(p), selfId: id }, 'create');
    const vectors = await this.prepareEmbeddings(s, input);
    return this.withClaimedContent(p, s, id, patch, () => this.replaceWith(p, s, id, patch, vectors));
  }

  private async replaceWith(
    p: Principal,
    s: Scope,
    id: string,
    patch: ObjectPatch,
    vectors: PreparedEmbeddings | undefined,
  ): Promise<WrittenObject> {
    for (let attempt = 0; ; attempt++) {
      const current = await getWholeObject(this.db, this.deps.dialect, s, id);
      if (!current) throw new NotFound('object', id);
      const name = patch.name ?? (patch.content as ContentSource | null | undefined)?.name;
      if (!name) throw new BadRequest('body must have property "name" (or content with a name)');
      const next: ObjectRow = {
        ...emptyRow(),
        ...patch,
        id,
        account_id: s.account,
        project_id: s.project,
        name,
        status: 'created',
        etag: newEtag(),
        created_by: current.created_by,
        created_at: current.created_at,
        updated_by: actorOf(p),
        updated_at: nowIso(),
        // A replaced record keeps its place in its history.
        revision_root: current.revision_root ?? id,
        revision_parent: current.revision_parent,
        revision_head: current.revision_head,
        revision_label: current.revision_label,
      };
      const { id: _i, account_id: _a, project_id: _p, created_by: _cb, created_at: _ca, ...columns } = next;
      const result = await this.writeCas(s, current, columns, (trx) => this.storeEmbeddings(trx, s, next, vectors));
      if (result === 'changed' && attempt < MAX_CAS_RETRIES) continue;
      if (result === 'changed')
        throw new PreconditionFailed(`object ${id} kept changing while it was being replaced: retry`);
      this.embeddingsStored(s, result.stored);
      this.contentMoved(
        s,
        id,
        current.content as ContentSource | null,
        next.content as ContentSource | null,
        'replaced',
        result.purge,
      );
      // A replaced record starts over (status created, no text): process it even when its content is the same.
      if (next.content && JSON.stringify(current.content) === JSON.stringify(next.content)) {
        this.afterCommit(s, {
          objectId: id,
          content: next.content as ContentSource,
          previous: current.content as ContentSource | null,
          reason: 'replaced',
        });
      }
      this.embed(s, id);
      return this.written(s, next);
    }
  }

  async get(p: Principal, id: string, select?: string): Promise<{ record: Partial<ObjectRecord>; etag: string }> {
    const s = scopeOf(p);
    const projection = parseSelect(select);
    const row = await getObject(this.db, this.deps.dialect, s, id, projection.hidden);
    if (!row) {
      // The ids of `GET /objects/:id/renditions` records name renditions: they can be read too.
      const rendition = await this.deps.renditions?.record(p, id);
      if (!rendition) throw new NotFound('object', id);
      return {
        record: project(rendition as unknown as Record<string, unknown>, projection) as Partial<ObjectRecord>,
        etag: `"${rendition.content?.etag}"`,
      };
    }
    const [types, embeddings] = await Promise.all([
      this.deps.types.refs(s, row.type_id ? [row.type_id] : []),
      projection.hidden.has('embeddings') && this.deps.embeddings
        ? this.deps.embeddings.embeddingsOf(s, [row.id])
        : undefined,
    ]);
    return {
      record: project(
        toRecord(row, { types, embeddings }, projection.hidden) as unknown as Record<string, unknown>,
        projection,
      ) as Partial<ObjectRecord>,
      etag: `"${row.etag}"`,
    };
  }

  /**
   * Changes the given fields only. `ifMatch` (the `if-match` header) must name the record's
   * current ETag (as GET sends it) or, as upstream clients use it, its content's ETag; `*`
   * matches any existing record. A stale value is a 412 and nothing is written.
   */
  async update(
    p: Principal,
    id: string,
    input: ObjectInput,
    ifMatch?: string,
    revision?: NewRevision,
  ): Promise<WrittenObject> {
    const s = scopeOf(p);
    const patch = await patchOf(input, { ...this.inputContext(p), selfId: id }, 'update');
    const vectors = await this.prepareEmbeddings(s, input);
    if (revision) {
      const revisionId = newId();
      return this.withClaimedContent(p, s, revisionId, patch, () =>
        this.reviseWith(p, s, id, revisionId, patch, vectors, revision, ifMatch),
      );
    }
    return this.withClaimedContent(p, s, id, patch, () => this.updateWith(p, s, id, patch, vectors, ifMatch));
  }

  /**
   * `update` with `createRevision`: the changed object is a new record (a new id, the new head
   * of the history), and the object named stays as it was, an earlier revision. Only the head
   * can be revised, so that a history stays a line.
   */
  private async reviseWith(
    p: Principal,
    s: Scope,
    id: string,
    revisionId: string,
    patch: ObjectPatch,
    vectors: PreparedEmbeddings | undefined,
    revision: NewRevision,
    ifMatch?: string,
  ): Promise<WrittenObject> {
    for (let attempt = 0; ; attempt++) {
      const current = await getWholeObject(this.db, this.deps.dialect, s, id);
      if (!current) throw new NotFound('object', id);
      if (ifMatch !== undefined && !ifMatchAccepts(ifMatch, current)) {
        throw new PreconditionFailed(
          `if-match ${ifMatch} does not match the current ETag "${current.etag}" of object ${id}: it was changed since you read it`,
          { etag: `"${current.etag}"` },
        );
      }
      const root = current.revision_root ?? current.id;
      if (!current.revision_head) {
        const head = await headOf(this.db, s, root);
        throw new Conflict(
          `object ${id} is an earlier revision: make the new revision from the head of its history${head ? `, ${head}` : ''}`,
          head ? { head } : undefined,
        );
      }
      const now = nowIso();
      const next: ObjectRow = {
        ...current,
        ...updateColumns(p, current, patch),
        id: revisionId,
        created_by: actorOf(p),
        created_at: now,
        updated_at: now,
        revision_root: root,
        revision_parent: current.id,
        revision_head: 1,
        revision_label: revision.label ?? null,
      };
      const stored = await this.db.transaction().execute(async (trx) => {
        if (
          !(await updateObject(trx, this.deps.dialect, s, current.id, current.etag, {
            revision_root: root,
            revision_head: 0,
            etag: newEtag(),
          }))
        )
          return 'changed' as const;
        await this.holdBlob(trx, s, next.content_source);
        await insertObject(trx, this.deps.dialect, next);
        return { stored: await this.storeEmbeddings(trx, s, next, vectors) };
      });
      if (stored === 'changed') {
        if (ifMatch !== undefined)
          throw new PreconditionFailed(`object ${id} was changed while the revision was being written`);
        if (attempt < MAX_CAS_RETRIES) continue;
        throw new PreconditionFailed(`object ${id} kept changing while its revision was being written: retry`);
      }
      this.embeddingsStored(s, stored.stored);
      // The new revision is an object of its own: its content is processed (text, renditions) for it.
      if (next.content)
        this.afterCommit(s, {
          objectId: next.id,
          content: next.content as ContentSource,
          previous: null,
          reason: 'created',
        });
      this.embed(s, next.id);
      return this.written(s, next);
    }
  }

  /** `GET /objects/:id/revisions`: every revision of the object's history, newest first (at most MAX_REVISIONS). */
  async revisions(p: Principal, id: string): Promise<ObjectRecord[]> {
    const s = scopeOf(p);
    const row = await getObject(this.db, this.deps.dialect, s, id);
    if (!row) throw new NotFound('object', id);
    const rows = await revisionsOf(this.db, this.deps.dialect, s, row.revision_root ?? row.id, MAX_REVISIONS);
    const types = await this.deps.types.refs(s, [...new Set(rows.flatMap((r) => (r.type_id ? [r.type_id] : [])))]);
    return rows.map((r) => toRecord(r, { types }, new Set()));
  }

  private async updateWith(
    p: Principal,
    s: Scope,
    id: string,
    patch: ObjectPatch,
    vectors: PreparedEmbeddings | undefined,
    ifMatch?: string,
  ): Promise<WrittenObject> {
    for (let attempt = 0; ; attempt++) {
      const current = await getWholeObject(this.db, this.deps.dialect, s, id);
      if (!current) throw new NotFound('object', id);
      if (ifMatch !== undefined && !ifMatchAccepts(ifMatch, current)) {
        throw new PreconditionFailed(
          `if-match ${ifMatch} does not match the current ETag "${current.etag}" of object ${id}: it was changed since you read it`,
          { etag: `"${current.etag}"` },
        );
      }
      const columns = updateColumns(p, current, patch);
      const next: ObjectRow = { ...current, ...columns } as ObjectRow;
      const result = await this.writeCas(s, current, columns, (trx) => this.storeEmbeddings(trx, s, next, vectors));
      if (result === 'changed') {
        // With if-match the caller asked for exactly the version it read: a concurrent write wins.
        if (ifMatch !== undefined)
          throw new PreconditionFailed(`object ${id} was changed while this update was being written`);
        if (attempt < MAX_CAS_RETRIES) continue;
        throw new PreconditionFailed(`object ${id} kept changing while it was being updated: retry`);
      }
      this.embeddingsStored(s, result.stored);
      if ('content' in patch)
        this.contentMoved(
          s,
          id,
          current.content as ContentSource | null,
          next.content as ContentSource | null,
          'updated',
          result.purge,
        );
      if (['text', 'name', 'description', 'properties', 'content'].some((k) => k in patch) || vectors)
        this.embed(s, id);
      return this.written(s, next);
    }
  }

  async delete(p: Principal, id: string): Promise<{ id: string; count: number }> {
    const s = scopeOf(p);
    const purge = await this.db.transaction().execute(async (trx) => {
      const row = await getObject(trx, this.deps.dialect, s, id);
      if (!row) throw new NotFound('object', id);
      await deleteObject(trx, s, id);
      await this.deps.audit?.write(trx, p, deletionEntry(row));
      if (row.revision_head && row.revision_root) await promoteHead(trx, s, row.revision_root, newEtag());
      await detachChildren(trx, s, id, { etag: newEtag(), updated_at: nowIso(), updated_by: actorOf(p) });
      return row.content_source ? this.releaseBlob(trx, s, row.content_source) : undefined;
    });
    if (purge) this.background(this.deps.blobs.purge(s, purge), 'delete an unreferenced blob');
    if (this.processing.objectDeleted)
      this.background(this.processing.objectDeleted(s, id), 'delete the renditions of a deleted object');
    if (this.deps.embeddings)
      this.background(this.deps.embeddings.objectDeleted(s, id), 'delete the embeddings of a deleted object');
    return { id, count: 1 };
  }

  async text(p: Principal, id: string): Promise<{ text?: string }> {
    const row = await getObject(this.db, this.deps.dialect, scopeOf(p), id, new Set(['text']));
    if (!row) throw new NotFound('object', id);
    return row.text === null || row.text === undefined ? {} : { text: row.text };
  }

  async contentSource(p: Principal, id: string): Promise<ContentSource> {
    const row = await getObject(this.db, this.deps.dialect, scopeOf(p), id);
    if (!row) throw new NotFound('object', id);
    const content = row.content as ContentSource | null;
    if (!content?.source) throw new NotFound('content of object', id);
    return content;
  }

  /** Renditions made by content processing (src/content), as records. */
  async renditions(p: Principal, id: string): Promise<ObjectRecord[]> {
    if (!(await objectExists(this.db, scopeOf(p), id))) throw new NotFound('object', id);
    return this.deps.renditions ? this.deps.renditions.list(p, id) : [];
  }

  // ---- bulk operations (POST /operations) ----

  /**
   * Deletes the objects named, in one transaction; ids that name nothing in the project are
   * answered in `failed`. Files, renditions and embeddings go after commit, as for one delete.
   */
  async bulkDelete(p: Principal, ids: readonly string[]): Promise<BulkDeleteResult> {
    const s = scopeOf(p);
    const unique = [...new Set(ids)];
    // Rows are taken in id order, so that two concurrent bulk writes lock them in the same order.
    const ordered = [...unique].sort();
    const { deleted, purges } = await this.db.transaction().execute(async (trx) => {
      const deleted: string[] = [];
      const sources = new Set<string>();
      const headless = new Set<string>();
      for (const id of ordered) {
        const row = await getObject(trx, this.deps.dialect, s, id);
        if (!row || (await deleteObject(trx, s, id)) === 0) continue;
        await this.deps.audit?.write(trx, p, { ...deletionEntry(row), details: { bulk: true } });
        deleted.push(id);
        if (row.content_source) sources.add(row.content_source);
        if (row.revision_head && row.revision_root) headless.add(row.revision_root);
      }
      for (const root of headless) await promoteHead(trx, s, root, newEtag());
      const version = { etag: newEtag(), updated_at: nowIso(), updated_by: actorOf(p) };
      for (const id of deleted) await detachChildren(trx, s, id, version);
      const purges: string[] = [];
      for (const source of sources) {
        const key = await this.releaseBlob(trx, s, source);
        if (key) purges.push(key);
      }
      return { deleted, purges };
    });
    for (const key of purges) this.background(this.deps.blobs.purge(s, key), 'delete an unreferenced blob');
    for (const id of deleted) {
      if (this.processing.objectDeleted)
        this.background(this.processing.objectDeleted(s, id), 'delete the renditions of a deleted object');
      if (this.deps.embeddings)
        this.background(this.deps.embeddings.objectDeleted(s, id), 'delete the embeddings of a deleted object');
    }
    const gone = new Set(deleted);
    return {
      operation: 'delete',
      status: unique.length && !deleted.length ? 'failed' : 'completed',
      deleted: deleted.length,
      failed: unique.filter((id) => !gone.has(id)),
    };
  }

  /**
   * Updates each object with its payload (the given fields only, as `PUT /objects/:id`). Every
   * payload is checked first; those that are invalid, or name no object of the project, are
   * answered in `failed` and the others are written in one transaction: all of them or, when
   * that transaction fails, none (then every id is in `failed`).
   */
  async bulkUpdate(p: Principal, updates: Record<string, unknown>): Promise<BulkUpdateResult> {
    const s = scopeOf(p);
    const failed: string[] = [];
    const prepared: { id: string; patch: ObjectPatch; vectors?: PreparedEmbeddings; claimed?: ClaimedBlob }[] = [];
    for (const [id, input] of Object.entries(updates)) {
      try {
        const body = checkedPayload(input);
        if (!(await objectExists(this.db, s, id))) throw new NotFound('object', id);
        const patch = await patchOf(body, { ...this.inputContext(p), selfId: id }, 'update');
        prepared.push({ id, patch, vectors: await this.prepareEmbeddings(s, body) });
      } catch (err) {
        if (!isClientError(err)) throw err;
        failed.push(id);
      }
    }
    prepared.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const shared = new Map<string, ClaimedBlob>();
    type Written = {
      id: string;
      current: ObjectRow;
      next: ObjectRow;
      patch: ObjectPatch;
      vectors?: PreparedEmbeddings;
      purge?: string;
      stored?: StoredEmbeddings;
    };
    let written: Written[];
    try {
      for (const item of prepared) item.claimed = await this.claimContent(p, s, item.id, item.patch, shared);
      written = await this.db.transaction().execute(async (trx) => {
        const out: Written[] = [];
        for (const item of prepared) {
          const current = await getWholeObject(trx, this.deps.dialect, s, item.id);
          if (!current) {
            failed.push(item.id);
            continue;
          }
          const columns = updateColumns(p, current, item.patch);
          const next: ObjectRow = { ...current, ...columns } as ObjectRow;
          const newSource = 'content_source' in columns ? (columns.content_source ?? null) : current.content_source;
          if (newSource && newSource !== current.content_source) await this.holdBlob(trx, s, newSource);
          if (!(await updateObject(trx, this.deps.dialect, s, current.id, current.etag, columns))) {
            failed.push(item.id);
            continue;
          }
          out.push({
            id: item.id,
            current,
            next,
            patch: item.patch,
            vectors: item.vectors,
            stored: await this.storeEmbeddings(trx, s, next, item.vectors),
          });
        }
        // A file is forgotten only once no object of the batch points at it any more.
        for (const w of out) {
          const old = w.current.content_source;
          if (old && old !== w.next.content_source) w.purge = await this.releaseBlob(trx, s, old);
        }
        return out;
      });
    } catch (err) {
      for (const item of prepared)
        if (item.claimed)
          this.background(
            this.deps.blobs.unclaim(s, item.claimed),
            'delete the content of an object that was not written',
          );
      if (!isClientError(err)) throw err;
      return { operation: 'update', status: 'failed', updated: 0, failed: Object.keys(updates) };
    }
    const done = new Set(written.map((w) => w.id));
    for (const item of prepared)
      if (item.claimed && !done.has(item.id))
        this.background(
          this.deps.blobs.unclaim(s, item.claimed),
          'delete the content of an object that was not written',
        );
    for (const w of written) {
      this.embeddingsStored(s, w.stored);
      if ('content' in w.patch)
        this.contentMoved(
          s,
          w.id,
          w.current.content as ContentSource | null,
          w.next.content as ContentSource | null,
          'updated',
          w.purge,
        );
      if (['text', 'name', 'description', 'properties', 'content'].some((k) => k in w.patch) || w.vectors)
        this.embed(s, w.id);
    }
    return {
      operation: 'update',
      status: Object.keys(updates).length && !written.length ? 'failed' : 'completed',
      updated: written.length,
      failed,
    };
  }

  /**
   * Creates the objects (payloads as `POST /objects`, without `id`). Every payload is checked
   * first; the invalid ones are answered in `failed` with their index and the reason, and the
   * others are written in one transaction: all of them or, when that transaction fails, none.
   */
  async bulkCreate(p: Principal, inputs: readonly unknown[]): Promise<BulkCreateResult> {
    const s = scopeOf(p);
    const failed: BulkCreateResult['failed'] = [];
    const prepared: { index: number; row: ObjectRow; vectors?: PreparedEmbeddings; claimed?: ClaimedBlob }[] = [];
    const externalIdOf = (input: unknown) => {
      const v = input && typeof input === 'object' ? (input as Record<string, unknown>).external_id : undefined;
      return typeof v === 'string' ? { external_id: v } : {};
    };
    for (const [index, input] of inputs.entries()) {
      try {
        const body = checkedPayload(input);
        if (body.id !== undefined && body.id !== null && body.id !== '')
          throw new BadRequest(
            'id cannot be given in a bulk create: leave it out (update existing objects with bulkUpdate)',
          );
        const patch = await patchOf(body, this.inputContext(p), 'create');
        const name = patch.name ?? (patch.content as ContentSource | null | undefined)?.name;
        if (!name) throw new BadRequest('an object must have property "name" (or content with a name)');
        const vectors = await this.prepareEmbeddings(s, body);
        const now = nowIso();
        const id = newId();
        const row: ObjectRow = {
          ...emptyRow(),
          ...patch,
          id,
          account_id: s.account,
          project_id: s.project,
          name,
          status: 'created',
          revision_root: id,
          etag: newEtag(),
          created_by: actorOf(p),
          updated_by: actorOf(p),
          created_at: now,
          updated_at: now,
        };
        prepared.push({ index, row, vectors });
      } catch (err) {
        if (!isClientError(err)) throw err;
        failed.push({ index, ...externalIdOf(input), error: (err as Error).message });
      }
    }
    const shared = new Map<string, ClaimedBlob>();
    let stored: (StoredEmbeddings | undefined)[];
    try {
      for (const item of prepared) {
        item.claimed = await this.claimContent(p, s, item.row.id, item.row as ObjectPatch, shared);
      }
      stored = await this.db.transaction().execute(async (trx) => {
        const out: (StoredEmbeddings | undefined)[] = [];
        for (const item of prepared) {
          await this.holdBlob(trx, s, item.row.content_source);
          await insertObject(trx, this.deps.dialect, item.row);
          out.push(await this.storeEmbeddings(trx, s, item.row, item.vectors));
        }
        return out;
      });
    } catch (err) {
      for (const item of prepared)
        if (item.claimed)
          this.background(
            this.deps.blobs.unclaim(s, item.claimed),
            'delete the content of an object that was not written',
          );
      if (!isClientError(err)) throw err;
      const reason = (err as Error).message;
      return {
        operation: 'create',
        status: 'failed',
        created: 0,
        objects: [],
        failed: inputs.map(
          (input, index) =>
            failed.find((f) => f.index === index) ?? {
              index,
              ...externalIdOf(input),
              error: `nothing was written: ${reason}`,
            },
        ),
      };
    }
    for (const [i, item] of prepared.entries()) {
      this.embeddingsStored(s, stored[i]);
      if (item.row.content)
        this.afterCommit(s, {
          objectId: item.row.id,
          content: item.row.content as ContentSource,
          previous: null,
          reason: 'created',
        });
      this.embed(s, item.row.id);
    }
    return {
      operation: 'create',
      status: inputs.length && !prepared.length ? 'failed' : 'completed',
      created: prepared.length,
      objects: prepared.map((item) => ({
        id: item.row.id,
        index: item.index,
        ...(item.row.external_id ? { external_id: item.row.external_id } : {}),
      })),
      failed,
    };
  }

  // ---- internals ----

  private inputContext(p: Principal): InputContext {
    const s = scopeOf(p);
    return {
      scope: s,
      blobs: this.deps.blobs,
      resolveType: (ref) => this.deps.types.resolve(s, ref),
      parentExists: (id) => objectExists(this.db, s, id),
      runExists: this.deps.runExists && ((id) => this.deps.runExists!(p, id)),
      maxInlineJson: this.deps.maxInlineJson,
    };
  }

  /**
   * Compare-and-set of the record against the version read, in one transaction with the blob
   * bookkeeping: the new blob must still be tracked, and the old one is forgotten when this
   * was its last reference; `vectors` writes the payload's embeddings in the same transaction.
   * Answers the key to purge after commit and the embeddings written, or 'changed'.
   */
  private async writeCas(
    s: Scope,
    current: ObjectRow,
    columns: ObjectPatch & { etag: string },
    vectors: (trx: Kysely<Database>) => Promise<StoredEmbeddings | undefined>,
  ): Promise<{ purge?: string; stored?: StoredEmbeddings } | 'changed'> {
    return this.db.transaction().execute(async (trx) => {
      const newSource = 'content_source' in columns ? (columns.content_source ?? null) : current.content_source;
      if (newSource && newSource !== current.content_source) await this.holdBlob(trx, s, newSource);
      const ok = await updateObject(trx, this.deps.dialect, s, current.id, current.etag, columns);
      if (!ok) return 'changed' as const;
      const old = current.content_source;
      const purge = old && old !== newSource ? await this.releaseBlob(trx, s, old) : undefined;
      return { purge, stored: await vectors(trx) };
    });
  }

  /** The payload's `embeddings`, validated (undefined: none given, or no embeddings on this server). */
  private async prepareEmbeddings(s: Scope, input: ObjectInput): Promise<PreparedEmbeddings | undefined> {
    if (input.embeddings === undefined) return undefined;
    if (!this.deps.embeddings) throw new BadRequest('embeddings are not enabled on this server');
    return this.deps.embeddings.prepareEmbeddings(s, input.embeddings);
  }

  private async storeEmbeddings(
    trx: Kysely<Database>,
    s: Scope,
    row: ObjectRow,
    prepared: PreparedEmbeddings | undefined,
  ): Promise<StoredEmbeddings | undefined> {
    return prepared && this.deps.embeddings!.storeEmbeddings(trx, s, row.id, prepared, row);
  }

  private embeddingsStored(s: Scope, stored: StoredEmbeddings | undefined): void {
    if (stored) this.deps.embeddings!.embeddingsStored(s, stored);
  }

  /**
   * An upload that the record points at becomes the object's own first (BlobService.claim: its
   * bytes move where no upload URL reaches, so the ETag recorded here stays true); `write` then
   * stores the record. When the write fails, the claimed bytes go again.
   */
  private async withClaimedContent<T>(
    p: Principal,
    s: Scope,
    objectId: string,
    patch: ObjectPatch,
    write: () => Promise<T>,
  ): Promise<T> {
    const claimed = await this.claimContent(p, s, objectId, patch);
    try {
      return await write();
    } catch (err) {
      if (claimed)
        this.background(this.deps.blobs.unclaim(s, claimed), 'delete the content of an object that was not written');
      throw err;
    }
  }

  /**
   * Claims the upload the patch points at (see withClaimedContent) and points the patch at the
   * claimed bytes. `shared` (a bulk write) maps an upload already claimed in this batch to its
   * claim, so that objects of one batch naming the same upload share its content.
   */
  private async claimContent(
    p: Principal,
    s: Scope,
    objectId: string,
    patch: ObjectPatch,
    shared?: Map<string, ClaimedBlob>,
  ): Promise<ClaimedBlob | undefined> {
    const content = patch.content as ContentSource | null | undefined;
    if (!content?.source) return undefined;
    const earlier = shared?.get(content.source);
    // Taking the upload away from the files API is a delete: without that permission, copy it.
    const claimed =
      earlier ?? (await this.deps.blobs.claim(s, content.source, objectId, !can(p.role, 'content:delete')));
    if (!claimed) return undefined;
    if (!earlier) shared?.set(content.source, claimed);
    patch.content = { ...content, source: claimed.uri, etag: claimed.etag };
    patch.content_source = claimed.uri;
    return earlier ? undefined : claimed;
  }

  /** Locks the blob a record is about to point at; it must still be tracked. */
  private async holdBlob(trx: Kysely<Database>, s: Scope, source: string | null): Promise<void> {
    if (!source) return;
    if (!(await this.deps.blobs.lock(trx, s, source))) {
      throw new BadRequest(
        `content.source ${JSON.stringify(source)} is not an uploaded file of this project (it was deleted meanwhile)`,
      );
    }
  }

  /** Forgets the blob when no object of the project points at it any more; answers its key. */
  private async releaseBlob(trx: Kysely<Database>, s: Scope, source: string): Promise<string | undefined> {
    if (!(await this.deps.blobs.lock(trx, s, source))) return undefined;
    if ((await countBySource(trx, s, source)) > 0) return undefined;
    return this.deps.blobs.forget(trx, s, source);
  }

  private contentMoved(
    s: Scope,
    objectId: string,
    previous: ContentSource | null,
    content: ContentSource | null,
    reason: ContentChange['reason'],
    purge?: string,
  ): void {
    if (purge) this.background(this.deps.blobs.purge(s, purge), 'delete an unreferenced blob');
    if (JSON.stringify(previous) !== JSON.stringify(content) && (content || previous)) {
      this.afterCommit(s, { objectId, content, previous, reason });
    }
  }

  private afterCommit(s: Scope, change: ContentChange): void {
    this.background(this.processing.contentChanged(s, change), 'start content processing');
  }

  /** Text, name, description or properties may have changed: embeddings follow (a queued job). */
  private embed(s: Scope, objectId: string): void {
    if (this.deps.embeddings)
      this.background(this.deps.embeddings.objectWritten(s, objectId), 'queue the embeddings of an object');
  }

  private background(work: Promise<unknown>, what: string): void {
    work.catch((err) => this.deps.onBackgroundError?.(err, what));
  }

  private async written(s: Scope, row: ObjectRow): Promise<WrittenObject> {
    const types = await this.deps.types.refs(s, row.type_id ? [row.type_id] : []);
    return { record: toRecord(row, { types }, new Set()), etag: `"${row.etag}"` };
  }
}

function emptyRow(): Omit<
  ObjectRow,
  | 'id'
  | 'account_id'
  | 'project_id'
  | 'name'
  | 'status'
  | 'etag'
  | 'created_by'
  | 'updated_by'
  | 'created_at'
  | 'updated_at'
> {
  return {
    description: null,
    type_id: null,
    parent_id: null,
    location: '/',
    external_id: null,
    content_source: null,
    run_id: null,
    content: null,
    tags: [],
    properties: {},
    metadata: null,
    tokens: null,
    text: null,
    text_etag: null,
    parts: null,
    transcript: null,
    error: null,
    revision_root: null,
    revision_parent: null,
    revision_head: 1,
    revision_label: null,
    expires_at: null,
  };
}

export interface BulkDeleteResult {
  operation: 'delete';
  status: 'completed' | 'failed';
  deleted: number;
  failed: string[];
}
export interface BulkUpdateResult {
  operation: 'update';
  status: 'completed' | 'failed';
  updated: number;
  failed: string[];
}
export interface BulkCreateResult {
  operation: 'create';
  status: 'completed' | 'failed';
  created: number;
  objects: { id: string; index: number; external_id?: string }[];
  failed: { index: number; external_id?: string; error: string }[];
}

const isClientError = (err: unknown): boolean => err instanceof OrreryError && err.status >= 400 && err.status < 500;

/** One payload of a bulk operation, checked against the schema of `POST /objects`. */
function checkedPayload(input: unknown): ObjectInput {
  if (!Value.Check(ObjectBody, input)) {
    const first = Value.Errors(ObjectBody, input).First();
    throw new BadRequest(
      first && first.path
        ? `${first.path.slice(1).replace(/\//g, '.')}: ${first.message}`
        : 'each payload must be a JSON object like the body of POST /objects',
    );
  }
  return input as ObjectInput;
}

/** The columns an update writes: the patch, a new version, and `created` again for new content. */
function updateColumns(
  p: Principal,
  current: ObjectRow,
  patch: ObjectPatch,
): ObjectPatch & Pick<ObjectRow, 'etag' | 'updated_by' | 'updated_at'> {
  const columns: ObjectPatch & Pick<ObjectRow, 'etag' | 'updated_by' | 'updated_at'> = {
    ...patch,
    etag: newEtag(),
    updated_by: actorOf(p),
    updated_at: nowIso(),
  };
  // New content is processed again: the object is `created` until the pipeline takes it.
  if (
    'content' in patch &&
    !('status' in patch) &&
    JSON.stringify(current.content ?? null) !== JSON.stringify(patch.content ?? null) &&
    patch.content
  ) {
    Object.assign(columns, { status: 'created', error: null });
  }
  return columns;
}

/** RFC 9110 If-Match: `*`, or a list of (possibly weak) entity tags; quotes optional. */
function ifMatchAccepts(header: string, row: ObjectRow): boolean {
  const h = header.trim();
  if (h === '*') return true;
  const contentEtag = (row.content as ContentSource | null)?.etag;
  return h
    .split(',')
    .map((t) =>
      t
        .trim()
        .replace(/^W\//, '')
        .replace(/^"(.*)"$/, '$1'),
    )
    .some((t) => t === row.etag || (!!contentEtag && t === contentEtag));
}

/** The audit row of an object's deletion: what it was. */
function deletionEntry(row: ObjectRow): AuditEntry {
  const was = {
    name: row.name,
    type: row.type_id,
    location: row.location,
    content: row.content_source,
    revision_root: row.revision_root,
  };
  return { action: 'delete', resourceType: 'object', resourceId: row.id, changes: changesOf(was, null) };
}
