/**
 * What every write of objects shares, one object or a batch (service.ts, bulk.ts): the payload's
 * context and embeddings, the blob bookkeeping (claim, hold, release, purge), the compare-and-set
 * of a record, the new row of a created object, and what follows a commit (content processing,
 * embeddings), reported to onBackgroundError when it fails.
 */
import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import { newId, nowIso } from '../db/ids.ts';
import { actorOf, scopeOf, type Principal, type Scope } from '../auth/principal.ts';
import { can } from '../auth/permissions.ts';
import { BadRequest } from '../util/errors.ts';
import type { ClaimedBlob } from '../blobs/blob-service.ts';
import { noProcessing, type ContentChange, type ObjectProcessingHook } from './processing-hook.ts';
import type { PreparedEmbeddings, StoredEmbeddings } from './embeddings-hook.ts';
import type { InputContext, ObjectPatch } from './input.ts';
import { toRecord } from './dto.ts';
import { contentInUse, countBySource, objectExists, updateObject } from './store.ts';
import type { ContentSource, ObjectInput, ObjectRow } from './model.ts';
import { changesOf, type AuditEntry } from '../audit/log.ts';
import type { ObjectServiceDeps, WrittenObject } from './service.ts';

export const newEtag = () => randomBytes(12).toString('base64url');

export class ObjectWrites {
  private readonly processing: ObjectProcessingHook;

  constructor(private readonly deps: ObjectServiceDeps) {
    this.processing = deps.processing ?? noProcessing;
  }

  private get db() {
    return this.deps.db;
  }

  inputContext(p: Principal): InputContext {
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
  async writeCas(
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
  async prepareEmbeddings(s: Scope, input: ObjectInput): Promise<PreparedEmbeddings | undefined> {
    if (input.embeddings === undefined) return undefined;
    if (!this.deps.embeddings) throw new BadRequest('embeddings are not enabled on this server');
    return this.deps.embeddings.prepareEmbeddings(s, input.embeddings);
  }

  async storeEmbeddings(
    trx: Kysely<Database>,
    s: Scope,
    row: ObjectRow,
    prepared: PreparedEmbeddings | undefined,
  ): Promise<StoredEmbeddings | undefined> {
    return prepared && this.deps.embeddings!.storeEmbeddings(trx, s, row.id, prepared, row);
  }

  embeddingsStored(s: Scope, stored: StoredEmbeddings | undefined): void {
    if (stored) this.deps.embeddings!.embeddingsStored(s, stored);
  }

  /**
   * An upload that the record points at becomes the object's own first (BlobService.claim: its
   * bytes move where no upload URL reaches, so the ETag recorded here stays true); `write` then
   * stores the record. When the write fails, the claimed bytes go again.
   */
  async withClaimedContent<T>(
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
      this.unclaim(s, claimed);
      throw err;
    }
  }

  /**
   * Claims the upload the patch points at (see withClaimedContent) and points the patch at the
   * claimed bytes. `shared` (a bulk write) maps an upload already claimed in this batch to its
   * claim, so that objects of one batch naming the same upload share its content.
   */
  async claimContent(
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
  async holdBlob(trx: Kysely<Database>, s: Scope, source: string | null): Promise<void> {
    if (!source) return;
    if (!(await this.deps.blobs.lock(trx, s, source))) {
      throw new BadRequest(
        `content.source ${JSON.stringify(source)} is not an uploaded file of this project (it was deleted meanwhile)`,
      );
    }
  }

  /** Forgets the blob when no object of the project points at it any more; answers its key. */
  async releaseBlob(trx: Kysely<Database>, s: Scope, source: string): Promise<string | undefined> {
    if (!(await this.deps.blobs.lock(trx, s, source))) return undefined;
    if ((await countBySource(trx, s, source)) > 0) return undefined;
    return this.deps.blobs.forget(trx, s, source);
  }

  contentMoved(
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

  afterCommit(s: Scope, change: ContentChange): void {
    this.background(this.processing.contentChanged(s, change), 'start content processing');
  }

  /** Text, name, description or properties may have changed: embeddings follow (a queued job). */
  embed(s: Scope, objectId: string): void {
    if (this.deps.embeddings)
      this.background(this.deps.embeddings.objectWritten(s, objectId), 'queue the embeddings of an object');
  }

  background(work: Promise<unknown>, what: string): void {
    work.catch((err) => this.deps.onBackgroundError?.(err, what));
  }

  async written(s: Scope, row: ObjectRow): Promise<WrittenObject> {
    const types = await this.deps.types.refs(s, row.type_id ? [row.type_id] : []);
    return { record: toRecord(row, { types }, new Set()), etag: `"${row.etag}"` };
  }

  /** A created object committed: its embeddings indexed, its content processed, its embeddings queued. */
  created(s: Scope, row: ObjectRow, stored: StoredEmbeddings | undefined): void {
    this.embeddingsStored(s, stored);
    if (row.content)
      this.afterCommit(s, {
        objectId: row.id,
        content: row.content as ContentSource,
        previous: null,
        reason: 'created',
      });
    this.embed(s, row.id);
  }

  /** A deleted object committed: its renditions and embeddings go (in the background). */
  deleted(s: Scope, objectId: string): void {
    if (this.processing.objectDeleted)
      this.background(this.processing.objectDeleted(s, objectId), 'delete the renditions of a deleted object');
    if (this.deps.embeddings)
      this.background(this.deps.embeddings.objectDeleted(s, objectId), 'delete the embeddings of a deleted object');
  }

  /** Claimed uploads of objects that were not written go again, unless an object came to point at them. */
  unclaim(s: Scope, claimed: ClaimedBlob | undefined): void {
    if (!claimed) return;
    const unclaim = async () => {
      if (!(await contentInUse(this.db, s, claimed.uri))) await this.deps.blobs.unclaim(s, claimed);
    };
    this.background(unclaim(), 'delete the content of an object that was not written');
  }
}

/** The name of a new object: its own, else its content's; a 400 that says so when it has neither. */
export function nameOf(patch: ObjectPatch, what: string): string {
  const name = patch.name ?? (patch.content as ContentSource | null | undefined)?.name;
  if (!name) throw new BadRequest(`${what} must have property "name" (or content with a name)`);
  return name;
}

/** The row of a new object (not a replace, not a revision): a new id, the root of its own history. */
export function newObjectRow(p: Principal, patch: ObjectPatch, name: string): ObjectRow {
  const s = scopeOf(p);
  const now = nowIso();
  const id = newId();
  return {
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
}

export function emptyRow(): Omit<
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

/** The columns an update writes: the patch, a new version, and `created` again for new content. */
export function updateColumns(
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

/** The audit row of an object's deletion: what it was. */
export function deletionEntry(row: ObjectRow): AuditEntry {
  const was = {
    name: row.name,
    type: row.type_id,
    location: row.location,
    content: row.content_source,
    revision_root: row.revision_root,
  };
  return { action: 'delete', resourceType: 'object', resourceId: row.id, changes: changesOf(was, null) };
}
