/**
 * 0022: import links (issue 21). Frozen (style K7). `orrery import` keeps, for every copied thing,
 * where it came from: (project, kind, source server, source id) → the copy's id, with the
 * source's `updated_at` (or content etag) when it was copied, so a second import skips what is
 * unchanged and an interrupted one continues where it stopped.
 */
import type { Kysely } from 'kysely';
import type { DialectName } from '../dialect.ts';

export async function up(db: Kysely<any>, _d: DialectName): Promise<void> {
  await db.schema
    .createTable('import_links')
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('source_id', 'text', (c) => c.notNull())
    .addColumn('target_id', 'text', (c) => c.notNull())
    .addColumn('source_version', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('import_links_pk', ['project_id', 'source', 'kind', 'source_id'])
    .execute();
}
