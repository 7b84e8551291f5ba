/** SQL for the `blobs` table: one row per uploaded blob of a project. Every query is scoped. */
import type { Kysely, Selectable } from 'kysely';
import type { BlobTable, Database } from '../db/schema.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import type { Scope } from '../auth/principal.ts';

export type Db = Kysely<Database>;
export type BlobRow = Selectable<BlobTable>;

const blobsIn = (db: Db, project: string) => db.selectFrom('blobs').where('project_id', '=', project);

const normalise = (r: BlobRow): BlobRow => ({ ...r, size: Number(r.size) });

/** By project only: the signed URL that leads here names the project and is the credential. */
export async function getBlobRow(db: Db, project: string, key: string): Promise<BlobRow | undefined> {
  const r = await blobsIn(db, project).selectAll().where('key', '=', key).executeTakeFirst();
  return r && normalise(r);
}

/**
 * The row, locked until the transaction ends where several writers exist (PostgreSQL), so that
 * "is this blob still referenced?" and "point an object at this blob" cannot interleave.
 */
export async function lockBlobRow(db: Db, d: OrreryDialect, s: Scope, key: string): Promise<BlobRow | undefined> {
  let q = blobsIn(db, s.project).selectAll().where('account_id', '=', s.account).where('key', '=', key);
  if (d.caps.concurrentWriters) q = q.forUpdate();
  const r = await q.executeTakeFirst();
  return r && normalise(r);
}

export async function upsertBlobRow(db: Db, row: BlobRow): Promise<void> {
  await db
    .insertInto('blobs')
    .values(row)
    .onConflict((oc) => oc.columns(['project_id', 'key']).doUpdateSet({
      size: row.size, etag: row.etag, content_type: row.content_type, name: row.name, updated_at: row.updated_at,
    }))
    .execute();
}

export async function deleteBlobRow(db: Db, s: Scope, key: string): Promise<number> {
  const r = await db.deleteFrom('blobs').where('project_id', '=', s.project).where('account_id', '=', s.account).where('key', '=', key).executeTakeFirst();
  return Number(r.numDeletedRows);
}
