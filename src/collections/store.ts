/**
 * SQL for collections, their member rows and their parent links. Every query starts from the
 * caller's project (style D5); JSON columns are encoded and decoded here and nowhere else.
 */
import type { Kysely } from 'kysely';
import { revisionsInHistoriesOf } from '../objects/reads.ts';
import type { CollectionTable, Database } from '../db/schema.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import type { Scope } from '../auth/principal.ts';
import { IN_LIST_CHUNK } from '../db/in-list.ts';
import type { ColumnLayout } from '../objects/types-service.ts';
import { deleteProjectRows, type ProjectScope } from '../db/project-rows.ts';

export type Db = Kysely<Database>;

/** What `doc` holds: the fields nobody filters on. */
export interface CollectionDoc {
  skip_head_sync?: boolean;
  table_layout?: ColumnLayout[];
  allowed_types?: string[];
  shared_properties?: string[];
  sensitivity?: number;
  compartments?: string[];
}

export interface CollectionRow {
  id: string;
  account_id: string;
  project_id: string;
  name: string;
  description: string | null;
  status: string;
  dynamic: boolean;
  type_id: string | null;
  query: Record<string, unknown> | null;
  tags: string[];
  properties: Record<string, unknown>;
  doc: CollectionDoc;
  created_by: string;
  updated_by: string;
  created_at: string;
  updated_at: string;
}

export const collectionsIn = (db: Db, s: Scope) =>
  db
    .selectFrom('collections')
    .where('collections.account_id', '=', s.account)
    .where('collections.project_id', '=', s.project);

export function decodeCollection(d: OrreryDialect, r: Record<string, unknown>): CollectionRow {
  return {
    ...(r as unknown as CollectionRow),
    dynamic: Number(r.dynamic) === 1,
    query: (d.fromJson(r.query) ?? null) as Record<string, unknown> | null,
    tags: (d.fromJson(r.tags) ?? []) as string[],
    properties: (d.fromJson(r.properties) ?? {}) as Record<string, unknown>,
    doc: (d.fromJson(r.doc) ?? {}) as CollectionDoc,
  };
}

function encode(d: OrreryDialect, row: Partial<CollectionRow>): Partial<CollectionTable> {
  const out: Record<string, unknown> = { ...row };
  if ('dynamic' in row) out.dynamic = row.dynamic ? 1 : 0;
  for (const c of ['query', 'tags', 'properties', 'doc'] as const) if (c in row) out[c] = d.toJson(row[c]);
  return out as Partial<CollectionTable>;
}

export async function getCollection(
  db: Db,
  d: OrreryDialect,
  s: Scope,
  id: string,
): Promise<CollectionRow | undefined> {
  const r = await collectionsIn(db, s).selectAll().where('collections.id', '=', id).executeTakeFirst();
  return r && decodeCollection(d, r);
}

export async function insertCollection(db: Db, d: OrreryDialect, row: CollectionRow): Promise<void> {
  await db
    .insertInto('collections')
    .values(encode(d, row) as CollectionTable)
    .execute();
}

export async function updateCollection(
  db: Db,
  d: OrreryDialect,
  s: Scope,
  id: string,
  patch: Partial<CollectionRow>,
): Promise<void> {
  await db
    .updateTable('collections')
    .set(encode(d, patch))
    .where('account_id', '=', s.account)
    .where('project_id', '=', s.project)
    .where('id', '=', id)
    .execute();
}

/** Deletes the collection; its member rows and parent links go with it (cascade). */
export async function deleteCollection(db: Db, s: Scope, id: string): Promise<number> {
  // Explicit deletes too, so nothing depends on the cascade being switched on.
  await db
    .deleteFrom('collection_members')
    .where('project_id', '=', s.project)
    .where('collection_id', '=', id)
    .execute();
  await db
    .deleteFrom('collection_parents')
    .where('project_id', '=', s.project)
    .where((eb) => eb.or([eb('parent_id', '=', id), eb('child_id', '=', id)]))
    .execute();
  const r = await db
    .deleteFrom('collections')
    .where('account_id', '=', s.account)
    .where('project_id', '=', s.project)
    .where('id', '=', id)
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}

/** The ids among `ids` that name a collection of the project. */
export async function existingCollections(db: Db, s: Scope, ids: readonly string[]): Promise<Set<string>> {
  const found = new Set<string>();
  for (let i = 0; i < ids.length; i += IN_LIST_CHUNK) {
    const rows = await collectionsIn(db, s)
      .select('collections.id')
      .where('collections.id', 'in', ids.slice(i, i + IN_LIST_CHUNK))
      .execute();
    for (const r of rows) found.add(r.id);
  }
  return found;
}

export async function addMembers(
  db: Db,
  s: Scope,
  collectionId: string,
  objectIds: readonly string[],
  now: string,
): Promise<void> {
  for (let i = 0; i < objectIds.length; i += IN_LIST_CHUNK) {
    await db
      .insertInto('collection_members')
      .values(
        objectIds.slice(i, i + IN_LIST_CHUNK).map((object_id) => ({
          collection_id: collectionId,
          object_id,
          account_id: s.account,
          project_id: s.project,
          added_at: now,
        })),
      )
      .onConflict((oc) => oc.columns(['collection_id', 'object_id']).doNothing())
      .execute();
  }
}

