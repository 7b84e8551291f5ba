/**
 * SQL of content processing: renditions (the object's own row is read and written, and objects
 * whose processing was lost are found, through objects/processing-results.ts).
 */
import type { Kysely, Selectable } from 'kysely';
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

/** A project's renditions of objects. */
export const deleteProjectRenditions = (db: Db, s: ProjectScope) => deleteProjectRows(db, ['object_renditions'], s);
