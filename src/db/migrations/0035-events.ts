/**
 * 0035: the deadline of an async run and webhooks. `async_runs.started_at` is when its provider
 * call first started (its run timeout counts from there, across restarts), `cancel_reason` the
 * reason given with its cancellation. `event_subscriptions`
 * are the project's webhooks (src/events), their signing secret encrypted; `event_deliveries`
 * record each event sent to each target, one row per (event, target): its id is the
 * `webhook-id` of every attempt. Frozen (style K7).
 */
import type { Kysely } from 'kysely';
import type { DialectName } from '../dialect.ts';

const json = (d: DialectName) => (d === 'postgres' ? 'jsonb' : 'text');

export async function up(db: Kysely<any>, d: DialectName): Promise<void> {
  await db.schema.alterTable('async_runs').addColumn('started_at', 'text').execute();
  await db.schema.alterTable('async_runs').addColumn('cancel_reason', 'text').execute();
  await db.schema
    .createTable('event_subscriptions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('filter', json(d), (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('run_as_role', 'text', (c) => c.notNull())
    .addColumn('enabled', 'integer', (c) => c.notNull())
    .addColumn('created_by', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('event_subscriptions_project')
    .on('event_subscriptions')
    .columns(['project_id', 'enabled'])
    .execute();
  await db.schema
    .createTable('event_deliveries')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('target', 'text', (c) => c.notNull())
    .addColumn('subscription_id', 'text')
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('response_status', 'integer')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('delivered_at', 'text')
    .execute();
  await db.schema
    .createIndex('event_deliveries_once')
    .on('event_deliveries')
    .columns(['event_id', 'target'])
    .unique()
    .execute();
  await db.schema
    .createIndex('event_deliveries_project')
    .on('event_deliveries')
    .columns(['project_id', 'created_at'])
    .execute();
}
