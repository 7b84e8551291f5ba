/**
 * 0015: custom metadata of stored files (issue 24, the official client's
 * `files.setFileMetadata` and the `customMetadata` of `files.getMetadata`). Frozen (style K7).
 * A JSON map of strings, null until set; new bytes at the same key start without it.
 */
import type { Kysely } from 'kysely';
import type { DialectName } from '../dialect.ts';

export async function up(db: Kysely<any>, d: DialectName): Promise<void> {
  await db.schema
    .alterTable('blobs')
    .addColumn('custom_metadata', d === 'postgres' ? 'jsonb' : 'text')
    .execute();
}
