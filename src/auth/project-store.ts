/**
 * SQL that removes a project and everything it holds, in one transaction (DELETE /projects/:id).
 * Every table that carries `project_id` (db/schema.ts), children before what they reference
 * (api_keys, environments, prompts, interactions, objects, object_types and collections reference
 * projects; collection member and parent rows reference collections and objects),
 * plus what hangs off runs by `run_id` (tags, chunks) and, on SQLite, the runs' full-text rows.
 * No rules here: AuthService.deleteProject decides who may.
 */
import { sql } from 'kysely';
import type { OrreryDialect } from '../db/dialect.ts';
import type { Scope } from './principal.ts';
import type { Db } from './store.ts';

/** Tables deleted by project, in this order (after the rows keyed by run id). */
const BY_PROJECT = [
  'collection_members',
  'collection_parents',
  'collections',
  'vectors',
  'object_renditions',
  'jobs',
  'objects',
  'object_types',
  'blobs',
  'run_cache',
  'runs',
  'interactions',
  'prompts',
  'environments',
  'api_keys',
] as const;

/** Deletes the project's rows; answers how many rows went, by table. */
export async function deleteProjectData(
  db: Db,
  d: OrreryDialect,
  s: Scope,
  within?: (trx: Db) => Promise<void>,
): Promise<Record<string, number>> {
  return db.transaction().execute(async (trx) => {
    // What must commit with the deletion (its audit row), first.
    await within?.(trx);
    const counts: Record<string, number> = {};
    const runIds = trx
      .selectFrom('runs')
      .select('runs.id')
      .where('runs.project_id', '=', s.project)
      .where('runs.account_id', '=', s.account);
    counts.run_tags = Number(
      (await trx.deleteFrom('run_tags').where('run_id', 'in', runIds).executeTakeFirst()).numDeletedRows,
    );
    counts.run_chunks = Number(
      (await trx.deleteFrom('run_chunks').where('run_id', 'in', runIds).executeTakeFirst()).numDeletedRows,
    );
    if (d.name === 'sqlite') {
      await sql`DELETE FROM runs_fts WHERE rowid IN (SELECT search_rowid FROM runs WHERE project_id = ${s.project} AND account_id = ${s.account} AND search_rowid IS NOT NULL)`.execute(
        trx,
      );
    }
    for (const table of BY_PROJECT) {
      const r = await trx
        .deleteFrom(table)
        .where('project_id', '=', s.project)
        .where('account_id', '=', s.account)
        .executeTakeFirst();
      counts[table] = Number(r.numDeletedRows);
    }
    const r = await trx
      .deleteFrom('projects')
      .where('id', '=', s.project)
      .where('account_id', '=', s.account)
      .executeTakeFirst();
    counts.projects = Number(r.numDeletedRows);
    return counts;
  });
}
