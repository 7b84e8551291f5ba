/**
 * The SQL that differs by backend for run search (style D3/K2): full text (FTS5 vs tsvector),
 * globs (GLOB vs LIKE), code-point comparison (BINARY vs COLLATE "C"), tags (run_tags vs jsonb),
 * and the text of `result`/`prompt` computed from the run document. One object per dialect, picked
 * once by `searchSql(name, plan)`; the compiler never asks which database it is on.
 *
 * Every function returns a condition that is never NULL (NOT must stay two-valued), and binds
 * every value; table and column names are the fixed ones of migration 0003.
 *
 * SQLite: every EXISTS subquery ends in LIMIT 1. SQLite 3.53 rewrites a plain EXISTS into a join
 * and then counts OFFSET over the joined rows, so a later page skipped too few runs (found by
 * search-eval.test.ts); a subquery with a LIMIT is left alone.
 */
import { sql, type Expression, type RawBuilder, type SqlBool } from 'kysely';
import type { DialectName } from './dialect.ts';
import { escapeLike, jsonSql, jsonString } from './json-sql.ts';
import type { GlobPart } from '../query/lucene/index.ts';
import { TS_MAX_WORD_BYTES, TS_WEIGHT, byteLength, pairLexeme } from './run-text-index.ts';
import { table } from '../util/own.ts';

export type Cond = RawBuilder<SqlBool>;

/**
 * How a condition will be used, so the database can be steered to the cheaper plan (PostgreSQL:
 * only common phrases on pages, see `postgresFor`):
 * - `page` (ORDER BY updated_at LIMIT n): walk the newest-first covering index and test each run
 *   (the full-text matches as a set built once; tags by primary-key probe), which stops after n
 *   hits. A word known to be rare (`isRare`) is cheaper the other way: look its few runs up.
 * - `count` (totals, facets): every match is needed, so start from the matches (full-text rows or
 *   tag rows) and look each run up in the covering index keyed by `search_rowid` or by id.
 */
export interface SearchPlan {
  readonly purpose?: 'page' | 'count';
  /** Whether a phrase's words are rare enough that its runs should be looked up one by one. */
  readonly isRare?: (words: readonly string[]) => boolean;
}
export type TextColumn = 'body' | 'prompt' | 'result';
export type CmpOp = '<' | '<=' | '>' | '>=' | '=';

export const TRUE: Cond = sql<SqlBool>`TRUE`;
export const FALSE: Cond = sql<SqlBool>`FALSE`;

