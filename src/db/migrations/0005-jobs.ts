/**
 * 0005: the durable job queue, object renditions and the processing error of an object. Frozen.
 *
 * `jobs`: one row per piece of background work while it is queued or running; a finished job is
 * deleted. `state = 'running'` rows carry a lease (`lease_until`): past it, the job is claimable
 * again, which is how the work of a dead process is picked up. At most one *queued* job per
 * (kind, subject): enqueueing again refreshes it instead of piling up duplicates.
 *
 * `object_renditions`: the image renditions of an object (bytes in blob storage under a key
 * derived from the object); rows go with their object (foreign key, on delete cascade).
 */
import { sql, type Kysely } from 'kysely';
import type { DialectName } from '../dialect.ts';

const json = (d: DialectName) => (d === 'postgres' ? 'jsonb' : 'text');

export async function up(db: Kysely<any>, d: DialectName): Promise<void> {
  await db.schema
    .createTable('jobs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull())
    // What the job works on (an object id): one running job per subject at a time.
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('payload', json(d))
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('max_attempts', 'integer', (c) => c.notNull())
    .addColumn('run_after', 'text', (c) => c.notNull())
    .addColumn('lease_until', 'text')
    .addColumn('lease_owner', 'text')
    .addColumn('lease_token', 'text')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('jobs_due').on('jobs').columns(['state', 'run_after']).execute();
  await db.schema.createIndex('jobs_subject').on('jobs').columns(['subject', 'state']).execute();
  await db.schema
    .createIndex('jobs_queued_once')
    .on('jobs')
    .columns(['kind', 'subject'])
    .unique()
    .where(sql<boolean>`state = 'queued'`)
    .execute();

  await db.schema
    .createTable('object_renditions')
    .addColumn('object_id', 'text', (c) => c.notNull().references('objects.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('format', 'text', (c) => c.notNull())
    .addColumn('max_hw', 'integer', (c) => c.notNull())
    // 'ready' or 'failed' (a rendition asked for that could not be made: asked again, it fails at once).
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('error', 'text')
    // The blob key inside the project's bucket, and what the bytes are.
    .addColumn('blob_key', 'text')
    .addColumn('content_type', 'text')
    .addColumn('width', 'integer')
    .addColumn('height', 'integer')
    .addColumn('size', 'bigint')
    .addColumn('etag', 'text')
    // The content ETag the rendition was made from: one made from older content is never answered.
    .addColumn('source_etag', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('object_renditions_pk', ['object_id', 'name'])
    .execute();

  // Why processing failed: {code, message, step} (decisions.md), kept with the intact object.
  await db.schema.alterTable('objects').addColumn('error', json(d)).execute();
  // Objects whose processing may have been lost (a crash between commit and enqueue): found by
  // the recovery sweep without scanning every object.
  await db.schema
    .createIndex('objects_pending')
    .on('objects')
    .columns(['status', 'updated_at'])
    .where(sql<boolean>`status IN ('created', 'processing') AND content_source IS NOT NULL`)
    .execute();
}
