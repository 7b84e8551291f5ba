/**
 * 0029: datasets (src/datasets), the evaluation loop's inputs. A dataset's items are versioned
 * without copies: an item belongs to the versions from `version_added` until `version_removed`
 * (exclusive; NULL: still in), so a frozen version reads exactly as it was. Items go with their
 * dataset (foreign key, on delete cascade). Frozen (style K7).
 */
import type { Kysely } from 'kysely';
import type { DialectName } from '../dialect.ts';

const json = (d: DialectName) => (d === 'postgres' ? 'jsonb' : 'text');

export async function up(db: Kysely<any>, d: DialectName): Promise<void> {
  await db.schema
    .createTable('datasets')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    // The version items are added to and removed from; frozen_version: the newest one frozen (0: none).
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('frozen_version', 'integer', (c) => c.notNull())
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('updated_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('datasets_recent')
    .on('datasets')
    .columns(['project_id', 'updated_at desc', 'id desc'])
    .execute();
  await db.schema.createIndex('datasets_name').on('datasets').columns(['project_id', 'name']).unique().execute();

  await db.schema
    .createTable('dataset_items')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('dataset_id', 'text', (c) => c.notNull().references('datasets.id').onDelete('cascade'))
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull())
    // Order of addition within the dataset: pages and exports read items in it.
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('version_added', 'integer', (c) => c.notNull())
    .addColumn('version_removed', 'integer')
    .addColumn('data', json(d), (c) => c.notNull())
    .addColumn('expected', json(d))
    .addColumn('metadata', json(d))
    // The run an item was copied from, when it was.
    .addColumn('source_run', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('dataset_items_order')
    .on('dataset_items')
    .columns(['dataset_id', 'position'])
    .unique()
    .execute();
}
