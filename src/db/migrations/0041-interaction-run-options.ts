/**
 * 0041: the interaction-level options of Vertesia's Create Interaction payload (issue 52, item 3).
 * Frozen (style K7).
 *
 * - `interactions.temperature`, `interactions.max_tokens`: the interaction's own sampling options,
 *   under its `model_options` (which win) and the run's config (which wins over both).
 * - `interactions.restriction`: Vertesia's RunDataStorageLevel (`STANDARD` …); null: not set.
 *
 * Published versions copy their draft's row, so they carry all three.
 */
import type { Kysely } from 'kysely';
import type { DialectName } from '../dialect.ts';

export async function up(db: Kysely<any>, d: DialectName): Promise<void> {
  // PostgreSQL's `real` is 4 bytes (0.3 would read back 0.30000001); SQLite's REAL is 8.
  const float = d === 'postgres' ? 'double precision' : 'real';
  await db.schema.alterTable('interactions').addColumn('temperature', float).execute();
  await db.schema.alterTable('interactions').addColumn('max_tokens', 'integer').execute();
  await db.schema.alterTable('interactions').addColumn('restriction', 'text').execute();
}
