/**
 * 0028: a run's `previous_run` as a column (it was only in `doc`): the run a continuation extends
 * (conversations, door turns). Indexed by project, so a conversation's runs are found from any of
 * them in both directions (retention and deletion act on a conversation's runs together) and
 * `previous_run` filters `GET /runs`. Door turns are found by run too, so they go with their runs.
 * Runs stored before get the column from their document. Frozen (style K7).
 */
import { sql, type Kysely } from 'kysely';
import type { DialectName } from '../dialect.ts';

export async function up(db: Kysely<any>, d: DialectName): Promise<void> {
  await db.schema.alterTable('runs').addColumn('previous_run', 'text').execute();
  if (d === 'sqlite') {
    await sql`UPDATE runs SET previous_run = json_extract(doc, '$.previous_run')
      WHERE json_valid(doc) AND json_type(doc, '$.previous_run') = 'text'`.execute(db);
  } else {
    await sql`UPDATE runs SET previous_run = doc->>'previous_run'
      WHERE jsonb_typeof(doc->'previous_run') = 'string'`.execute(db);
  }
  await sql`CREATE INDEX runs_previous ON runs (project_id, previous_run) WHERE previous_run IS NOT NULL`.execute(db);
  await db.schema.createIndex('door_turns_run').on('door_turns').columns(['project_id', 'run_id']).execute();
}
