/** 0002: uploaded blobs, object types and content objects. Frozen. */
import type { Kysely } from 'kysely';
import type { DialectName } from '../dialect.ts';

const json = (d: DialectName) => (d === 'postgres' ? 'jsonb' : 'text');

export async function up(db: Kysely<any>, d: DialectName): Promise<void> {
  // Every blob uploaded through a signed URL: what `content.source` may name, and what is
  // deleted when the last object pointing at it goes.
  await db.schema
    .createTable('blobs')
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('size', 'bigint', (c) => c.notNull())
    .addColumn('etag', 'text', (c) => c.notNull())
    .addColumn('content_type', 'text', (c) => c.notNull())
    // The file name given when the upload URL was asked for.
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('blobs_pk', ['project_id', 'key'])
    .execute();

  await db.schema
    .createTable('object_types')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('edit_revision', 'integer', (c) => c.notNull())
    // tags, object_schema, table_layout, is_chunkable, strict_mode, status and the rest.
    .addColumn('doc', json(d), (c) => c.notNull())
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('updated_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('object_types_project_name', ['project_id', 'name'])
    .execute();

  await db.schema
    .createTable('objects')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('type_id', 'text')
    .addColumn('parent_id', 'text')
    .addColumn('location', 'text', (c) => c.notNull())
    .addColumn('external_id', 'text')
    .addColumn('content_source', 'text')
    .addColumn('run_id', 'text')
    .addColumn('content', json(d))
    .addColumn('tags', json(d), (c) => c.notNull())
    .addColumn('properties', json(d), (c) => c.notNull())
    .addColumn('metadata', json(d))
    .addColumn('tokens', json(d))
    // Hidden unless selected with +field.
    .addColumn('text', 'text')
    .addColumn('text_etag', 'text')
    .addColumn('embeddings', json(d))
    .addColumn('parts', json(d))
    .addColumn('transcript', json(d))
    // The record's ETag: changes on every write (GET sends it, PUT if-match compares it).
    .addColumn('etag', 'text', (c) => c.notNull())
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('updated_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  // Listing order (decisions.md: newest updated_at first, ties by id), and each filter with it.
  await db.schema
    .createIndex('objects_recent')
    .on('objects')
    .columns(['project_id', 'updated_at desc', 'id desc'])
    .execute();
  await db.schema
    .createIndex('objects_status')
    .on('objects')
    .columns(['project_id', 'status', 'updated_at desc'])
    .execute();
  await db.schema
    .createIndex('objects_type')
    .on('objects')
    .columns(['project_id', 'type_id', 'updated_at desc'])
    .execute();
  await db.schema
    .createIndex('objects_parent')
    .on('objects')
    .columns(['project_id', 'parent_id', 'updated_at desc'])
    .execute();
  await db.schema
    .createIndex('objects_location')
    .on('objects')
    .columns(['project_id', 'location', 'updated_at desc'])
    .execute();
  await db.schema.createIndex('objects_name').on('objects').columns(['project_id', 'name']).execute();
  await db.schema.createIndex('objects_created').on('objects').columns(['project_id', 'created_at']).execute();
  await db.schema.createIndex('objects_external').on('objects').columns(['project_id', 'external_id']).execute();
  // "Does another object still point at this blob?" on every delete.
  await db.schema.createIndex('objects_source').on('objects').columns(['project_id', 'content_source']).execute();
}
