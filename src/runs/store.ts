/** SQL for runs. Every query starts from the caller's project (style D5). */
import type { Kysely, Updateable } from 'kysely';
import type { Database, RunTable } from '../db/schema.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import type { Scope } from '../auth/principal.ts';
import type { RunRow } from './model.ts';

export type Db = Kysely<Database>;

/** The JSON columns of a run are encoded here and nowhere else; services hold plain values. */
export const encodeRun = <T extends Partial<RunRow>>(d: OrreryDialect, row: T): T => ({
  ...row,
  ...('tags' in row ? { tags: d.toJson(row.tags) } : {}),
  ...('doc' in row ? { doc: d.toJson(row.doc) } : {}),
});

export const decodeRun = (d: OrreryDialect, row: RunRow): RunRow => ({ ...row, tags: d.fromJson(row.tags), doc: d.fromJson(row.doc) });

export const runsIn = (db: Db, s: Scope) =>
  db.selectFrom('runs').where('runs.account_id', '=', s.account).where('runs.project_id', '=', s.project);

/** Inserts a run and its tags; inside the caller's transaction when `db` is one (the run writer's batch). */
export async function insertRun(db: Db, d: OrreryDialect, row: RunRow, tags: readonly string[]): Promise<void> {
  const write = async (trx: Db) => {
    await trx.insertInto('runs').values(encodeRun(d, row)).execute();
    if (tags.length) await trx.insertInto('run_tags').values(tags.map((tag) => ({ run_id: row.id, tag }))).execute();
  };
  if (db.isTransaction) await write(db);
  else await db.transaction().execute(write);
}

export async function getRun(db: Db, d: OrreryDialect, s: Scope, id: string): Promise<RunRow | undefined> {
  const row = await runsIn(db, s).selectAll().where('id', '=', id).executeTakeFirst();
  return row && decodeRun(d, row);
}

/** Update a run; with `fromStatus`, only if it is still in that status (a claim). */
export async function updateRun(db: Db, d: OrreryDialect, id: string, patch: Updateable<RunTable>, fromStatus?: string): Promise<boolean> {
  let q = db.updateTable('runs').set(encodeRun(d, patch as Partial<RunRow>)).where('id', '=', id);
  if (fromStatus) q = q.where('status', '=', fromStatus);
  const r = await q.executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** Runs created for streaming that nobody streamed before `before` (any project). */
export async function staleCreatedRuns(db: Db, d: OrreryDialect, before: string, limit = 500): Promise<RunRow[]> {
  const rows = await db.selectFrom('runs').selectAll().where('status', '=', 'created').where('created_at', '<', before).limit(limit).execute();
  return rows.map((r) => decodeRun(d, r));
}
