/**
 * The run writer thread's SQL (runs/run-writer-worker.ts): prepared run writes (runs/store.ts
 * `PreparedRunWrite`, in the arrays of runs/run-write-wire.ts that cross to the thread) run as
 * better-sqlite3 statements prepared once, in synchronous transactions.
 * Through Kysely every statement of every run was built, compiled and awaited anew: a fifth of
 * the thread's CPU per run (bench/README.md, issue 17). These are the statements Kysely built
 * (runs/search-index.ts `sideTableIndex`, runs/store.ts `applyRunWrite`), which stay the path of every
 * other writer; test/runs/run-writer-thread.test.ts writes the same runs both ways and compares
 * every column, tag and full-text row.
 */
import type SQLite from 'better-sqlite3';
import { hasEnded } from './model.ts';
import {
  COLUMN_SEPARATOR,
  toWire,
  type WireColumns,
  type WireFts,
  type WireRow,
  type WireTag,
  type WireWrite,
} from './run-write-wire.ts';
import { runSearchDoc, runSearchFieldsJson, type SearchSource } from './lucene-sql/search-doc.ts';
import { ftsRow } from '../db/run-text-index.ts';
import type { PreparedRunWrite } from './store.ts';

export type WriteOutcome = { value: boolean } | { error: unknown };

/** A full-text change of the transaction in progress: the run's old row deleted (`replace`), its new one written. */
interface FullTextChange {
  readonly rowid: number;
  readonly replace: boolean;
  readonly row: WireFts | null;
}

/** Column names come from our code, never from a request; checked anyway, as they are spliced into SQL. */
const COLUMN = /^[a-z_][a-z0-9_]*$/;

/** Statements are cached by their text; the column lists of run writes are few, this bounds a surprise. */
const MAX_STATEMENTS = 500;

/** The SET list of an UPDATE of `names`, one parameter each. */
const assignments = (names: readonly string[]): string => names.map((c) => `"${c}" = ?`).join(', ');

/**
 * The statement of the last column list a kind of write had, that list, and where its `id` and
 * `status` are: a run's writes repeat a few lists, so most writes skip checking the names and
 * building the SQL text (and hashing it to find the statement) again.
 */
interface LastStatement {
  columns: string;
  statement: SQLite.Statement;
  id: number;
  status: number;
  doc: number;
}

/**
 * The `search_fields` of a run inserted without them (search-index.ts `deferFields`), from its
 * document's text as the column holds it (test/runs/run-writer-thread.test.ts compares them with
 * what the HTTP thread computes from the document itself).
 */
const searchFieldsOf = (doc: unknown): string => runSearchFieldsJson(typeof doc === 'string' ? doc : '{}');

