/**
 * SQL for content objects. Every query starts from the caller's project (style D5); JSON
 * columns are encoded and decoded here and nowhere else, so services hold plain values.
 * Hidden fields (text, embeddings, parts, transcript) are read only when asked for.
 */
import { sql, type Kysely, type SelectExpression, type Updateable } from 'kysely';
import type { Database, ObjectTable } from '../db/schema.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import type { Scope } from '../auth/principal.ts';
import { IN_LIST_CHUNK } from '../db/in-list.ts';
import { HIDDEN_COLUMNS, OBJECT_JSON_COLUMNS, type HiddenField, type ObjectRow } from './model.ts';
import { deleteProjectRows, type ProjectScope } from '../db/project-rows.ts';
import { hasJob } from '../jobs/reads.ts';

export type Db = Kysely<Database>;

/** Every column except the hidden ones. */
const VISIBLE_COLUMNS = [
  'id',
  'account_id',
  'project_id',
  'name',
  'description',
  'status',
  'type_id',
  'parent_id',
  'location',
  'external_id',
  'content_source',
  'run_id',
  'content',
  'tags',
  'properties',
  'metadata',
  'tokens',
  'error',
  'etag',
  'created_by',
  'updated_by',
  'created_at',
  'updated_at',
  'revision_root',
  'revision_parent',
  'revision_head',
  'revision_label',
  'expires_at',
] as const satisfies readonly (keyof ObjectTable)[];

export const columnsFor = (hidden: ReadonlySet<HiddenField>): SelectExpression<Database, 'objects'>[] => [
  ...VISIBLE_COLUMNS.map((c) => `objects.${c}` as const),
  ...[...hidden].flatMap((h) => HIDDEN_COLUMNS[h]).map((c) => `objects.${c}` as const),
];

export const objectsIn = (db: Db, s: Scope) =>
  db.selectFrom('objects').where('objects.account_id', '=', s.account).where('objects.project_id', '=', s.project);

function encodeObject<T extends Partial<ObjectRow>>(d: OrreryDialect, row: T): T {
  const out = { ...row } as Record<string, unknown>;
  for (const c of OBJECT_JSON_COLUMNS) if (c in out) out[c] = d.toJson(out[c]);
  return out as T;
}

export function decodeObject(d: OrreryDialect, row: Record<string, unknown>): ObjectRow {
  const out = { ...row };
  for (const c of OBJECT_JSON_COLUMNS) if (c in out) out[c] = d.fromJson(out[c]);
  return out as unknown as ObjectRow;
}

export async function getObject(
  db: Db,
  d: OrreryDialect,
  s: Scope,
  id: string,
  hidden: ReadonlySet<HiddenField> = new Set(),
): Promise<ObjectRow | undefined> {
  const row = await objectsIn(db, s).select(columnsFor(hidden)).where('objects.id', '=', id).executeTakeFirst();
  return row && decodeObject(d, row);
}

/** The row with every column (for a replace or an update, which rewrite hidden fields too). */
export async function getWholeObject(db: Db, d: OrreryDialect, s: Scope, id: string): Promise<ObjectRow | undefined> {
  const row = await objectsIn(db, s).selectAll().where('objects.id', '=', id).executeTakeFirst();
  return row && decodeObject(d, row);
}

export async function insertObject(db: Db, d: OrreryDialect, row: ObjectRow): Promise<void> {
  await db.insertInto('objects').values(encodeObject(d, row)).execute();
}

