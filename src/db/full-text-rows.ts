/**
 * Deleting the full-text rows of deleted rows. Where full text is a side table (SQLite's FTS5,
 * keyed by the row's `search_rowid`) its rows go by rowid; where it is a column of the row
 * (PostgreSQL's tsvector) it goes with the row and there is nothing to do.
 */
import { sql, type Expression, type Kysely } from 'kysely';
import type { OrreryDialect } from './dialect.ts';

/** The full-text side tables and the table whose rows they index. */
type FullTextTable = 'runs_fts';

/**
 * Deletes the rows of `table` whose rowid is in `rowids`: a list, or a select query of them (a
 * subquery keeps a project's rowids in the database rather than in memory; it compiles with its
 * own parentheses).
 */
export async function deleteFullTextRows(
  db: Kysely<any>,
  d: OrreryDialect,
  table: FullTextTable,
  rowids: readonly number[] | Expression<unknown>,
): Promise<void> {
  if (!d.caps.fullTextSideTable) return;
  if (Array.isArray(rowids)) {
    if (!rowids.length) return;
    await sql`DELETE FROM ${sql.table(table)} WHERE rowid IN (${sql.join(rowids)})`.execute(db);
    return;
  }
  await sql`DELETE FROM ${sql.table(table)} WHERE rowid IN ${rowids as Expression<unknown>}`.execute(db);
}
