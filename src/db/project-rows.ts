/**
 * The one way a feature deletes its rows of a project: inside the project's deletion transaction
 * (auth/project-store.ts), each feature names its own tables. Every table of a project references
 * `projects`, whose row goes last; rows that reference other rows (members, renditions) cascade.
 */
import type { Kysely } from 'kysely';
import type { Database } from './schema.ts';

/** The tables that carry both `account_id` and `project_id`. */
type ProjectTable = {
  [T in keyof Database]: Database[T] extends { account_id: unknown; project_id: unknown } ? T : never;
}[keyof Database];

export interface ProjectScope {
  account: string;
  project: string;
}

/** A feature's deletion of its rows of a project; answers how many rows went, by table. */
export type ProjectRowsDeleter = (trx: Kysely<Database>, s: ProjectScope) => Promise<Record<string, number>>;

/** Deletes the project's rows of each table in order; how many went, by table. */
export async function deleteProjectRows(
  trx: Kysely<Database>,
  tables: readonly ProjectTable[],
  s: ProjectScope,
): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const table of tables) {
    const r = await trx
      .deleteFrom(table)
      .where('project_id', '=', s.project)
      .where('account_id', '=', s.account)
      .executeTakeFirst();
    counts[table] = Number(r.numDeletedRows);
  }
  return counts;
}