export interface SearchSql {
  readonly name: DialectName;
  /**
   * Runs whose text column holds `words` (non-empty, from `tokenize`) consecutively; with
   * `orNotEnded`, also every run not ended yet (whose text is not indexed: evaluate.ts rule 1), as
   * one indexable set, so a prefilter of `parameters.*` words lets those through.
   */
  phrase(col: TextColumn, words: readonly string[], orNotEnded?: boolean): Cond;
  /** Runs with a word in the column that starts with `prefix` (word characters only); `orNotEnded` as for `phrase`. */
  prefix(col: TextColumn, prefix: string, orNotEnded?: boolean): Cond;
  /** Runs with a word in the column matching a one-word glob (lower case; literals are word characters). */
  wordGlob(col: TextColumn, parts: readonly GlobPart[]): Cond;
  /** Case-sensitive anchored glob over a text value (`*` any run, `?` one code point). */
  glob(value: Expression<unknown>, parts: readonly GlobPart[]): Cond;
  /** Compares a text value with a bound by Unicode code point. */
  compare(value: Expression<unknown>, op: CmpOp, bound: string): Cond;
  /** Compares a numeric value with a bound number. */
  compareNumber(value: Expression<unknown>, op: CmpOp, bound: number): Cond;
  /**
   * Compares an indexed numeric column with a bound, as its index can: NULL where the column is
   * NULL (so only inside a subquery whose rows are kept or not, never under NOT).
   */
  indexedNumber(column: Expression<unknown>, op: CmpOp, bound: number): Cond;
  /**
   * Runs that have a row of `rows` (FROM and WHERE of a table with a `run_id` column, e.g. a
   * run's scores): SQLite pages probe each run's rows by its id (`probe`: the same rows of the run
   * at hand) while they walk the newest-first index, which stops after the page; counts and
   * PostgreSQL start from the set of ids.
   */
  hasRows(table: string, rows: RawBuilder<unknown>, probe: RawBuilder<unknown>): Cond;
  /** Runs carrying the tag (exactly). */
  hasTag(tag: string): Cond;
  /** Runs with some tag satisfying `test`. */
  someTag(test: (tag: Expression<string>) => Cond): Cond;
  /** Runs with at least one tag. */
  anyTag(): Cond;
  /** Runs carrying at least one of the tags (non-empty). */
  hasAnyTag(tags: readonly string[]): Cond;
  /** `SELECT tag AS k, count(*) AS n` over the tags of the runs of CTE `m` (facets). */
  tagCounts(): RawBuilder<unknown>;
  /** The runs column `tagCounts` reads from each matching run (SQLite joins run_tags by id; PostgreSQL reads the column). */
  readonly tagFacetColumn: 'id' | 'tags';
  /** A text expression as ORDER BY sorts it by code point. */
  orderText(value: Expression<unknown>): RawBuilder<unknown>;
  /** The key a page query selects first and then reads rows by (SQLite: the rowid, in every index). */
  readonly rowKey: RawBuilder<unknown>;
  /**
   * An always-true condition added to counts (SQLite): `updated_at >= ''` is a range on the second
   * column of the project's indexes, which steers SQLite to an index-only scan. Its planner
   * believes the runs table is as narrow as its declared columns, and otherwise reads the whole
   * table (measured: seconds at 1M runs, against a few hundred milliseconds).
   */
  readonly countHint: Cond | null;
  /** `SELECT term, n`: in how many runs each word occurs (SQLite: exact; PostgreSQL: estimated, common words only), or null for no words. */
  wordRuns(words: readonly string[]): RawBuilder<{ term: string; n: number }> | null;
  /** A word string `" w1 w2 "` holds `needle` (`" a b "`). */
  wordsContain(words: Expression<unknown>, needle: string): Cond;
  /** Some word of a word string matches a one-word glob (as `wordGlob`). */
  wordsGlob(words: Expression<unknown>, parts: readonly GlobPart[]): Cond;
  /** The text of `result` / `prompt` as run-text.ts computes it, from the run document. */
  partsText(field: 'result' | 'prompt'): RawBuilder<string>;
  /** Whether the document has a value at `field` (evaluate.ts rule 4: arrays flattened, nulls dropped). */
  docHas(field: 'result' | 'prompt'): Cond;
  /**
   * PostgreSQL: full-text terms as pieces of one tsquery, so a boolean subtree of them is one `@@`
   * and a row's tsvector is read (detoasted) once, whatever the number of terms; each `@@` of its
   * own read it again (64 terms on a run of a 1 MB tsvector: 64 reads of it). Null on SQLite,
   * where each FTS5 match is a set the statement builds once.
   */
  readonly textQuery: TextQueries | null;
  /**
   * PostgreSQL: reads a run's stored values once per row for a condition that tests them many
   * times (each operator on a TOASTed value detoasts it again: 32 `parameters.*` terms on a run
   * of a large document read it 32 times, and held as many copies). `values` are the refs to
   * compile the condition against; `wrap` gives it over a subquery that detoasts each value it
   * names once. Null on SQLite, whose JSON functions read the row's text in place.
   */
  readonly readOnce: ReadOnceValues | null;
}

/** The stored values of a run that a search condition reads per row. */
export interface RunValues {
  readonly doc: Expression<unknown>;
  /** `search_fields`: the values of the `parameters.*`, `config.*`, `source.*` paths. */
  readonly fields: Expression<unknown>;
  /** PostgreSQL: the run's tsvector. */
  readonly tsv: Expression<unknown>;
  /** PostgreSQL: the tsvector's text form, the word list a glob scans. */
  readonly tsvText: Expression<unknown>;
}
export type RunValue = keyof RunValues;

/** The run's own columns. */
export const RUN_VALUES: RunValues = {
  doc: sql.ref('runs.doc'),
  fields: sql.ref('runs.search_fields'),
  tsv: sql`runs.search_tsv`,
  tsvText: sql`CAST(runs.search_tsv AS text)`,
};

