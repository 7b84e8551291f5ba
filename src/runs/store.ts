/** SQL for runs. Every query starts from the caller's project (style D5). */
import type { ExpressionBuilder, Kysely, Updateable } from 'kysely';
import { deleteProjectRows } from '../db/project-rows.ts';
import { deleteFullTextRows } from '../db/full-text-rows.ts';
import type { Database, RunTable } from '../db/schema.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import type { Scope } from '../auth/principal.ts';
import type { RunRow } from './model.ts';
import {
  prepareInsert,
  prepareUpdate,
  writeInsert,
  writeUpdate,
  type PrepareInsertOptions,
  type PreparedInsert,
  type PreparedUpdate,
} from './search-index.ts';

export type Db = Kysely<Database>;

/** The JSON columns of a run are encoded here and nowhere else; services hold plain values. */
export const encodeRun = <T extends Partial<RunRow>>(d: OrreryDialect, row: T): T => ({
  ...row,
  ...('tags' in row ? { tags: d.toJson(row.tags) } : {}),
  ...('doc' in row ? { doc: d.toJson(row.doc) } : {}),
});

export const decodeRun = (d: OrreryDialect, row: RunRow): RunRow => ({
  ...row,
  tags: d.fromJson(row.tags),
  doc: d.fromJson(row.doc),
});

const runsIn = (db: Db, s: Scope) =>
  db.selectFrom('runs').where('runs.account_id', '=', s.account).where('runs.project_id', '=', s.project);

/**
 * A run write with everything computed but the SQL (encoded columns, search data): prepared by
 * the caller, executed by whoever holds the connection (the run writer's thread on SQLite).
 */
export type PreparedRunWrite =
  | { insert: PreparedInsert }
  | { update: PreparedUpdate }
  | { patch: { id: string; set: Record<string, unknown>; fromStatus?: string } };

export const prepareRunInsert = (
  d: OrreryDialect,
  row: RunRow,
  tags: readonly string[],
  options?: PrepareInsertOptions,
): PreparedRunWrite => ({ insert: prepareInsert(d, [{ row, tags }], (r) => encodeRun(d, r), options) });

/** With `fromStatus`, the update applies only if the run is still in that status (a claim). */
export function prepareRunUpdate(
  d: OrreryDialect,
  id: string,
  patch: Updateable<RunTable>,
  fromStatus?: string,
): PreparedRunWrite {
  const set = encodeRun(d, patch as Partial<RunRow>);
  // A new document means new search data, written in the same transaction.
  if (patch.doc !== undefined) return { update: prepareUpdate(d, id, set, patch.doc, fromStatus) };
  return { patch: { id, set, ...(fromStatus !== undefined ? { fromStatus } : {}) } };
}

