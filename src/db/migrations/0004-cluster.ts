/**
 * 0004: what several replicas need. `replicas` holds each server process's heartbeat; a run
 * records its `executor` (the replica executing it) so a run whose executor died is detected and
 * failed; `run_chunks` keeps the chunks of a streamed run while it executes, so a subscriber on
 * another replica can replay them. Frozen.
 */
import { sql, type Kysely } from 'kysely';
import type { DialectName } from '../dialect.ts';

export async function up(db: Kysely<any>, _d: DialectName): Promise<void> {
  await db.schema
    .createTable('replicas')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('host', 'text', (c) => c.notNull())
    .addColumn('started_at', 'text', (c) => c.notNull())
    .addColumn('heartbeat_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema.alterTable('runs').addColumn('executor', 'text').execute();
  await db.schema
    .createIndex('runs_executing')
    .on('runs')
    .columns(['executor'])
    .where(sql<boolean>`status = 'processing'`)
    .execute();

  await db.schema
    .createTable('run_chunks')
    .addColumn('run_id', 'text', (c) => c.notNull())
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('text', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('run_chunks_pk', ['run_id', 'seq'])
    .execute();
}