interface ReadOnceValues {
  readonly values: RunValues;
  wrap(used: ReadonlySet<RunValue>, condition: Cond): Cond;
}

/** A tsquery (with whether its runs are few: see `postgresFor`), or a constant the algebra folds. */
export type TextQuery = TsQuery | 'true' | 'false';
interface TsQuery {
  readonly q: string;
  readonly rare: boolean;
}
const isTsQuery = (p: TextQuery): p is TsQuery => typeof p !== 'string';

interface TextQueries {
  phrase(col: TextColumn, words: readonly string[]): TextQuery;
  prefix(col: TextColumn, prefix: string): TextQuery;
  /** The query's runs, and every run not ended yet (whose text is not indexed: evaluate.ts rule 1). */
  matchOrNotEnded(query: TextQuery): Cond;
  and(parts: readonly TextQuery[]): TextQuery;
  or(parts: readonly TextQuery[]): TextQuery;
  not(part: TextQuery): TextQuery;
  match(query: TextQuery): Cond;
}

/** Whether a glob literal can be part of one word (words are runs of letters, digits, marks). */
export const isWordText = (s: string): boolean => /^[\p{L}\p{N}\p{M}]*$/u.test(s);

const escapeRegex = (s: string): string => s.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&');

const sqliteGlob = (parts: readonly GlobPart[]): string =>
  parts.map((p) => (p.kind === 'any' ? '*' : p.kind === 'one' ? '?' : p.text.replace(/[*?[]/g, '[$&]'))).join('');

/**
 * The only lower-case letters (of every Unicode word character up to U+2FFFF, checked against
 * SQLite 3.53) that FTS5's unicode61 tokenizer folds further than JavaScript's toLowerCase. FTS5
 * folds them in indexed words and in a query's words alike; a glob over the FTS5 vocabulary must
 * fold its literals the same way to agree with phrase and prefix queries. (So on SQLite a query
 * word with `ς` also finds `σ`; the README lists this.)
 */
const FTS5_FOLD: Readonly<Record<string, string>> = table({
  µ: 'μ',
  ſ: 's',
  '\u0345': 'ι',
  ς: 'σ',
  ϐ: 'β',
  ϑ: 'θ',
  ϕ: 'φ',
  ϖ: 'π',
  ϰ: 'κ',
  ϱ: 'ρ',
  ϵ: 'ε',
  ẛ: 'ṡ',
  '\u1fbe': 'ι',
});
const fts5Fold = (parts: readonly GlobPart[]): GlobPart[] =>
  parts.map((p) =>
    p.kind === 'literal' ? { kind: 'literal', text: [...p.text].map((c) => FTS5_FOLD[c] ?? c).join('') } : p,
  );

const likePattern = (parts: readonly GlobPart[]): string =>
  parts.map((p) => (p.kind === 'any' ? '%' : p.kind === 'one' ? '_' : escapeLike(p.text))).join('');

/** The literal text before the first wildcard, when the glob starts with one. */
export const leadingLiteral = (parts: readonly GlobPart[]): string =>
  parts[0]?.kind === 'literal' ? parts[0].text : '';

const ops: Record<CmpOp, RawBuilder<unknown>> = {
  '<': sql.raw('<'),
  '<=': sql.raw('<='),
  '>': sql.raw('>'),
  '>=': sql.raw('>='),
  '=': sql.raw('='),
};

// ---- SQLite ---------------------------------------------------------------------------------

/** Runs whose full text is not written yet (it is, when a run ends: evaluate.ts rule 1). */
const NOT_ENDED: Cond = sql<SqlBool>`runs.status IN ('created', 'processing')`;

/**
 * The `search_rowid`s of runs not ended yet, read from the partial indexes on `processing`
 * (runs_executing) and `created` (runs_created_sweep) runs: a few rows, whatever the table's size.
 */
const NOT_ENDED_ROWIDS = sql`SELECT search_rowid FROM runs WHERE status = 'processing'
  UNION ALL SELECT search_rowid FROM runs WHERE status = 'created'`;

/**
 * The run's FTS5 row matches `query` (an FTS5 query string, bound), or (`orNotEnded`) the run has
 * not ended. `walk`: the unary `+` keeps SQLite from driving the query from the matches, so it
 * walks the newest-first index instead.
 */
const ftsMatch = (query: string, walk: boolean, orNotEnded = false): Cond => {
  const rows = orNotEnded
    ? sql`SELECT rowid FROM runs_fts WHERE runs_fts MATCH ${query} UNION ALL ${NOT_ENDED_ROWIDS}`
    : sql`SELECT rowid FROM runs_fts WHERE runs_fts MATCH ${query}`;
  return walk ? sql<SqlBool>`+runs.search_rowid IN (${rows})` : sql<SqlBool>`runs.search_rowid IN (${rows})`;
};

/** FTS5 query text: a column filter and quoted words (words never hold a double quote). */
const ftsPhrase = (col: TextColumn, words: readonly string[]) => `${col} : "${words.join(' ')}"`;

/**
 * One piece of `result` / `prompt` text (run-text.ts) from an array element: a string element as it
 * is; result: an object whose `type` is absent or 'text' and whose `value` is a string; prompt: an
 * object whose `content` is a string. `kind` is the element's JSON kind, `self` its string value,
 * `json` the element as JSON.
 */
const partText = (
  d: DialectName,
  field: 'result' | 'prompt',
  el: { kind: Expression<unknown>; self: Expression<unknown>; json: Expression<unknown> },
) => {
  const j = jsonSql(d);
  const key = field === 'result' ? 'value' : 'content';
  const typeOk =
    field === 'result'
      ? sql`(${j.type(el.json, ['type'])} IS NULL OR ${jsonString(d, el.json, ['type'])} = 'text')`
      : sql`TRUE`;
  return sql<string | null>`(CASE WHEN ${el.kind} = 'string' THEN ${el.self}
    WHEN ${el.kind} = 'object' AND ${typeOk} THEN ${jsonString(d, el.json, [key])} END)`;
};

const sqliteSql = (plan: SearchPlan, { doc }: RunValues): SearchSql => {
  const page = plan.purpose !== 'count';
  const tagWhere = (cond: RawBuilder<unknown>): Cond =>
    page
      ? sql<SqlBool>`EXISTS (SELECT 1 FROM run_tags AS t WHERE t.run_id = runs.id AND ${cond} LIMIT 1)`
      : sql<SqlBool>`runs.search_rowid IN (SELECT t.search_rowid FROM run_tags AS t WHERE ${cond})`;
  return {
    name: 'sqlite',
    rowKey: sql`runs.rowid`,
    countHint: sql<SqlBool>`runs.updated_at >= ''`,
    phrase: (col, words, orNotEnded) =>
      ftsMatch(ftsPhrase(col, words), page && !(plan.isRare?.(words) ?? false), orNotEnded),
    prefix: (col, prefix, orNotEnded) => ftsMatch(`${ftsPhrase(col, [prefix])} *`, page, orNotEnded),
    wordGlob: (col, glob) => {
      const parts = fts5Fold(glob);
      const lead = leadingLiteral(parts);
      const range = lead ? sql`AND v.term >= ${lead} AND v.term < ${lead + '\u{10FFFF}'}` : sql``;
      // Exact, through the FTS5 vocabulary: the matching words, then the runs holding one of them.
      return sql<SqlBool>`${page ? sql`+` : sql``}runs.search_rowid IN (SELECT i.doc FROM runs_fts_instances AS i WHERE i.col = ${col}
        AND i.term IN (SELECT v.term FROM runs_fts_terms AS v WHERE v.term GLOB ${sqliteGlob(parts)} ${range}))`;
    },
    glob: (value, parts) => sql<SqlBool>`COALESCE(${value} GLOB ${sqliteGlob(parts)}, FALSE)`,
    compare: (value, op, bound) => sql<SqlBool>`COALESCE(${value} ${ops[op]} ${bound}, FALSE)`,
    compareNumber: (value, op, bound) => sql<SqlBool>`COALESCE(${value} ${ops[op]} ${bound}, FALSE)`,
    indexedNumber: (column, op, bound) => sql<SqlBool>`${column} ${ops[op]} ${bound}`,
    hasRows: (table, rows, probe) =>
      page
        ? sql<SqlBool>`EXISTS (SELECT 1 ${probe} LIMIT 1)`
        : sql<SqlBool>`runs.id IN (SELECT ${sql.ref(`${table}.run_id`)} ${rows})`,
    hasTag: (tag) => tagWhere(sql`t.tag = ${tag}`),
    someTag: (test) => tagWhere(test(sql.ref('t.tag'))),
    anyTag: () => sql<SqlBool>`EXISTS (SELECT 1 FROM run_tags AS t WHERE t.run_id = runs.id LIMIT 1)`,
    hasAnyTag: (tags) => tagWhere(sql`t.tag IN (${sql.join(tags.map((t) => sql`${t}`))})`),
    tagCounts: () => sql`SELECT t.tag AS k, count(*) AS n FROM m JOIN run_tags AS t ON t.run_id = m.id GROUP BY t.tag`,
    tagFacetColumn: 'id',
    orderText: (value) => sql`${value}`,
    // One equality lookup per word (fts5vocab answers `term = ?` from the index, not `IN`).
    wordRuns: (words) =>
      words.length
        ? sql<{ term: string; n: number }>`${sql.join(
            words.map((w) => sql`SELECT term, doc AS n FROM runs_fts_terms WHERE term = ${w}`),
            sql` UNION ALL `,
          )}`
        : null,
    wordsContain: (words, needle) => sql<SqlBool>`COALESCE(instr(${words}, ${needle}) > 0, FALSE)`,
    // Words hold only letters, digits and marks, so `"w1","w2"` is a valid JSON array to walk.
    wordsGlob: (words, parts) => sql<SqlBool>`(trim(${words}) <> '' AND EXISTS (SELECT 1
      FROM json_each('["' || replace(trim(${words}), ' ', '","') || '"]') AS jw WHERE jw.value GLOB ${sqliteGlob(parts)} LIMIT 1))`,
    partsText: (field) => {
      const path = `$.${field}`;
      const piece = partText('sqlite', field, {
        kind: sql`(CASE e.type WHEN 'text' THEN 'string' ELSE e.type END)`,
        self: sql`e.value`,
        json: sql`e.value`,
      });
      return sql<string>`(CASE json_type(${doc}, ${path})
        WHEN 'text' THEN json_extract(${doc}, ${path})
        WHEN 'array' THEN COALESCE((SELECT group_concat(p.piece, char(10) ORDER BY p.k) FROM
          (SELECT e.key AS k, ${piece} AS piece FROM json_each(${doc}, ${path}) AS e) AS p WHERE p.piece IS NOT NULL), '')
        ELSE '' END)`;
    },
    // json_tree walks the value; a node whose path below the field has no `.` is reached through
    // arrays only: that is evaluate.ts's flattening. Arrays and nulls are not values.
    docHas: (field) => sql<SqlBool>`EXISTS (SELECT 1 FROM json_tree(${doc}, ${`$.${field}`}) AS t
      WHERE t.type NOT IN ('array', 'null') AND instr(substr(t.fullkey, ${field.length + 3}), '.') = 0 LIMIT 1)`,
    textQuery: null,
    readOnce: null,
  };
};

// ---- PostgreSQL -----------------------------------------------------------------------------

const quoteLexeme = (w: string) => `'${w}'`;
const tsMatch = (tsv: Expression<unknown>, query: string): Cond => sql<SqlBool>`${tsv} @@ CAST(${query} AS tsquery)`;
const tooLong = (words: readonly string[]) => words.some((w) => byteLength(w) > TS_MAX_WORD_BYTES);

/** The tsquery of runs whose tsvector holds `words` consecutively in the column's weight, or null when none can. */
const pgPhraseQuery = (col: TextColumn, words: readonly string[]): string | null => {
  if (tooLong(words)) return null;
  const weight = TS_WEIGHT[col] ? `:${TS_WEIGHT[col]}` : '';
  const pairs = words.slice(1).map((w, i) => pairLexeme(words[i], w));
  if (tooLong(pairs)) return words.map((w) => `${quoteLexeme(w)}${weight}`).join(' <-> ');
  // Two words: their pair lexeme, exact. More: the pairs (for the GIN lookup) and the positions.
  if (words.length === 1) return `${quoteLexeme(words[0])}${weight}`;
  const pairQuery = pairs.map((x) => `${quoteLexeme(x)}${weight}`).join(' & ');
  return words.length === 2
    ? pairQuery
    : `${pairQuery} & (${words.map((w) => `${quoteLexeme(w)}${weight}`).join(' <-> ')})`;
};
const pgPrefixQuery = (col: TextColumn, prefix: string): string | null =>
  tooLong([prefix]) ? null : `${quoteLexeme(prefix)}:*${TS_WEIGHT[col]}`;

/** Runs whose tsvector holds `words` consecutively in the column's weight. */
const pgPhrase = (tsv: Expression<unknown>, col: TextColumn, words: readonly string[]): Cond => {
  const q = pgPhraseQuery(col, words);
  return q === null ? FALSE : tsMatch(tsv, q);
};

/**
 * The tsquery algebra of `TextQueries`. Every part is parenthesised (`!` binds tighter than
 * `<->`, then `&`, then `|`). A part is rare (looked up in the GIN index on pages) when its
 * runs are few: an AND with one rare part, an OR of rare parts only; a NOT never is.
 */
const pgTextQueries = (row: RunValues, isRare: ((words: readonly string[]) => boolean) | null): TextQueries => {
  const of = (q: string | null, rare: boolean): TextQuery => (q === null ? 'false' : { q, rare });
  const join = (parts: TsQuery[], op: string, rare: boolean): TextQuery =>
    parts.length === 1 ? parts[0] : { q: parts.map((p) => `(${p.q})`).join(` ${op} `), rare };
  return {
    phrase: (col, words) => of(pgPhraseQuery(col, words), isRare?.(words) ?? true),
    // A prefix stays visible to the GIN index, as `prefix` is.
    prefix: (col, prefix) => of(pgPrefixQuery(col, prefix), true),
    and: (parts) => {
      if (parts.includes('false')) return 'false';
      const qs = parts.filter(isTsQuery);
      return qs.length
        ? join(
            qs,
            '&',
            qs.some((p) => p.rare),
          )
        : 'true';
    },
    or: (parts) => {
      if (parts.includes('true')) return 'true';
      const qs = parts.filter(isTsQuery);
      return qs.length
        ? join(
            qs,
            '|',
            qs.every((p) => p.rare),
          )
        : 'false';
    },
    not: (part) => (part === 'true' ? 'false' : part === 'false' ? 'true' : { q: `!(${part.q})`, rare: false }),
    matchOrNotEnded(query) {
      return query === 'true' ? TRUE : orNotEndedPg(this.match(query));
    },
    match: (query) =>
      query === 'true'
        ? TRUE
        : query === 'false'
          ? FALSE
          : query.rare
            ? tsMatch(row.tsv, query.q)
            : sql<SqlBool>`COALESCE(${tsMatch(row.tsv, query.q)}, FALSE)`,
  };
};

/** `cond` or the run has not ended (its tsvector is still empty): a bitmap OR of GIN and runs_status. */
const orNotEndedPg = (cond: Cond): Cond => sql<SqlBool>`(${cond} OR ${NOT_ENDED})`;

/** The alias of the subquery that reads a run's values once (`readOnce`). */
const ONCE = '_run_read';
const onceValues: RunValues = {
  doc: sql.ref(`${ONCE}.doc`),
  fields: sql.ref(`${ONCE}.fields`),
  tsv: sql.ref(`${ONCE}.tsv`),
  tsvText: sql.ref(`${ONCE}.tsv_text`),
};

/**
 * `EXISTS` over one row that holds the run's values, each detoasted once: `|| '{}'` (jsonb,
 * objects here) and `|| ''` (tsvector) return the value itself, read; `OFFSET 0` keeps the
 * planner from inlining the subquery back into each use. The text form of the tsvector is made
 * from the tsvector read once, a level above.
 */
const pgReadOnce = (used: ReadonlySet<RunValue>, condition: Cond): Cond => {
  const tsv = used.has('tsv') || used.has('tsvText');
  const inner = [
    ...(used.has('doc') ? [sql`runs.doc || '{}'::jsonb AS doc`] : []),
    ...(used.has('fields') ? [sql`runs.search_fields || '{}'::jsonb AS fields`] : []),
    ...(tsv ? [sql`runs.search_tsv || ''::tsvector AS tsv`] : []),
  ];
  if (!inner.length) return condition;
  const read = sql`(SELECT ${sql.join(inner)} OFFSET 0)`;
  const from = used.has('tsvText')
    ? sql`(SELECT r.*, CAST(r.tsv AS text) AS tsv_text FROM ${read} AS r OFFSET 0)`
    : read;
  return sql<SqlBool>`EXISTS (SELECT 1 FROM ${from} AS ${sql.id(ONCE)} WHERE ${condition})`;
};

const pgSql = (row: RunValues): SearchSql => ({
  name: 'postgres',
  rowKey: sql`runs.id`,
  countHint: null,
  phrase: (col, words, orNotEnded) =>
    orNotEnded ? orNotEndedPg(pgPhrase(row.tsv, col, words)) : pgPhrase(row.tsv, col, words),
  prefix: (col, prefix, orNotEnded) => {
    const q = pgPrefixQuery(col, prefix);
    const match = q === null ? FALSE : tsMatch(row.tsv, q);
    return orNotEnded ? orNotEndedPg(match) : match;
  },
  wordGlob(col, parts) {
    // The tsvector's text form lists each word once as 'word':positions, weights after positions.
    // `[^' ]`: a word's characters (pair lexemes hold a space; words never hold one, nor a quote).
    const word = parts
      .map((p) => (p.kind === 'any' ? "[^' ]*" : p.kind === 'one' ? "[^' ]" : escapeRegex(p.text)))
      .join('');
    const weight = TS_WEIGHT[col] ? `[0-9A-D,]*${TS_WEIGHT[col]}` : '';
    const lead = leadingLiteral(parts);
    const scan = sql<SqlBool>`(${row.tsvText} ~ ${`'${word}':${weight}`})`;
    return lead ? sql<SqlBool>`(${this.prefix(col, lead)} AND ${scan})` : scan;
  },
  glob: (value, parts) => sql<SqlBool>`COALESCE(${value} LIKE ${likePattern(parts)} ESCAPE '\\', FALSE)`,
  compare: (value, op, bound) => sql<SqlBool>`COALESCE((${value}) COLLATE "C" ${ops[op]} ${bound}, FALSE)`,
  compareNumber: (value, op, bound) =>
    sql<SqlBool>`COALESCE(${value} ${ops[op]} CAST(${bound} AS double precision), FALSE)`,
  indexedNumber: (column, op, bound) => sql<SqlBool>`${column} ${ops[op]} CAST(${bound} AS double precision)`,
  hasRows: (table, rows) => sql<SqlBool>`runs.id IN (SELECT ${sql.ref(`${table}.run_id`)} ${rows})`,
  // `IS NOT NULL AND`, not COALESCE: never NULL, and the containment stays visible to the GIN index.
  hasTag: (tag) => sql<SqlBool>`(runs.tags IS NOT NULL AND runs.tags @> CAST(${JSON.stringify([tag])} AS jsonb))`,
  someTag: (
    test,
  ) => sql<SqlBool>`EXISTS (SELECT 1 FROM jsonb_array_elements_text(CASE WHEN jsonb_typeof(runs.tags) = 'array'
    THEN runs.tags ELSE '[]'::jsonb END) AS t(tag) WHERE ${test(sql.ref('t.tag'))})`,
  anyTag: () =>
    sql<SqlBool>`(CASE WHEN jsonb_typeof(runs.tags) = 'array' THEN jsonb_array_length(runs.tags) > 0 ELSE FALSE END)`,
  // One containment test per tag: each is a GIN lookup, OR-ed as a bitmap.
  hasAnyTag(tags) {
    return sql<SqlBool>`(${sql.join(
      tags.map((t) => this.hasTag(t)),
      sql` OR `,
    )})`;
  },
  tagCounts: () => sql`SELECT t.tag AS k, count(*) AS n FROM m CROSS JOIN LATERAL jsonb_array_elements_text(CASE
    WHEN jsonb_typeof(m.tags) = 'array' THEN m.tags ELSE '[]'::jsonb END) AS t(tag) GROUP BY t.tag`,
  tagFacetColumn: 'tags',
  orderText: (value) => sql`${value} COLLATE "C"`,
  // PostgreSQL's own statistics of the tsvector (ANALYZE keeps its most common lexemes with their
  // frequencies): an estimate of the runs holding each word. A word missing from the list is rarer
  // than every listed one (or the table was never analysed): no row, so it counts as rare.
  wordRuns: (words) =>
    words.length
      ? sql<{ term: string; n: number }>`SELECT e.term, CAST(e.freq * GREATEST(c.reltuples, 0) AS bigint) AS n
        FROM pg_stats AS s JOIN pg_class AS c ON c.relname = s.tablename AND c.relnamespace = CAST(to_regnamespace(s.schemaname) AS oid)
        CROSS JOIN LATERAL unnest(CAST(CAST(s.most_common_elems AS text) AS text[]), s.most_common_elem_freqs) AS e(term, freq)
        WHERE s.schemaname = current_schema() AND s.tablename = 'runs' AND s.attname = 'search_tsv'
          AND e.term IN (${sql.join(words.map((w) => sql`${w}`))})`
      : null,
  wordsContain: (words, needle) => sql<SqlBool>`COALESCE(strpos(${words}, ${needle}) > 0, FALSE)`,
  wordsGlob: (words, parts) => {
    const word = parts
      .map((p) => (p.kind === 'any' ? '[^ ]*' : p.kind === 'one' ? '[^ ]' : escapeRegex(p.text)))
      .join('');
    return sql<SqlBool>`COALESCE(${words} ~ ${` ${word} `}, FALSE)`;
  },
  partsText: (field) => {
    const value = sql`(${row.doc} -> ${field})`;
    const piece = partText('postgres', field, {
      kind: sql`jsonb_typeof(x.e)`,
      self: sql`(x.e #>> '{}')`,
      json: sql`x.e`,
    });
    return sql<string>`(CASE jsonb_typeof(${value})
      WHEN 'string' THEN ${value} #>> '{}'
      WHEN 'array' THEN COALESCE((SELECT string_agg(p.piece, chr(10) ORDER BY p.k) FROM
        (SELECT x.n AS k, ${piece} AS piece FROM jsonb_array_elements(${value}) WITH ORDINALITY AS x(e, n)) AS p
        WHERE p.piece IS NOT NULL), '')
      ELSE '' END)`;
  },
  docHas: (field) => sql<SqlBool>`EXISTS (WITH RECURSIVE f(v) AS (SELECT ${row.doc} -> ${field}
      UNION ALL SELECT e.v FROM f, jsonb_array_elements(CASE WHEN jsonb_typeof(f.v) = 'array' THEN f.v ELSE '[]'::jsonb END) AS e(v))
    SELECT 1 FROM f WHERE jsonb_typeof(f.v) NOT IN ('array', 'null'))`,
  textQuery: pgTextQueries(row, null),
  readOnce: { values: onceValues, wrap: pgReadOnce },
});

/**
 * PostgreSQL pages: a phrase whose words are all common (known from the statistics, `isRare`
 * false) is tested run by run while the newest-first index is walked (COALESCE hides it from the
 * GIN index), which stops after the page's runs; otherwise the planner is free, and a rare phrase
 * is looked up in the GIN index. Without the hint, the planner chose GIN AND-ed with the status
 * and model indexes for common phrases, then sorted thousands of matches (bench/README.md).
 */
const postgresFor = (plan: SearchPlan, row: RunValues): SearchSql => {
  const isRare = plan.isRare;
  const base = pgSql(row);
  if (plan.purpose === 'count' || !isRare) return base;
  return {
    ...base,
    textQuery: pgTextQueries(row, isRare),
    phrase: (col, words, orNotEnded) => {
      const phrase = pgPhrase(row.tsv, col, words);
      const match = isRare(words) ? phrase : sql<SqlBool>`COALESCE(${phrase}, FALSE)`;
      return orNotEnded ? orNotEndedPg(match) : match;
    },
  };
};

/** The search SQL of a dialect, over the run's values `row` (its columns, or what `readOnce` read). */
export const searchSql = (dialect: DialectName, plan: SearchPlan = {}, row: RunValues = RUN_VALUES): SearchSql =>
  dialect === 'postgres' ? postgresFor(plan, row) : sqliteSql(plan, row);
