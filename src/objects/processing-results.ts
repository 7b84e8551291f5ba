/**
 * What content processing (src/content) reads and writes of an object: the object as stored, its
 * processing results, written only while its content is still the content that was processed, and
 * the objects whose processing was lost.
 */
import { randomBytes } from 'node:crypto';
import type { Kysely, Updateable } from 'kysely';
import type { Database, ObjectTable } from '../db/schema.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import { nowIso } from '../db/ids.ts';
import type { Scope } from '../auth/principal.ts';
import { getObject, updateObject } from './store.ts';

export { orphanedObjects } from './store.ts';
import type { ObjectRow } from './model.ts';

type Db = Kysely<Database>;

export const loadObject = (db: Db, d: OrreryDialect, s: Scope, id: string): Promise<ObjectRow | undefined> =>
  getObject(db, d, s, id);

/** The content an object had when processing read it: results are written only onto the same. */
export const contentKey = (row: Pick<ObjectRow, 'content'>): string => JSON.stringify(row.content ?? null);

const MAX_CAS = 8;

/**
 * Writes `patch` (with a new record ETag) if the object still has the content `expected`.
 * Answers false when the object is gone or its content changed: a newer job does the work.
 */
export async function writeResults(
  db: Db,
  d: OrreryDialect,
  s: Scope,
  id: string,
  expected: string,
  patch: Updateable<ObjectTable>,
): Promise<boolean> {
  for (let attempt = 0; attempt < MAX_CAS; attempt++) {
    const row = await getObject(db, d, s, id);
    if (!row || contentKey(row) !== expected) return false;
    const ok = await updateObject(db, d, s, id, row.etag, {
      ...patch,
      etag: randomBytes(12).toString('base64url'),
      updated_at: nowIso(),
    });
    if (ok) return true;
  }
  throw new Error(`object ${id} kept changing while processing results were written`);
}
