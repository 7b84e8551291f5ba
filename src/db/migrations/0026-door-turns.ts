/**
 * 0026: door turns (the OpenAI door, src/doors). A stored door run's conversation (its messages
 * and its answer), by a hash that also covers the key, environment and model: a later request whose
 * messages extend it stores only its new turn, linked to that run (`previous_run`). Frozen (style K7).
 */
import type { Kysely } from 'kysely';
import type { DialectName } from '../dialect.ts';

export async function up(db: Kysely<any>, _d: DialectName): Promise<void> {
  await db.schema
    .createTable('door_turns')
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('hash', 'text', (c) => c.notNull())
    .addColumn('run_id', 'text', (c) => c.notNull())
    .addColumn('length', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('door_turns_pk', ['project_id', 'hash'])
    .execute();
}
