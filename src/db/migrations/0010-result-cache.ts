/**
 * 0010: the result cache of runs (issue 16). Frozen (style K7).
 *
 * - `interactions.cache_policy`: Vertesia's `{type, ttl, varies_on, refresh_probability}` (JSON).
 *   Published versions copy their draft's row, so they carry it too.
 * - `run_cache`: one row per (project, key), the key a hash of what decides the answer
 *   (environment, model, options, rendered prompt, result schema, the `varies_on` fields of the
 *   data); the row holds the answer of the run that filled it. Shared by replicas through the
 *   database; expired rows are ignored and swept, and each project keeps a bounded number.
 */
import type { Kysely } from 'kysely';
import type { DialectName } from '../dialect.ts';

const json = (d: DialectName) => (d === 'postgres' ? 'jsonb' : 'text');

export async function up(db: Kysely<any>, d: DialectName): Promise<void> {
  await db.schema.alterTable('interactions').addColumn('cache_policy', json(d)).execute();
  await db.schema
    .createTable('run_cache')
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('run_id', 'text', (c) => c.notNull())
    .addColumn('result', json(d), (c) => c.notNull())
    .addColumn('finish_reason', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    // ISO time; a row past it is a miss.
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('run_cache_pk', ['project_id', 'key'])
    .execute();
  await db.schema.createIndex('run_cache_age').on('run_cache').columns(['project_id', 'created_at']).execute();
  await db.schema.createIndex('run_cache_expiry').on('run_cache').columns(['expires_at']).execute();
}
