/**
 * 0006: embeddings. Frozen.
 *
 * `vectors`: one row per (project, owner, type): an object's `text`, `image` or `properties`
 * embedding, or a run's `input` or `result` embedding. Each row records the model and the
 * dimensions that made it, the ETag of its source (a hash of the text it was computed from, so a
 * change is detected without recomputing), and the vector itself as little-endian float32 bytes
 * (BLOB on SQLite, bytea on PostgreSQL), L2-normalised. The database is the source of truth; the
 * similarity index (src/embeddings/vector-index.ts) is built from it in memory. No foreign key:
 * owners are objects or runs, and the services delete an object's vectors with the object.
 */
import type { Kysely } from 'kysely';
import type { DialectName } from '../dialect.ts';

export async function up(db: Kysely<any>, d: DialectName): Promise<void> {
  await db.schema
    .createTable('vectors')
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('owner_kind', 'text', (c) => c.notNull())
    .addColumn('owner_id', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('model', 'text', (c) => c.notNull())
    .addColumn('dimensions', 'integer', (c) => c.notNull())
    .addColumn('etag', 'text', (c) => c.notNull())
    .addColumn('vector', d === 'postgres' ? 'bytea' : 'blob', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('vectors_pk', ['project_id', 'owner_kind', 'owner_id', 'type'])
    .execute();
  // Loading one index partition (project, kind, type, model) in owner order, a page at a time.
  await db.schema
    .createIndex('vectors_partition')
    .on('vectors')
    .columns(['project_id', 'owner_kind', 'type', 'model', 'owner_id'])
    .execute();
}
