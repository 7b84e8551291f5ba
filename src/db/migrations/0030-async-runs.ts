/**
 * 0030: `async_runs`, one row per run started by POST /execute/async (runs/async.ts): the run
 * is executed by a durable job, not by a request or a stream subscriber. The row is the run's
 * checkpoint: how many times its provider call was started (`attempts`; a call in flight at a
 * crash runs at most twice), whether its cancellation was asked, and the endpoints to notify when
 * it ends. Its id is also the run's workflow run id (`workflow_run_ids` in a search). Frozen (style K7).
 */
import type { Kysely } from 'kysely';
import type { DialectName } from '../dialect.ts';

const json = (d: DialectName) => (d === 'postgres' ? 'jsonb' : 'text');

export async function up(db: Kysely<any>, d: DialectName): Promise<void> {
  await db.schema
    .createTable('async_runs')
    .addColumn('run_id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('cancel_requested', 'integer', (c) => c.notNull())
    .addColumn('notify_endpoints', json(d))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('async_runs_project').on('async_runs').columns(['project_id']).execute();
}