/** Writes `patch` if the record still has `etag` (a compare-and-set): false when it changed or is gone. */
export async function updateObject(
  db: Db,
  d: OrreryDialect,
  s: Scope,
  id: string,
  etag: string,
  patch: Updateable<ObjectTable>,
): Promise<boolean> {
  const r = await db
    .updateTable('objects')
    .set(encodeObject(d, patch as Partial<ObjectRow>))
    .where('account_id', '=', s.account)
    .where('project_id', '=', s.project)
    .where('id', '=', id)
    .where('etag', '=', etag)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

export async function deleteObject(db: Db, s: Scope, id: string): Promise<number> {
  const r = await db
    .deleteFrom('objects')
    .where('account_id', '=', s.account)
    .where('project_id', '=', s.project)
    .where('id', '=', id)
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}

/**
 * Children of a deleted object are detached (their `parent` becomes null, a new version), not
 * deleted: a parent is a grouping, and deleting content must be asked for object by object.
 */
export async function detachChildren(
  db: Db,
  s: Scope,
  parentId: string,
  version: { etag: string; updated_at: string; updated_by: string },
): Promise<number> {
  const r = await db
    .updateTable('objects')
    .set({ parent_id: null, ...version })
    .where('account_id', '=', s.account)
    .where('project_id', '=', s.project)
    .where('parent_id', '=', parentId)
    .executeTakeFirst();
  return Number(r.numUpdatedRows);
}

/** The revisions of the history that starts at `root`, newest first. */
export async function revisionsOf(
  db: Db,
  d: OrreryDialect,
  s: Scope,
  root: string,
  limit: number,
): Promise<ObjectRow[]> {
  const rows = await objectsIn(db, s)
    .select(columnsFor(new Set()))
    .where('objects.revision_root', '=', root)
    .orderBy('objects.created_at', 'desc')
    .orderBy('objects.id', 'desc')
    .limit(limit)
    .execute();
  return rows.map((r) => decodeObject(d, r));
}

/** The id of the head of the history that starts at `root`. */
export async function headOf(db: Db, s: Scope, root: string): Promise<string | undefined> {
  const r = await objectsIn(db, s)
    .select('objects.id')
    .where('objects.revision_root', '=', root)
    .where('objects.revision_head', '=', 1)
    .executeTakeFirst();
  return r?.id;
}

/**
 * After the head of a history was deleted, its newest remaining revision becomes the head (a
 * new version of that record), so that the history stays visible in listings.
 */
export async function promoteHead(db: Db, s: Scope, root: string, etag: string): Promise<void> {
  if (await headOf(db, s, root)) return;
  const newest = await objectsIn(db, s)
    .select('objects.id')
    .where('objects.revision_root', '=', root)
    .orderBy('objects.created_at', 'desc')
    .orderBy('objects.id', 'desc')
    .limit(1)
    .executeTakeFirst();
  if (!newest) return;
  await db
    .updateTable('objects')
    .set({ revision_head: 1, etag })
    .where('account_id', '=', s.account)
    .where('project_id', '=', s.project)
    .where('id', '=', newest.id)
    .execute();
}

/** How many objects of the project point at the storage URI `source`. */
export async function countBySource(db: Db, s: Scope, source: string): Promise<number> {
  const r = await objectsIn(db, s)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('objects.content_source', '=', source)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/** Up to `limit` objects of any project whose ttl passed by `at` (ISO), the soonest expired first. */
export const expiredObjects = (db: Db, at: string, limit: number) =>
  db
    .selectFrom('objects')
    .select(['id', 'account_id', 'project_id'])
    .where('expires_at', 'is not', null)
    .where('expires_at', '<=', at)
    .orderBy('expires_at')
    .limit(limit)
    .execute();

/** The columns of an object that its embeddings are made from. */
const EMBEDDED_COLUMNS = ['id', 'name', 'description', 'text', 'properties', 'status', 'content_source'] as const;
const embeddedRow = <R extends { properties: unknown }>(d: OrreryDialect, row: R) => ({
  ...row,
  properties: d.fromJson<Record<string, unknown> | null>(row.properties),
});

/** An object of the project as its embeddings read it, or undefined. */
export async function embeddedObject(db: Db, d: OrreryDialect, s: Scope, id: string) {
  const row = await objectsIn(db, s)
    .select([...EMBEDDED_COLUMNS])
    .where('objects.id', '=', id)
    .executeTakeFirst();
  return row && embeddedRow(d, row);
}

/** A page of the project's objects, as their embeddings read them, in id order after `after`. */
export async function embeddedObjects(db: Db, d: OrreryDialect, s: Scope, after: string | null, limit: number) {
  let q = objectsIn(db, s).select([...EMBEDDED_COLUMNS]);
  if (after !== null) q = q.where('objects.id', '>', after);
  return (await q.orderBy('objects.id').limit(limit).execute()).map((row) => embeddedRow(d, row));
}

/** How many objects the project holds. */
export async function countObjects(db: Db, s: Scope): Promise<number> {
  const r = await objectsIn(db, s)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/** Whether an object of the project points at `source` (content_source). */
export async function contentInUse(db: Db, s: Scope, source: string): Promise<boolean> {
  const r = await objectsIn(db, s)
    .select('objects.id')
    .where('objects.content_source', '=', source)
    .limit(1)
    .executeTakeFirst();
  return r !== undefined;
}

export async function objectExists(db: Db, s: Scope, id: string): Promise<boolean> {
  return (await objectsIn(db, s).select('objects.id').where('objects.id', '=', id).executeTakeFirst()) !== undefined;
}

/** Names of the given objects (for `parent: {id, name}` in list items). */
/** The objects among `ids` of the project, each with its type id (null: untyped). */
export async function typesOfObjects(db: Db, s: Scope, ids: readonly string[]): Promise<Map<string, string | null>> {
  const found = new Map<string, string | null>();
  for (let i = 0; i < ids.length; i += IN_LIST_CHUNK) {
    const rows = await db
      .selectFrom('objects')
      .select(['objects.id', 'objects.type_id'])
      .where('objects.account_id', '=', s.account)
      .where('objects.project_id', '=', s.project)
      .where('objects.id', 'in', ids.slice(i, i + IN_LIST_CHUNK))
      .execute();
    for (const r of rows) found.set(r.id, r.type_id);
  }
  return found;
}

export async function objectNames(db: Db, s: Scope, ids: readonly string[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (let i = 0; i < ids.length; i += IN_LIST_CHUNK) {
    const rows = await objectsIn(db, s)
      .select(['objects.id', 'objects.name'])
      .where('objects.id', 'in', ids.slice(i, i + IN_LIST_CHUNK))
      .execute();
    for (const r of rows) out.set(r.id, r.name);
  }
  return out;
}

export async function countByType(db: Db, s: Scope, typeId: string): Promise<number> {
  const r = await objectsIn(db, s)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('objects.type_id', '=', typeId)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/** A project's objects and its object types. */
export const deleteProjectObjects = (db: Db, s: ProjectScope) => deleteProjectRows(db, ['objects', 'object_types'], s);

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
    // The queue's table is the jobs feature's: it writes the condition.
    .where((eb) => eb.not(hasJob('o.id')))
    .limit(limit)
    .execute();
  return rows.map((r) => ({ id: r.id, scope: { account: r.account_id, project: r.project_id } }));
}
