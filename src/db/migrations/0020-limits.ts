/**
 * 0020: rate limits and quotas (issue 18). Frozen (style K7).
 * - `api_keys.limits`: a key's own limits (JSON), null for none.
 * - `usage_counters`: one row per subject (`key:<id>`, `project:<id>`) and window (`m:<minute>`,
 *   `d:<UTC day>`), incremented in one statement (an upsert), so that every replica on one
 *   PostgreSQL counts on the same row; `expires_at` lets the retention sweeper drop old windows.
 */
import type { Kysely } from 'kysely';
import type { DialectName } from '../dialect.ts';

export async function up(db: Kysely<any>, d: DialectName): Promise<void> {
  await db.schema
    .alterTable('api_keys')
    .addColumn('limits', d === 'postgres' ? 'jsonb' : 'text')
    .execute();
  await db.schema
    .createTable('usage_counters')
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('bucket', 'text', (c) => c.notNull())
    .addColumn('requests', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('tokens', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('cost', d === 'postgres' ? 'double precision' : 'real', (c) => c.notNull().defaultTo(0))
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('usage_counters_pk', ['subject', 'bucket'])
    .execute();
  await db.schema.createIndex('usage_counters_expiry').on('usage_counters').columns(['expires_at']).execute();
}
