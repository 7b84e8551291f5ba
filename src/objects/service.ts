/**
 * Content objects: create (or replace), retrieve with projection, update with if-match, delete
 * (and the blob when nothing points at it any more), text and content source. Listing,
 * querying and export are in `listing.ts` and `export.ts`; bulk operations in `bulk.ts`; what
 * every write shares (blobs, embeddings, what follows a commit) in `writes.ts`.
 *
 * Writes follow "bytes first, row after, old bytes last": a record only points at a blob that
 * is tracked (its row is locked while the record is written), and a blob is deleted only after
 * the transaction that removed its last reference has committed.
 *
 * `embeddings` in a payload are vectors the caller sets: validated before the write, stored in
 * its transaction (the `vectors` table, through the embeddings hook), indexed after commit.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import { newId, nowIso } from '../db/ids.ts';
import { actorOf, scopeOf, type Principal, type Scope } from '../auth/principal.ts';
import { requirePermission } from '../auth/permissions.ts';
import { Conflict, NotFound, PreconditionFailed } from '../util/errors.ts';
import type { BlobService } from '../blobs/blob-service.ts';
import type { ObjectTypeService } from './types-service.ts';
import type { ObjectProcessingHook } from './processing-hook.ts';
import { ObjectWrites, deletionEntry, emptyRow, nameOf, newEtag, newObjectRow, updateColumns } from './writes.ts';
import { ObjectBulk, type BulkCreateResult, type BulkDeleteResult, type BulkUpdateResult } from './bulk.ts';
import type { ObjectEmbeddingsHook, PreparedEmbeddings } from './embeddings-hook.ts';
import { patchOf, type ObjectPatch } from './input.ts';
import { toRecord } from './dto.ts';
import { parseSelect, project } from './projection.ts';
import {
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
import type { AuditLog } from '../audit/log.ts';

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

export class ObjectService {
  private readonly writes: ObjectWrites;
  private readonly bulk: ObjectBulk;

  constructor(private readonly deps: ObjectServiceDeps) {
    this.writes = new ObjectWrites(deps);
    this.bulk = new ObjectBulk(deps, this.writes);
  }

  private get db() {
    return this.deps.db;
  }

  async create(p: Principal, input: ObjectInput): Promise<WrittenObject> {
    if (input.id !== undefined && input.id !== null && input.id !== '') return this.replace(p, String(input.id), input);
    const s = scopeOf(p);
    const patch = await patchOf(input, this.writes.inputContext(p), 'create');
    const name = nameOf(patch, 'body');
    const vectors = await this.writes.prepareEmbeddings(s, input);
    const row = newObjectRow(p, patch, name);
    const stored = await this.writes.withClaimedContent(p, s, row.id, row, () =>
      this.db.transaction().execute(async (trx) => {
        await this.writes.holdBlob(trx, s, row.content_source);
        await insertObject(trx, this.deps.dialect, row);
        return this.writes.storeEmbeddings(trx, s, row, vectors);
      }),
    );
    this.writes.created(s, row, stored);
    return this.writes.written(s, row);
  }

  /** `POST /objects` with the id of an existing object: a new record in its place (same id and creation). */
  private async replace(p: Principal, id: string, input: ObjectInput): Promise<WrittenObject> {
    // Replacing changes an existing object: what PUT /objects/:id needs, whichever route asks.
    requirePermission(p.role, 'content:write', 'POST /objects with the id of an existing object (a replace)');
    const s = scopeOf(p);
    const patch = await patchOf(input, { ...this.writes.inputContext(p), selfId: id }, 'create');
    const vectors = await this.writes.prepareEmbeddings(s, input);
    return this.writes.withClaimedContent(p, s, id, patch, () => this.replaceWith(p, s, id, patch, vectors));
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
      const name = nameOf(patch, 'body');
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
      const result = await this.writes.writeCas(s, current, columns, (trx) =>
        this.writes.storeEmbeddings(trx, s, next, vectors),
      );
      if (result === 'changed' && attempt < MAX_CAS_RETRIES) continue;
      if (result === 'changed')
        throw new PreconditionFailed(`object ${id} kept changing while it was being replaced: retry`);
      this.writes.embeddingsStored(s, result.stored);
      this.writes.contentMoved(
        s,
        id,
        current.content as ContentSource | null,
        next.content as ContentSource | null,
        'replaced',
        result.purge,
      );
      // A replaced record starts over (status created, no text): process it even when its content is the same.
      if (next.content && JSON.stringify(current.content) === JSON.stringify(next.content)) {
        this.writes.afterCommit(s, {
          objectId: id,
          content: next.content as ContentSource,
          previous: current.content as ContentSource | null,
          reason: 'replaced',
        });
      }
      this.writes.embed(s, id);
      return this.writes.written(s, next);
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
    const patch = await patchOf(input, { ...this.writes.inputContext(p), selfId: id }, 'update');
    const vectors = await this.writes.prepareEmbeddings(s, input);
    if (revision) {
      const revisionId = newId();
      return this.writes.withClaimedContent(p, s, revisionId, patch, () =>
        this.reviseWith(p, s, id, revisionId, patch, vectors, revision, ifMatch),
      );
    }
    return this.writes.withClaimedContent(p, s, id, patch, () => this.updateWith(p, s, id, patch, vectors, ifMatch));
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
        await this.writes.holdBlob(trx, s, next.content_source);
        await insertObject(trx, this.deps.dialect, next);
        return { stored: await this.writes.storeEmbeddings(trx, s, next, vectors) };
      });
      if (stored === 'changed') {
        if (ifMatch !== undefined)
          throw new PreconditionFailed(`object ${id} was changed while the revision was being written`);
        if (attempt < MAX_CAS_RETRIES) continue;
        throw new PreconditionFailed(`object ${id} kept changing while its revision was being written: retry`);
      }
      // The new revision is an object of its own: its content is processed (text, renditions) for it.
      this.writes.created(s, next, stored.stored);
      return this.writes.written(s, next);
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
      const result = await this.writes.writeCas(s, current, columns, (trx) =>
        this.writes.storeEmbeddings(trx, s, next, vectors),
      );
      if (result === 'changed') {
        // With if-match the caller asked for exactly the version it read: a concurrent write wins.
        if (ifMatch !== undefined)
          throw new PreconditionFailed(`object ${id} was changed while this update was being written`);
        if (attempt < MAX_CAS_RETRIES) continue;
        throw new PreconditionFailed(`object ${id} kept changing while it was being updated: retry`);
      }
      this.writes.embeddingsStored(s, result.stored);
      if ('content' in patch)
        this.writes.contentMoved(
          s,
          id,
          current.content as ContentSource | null,
          next.content as ContentSource | null,
          'updated',
          result.purge,
        );
      if (['text', 'name', 'description', 'properties', 'content'].some((k) => k in patch) || vectors)
        this.writes.embed(s, id);
      return this.writes.written(s, next);
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
      return row.content_source ? this.writes.releaseBlob(trx, s, row.content_source) : undefined;
    });
    if (purge) this.writes.background(this.deps.blobs.purge(s, purge), 'delete an unreferenced blob');
    this.writes.deleted(s, id);
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

  /** Deletes the objects named, in one transaction (bulk.ts). */
  bulkDelete(p: Principal, ids: readonly string[]): Promise<BulkDeleteResult> {
    return this.bulk.bulkDelete(p, ids);
  }

  /** Updates each object with its payload (bulk.ts). */
  bulkUpdate(p: Principal, updates: Record<string, unknown>): Promise<BulkUpdateResult> {
    return this.bulk.bulkUpdate(p, updates);
  }

  /** Creates the objects (bulk.ts). */
  bulkCreate(p: Principal, inputs: readonly unknown[]): Promise<BulkCreateResult> {
    return this.bulk.bulkCreate(p, inputs);
  }
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
