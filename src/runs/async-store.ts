/**
 * SQL of the checkpoints of async runs (`async_runs`, 0030; runs/async.ts). A row exists for
 * every run started by POST /execute/async; the run's own row holds its state and outcome.
 */
import type { Kysely, Selectable } from 'kysely';
import type { AsyncRunTable, Database } from '../db/schema.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import { nowIso } from '../db/ids.ts';
import type { Scope } from '../auth/principal.ts';

type Db = Kysely<Database>;
export type AsyncRunRow = Selectable<AsyncRunTable>;

export async function insertAsyncRun(
  db: Db,
  d: OrreryDialect,
  s: Scope,
  runId: string,
  notifyEndpoints: readonly string[],
): Promise<void> {
  const now = nowIso();
  await db
    .insertInto('async_runs')
    .values({
      run_id: runId,
      account_id: s.account,
      project_id: s.project,
      attempts: 0,
      cancel_requested: 0,
      notify_endpoints: notifyEndpoints.length ? d.toJson(notifyEndpoints) : null,
      created_at: now,
      updated_at: now,
    })
    .execute();
}

export const getAsyncRun = (db: Db, runId: string): Promise<AsyncRunRow | undefined> =>
  db.selectFrom('async_runs').selectAll().where('run_id', '=', runId).executeTakeFirst();

/** The checkpoint before a provider call: one more start of it, counted before it begins. */
export async function countCallStart(db: Db, runId: string, seen: number): Promise<boolean> {
  const r = await db
    .updateTable('async_runs')
    .set({ attempts: seen + 1, updated_at: nowIso() })
    .where('run_id', '=', runId)
    .where('attempts', '=', seen)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}