/** The `search_fields` and the full-text row of an ended run inserted without them, from its document's text. */
function searchDataOf(doc: unknown): { fields: string; fts: WireFts } {
  const parsed: unknown = typeof doc === 'string' ? JSON.parse(doc) : {};
  const source = (parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? parsed : {}) as SearchSource;
  const s = runSearchDoc(source);
  const f = ftsRow(s);
  return { fields: JSON.stringify(s.fields), fts: [f.body, f.prompt, f.result] };
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
  private readonly inTransaction: SQLite.Transaction<(writes: readonly WireWrite[]) => boolean[]>;
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
    this.inTransaction = db.transaction((writes: readonly WireWrite[]) => {
      this.fullText = [];
      this.nextRowid = undefined;
      const out = writes.map((w) => this.apply(w));
      for (const c of this.fullText) this.writeFullText(c);
      this.fullText = [];
      return out;
    });
  }

  /** applyWire of writes as their callers prepared them (tests, benchmarks). */
  applyAll(writes: readonly PreparedRunWrite[]): WriteOutcome[] {
    return this.applyWire(writes.map(toWire));
  }

  /**
   * The writes in one transaction (BEGIN IMMEDIATE: another connection writes the file too); if it
   * fails, each in a transaction of its own, so that a failure reaches only the write that caused it.
   */
  applyWire(writes: readonly WireWrite[]): WriteOutcome[] {
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
  private apply(w: WireWrite): boolean {
    if (w[0] === 'insert') return this.insert(w[1], w[2], w[3]);
    if (w[0] === 'update') return this.update(w[1], w[2], w[3], w[4], w[5]);
    const [, id, [columns, values], fromStatus] = w;
    const claim = fromStatus ? ' AND status = ?' : '';
    const r = this.forColumns(
      `patch${claim}`,
      columns,
      (names) => `UPDATE runs SET ${assignments(names)} WHERE id = ?${claim}`,
    ).statement.run(...values, id, ...(claim ? [fromStatus] : []));
    return r.changes > 0;
  }

  private insert(rows: readonly WireRow[], fts: readonly (WireFts | null)[], tags: readonly WireTag[]): boolean {
    this.nextRowid ??=
      (this.statement('SELECT COALESCE(MAX(search_rowid), 0) AS m FROM runs').get() as { m: number }).m + 1;
    const m = this.nextRowid - 1;
    this.nextRowid += rows.length;
    const ids: unknown[] = [];
    const derivedFts: (WireFts | null)[] = [];
    rows.forEach(([columns, values, derive], i) => {
      const also = derive ? ', search_fields' : '';
      const s = this.forColumns(
        `insert${also}`,
        columns,
        (names) =>
          `INSERT INTO runs (${names.map((c) => `"${c}"`).join(', ')}${also}, search_rowid) VALUES (${names.map(() => '?').join(', ')}${derive ? ', ?' : ''}, ?)`,
      );
      let fields: string | undefined;
      if (derive === 'all') {
        const data = searchDataOf(values[s.doc]);
        fields = data.fields;
        derivedFts[i] = data.fts;
      } else if (derive) fields = searchFieldsOf(values[s.doc]);
      const r =
        fields !== undefined ? s.statement.run(...values, fields, m + 1 + i) : s.statement.run(...values, m + 1 + i);
      const id = values[s.id];
      ids.push(id);
      if (!hasEnded(values[s.status] as string))
        this.remember(id as string, { rowid: Number(r.lastInsertRowid), searchRowid: m + 1 + i });
    });
    const tag = this.statement('INSERT INTO run_tags (run_id, tag, search_rowid) VALUES (?, ?, ?)');
    for (const [run, name] of tags) tag.run(ids[run], name, m + 1 + run);
    rows.forEach((_, i) => {
      const f = fts[i] ?? derivedFts[i];
      if (f) this.fullText.push({ rowid: m + 1 + i, replace: false, row: f });
    });
    return true;
  }

  private update(
    id: string,
    [columns, values]: WireColumns,
    fts: WireFts | null,
    text: boolean | null,
    fromStatus: string | null,
  ): boolean {
    const claim = fromStatus ? ' AND status = ?' : '';
    const claimed = claim ? [fromStatus] : [];
    const r =
      this.updateRemembered(id, columns, values, claim, claimed) ??
      (this.forColumns(
        `update${claim}`,
        columns,
        (names) => `UPDATE runs SET ${assignments(names)} WHERE id = ?${claim} RETURNING search_rowid, status`,
      ).statement.get(...values, id, ...claimed) as { search_rowid: number; status: string } | undefined);
    if (!r) return false;
    // Deleting a row the FTS table does not hold costs ~1 µs (contentless_delete): no need to know.
    this.fullText.push({ rowid: r.search_rowid, replace: true, row: fts && (text ?? hasEnded(r.status)) ? fts : null });
    return true;
  }

  /**
   * The update of a run at the row where this thread inserted it (`inFlight`), if it is still that
   * run's, as inserted (its id and search_rowid say): no lookup by id, and no RETURNING for what is
   * known. Undefined when the run is not remembered, its status is not set, or no row matched.
   */
  private updateRemembered(
    id: string,
    columns: string,
    values: readonly unknown[],
    claim: string,
    claimed: unknown[],
  ): { search_rowid: number; status: string } | undefined {
    const known = this.inFlight.get(id);
    if (!known) return undefined;
    const s = this.forColumns(
      `update at${claim}`,
      columns,
      (names) => `UPDATE runs SET ${assignments(names)} WHERE rowid = ? AND id = ? AND search_rowid = ?${claim}`,
    );
    const status = values[s.status];
    if (typeof status !== 'string') return undefined;
    this.inFlight.delete(id);
    const r = s.statement.run(...values, known.rowid, id, known.searchRowid, ...claimed);
    return r.changes > 0 ? { search_rowid: known.searchRowid, status } : undefined;
  }

  /** A run inserted here and not ended, remembered for its end's update (MAX_REMEMBERED at most, the oldest let go first). */
  private remember(id: string, at: RowAt): void {
    if (this.inFlight.size >= MAX_REMEMBERED) this.inFlight.delete(this.inFlight.keys().next().value!);
    this.inFlight.set(id, at);
  }

  private writeFullText({ rowid, replace, row }: FullTextChange): void {
    if (replace) this.statement('DELETE FROM runs_fts WHERE rowid = ?').run(rowid);
    if (row)
      this.statement('INSERT INTO runs_fts (rowid, body, prompt, result) VALUES (?, ?, ?, ?)').run(
        rowid,
        row[0],
        row[1],
        row[2],
      );
  }

  /** The statement `sql` builds for `columns`, the same as last time for this `kind` when its columns are. */
  private forColumns(kind: string, columns: string, sql: (names: readonly string[]) => string): LastStatement {
    const last = this.last.get(kind);
    if (last?.columns === columns) return last;
    const names = columns.split(COLUMN_SEPARATOR);
    for (const c of names) if (!COLUMN.test(c)) throw new Error(`not a run column: ${JSON.stringify(c)}`);
    const built = {
      columns,
      statement: this.statement(sql(names)),
      id: names.indexOf('id'),
      status: names.indexOf('status'),
      doc: names.indexOf('doc'),
    };
    this.last.set(kind, built);
    return built;
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
