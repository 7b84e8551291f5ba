/**
 * 0007: an object's embeddings live in `vectors` only. Frozen.
 *
 * - `vectors.caller_etag`: the `etag` a caller gave with a vector it set itself (an object's
 *   create or update payload, or `PUT /objects/:id/embeddings/:type`), answered as the
 *   embedding's `etag`; null for vectors Orrery computed, whose `etag` is the source stamp.
 * - `objects.embeddings` is dropped: it held whatever JSON a caller sent, never validated nor
 *   searched, a second answer to "what are this object's embeddings". Nothing had shipped, so
 *   its values are not carried over.
 */
import type { Kysely } from 'kysely';
import type { DialectName } from '../dialect.ts';

export async function up(db: Kysely<any>, _d: DialectName): Promise<void> {
  await db.schema.alterTable('vectors').addColumn('caller_etag', 'text').execute();
  await db.schema.alterTable('objects').dropColumn('embeddings').execute();
}
