/**
 * 0018: the audit trail (issue 18). Frozen (style K7). One row per management change (written
 * in the change's own transaction) and per token issued; runs are their own record.
 * `details`: `{changes: {field: {before, after}}, ip, …}` as JSON, secrets redacted before.
 */
import type { Kysely } from 'kysely';
import type { DialectName } from '../dialect.ts';

export async function up(db: Kysely<any>, d: DialectName): Promise<void> {
  await db.schema
    .createTable('audit_events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text')
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('resource_type', 'text', (c) => c.notNull())
    .addColumn('resource_id', 'text', (c) => c.notNull())
    .addColumn('event_category', 'text', (c) => c.notNull())
    .addColumn('principal_type', 'text', (c) => c.notNull())
    .addColumn('principal_id', 'text', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('request_id', 'text')
    .addColumn('ip', 'text')
    .addColumn('details', d === 'postgres' ? 'jsonb' : 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  // Newest first per project (the list and the aggregation's range), and by resource.
  await db.schema
    .createIndex('audit_events_recent')
    .on('audit_events')
    .columns(['account_id', 'project_id', 'created_at', 'id'])
    .execute();
  await db.schema
    .createIndex('audit_events_resource')
    .on('audit_events')
    .columns(['account_id', 'resource_type', 'resource_id'])
    .execute();
}
