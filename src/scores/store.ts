/**
 * SQL for scores on runs (migration 0032). The tables are declared here with what this feature
 * reads (style K3). Every query starts from the caller's project. A run's scores keep their
 * history; `latest` marks the newest per run and name, kept so in the transaction that adds or
 * deletes one.
 */
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Scope } from '../auth/principal.ts';
import type { DialectName } from '../db/dialect.ts';
import { jsonSql } from '../db/json-sql.ts';
import type { ProjectScope } from '../db/project-rows.ts';

export type ScoreKind = 'number' | 'boolean' | 'category';
export type ScoreSource = 'api' | 'human' | 'evaluator';

interface ScoreNameTable {
  project_id: string;
  name: string;
  kind: ScoreKind;
  created_at: string;
}

export interface ScoreRow {
  id: string;
  account_id: string;
  project_id: string;
  run_id: string;
  name: string;
  kind: ScoreKind;
  num_value: number | null;
  text_value: string | null;
  comment: string | null;
  source: ScoreSource;
  evaluator_id: string | null;
  latest: number;
  created_by: string;
  created_at: string;
}

export interface ScoresDb {
  score_names: ScoreNameTable;
  run_scores: ScoreRow;
}

export type Db = Kysely<ScoresDb>;
export const scoresOf = (db: object) => db as Db;

/** The kind a name holds in the project: the stored one, or `kind` now that it is the first. */
export async function claimKind(trx: Transaction<ScoresDb>, s: Scope, name: string, kind: ScoreKind, now: string) {
  await trx
    .insertInto('score_names')
    .values({ project_id: s.project, name, kind, created_at: now })
    .onConflict((oc) => oc.columns(['project_id', 'name']).doNothing())
    .execute();
  const row = await trx
    .selectFrom('score_names')
    .select('kind')
    .where('project_id', '=', s.project)
    .where('name', '=', name)
    .executeTakeFirstOrThrow();
  return row.kind;
}

/** Adds a score as the latest of its run and name. */
export async function insertScore(trx: Transaction<ScoresDb>, row: ScoreRow): Promise<void> {
  await trx
    .updateTable('run_scores')
    .set({ latest: 0 })
    .where('run_id', '=', row.run_id)
    .where('name', '=', row.name)
    .where('latest', '=', 1)
    .execute();
  await trx.insertInto('run_scores').values(row).execute();
}

/** Every score of a run, oldest first (ties by id). */
export const scoresOfRun = (db: Db, s: Scope, run: string): Promise<ScoreRow[]> =>
  db
    .selectFrom('run_scores')
    .selectAll()
    .where('run_id', '=', run)
    .where('project_id', '=', s.project)
    .orderBy('created_at')
    .orderBy('id')
    .execute();

/** The latest score per name of each run. */
export const latestOfRuns = (db: Db, s: Scope, runs: readonly string[]): Promise<ScoreRow[]> =>
  runs.length
    ? db
        .selectFrom('run_scores')
        .selectAll()
        .where('run_id', 'in', runs)
        .where('project_id', '=', s.project)
        .where('latest', '=', 1)
        .orderBy('name')
        .execute()
    : Promise.resolve([]);

/** Deletes a score; the next newest of its run and name becomes the latest. Whether it existed. */
export async function deleteScore(trx: Transaction<ScoresDb>, s: Scope, run: string, id: string): Promise<boolean> {
  const row = await trx
    .selectFrom('run_scores')
    .select(['name', 'latest'])
    .where('id', '=', id)
    .where('run_id', '=', run)
    .where('project_id', '=', s.project)
    .executeTakeFirst();
  if (!row) return false;
  await trx.deleteFrom('run_scores').where('id', '=', id).execute();
  if (Number(row.latest) !== 1) return true;
  const next = await trx
    .selectFrom('run_scores')
    .select('id')
    .where('run_id', '=', run)
    .where('name', '=', row.name)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .executeTakeFirst();
  if (next) await trx.updateTable('run_scores').set({ latest: 1 }).where('id', '=', next.id).execute();
  return true;
}

