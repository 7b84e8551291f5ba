/**
 * SQL of content processing: renditions, and finding objects whose processing was lost (the
 * object's own row is read and written through objects/processing-results.ts).
 */
import { sql, type Kysely, type Selectable } from 'kysely';
import type { Database, ObjectRenditionTable } from '../db/schema.ts';
import type { Scope } from '../auth/principal.ts';
import { deleteProjectRows, type ProjectScope } from '../db/project-rows.ts';

export type Db = Kysely<Database>;
export type RenditionRow = Selectable<ObjectRenditionTable>;

export async function upsertRendition(db: Db, row: RenditionRow): Promise<void> {
  const { object_id: _o, name: _n, ...rest } = row;
  await db
    .insertInto('object_renditions')
    .values(row)
    .onConflict((oc) => oc.columns(['object_id', 'name']).doUpdateSet(rest))
    .execute();
}

const renditionsIn = (db: Db, s: Scope, objectId: string) =>
  db
    .selectFrom('object_renditions')
    .selectAll()
    .where('account_id', '=', s.account)
    .where('project_id', '=', s.project)
    .where('object_id', '=', objectId);

/** Renditions made from the content with ETag `sourceEtag`, largest first. */
export async function renditionsOf(
  db: Db,
  s: Scope,
  objectId: string,
  sourceEtag: string,
  filter: { format?: string; maxHw?: number; status?: string } = {},
): Promise<RenditionRow[]> {
  let q = renditionsIn(db, s, objectId).where('source_etag', '=', sourceEtag);
  if (filter.format) q = q.where('format', '=', filter.format);
  if (filter.maxHw !== undefined) q = q.where('max_hw', '=', filter.maxHw);
  if (filter.status) q = q.where('status', '=', filter.status);
  const rows = await q.orderBy('max_hw', 'desc').orderBy('name').execute();
  return rows.map((r) => ({
    ...r,
    size: r.size === null ? null : Number(r.size),
    width: r.width === null ? null : Number(r.width),
    height: r.height === null ? null : Number(r.height),
    max_hw: Number(r.max_hw),
  }));
}

/** One rendition of the project by its id. */
export async function renditionById(db: Db, s: Scope, id: string): Promise<RenditionRow | undefined> {
  return db
    .selectFrom('object_renditions')
    .selectAll()
    .where('account_id', '=', s.account)
    .where('project_id', '=', s.project)
    .where('id', '=', id)
    .executeTakeFirst();
}

/** Forgets renditions made from other content; answers the blob keys they used. */
export async function deleteStaleRenditions(
  db: Db,
  s: Scope,
  objectId: string,
  keepSourceEtag: string | null,
): Promise<string[]> {
  let q = renditionsIn(db, s, objectId);
  if (keepSourceEtag !== null) q = q.where('source_etag', '<>', keepSourceEtag);
  const stale = await q.execute();
  if (!stale.length) return [];
  await db
    .deleteFrom('object_renditions')
    .where('object_id', '=', objectId)
    .where('project_id', '=', s.project)
    .where(
      'name',
      'in',
      stale.map((r) => r.name),
    )
    .execute();
  return stale.map((r) => r.blob_key).filter((k): k is string => !!k);
}

/**
 * Objects left `created` or `processing` with content and no job (a crash between the write that
 * committed and the enqueue, or a job given up without a verdict): the recovery sweep queues them.
 */
export async function orphanedObjects(
  db: Db,
  olderThan: string,
  limit: number,
): Promise<Array<{ id: string; scope: Scope }>> {
  const rows = await db
    .selectFrom('objects as o')
    .select(['o.id', 'o.account_id', 'o.project_id'])
    .where(sql<boolean>`o.status IN ('created', 'processing') AND o.content_source IS NOT NULL`)
    .where('o.updated_at', '<', olderThan)
    .where((eb) => eb.not(eb.exists(eb.selectFrom('jobs as j').select('j.id').whereRef('j.subject', '=', 'o.id'))))
    .limit(limit)
    .execute();
  return rows.map((r) => ({ id: r.id, scope: { account: r.account_id, project: r.project_id } }));
}

/** A project's renditions of objects. */
export const deleteProjectRenditions = (db: Db, s: ProjectScope) => deleteProjectRows(db, ['object_renditions'], s);
