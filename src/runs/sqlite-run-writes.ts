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

/** A full-text change of the transaction in progress: the run's old row deleted (`replace`), its new one written. */
interface FullTextChange {
  readonly rowid: number;
  readonly replace: boolean;
  readonly row: FtsRow | null;
}

/** Column names come from our code, never from a request; checked anyway, as they are spliced into SQL. */
const COLUMN = /^[a-z_][a-z0-9_]*$/;

/** Statements are cached by their text; the column lists of run writes are few, this bounds a surprise. */
const MAX_STATEMENTS = 500;

/** The columns `values` sets: as Kysely, undefined means "not set". */
const columnsOf = (values: Record<string, unknown>): string[] => Object.keys(values).filter((c) => values[c] !== undefined);

/** The SET list of an UPDATE of `names`, one parameter each. */
const assignments = (names: readonly string[]): string => names.map((c) => `"${c}" = ?`).join(', ');

const sameColumns = (a: readonly string[], b: readonly string[]): boolean => a.length === b.length && a.every((c, i) => c === b[i]);

/**
 * The statement of the last column list a kind of write had, and that list: a run's writes repeat
 * a few lists, so most writes skip checking the names and building the SQL text (and hashing it to
 * find the statement) again.
 */
interface LastStatement {
  columns: readonly string[];
  statement: SQLite.Statement;
}

/** Where a run's row is: the table's rowid, and the run's `search_rowid` (its full-text rowid). */
interface RowAt {
  readonly rowid: number;
  readonly searchRowid: number;
}

/** Runs in flight remembered by one writer: far more than run at once; past it, the oldest ends take the lookup by id. */
const MAX_REMEMBERED = 10_000;

export class SqliteRunWrites {
  private readonly statements = new Map<string, SQLite.Statement>();
  private readonly last = new Map<string, LastStatement>();
  private readonly inTransaction: SQLite.Transaction<(writes: readonly PreparedRunWrite[]) => boolean[]>;
  /**
   * Full-text changes are written last in their transaction, in their order. FTS5 writes the
   * terms it holds as a new segment at every statement savepoint once it is part of a transaction
   * (its xSavepoint flushes), and an UPDATE or INSERT of `runs` opens one: interleaved, a batch of
   * 32 runs cut a segment per run, and merging them cost more than the text itself (bench/README.md,
   * issue 17, third pass). No statement of a batch reads the full-text table, so the order of
   * the other writes does not depend on it.
   */
  private fullText: FullTextChange[] = [];
  /**
   * The next `search_rowid` of the transaction in progress, read once from the table by its first
   * insert: the transaction holds the write lock (BEGIN IMMEDIATE), so no other connection inserts
   * runs meanwhile, and the batch's inserts need not each look the maximum up again.
   */
  private nextRowid: number | undefined;
  /**
   * Where this thread inserted each run in flight: a run's end then updates its row by rowid, not
   * through the index of ids, and needs no RETURNING for its search_rowid (about 7 µs of a run's
   * 80 on this thread; bench/README.md, issue 17, fifteenth pass). The rowid of a table with a text
   * key is not stable (VACUUM renumbers it), so the update also requires the id and the
   * search_rowid, and falls back to the lookup by id when no row matched. An entry left behind (a
   * run ended by another connection, a transaction rolled back) is only ever a miss.
   */
  private readonly inFlight = new Map<string, RowAt>();

  constructor(private readonly db: SQLite.Database) {
    this.inTransaction = db.transaction((writes: readonly PreparedRunWrite[]) => {
      this.fullText = [];
      this.nextRowid = undefined;
      const out = writes.map((w) => this.apply(w));
      for (const c of this.fullText) this.writeFullText(c);
      this.fullText = [];
      return out;
    });
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
    const r = this.forColumns(`patch${claim}`, columns, (names) => `UPDATE runs SET ${assignments(names)} WHERE id = ?${claim}`)
      .run(...values, w.patch.id, ...(claim ? [w.patch.fromStatus] : []));
    return r.changes > 0;
  }

