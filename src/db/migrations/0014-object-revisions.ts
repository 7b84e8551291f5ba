/**
 * 0014: revisions of content objects (issue 24, the official client's
 * `objects.update(id, payload, {createRevision, revisionLabel})` and `getRevisions`).
 * Frozen (style K7).
 *
 * A revision is an object of its own (its own id); the objects of one history share
 * `revision_root` (the id of the first), `revision_parent` is the revision it was made from,
 * and exactly one of them is the head (`revision_head` 1; listings show heads only unless asked).
 * Every existing object is the root and head of a history of one.
 */
import { sql, type Kysely } from 'kysely';
import type { DialectName } from '../dialect.ts';

export async function up(db: Kysely<any>, _d: DialectName): Promise<void> {
  await db.schema.alterTable('objects').addColumn('revision_root', 'text').execute();
  await db.schema.alterTable('objects').addColumn('revision_parent', 'text').execute();
  await db.schema
    .alterTable('objects')
    .addColumn('revision_head', 'integer', (c) => c.notNull().defaultTo(1))
    .execute();
  await db.schema.alterTable('objects').addColumn('revision_label', 'text').execute();
  await sql`UPDATE objects SET revision_root = id WHERE revision_root IS NULL`.execute(db);
  await db.schema
    .createIndex('objects_revision_root')
    .on('objects')
    .columns(['account_id', 'project_id', 'revision_root'])
    .execute();
}