/** A project's scores and score names (inside its deletion); how many went, by table. */
export async function deleteProjectScores(db: Db, s: ProjectScope): Promise<Record<string, number>> {
  const scores = await db.deleteFrom('run_scores').where('project_id', '=', s.project).executeTakeFirst();
  const names = await db.deleteFrom('score_names').where('project_id', '=', s.project).executeTakeFirst();
  return { run_scores: Number(scores.numDeletedRows), score_names: Number(names.numDeletedRows) };
}

/** How many scores a run keeps. */
export async function countOfRun(trx: Transaction<ScoresDb>, run: string): Promise<number> {
  const r = await trx
    .selectFrom('run_scores')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('run_id', '=', run)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

export type ScoreGroup = 'interaction_version' | 'model' | 'day';

export interface ScoreAggregate {
  key: string;
  interaction: string | null;
  version: number | null;
  mean: number;
  min: number;
  max: number;
  count: number;
}

/**
 * Mean, min, max and count of the latest scores `name` (numbers, booleans as 1 and 0) per group
 * of their runs, created in [from, to): one GROUP BY from the run_scores_numbers index joined to
 * the runs by id. Ordered by key.
 */
export async function aggregateScores(
  db: Db,
  d: DialectName,
  s: Scope,
  q: { name: string; group: ScoreGroup; from?: string; to?: string; interaction?: string },
): Promise<ScoreAggregate[]> {
  const version = jsonSql(d).number(sql.ref('runs.doc'), ['interaction', 'version']);
  const key =
    q.group === 'model'
      ? sql`COALESCE(runs.model_id, '')`
      : q.group === 'day'
        ? sql`substr(runs.created_at, 1, 10)`
        : sql`runs.interaction_id`;
  const value = sql`CASE WHEN run_scores.kind = 'number' THEN run_scores.num_value WHEN run_scores.text_value = 'true' THEN 1 ELSE 0 END`;
  const where = [
    sql`run_scores.project_id = ${s.project}`,
    sql`run_scores.name = ${q.name}`,
    sql`run_scores.latest = 1`,
    sql`run_scores.kind <> 'category'`,
    sql`runs.project_id = ${s.project}`,
    ...(q.from ? [sql`runs.created_at >= ${q.from}`] : []),
    ...(q.to ? [sql`runs.created_at < ${q.to}`] : []),
    ...(q.interaction ? [sql`runs.interaction_id = ${q.interaction}`] : []),
  ];
  const byVersion = q.group === 'interaction_version';
  const { rows } = await sql<{ k: string; v: number | null; mean: number; mn: number; mx: number; n: number }>`
    SELECT ${key} AS k, ${byVersion ? version : sql`NULL`} AS v, avg(${value}) AS mean, min(${value}) AS mn,
      max(${value}) AS mx, count(*) AS n
    FROM run_scores JOIN runs ON runs.id = run_scores.run_id
    WHERE ${sql.join(where, sql` AND `)}
    GROUP BY 1, 2 ORDER BY 1, 2`.execute(db);
  return rows.map((r) => {
    const v = r.v === null || r.v === undefined ? null : Number(r.v);
    return {
      key: byVersion ? `${r.k}@${v ?? ''}` : String(r.k),
      interaction: byVersion ? String(r.k) : null,
      version: v,
      mean: Number(r.mean),
      min: Number(r.mn),
      max: Number(r.mx),
      count: Number(r.n),
    };
  });
}

/** The kind a name holds in the project, if any score was given under it. */
export async function kindOfName(db: Db, s: Scope, name: string): Promise<ScoreKind | undefined> {
  const r = await db
    .selectFrom('score_names')
    .select('kind')
    .where('project_id', '=', s.project)
    .where('name', '=', name)
    .executeTakeFirst();
  return r?.kind;
}
