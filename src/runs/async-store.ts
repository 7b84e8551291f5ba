/**
 * SQL of the checkpoints of async runs (`async_runs`, 0030; runs/async.ts). A row exists for
 * every run started by POST /execute/async; the run's own row holds its state and outcome.
 */
import { sql, type Kysely, type Selectable } from 'kysely';
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
      started_at: null,
      cancel_reason: null,
    })
    .execute();
}

export const getAsyncRun = (db: Db, runId: string): Promise<AsyncRunRow | undefined> =>
  db.selectFrom('async_runs').selectAll().where('run_id', '=', runId).executeTakeFirst();

/** The checkpoint before a provider call: one more start of it, counted before it begins. */
export async function countCallStart(db: Db, runId: string, seen: number): Promise<boolean> {
  const now = nowIso();
  const r = await db
    .updateTable('async_runs')
    .set({ attempts: seen + 1, updated_at: now, started_at: sql<string>`COALESCE(started_at, ${now})` })
    .where('run_id', '=', runId)
    .where('attempts', '=', seen)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Asks for the run's cancellation: false when the project has no async run of that id. */
export async function requestCancel(db: Db, s: Scope, runId: string, reason: string | null): Promise<boolean> {
  const r = await db
    .updateTable('async_runs')
    .set({ cancel_requested: 1, cancel_reason: reason, updated_at: nowIso() })
    .where('run_id', '=', runId)
    .where('account_id', '=', s.account)
    .where('project_id', '=', s.project)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Whether the run's cancellation was asked, and with which reason. */
export async function cancelRequested(db: Db, runId: string): Promise<{ reason: string | null } | undefined> {
  const r = await db
    .selectFrom('async_runs')
    .select(['cancel_requested', 'cancel_reason'])
    .where('run_id', '=', runId)
    .executeTakeFirst();
  return Number(r?.cancel_requested ?? 0) === 1 ? { reason: r!.cancel_reason } : undefined;
}
