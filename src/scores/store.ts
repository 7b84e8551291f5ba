/**
 * SQL for scores on runs (migration 0032). The tables are declared here with what this feature
 * reads (style K3). Every query starts from the caller's project. A run's scores keep their
 * history; `latest` marks the newest per run and name, kept so in the transaction that adds or
 * deletes one.
 */
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Scope } from '../auth/principal.ts';
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

/**
 * The latest scores `name` of the project as numbers (booleans as 1 and 0), one row per run
 * (`run_id`, `value`): read from the run_scores_numbers index, for the runs' aggregates to join.
 */
export const latestNumbers = (s: Scope, name: string) =>
  sql<{ run_id: string; value: number }>`SELECT run_scores.run_id,
      CASE WHEN run_scores.kind = 'number' THEN run_scores.num_value WHEN run_scores.text_value = 'true' THEN 1 ELSE 0 END AS value
    FROM run_scores
    WHERE run_scores.project_id = ${s.project} AND run_scores.name = ${name} AND run_scores.latest = 1
      AND run_scores.kind <> 'category'`;

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