  private insert(p: PreparedInsert): boolean {
    this.nextRowid ??= (this.statement('SELECT COALESCE(MAX(search_rowid), 0) AS m FROM runs').get() as { m: number }).m + 1;
    const m = this.nextRowid - 1;
    this.nextRowid += p.rows.length;
    p.rows.forEach((row, i) => {
      const columns = columnsOf(row);
      const r = this.forColumns('insert', columns, (names) => `INSERT INTO runs (${names.map((c) => `"${c}"`).join(', ')}, search_rowid) VALUES (${names.map(() => '?').join(', ')}, ?)`)
        .run(...columns.map((c) => row[c]), m + 1 + i);
      if (!hasEnded(row.status as string)) this.remember(row.id as string, { rowid: Number(r.lastInsertRowid), searchRowid: m + 1 + i });
    });
    const tag = this.statement('INSERT INTO run_tags (run_id, tag, search_rowid) VALUES (?, ?, ?)');
    for (const t of p.tags) tag.run(p.rows[t.run].id, t.tag, m + 1 + t.run);
    p.fts.forEach((f, i) => f && this.fullText.push({ rowid: m + 1 + i, replace: false, row: f }));
    return true;
  }

  private update(p: PreparedUpdate): boolean {
    const columns = columnsOf(p.set);
    const claim = p.fromStatus ? ' AND status = ?' : '';
    const values = columns.map((c) => p.set[c]);
    const claimed = claim ? [p.fromStatus] : [];
    const r = this.updateRemembered(p, columns, values, claim, claimed)
      ?? this.forColumns(`update${claim}`, columns, (names) => `UPDATE runs SET ${assignments(names)} WHERE id = ?${claim} RETURNING search_rowid, status`)
        .get(...values, p.id, ...claimed) as { search_rowid: number; status: string } | undefined;
    if (!r) return false;
    // Deleting a row the FTS table does not hold costs ~1 µs (contentless_delete): no need to know.
    this.fullText.push({ rowid: r.search_rowid, replace: true, row: p.fts && (p.text ?? hasEnded(r.status)) ? p.fts : null });
    return true;
  }

  /**
   * The update of a run at the row where this thread inserted it (`inFlight`), if it is still that
   * run's, as inserted (its id and search_rowid say): no lookup by id, and no RETURNING for what is
   * known. Undefined when the run is not remembered, its status is not set, or no row matched.
   */
  private updateRemembered(p: PreparedUpdate, columns: readonly string[], values: unknown[], claim: string, claimed: unknown[]): { search_rowid: number; status: string } | undefined {
    const known = this.inFlight.get(p.id);
    if (!known || typeof p.set.status !== 'string') return undefined;
    this.inFlight.delete(p.id);
    const r = this.forColumns(`update at${claim}`, columns, (names) => `UPDATE runs SET ${assignments(names)} WHERE rowid = ? AND id = ? AND search_rowid = ?${claim}`)
      .run(...values, known.rowid, p.id, known.searchRowid, ...claimed);
    return r.changes > 0 ? { search_rowid: known.searchRowid, status: p.set.status } : undefined;
  }

  /** A run inserted here and not ended, remembered for its end's update (MAX_REMEMBERED at most, the oldest let go first). */
  private remember(id: string, at: RowAt): void {
    if (this.inFlight.size >= MAX_REMEMBERED) this.inFlight.delete(this.inFlight.keys().next().value!);
    this.inFlight.set(id, at);
  }

  private writeFullText({ rowid, replace, row }: FullTextChange): void {
    if (replace) this.statement('DELETE FROM runs_fts WHERE rowid = ?').run(rowid);
    if (row) this.statement('INSERT INTO runs_fts (rowid, body, prompt, result) VALUES (?, ?, ?, ?)').run(rowid, row.body, row.prompt, row.result);
  }

  /** The statement `sql` builds for `columns`, the same as last time for this `kind` when its columns are. */
  private forColumns(kind: string, columns: readonly string[], sql: (names: readonly string[]) => string): SQLite.Statement {
    const last = this.last.get(kind);
    if (last && sameColumns(last.columns, columns)) return last.statement;
    for (const c of columns) if (!COLUMN.test(c)) throw new Error(`not a run column: ${JSON.stringify(c)}`);
    const statement = this.statement(sql(columns));
    this.last.set(kind, { columns, statement });
    return statement;
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
