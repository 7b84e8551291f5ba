/**
 * 0023: SQLite's read indexes of runs leave out the runs in flight (issue 17). Frozen (style K7).
 *
 * A blocking run's `processing` row went into every index of `runs`, and its end moved it in each
 * one that holds `status`, `updated_at` or a token column, on the run writer thread, for a row
 * that lives a few milliseconds. Partial on `status <> 'processing'`, the six below get a run
 * once, when it ends (or when it is created for streaming, and again when its stream ends).
 * `runs_status` stays whole: it is how a read finds a project's runs in flight
 * (runs/run-arms.ts), and how a project's runs are found to delete them. So does `runs_parent`,
 * which holds only child runs: the analytics of one run find its children through it.
 *
 * SQLite uses a partial index only for a statement whose WHERE holds the index's condition as a
 * term, so every read through these indexes is two arms: the runs not in flight, with that term,
 * and the runs in flight, through `runs_status` (runs/run-arms.ts). PostgreSQL keeps its indexes.
 */
import { sql, type Kysely } from 'kysely';
import type { DialectName } from '../dialect.ts';

const RECENT_COVER =
  'status, model_id, interaction_id, environment_id, finish_reason, execution_time, parent_id, interaction_name, environment_name, cost_total';
const ANALYTICS_COVER =
  'environment_id, interaction_id, status, model_id, token_prompt, token_result, token_total, cost_total, execution_time, environment_name, interaction_name';
const NOT_IN_FLIGHT = `status <> 'processing'`;

/** Each index as migrations 0001, 0003, 0009 and 0016 made it: name and columns. */
const INDEXES: ReadonlyArray<readonly [string, string]> = [
  ['runs_interaction', 'project_id, interaction_id, updated_at DESC'],
  ['runs_model', 'project_id, model_id, updated_at DESC, id DESC'],
  ['runs_environment', 'project_id, environment_id, updated_at DESC, id DESC'],
  ['runs_recent_cover', `project_id, updated_at DESC, id DESC, ${RECENT_COVER}, search_rowid`],
  ['runs_search_cover', `search_rowid, project_id, updated_at, id, ${RECENT_COVER}`],
  ['runs_analytics', `project_id, created_at, ${ANALYTICS_COVER}`],
];

export async function up(db: Kysely<any>, d: DialectName): Promise<void> {
  if (d !== 'sqlite') return;
  for (const [name, columns] of INDEXES) {
    await sql.raw(`DROP INDEX IF EXISTS ${name}`).execute(db);
    await sql.raw(`CREATE INDEX ${name} ON runs (${columns}) WHERE ${NOT_IN_FLIGHT}`).execute(db);
  }
}
