/**
 * 0009: run cost. Frozen (style K7).
 *
 * - `cost_total`: `doc.cost.total` (USD) as a real column, written with the document by
 *   runs/search-index.ts, so `cost.total` ranges, comparisons and facets read a column as
 *   `execution_time` does. Runs stored before carry a cost only if something wrote one into their
 *   document; those are filled from it, the others stay NULL (cost unknown).
 * - The newest-first covering index (0003) gains the column, so a page or a facet filtered on it
 *   reads the index as for the other number fields; on SQLite so does the `search_rowid` one.
 */
import { sql, type Kysely } from 'kysely';
import type { DialectName } from '../dialect.ts';

const COVER =
  'status, model_id, interaction_id, environment_id, finish_reason, execution_time, parent_id, interaction_name, environment_name, cost_total';

export async function up(db: Kysely<any>, d: DialectName): Promise<void> {
  if (d === 'sqlite') {
    await sql`ALTER TABLE runs ADD COLUMN cost_total REAL`.execute(db);
    await sql`UPDATE runs SET cost_total = json_extract(doc, '$.cost.total')
      WHERE json_valid(doc) AND json_type(doc, '$.cost.total') IN ('integer', 'real')`.execute(db);
    await sql`DROP INDEX IF EXISTS runs_recent_cover`.execute(db);
    await sql
      .raw(`CREATE INDEX runs_recent_cover ON runs (project_id, updated_at DESC, id DESC, ${COVER}, search_rowid)`)
      .execute(db);
    await sql`DROP INDEX IF EXISTS runs_search_cover`.execute(db);
    await sql
      .raw(`CREATE INDEX runs_search_cover ON runs (search_rowid, project_id, updated_at, id, ${COVER})`)
      .execute(db);
  } else {
    await sql`ALTER TABLE runs ADD COLUMN cost_total double precision`.execute(db);
    await sql`UPDATE runs SET cost_total = CAST(doc #>> '{cost,total}' AS double precision)
      WHERE jsonb_typeof(doc #> '{cost,total}') = 'number'`.execute(db);
    await sql`DROP INDEX IF EXISTS runs_recent_cover`.execute(db);
    await sql
      .raw(`CREATE INDEX runs_recent_cover ON runs (project_id, updated_at DESC, id DESC) INCLUDE (${COVER}, tags)`)
      .execute(db);
  }
}
