/**
 * 0016: run analytics (issue 18, point 5). Frozen (style K7).
 *
 * The usage views aggregate the runs of a project created in a range (`created_at`), grouped by
 * environment, interaction, status, model and time bucket, summing tokens, cost and duration.
 * No index had `created_at` after the project: SQLite walked every run of the project through a
 * project-first index (`runs_environment`, `runs_model`) or scanned the table, reading each wide
 * row for `created_at` and the token columns, and PostgreSQL scanned the table (EXPLAIN in bench/README.md, "Run analytics and export"). This index puts the
 * range first after the project and carries every column the aggregates read, so a summary,
 * a time series or a cost breakdown is a range scan of the index alone.
 */
import { sql, type Kysely } from 'kysely';
import type { DialectName } from '../dialect.ts';

const COVER =
  'environment_id, interaction_id, status, model_id, token_prompt, token_result, token_total, cost_total, execution_time, environment_name, interaction_name';

export async function up(db: Kysely<any>, d: DialectName): Promise<void> {
  if (d === 'sqlite')
    await sql.raw(`CREATE INDEX runs_analytics ON runs (project_id, created_at, ${COVER})`).execute(db);
  else await sql.raw(`CREATE INDEX runs_analytics ON runs (project_id, created_at) INCLUDE (${COVER})`).execute(db);
}
