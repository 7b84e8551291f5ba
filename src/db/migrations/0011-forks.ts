/**
 * 0011: forks of interactions and prompt templates (issue 24). Frozen (style K7).
 *
 * `forked_from` is the id of the interaction (draft or published version) or prompt a row was
 * forked from; null for everything else. `parent_id` stays what it was: a published version's
 * draft, so a fork is never mistaken for a version.
 */
import type { Kysely } from 'kysely';
import type { DialectName } from '../dialect.ts';

export async function up(db: Kysely<any>, _d: DialectName): Promise<void> {
  await db.schema.alterTable('interactions').addColumn('forked_from', 'text').execute();
  await db.schema.alterTable('prompts').addColumn('forked_from', 'text').execute();
  await db.schema
    .createIndex('interactions_forked_from')
    .on('interactions')
    .columns(['project_id', 'forked_from'])
    .execute();
  await db.schema.createIndex('prompts_forked_from').on('prompts').columns(['project_id', 'forked_from']).execute();
}
