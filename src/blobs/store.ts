/** SQL for the `blobs` table: one row per uploaded blob of a project. Every query is scoped. */
import type { Kysely, Selectable } from 'kysely';
import type { BlobTable, Database } from '../db/schema.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import type { Scope } from '../auth/principal.ts';
import { setOwn } from '../util/own.ts';
import { deleteProjectRows, type ProjectScope } from '../db/project-rows.ts';

export type Db = Kysely<Database>;
/** A blob's row; its custom metadata is read and written apart (customMetadataOf, mergeCustomMetadata). */
export type BlobRow = Omit<Selectable<BlobTable>, 'custom_metadata'>;

const blobsIn = (db: Db, project: string) => db.selectFrom('blobs').where('project_id', '=', project);

const normalise = ({ custom_metadata: _m, ...r }: Selectable<BlobTable>): BlobRow => ({ ...r, size: Number(r.size) });

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
    .onConflict((oc) =>
      oc.columns(['project_id', 'key']).doUpdateSet({
        // New bytes at a key start without the old ones' custom metadata.
        size: row.size,
        etag: row.etag,
        content_type: row.content_type,
        name: row.name,
        updated_at: row.updated_at,
        custom_metadata: null,
      }),
    )
    .execute();
}

export async function deleteBlobRow(db: Db, s: Scope, key: string): Promise<number> {
  const r = await db
    .deleteFrom('blobs')
    .where('project_id', '=', s.project)
    .where('account_id', '=', s.account)
    .where('key', '=', key)
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}

/** The custom metadata of a blob (`files.setFileMetadata`), or undefined when none was set. */
export async function customMetadataOf(
  db: Db,
  d: OrreryDialect,
  s: Scope,
  key: string,
): Promise<Record<string, string> | undefined> {
  const r = await blobsIn(db, s.project)
    .select('custom_metadata')
    .where('account_id', '=', s.account)
    .where('key', '=', key)
    .executeTakeFirst();
  const value = r ? d.fromJson(r.custom_metadata) : null;
  return value && typeof value === 'object' ? (value as Record<string, string>) : undefined;
}

/**
 * Merges `changes` into the blob's custom metadata in one transaction (a key set to null is
 * removed), checking the result with `check` before it is written; answers the merged map.
 */
export async function mergeCustomMetadata(
  db: Db,
  d: OrreryDialect,
  s: Scope,
  key: string,
  changes: Record<string, string | null>,
  check: (merged: Record<string, string>) => void,
): Promise<Record<string, string> | undefined> {
  return db.transaction().execute(async (trx) => {
    if (!(await lockBlobRow(trx, d, s, key))) return undefined;
    const merged: Record<string, string> = { ...((await customMetadataOf(trx, d, s, key)) ?? {}) };
    for (const [k, v] of Object.entries(changes)) {
      if (v === null) delete merged[k];
      else setOwn(merged, k, v);
    }
    check(merged);
    await trx
      .updateTable('blobs')
      .set({ custom_metadata: Object.keys(merged).length ? d.toJson(merged) : null })
      .where('project_id', '=', s.project)
      .where('account_id', '=', s.account)
      .where('key', '=', key)
      .execute();
    return merged;
  });
}

/** A project's blob rows (the bytes go after the commit: BlobService.purgeProject). */
export const deleteProjectBlobs = (db: Db, s: ProjectScope) => deleteProjectRows(db, ['blobs'], s);