/** Executes a prepared write, inside the caller's transaction when `db` is one; false when no row matched. */
export async function applyRunWrite(db: Db, d: OrreryDialect, w: PreparedRunWrite): Promise<boolean> {
  if ('insert' in w) {
    await writeInsert(db, d, w.insert);
    return true;
  }
  if ('update' in w) return writeUpdate(db, d, w.update);
  let q = db.updateTable('runs').set(w.patch.set).where('id', '=', w.patch.id);
  if (w.patch.fromStatus) q = q.where('status', '=', w.patch.fromStatus);
  const r = await q.executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** Inserts a run, its tags and its search data (runs/search-index.ts). */
export async function insertRun(db: Db, d: OrreryDialect, row: RunRow, tags: readonly string[]): Promise<void> {
  await applyRunWrite(db, d, prepareRunInsert(d, row, tags));
}

/** Whether a run with this id exists, in any project. */
export async function runExists(db: Db, id: string): Promise<boolean> {
  return (await db.selectFrom('runs').select('id').where('id', '=', id).executeTakeFirst()) !== undefined;
}

export async function getRun(db: Db, d: OrreryDialect, s: Scope, id: string): Promise<RunRow | undefined> {
  const row = await runsIn(db, s).selectAll().where('id', '=', id).executeTakeFirst();
  return row && decodeRun(d, row);
}

/** Update a run; with `fromStatus`, only if it is still in that status (a claim). */
export const updateRun = (
  db: Db,
  d: OrreryDialect,
  id: string,
  patch: Updateable<RunTable>,
  fromStatus?: string,
): Promise<boolean> => applyRunWrite(db, d, prepareRunUpdate(d, id, patch, fromStatus));

/**
 * Not a run of POST /execute/async: its durable job executes it and takes it over when its process
 * dies (runs/async.ts), so the sweeps of streamed and lost runs leave it alone.
 */
const notAsync = (eb: ExpressionBuilder<Database, 'runs'>) =>
  eb.not(
    eb.exists(eb.selectFrom('async_runs').select('async_runs.run_id').whereRef('async_runs.run_id', '=', 'runs.id')),
  );

/** Runs created for streaming that nobody streamed before `before` (any project). */
export async function staleCreatedRuns(db: Db, d: OrreryDialect, before: string, limit = 500): Promise<RunRow[]> {
  const rows = await db
    .selectFrom('runs')
    .selectAll()
    .where('status', '=', 'created')
    .where('created_at', '<', before)
    .where(notAsync)
    .limit(limit)
    .execute();
  return rows.map((r) => decodeRun(d, r));
}

/** `processing` runs whose executor is not among the live replicas (any project). */
export async function runsExecutedBy(db: Db, d: OrreryDialect, alive: Set<string>, limit = 500): Promise<RunRow[]> {
  let q = db.selectFrom('runs').selectAll().where('status', '=', 'processing').where(notAsync);
  if (alive.size) q = q.where((eb) => eb.or([eb('executor', 'is', null), eb('executor', 'not in', [...alive])]));
  const rows = await q.limit(limit).execute();
  return rows.map((r) => decodeRun(d, r));
}

/**
 * `processing` runs that this replica is named as executing, last updated before `before` (any
 * project), oldest first: runs in flight are recent, so they never crowd an orphan out of the page.
 */
export async function runsOfExecutor(
  db: Db,
  d: OrreryDialect,
  executor: string,
  before: string,
  limit = 500,
): Promise<RunRow[]> {
  const rows = await db
    .selectFrom('runs')
    .selectAll()
    .where('status', '=', 'processing')
    .where('executor', '=', executor)
    .where('updated_at', '<', before)
    .where(notAsync)
    .orderBy('updated_at')
    .limit(limit)
    .execute();
  return rows.map((r) => decodeRun(d, r));
}

export const insertChunk = (db: Db, runId: string, seq: number, text: string) =>
  db.insertInto('run_chunks').values({ run_id: runId, seq, text }).execute();

/** Chunks of runs that ended before `before`. */
export const deleteEndedChunks = (db: Db, before: string) =>
  db
    .deleteFrom('run_chunks')
    .where('run_id', 'in', (eb) =>
      eb
        .selectFrom('runs')
        .select('id')
        .where('status', 'in', ['completed', 'failed'])
        .where('updated_at', '<', before),
    )
    .execute();

export const chunksAfter = (db: Db, runId: string, seq: number) =>
  db
    .selectFrom('run_chunks')
    .select(['seq', 'text'])
    .where('run_id', '=', runId)
    .where('seq', '>', seq)
    .orderBy('seq')
    .execute();

/** A project's runs and what hangs off them by run id (tags, chunks, SQLite's full-text rows), and its cached results. */
export async function deleteProjectRuns(db: Db, d: OrreryDialect, s: Scope): Promise<Record<string, number>> {
  const runIds = db
    .selectFrom('runs')
    .select('runs.id')
    .where('runs.project_id', '=', s.project)
    .where('runs.account_id', '=', s.account);
  const counts: Record<string, number> = {
    run_tags: Number((await db.deleteFrom('run_tags').where('run_id', 'in', runIds).executeTakeFirst()).numDeletedRows),
    run_chunks: Number(
      (await db.deleteFrom('run_chunks').where('run_id', 'in', runIds).executeTakeFirst()).numDeletedRows,
    ),
  };
  // Where the full text is beside the row (keyed by search_rowid) its rows go first; a column goes with the row.
  await deleteFullTextRows(
    db,
    d,
    'runs_fts',
    db
      .selectFrom('runs')
      .select('search_rowid')
      .where('project_id', '=', s.project)
      .where('account_id', '=', s.account)
      .where('search_rowid', 'is not', null),
  );
  return { ...counts, ...(await deleteProjectRows(db, ['async_runs', 'run_cache', 'runs'], s)) };
}