/**
 * Removes the member rows of the histories of `objectIds`: a row naming any revision of the same
 * history as one of the ids (a member added before it was revised is removed by its head's id).
 */
export async function removeMemberHistories(
  db: Db,
  s: Scope,
  collectionId: string,
  objectIds: readonly string[],
): Promise<number> {
  let n = 0;
  for (let i = 0; i < objectIds.length; i += IN_LIST_CHUNK) {
    const chunk = objectIds.slice(i, i + IN_LIST_CHUNK);
    const r = await db
      .deleteFrom('collection_members')
      .where('account_id', '=', s.account)
      .where('project_id', '=', s.project)
      .where('collection_id', '=', collectionId)
      .where((eb) => eb.or([eb('object_id', 'in', chunk), eb('object_id', 'in', revisionsInHistoriesOf(eb, s, chunk))]))
      .executeTakeFirst();
    n += Number(r.numDeletedRows);
  }
  return n;
}

/** Removes the member rows naming exactly `objectIds` (collections pinned to revisions). */
export async function removeMembers(
  db: Db,
  s: Scope,
  collectionId: string,
  objectIds: readonly string[],
): Promise<number> {
  let n = 0;
  for (let i = 0; i < objectIds.length; i += IN_LIST_CHUNK) {
    const r = await db
      .deleteFrom('collection_members')
      .where('account_id', '=', s.account)
      .where('project_id', '=', s.project)
      .where('collection_id', '=', collectionId)
      .where('object_id', 'in', objectIds.slice(i, i + IN_LIST_CHUNK))
      .executeTakeFirst();
    n += Number(r.numDeletedRows);
  }
  return n;
}

export async function clearMembers(db: Db, s: Scope, collectionId: string): Promise<void> {
  await db
    .deleteFrom('collection_members')
    .where('account_id', '=', s.account)
    .where('project_id', '=', s.project)
    .where('collection_id', '=', collectionId)
    .execute();
}

/** Links each of `children` under `parentId`; answers how many links are new. */
export async function addChildren(
  db: Db,
  s: Scope,
  parentId: string,
  children: readonly string[],
  now: string,
): Promise<number> {
  let n = 0;
  for (let i = 0; i < children.length; i += IN_LIST_CHUNK) {
    const r = await db
      .insertInto('collection_parents')
      .values(
        children.slice(i, i + IN_LIST_CHUNK).map((child_id) => ({
          parent_id: parentId,
          child_id,
          account_id: s.account,
          project_id: s.project,
          added_at: now,
        })),
      )
      .onConflict((oc) => oc.columns(['parent_id', 'child_id']).doNothing())
      .executeTakeFirst();
    n += Number(r.numInsertedOrUpdatedRows ?? 0);
  }
  return n;
}

export async function removeChildren(db: Db, s: Scope, parentId: string, children: readonly string[]): Promise<number> {
  let n = 0;
  for (let i = 0; i < children.length; i += IN_LIST_CHUNK) {
    const r = await db
      .deleteFrom('collection_parents')
      .where('account_id', '=', s.account)
      .where('project_id', '=', s.project)
      .where('parent_id', '=', parentId)
      .where('child_id', 'in', children.slice(i, i + IN_LIST_CHUNK))
      .executeTakeFirst();
    n += Number(r.numDeletedRows);
  }
  return n;
}

/** Replaces the parents of `childId` with `parents`. */
export async function setParents(
  db: Db,
  s: Scope,
  childId: string,
  parents: readonly string[],
  now: string,
): Promise<void> {
  await db
    .deleteFrom('collection_parents')
    .where('account_id', '=', s.account)
    .where('project_id', '=', s.project)
    .where('child_id', '=', childId)
    .execute();
  for (const parent of parents) await addChildren(db, s, parent, [childId], now);
}

/** `parents` of each given collection, in the order they were linked. */
export async function parentsOf(db: Db, s: Scope, ids: readonly string[]): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  for (let i = 0; i < ids.length; i += IN_LIST_CHUNK) {
    const rows = await db
      .selectFrom('collection_parents')
      .select(['child_id', 'parent_id'])
      .where('account_id', '=', s.account)
      .where('project_id', '=', s.project)
      .where('child_id', 'in', ids.slice(i, i + IN_LIST_CHUNK))
      .orderBy('added_at')
      .orderBy('parent_id')
      .execute();
    for (const r of rows) {
      const list = out.get(r.child_id) ?? [];
      list.push(r.parent_id);
      out.set(r.child_id, list);
    }
  }
  return out;
}

/** Every collection above `id` (its parents, their parents, …), at most `limit` of them. */
export async function ancestorsOf(db: Db, s: Scope, id: string, limit = 10_000): Promise<Set<string>> {
  const seen = new Set<string>();
  let frontier = [id];
  while (frontier.length && seen.size < limit) {
    const parents = await parentsOf(db, s, frontier);
    frontier = [];
    for (const list of parents.values())
      for (const p of list)
        if (!seen.has(p)) {
          seen.add(p);
          frontier.push(p);
        }
  }
  return seen;
}

/** A project's collections with their members and parents. */
export const deleteProjectCollections = (db: Db, s: ProjectScope) =>
  deleteProjectRows(db, ['collection_members', 'collection_parents', 'collections'], s);
