/**
 * The run writer thread's SQL (runs/run-writer-worker.ts): prepared run writes (runs/store.ts
 * `PreparedRunWrite`) run as better-sqlite3 statements prepared once, in synchronous transactions.
 * Through Kysely every statement of every run was built, compiled and awaited anew: a fifth of
 * the thread's CPU per run (bench/README.md, issue 17). These are the statements Kysely built
 * (runs/search-index.ts `sqliteIndex`, runs/store.ts `applyRunWrite`), which stay the path of every
 * other writer; test/runs/run-writer-thread.test.ts writes the same runs both ways and compares
 * every column, tag and full-text row.
 */
import type SQLite from 'better-sqlite3';
import type { FtsRow } from '../query/lucene-sql/index.ts';
import { hasEnded } from './model.ts';
import type { PreparedInsert, PreparedUpdate } from './search-index.ts';
import type { PreparedRunWrite } from './store.ts';

export type WriteOutcome = { value: boolean } | { error: unknown };

/** Column names come from our code, never from a request; checked anyway, as they are spliced into SQL. */
const COLUMN = /^[a-z_][a-z0-9_]*$/;

/** Statements are cached by their text; the column lists of run writes are few, this bounds a surprise. */
const MAX_STATEMENTS = 500;

const columnsOf = (values: Record<string, unknown>): string[] => {
  const columns = Object.keys(values).filter((c) => values[c] !== undefined); // as Kysely: undefined means "not set"
  for (const c of columns) if (!COLUMN.test(c)) throw new Error(`not a run column: ${JSON.stringify(c)}`);
  return columns;
};

export class SqliteRunWrites {
  private readonly statements = new Map<string, SQLite.Statement>();
  private readonly inTransaction: SQLite.Transaction<(writes: readonly PreparedRunWrite[]) => boolean[]>;

  constructor(private readonly db: SQLite.Database) {
    this.inTransaction = db.transaction((writes: readonly PreparedRunWrite[]) => writes.map((w) => this.apply(w)));
  }

  /**
   * The writes in one transaction (BEGIN IMMEDIATE: another connection writes the file too); if it
   * fails, each in a transaction of its own, so that a failure reaches only the write that caused it.
   */
  applyAll(writes: readonly PreparedRunWrite[]): WriteOutcome[] {
    try {
      return this.inTransaction.immediate(writes).map((value) => ({ value }));
    } catch {
      return writes.map((w) => {
        try {
          return { value: this.inTransaction.immediate([w])[0] };
        } catch (error) {
          return { error };
        }
      });
    }
  }

  /** False when no row matched (an update of no run, a claim on a run that moved on). */
  private apply(w: PreparedRunWrite): boolean {
    if ('insert' in w) return this.insert(w.insert);
    if ('update' in w) return this.update(w.update);
    const columns = columnsOf(w.patch.set);
    const values = columns.map((c) => w.patch.set[c]);
    const claim = w.patch.fromStatus ? ' AND status = ?' : '';
    const r = this.statement(`UPDATE runs SET ${columns.map((c) => `"${c}" = ?`).join(', ')} WHERE id = ?${claim}`)
      .run(...values, w.patch.id, ...(claim ? [w.patch.fromStatus] : []));
    return r.changes > 0;
  }

  private insert(p: PreparedInsert): boolean {
    const { m } = this.statement('SELECT COALESCE(MAX(search_rowid), 0) AS m FROM runs').get() as { m: number };
    p.rows.forEach((row, i) => {
      const values = { ...row, search_rowid: m + 1 + i };
      const columns = columnsOf(values);
      this.statement(`INSERT INTO runs (${columns.map((c) => `"${c}"`).join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`)
        .run(...columns.map((c) => values[c as keyof typeof values]));
    });
    const tag = this.statement('INSERT INTO run_tags (run_id, tag, search_rowid) VALUES (?, ?, ?)');
    for (const t of p.tags) tag.run(p.rows[t.run].id, t.tag, m + 1 + t.run);
    p.fts.forEach((f, i) => f && this.insertFts(m + 1 + i, f));
    return true;
  }

  private update(p: PreparedUpdate): boolean {
    const columns = columnsOf(p.set);
    const claim = p.fromStatus ? ' AND status = ?' : '';
    const r = this.statement(`UPDATE runs SET ${columns.map((c) => `"${c}" = ?`).join(', ')} WHERE id = ?${claim} RETURNING search_rowid, status`)
      .get(...columns.map((c) => p.set[c]), p.id, ...(claim ? [p.fromStatus] : [])) as { search_rowid: number; status: string } | undefined;
    if (!r) return false;
    // Deleting a row the FTS table does not hold costs ~1 µs (contentless_delete): no need to know.
    this.statement('DELETE FROM runs_fts WHERE rowid = ?').run(r.search_rowid);
    if (p.fts && (p.text ?? hasEnded(r.status))) this.insertFts(r.search_rowid, p.fts);
    return true;
  }

  private insertFts(rowid: number, f: FtsRow): void {
    this.statement('INSERT INTO runs_fts (rowid, body, prompt, result) VALUES (?, ?, ?, ?)').run(rowid, f.body, f.prompt, f.result);
  }

  private statement(text: string): SQLite.Statement {
    let s = this.statements.get(text);
    if (!s) {
      if (this.statements.size >= MAX_STATEMENTS) this.statements.delete(this.statements.keys().next().value!);
      s = this.db.prepare(text);
      this.statements.set(text, s);
    }
    return s;
  }
}
