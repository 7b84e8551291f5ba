/**
 * 0019: retention (issue 18). Frozen (style K7). A run or an object with a `ttl` has an
 * `expires_at` (ISO 8601); the sweeper deletes what has expired in batches, through a partial
 * index that holds only the rows that expire, so it never scans the rest. Runs stored before
 * with a ttl get their expiry from it.
 */
import { sql, type Kysely } from 'kysely';
import type { DialectName } from '../dialect.ts';

export async function up(db: Kysely<any>, d: DialectName): Promise<void> {
  await db.schema.alterTable('runs').addColumn('expires_at', 'text').execute();
  await db.schema.alterTable('objects').addColumn('expires_at', 'text').execute();
  if (d === 'sqlite') {
    await sql`UPDATE runs SET expires_at = strftime('%Y-%m-%dT%H:%M:%fZ', julianday(created_at) + json_extract(doc, '$.ttl') / 86400.0)
      WHERE json_valid(doc) AND json_type(doc, '$.ttl') IN ('integer', 'real') AND json_extract(doc, '$.ttl') > 0`.execute(
      db,
    );
  } else {
    await sql`UPDATE runs SET expires_at = to_char((created_at::timestamptz + (doc->>'ttl')::double precision * interval '1 second') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
      WHERE jsonb_typeof(doc->'ttl') = 'number' AND (doc->>'ttl')::double precision > 0`.execute(db);
  }
  await db.schema
    .createIndex('runs_expiry')
    .on('runs')
    .columns(['expires_at'])
    .where(sql<boolean>`expires_at IS NOT NULL`)
    .execute();
  // Deleting a run deletes the cached answers it made: found by run, not by a scan of the project's.
  await db.schema.createIndex('run_cache_run').on('run_cache').columns(['run_id']).execute();
  await db.schema
    .createIndex('objects_expiry')
    .on('objects')
    .columns(['expires_at'])
    .where(sql<boolean>`expires_at IS NOT NULL`)
    .execute();
}
