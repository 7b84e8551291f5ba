/**
 * SQL over run_scores that run search puts in its own queries (runs/lucene-sql, runs/search-store),
 * so that the scores feature alone names its table. A run's current score of a name is its row
 * with `latest = 1` (migration 0032); a name holds one kind of value within a project.
 */
import { sql, type Expression, type RawBuilder } from 'kysely';

/** The table, for helpers that select its `run_id` (db/run-search-sql.ts `hasRows`). */
export const SCORES_TABLE = 'run_scores';

/** The columns of a score a condition on `scores.<name>` reads. */
export const SCORE_COLUMNS = {
  kind: sql.ref('run_scores.kind'),
  num: sql.ref('run_scores.num_value'),
  text: sql.ref('run_scores.text_value'),
};

/** A score's value as text (numbers as the database writes them), for a facet of its values. */
export const SCORE_VALUE_TEXT = sql`CASE WHEN run_scores.kind = 'number' THEN CAST(run_scores.num_value AS TEXT) ELSE run_scores.text_value END`;

/**
 * The latest scores `name` meeting `test`, as two FROM clauses: `rows`, every such score of the
 * project (project undefined: any project), walked by the index of its kind by value; `probe`,
 * those of the run `runs.id` (the run_scores_run index), for a probe run by run.
 */
export function latestScoresMeeting(
  project: string | undefined,
  name: string,
  test: RawBuilder<unknown>,
): { rows: RawBuilder<unknown>; probe: RawBuilder<unknown> } {
  const inProject = project === undefined ? sql`TRUE` : sql`run_scores.project_id = ${project}`;
  const latest = sql`run_scores.name = ${name} AND run_scores.latest = 1`;
  return {
    rows: sql`FROM run_scores WHERE ${inProject} AND ${latest} AND (${test})`,
    probe: sql`FROM run_scores WHERE run_scores.run_id = runs.id AND ${latest} AND (${test})`,
  };
}

/**
 * `JOIN run_scores` (or LEFT JOIN) on the latest score `name` of the run whose id is `run`,
 * numbers only when `numbers`.
 */
export function joinLatestScore(
  how: 'inner' | 'left',
  run: Expression<unknown>,
  name: string,
  numbers = false,
): RawBuilder<unknown> {
  const on = sql`run_scores.run_id = ${run} AND run_scores.name = ${name} AND run_scores.latest = 1`;
  const kind = numbers ? sql` AND run_scores.kind = 'number'` : sql``;
  return how === 'left' ? sql`LEFT JOIN run_scores ON ${on}${kind}` : sql`JOIN run_scores ON ${on}${kind}`;
}
