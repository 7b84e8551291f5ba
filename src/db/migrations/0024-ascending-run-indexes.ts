/**
 * 0024: SQLite's indexes of runs keyed in ascending order (issue 17). Frozen (style K7).
 *
 * Six indexes held `updated_at DESC` (and `id DESC`), for the newest-first listing. In SQLite a
 * descending key is stored in descending order, so every new run, the newest, went into the
 * leftmost leaf of each: splits there leave half-empty pages behind, and a commit of a few runs
 * dirtied 2.3-3.1 pages of each such index instead of about one (counted in the WAL's frames).
 * SQLite walks an index backwards as cheaply as forwards, so `ORDER BY updated_at DESC, id DESC`
 * reads these ascending keys from their end, with the same plans. A run's two writes cost SQLite
 * 81-84 instead of 89-93 µs, and the file grows 12 % less (bench/README.md, issue 17, fifteenth pass).
 *
 * Same names, columns and conditions (0001, 0003, 0009, 0023), only the direction; rebuilding
 * them takes seconds per hundred thousand runs. PostgreSQL keeps its indexes.
 */
import { sql, type Kysely } from 'kysely';
import type { DialectName } from '../dialect.ts';

const RECENT_COVER =
  'status, model_id, interaction_id, environment_id, finish_reason, execution_time, parent_id, interaction_name, environment_name, cost_total';
const NOT_IN_FLIGHT = `status <> 'processing'`;

/** Each index: name, columns, and the condition of a partial one. */
const INDEXES: ReadonlyArray<readonly [string, string, string?]> = [
  ['runs_status', 'project_id, status, updated_at'],
  ['runs_parent', 'project_id, parent_id, updated_at', 'parent_id IS NOT NULL'],
  ['runs_interaction', 'project_id, interaction_id, updated_at', NOT_IN_FLIGHT],
  ['runs_model', 'project_id, model_id, updated_at, id', NOT_IN_FLIGHT],
  ['runs_environment', 'project_id, environment_id, updated_at, id', NOT_IN_FLIGHT],
  ['runs_recent_cover', `project_id, updated_at, id, ${RECENT_COVER}, search_rowid`, NOT_IN_FLIGHT],
];

export async function up(db: Kysely<any>, d: DialectName): Promise<void> {
  if (d !== 'sqlite') return;
  for (const [name, columns, where] of INDEXES) {
    await sql.raw(`DROP INDEX IF EXISTS ${name}`).execute(db);
    await sql.raw(`CREATE INDEX ${name} ON runs (${columns})${where ? ` WHERE ${where}` : ''}`).execute(db);
  }
}
