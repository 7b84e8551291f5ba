/**
 * 0013: collections of content objects (issue 24, the official client's `store.collections`).
 * Frozen (style K7).
 *
 * A collection is static (its members are the rows of `collection_members`) or dynamic (its
 * members are the objects matching its stored `query`, so it has no member rows). Collections
 * nest: `collection_parents` links a child to each of its parents (a child may have several).
 * Member and parent rows go with their collection, and member rows with their object
 * (foreign keys, on delete cascade; SQLite runs with foreign_keys on).
 */
import type { Kysely } from 'kysely';
import type { DialectName } from '../dialect.ts';

const json = (d: DialectName) => (d === 'postgres' ? 'jsonb' : 'text');

export async function up(db: Kysely<any>, d: DialectName): Promise<void> {
  await db.schema
    .createTable('collections')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    // active | archived
    .addColumn('status', 'text', (c) => c.notNull())
    // 1: members are the objects matching `query`; 0: members are explicit rows.
    .addColumn('dynamic', 'integer', (c) => c.notNull())
    .addColumn('type_id', 'text')
    .addColumn('query', json(d))
    .addColumn('tags', json(d), (c) => c.notNull())
    .addColumn('properties', json(d), (c) => c.notNull())
    // skip_head_sync, table_layout, allowed_types, shared_properties, sensitivity, compartments.
    .addColumn('doc', json(d), (c) => c.notNull())
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('updated_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('collections_recent')
    .on('collections')
    .columns(['project_id', 'updated_at desc', 'id desc'])
    .execute();
  await db.schema.createIndex('collections_name').on('collections').columns(['project_id', 'name']).execute();

  await db.schema
    .createTable('collection_members')
    .addColumn('collection_id', 'text', (c) => c.notNull().references('collections.id').onDelete('cascade'))
    .addColumn('object_id', 'text', (c) => c.notNull().references('objects.id').onDelete('cascade'))
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('added_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('collection_members_pk', ['collection_id', 'object_id'])
    .execute();
  // The cascade from a deleted object, and "which collections hold this object".
  await db.schema.createIndex('collection_members_object').on('collection_members').columns(['object_id']).execute();

  await db.schema
    .createTable('collection_parents')
    .addColumn('parent_id', 'text', (c) => c.notNull().references('collections.id').onDelete('cascade'))
    .addColumn('child_id', 'text', (c) => c.notNull().references('collections.id').onDelete('cascade'))
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('added_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('collection_parents_pk', ['parent_id', 'child_id'])
    .execute();
  await db.schema.createIndex('collection_parents_child').on('collection_parents').columns(['child_id']).execute();
}
