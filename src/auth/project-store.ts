/**
 * SQL that removes a project and everything it holds, in one transaction (DELETE /projects/:id):
 * each feature deletes its own rows (the deleters it registered, db/project-rows.ts), then the
 * project's keys and the project row, which every other table references. No rules here:
 * AuthService.deleteProject decides who may.
 */
import { deleteProjectRows, type ProjectRowsDeleter } from '../db/project-rows.ts';
import type { Scope } from './principal.ts';
import type { Db } from './store.ts';

/** Deletes the project's rows; answers how many rows went, by table. */
export async function deleteProjectData(
  db: Db,
  s: Scope,
  features: readonly ProjectRowsDeleter[],
  within?: (trx: Db) => Promise<void>,
): Promise<Record<string, number>> {
  return db.transaction().execute(async (trx) => {
    // What must commit with the deletion (its audit row), first.
    await within?.(trx);
    const counts: Record<string, number> = {};
    for (const deleteRows of features) Object.assign(counts, await deleteRows(trx, s));
    Object.assign(counts, await deleteProjectRows(trx, ['api_keys'], s));
    const r = await trx
      .deleteFrom('projects')
      .where('id', '=', s.project)
      .where('account_id', '=', s.account)
      .executeTakeFirst();
    counts.projects = Number(r.numDeletedRows);
    return counts;
  });
}
