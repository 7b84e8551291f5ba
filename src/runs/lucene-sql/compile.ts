/**
 * Lucene AST (query/lucene) → one SQL condition over the `runs` table, with the meaning of
 * query/lucene/evaluate.ts (THE spec): same values per field, same word rules, same two-valued
 * NOT. Every value is a bound parameter. Where each field lives:
 *
 * - real columns: id, status, modelId/model, finish_reason, parent, trace_id, token_use.*, execution_time,
 *   cost.total, created_at, updated_at; `interaction` / `environment` match the id column or the name column;
 * - `tags`: run_tags (SQLite) or the jsonb `tags` column with its GIN index (PostgreSQL);
 * - text (`result`, `prompt`, the default text): the full-text index of the run (FTS5 columns
 *   body/prompt/result; tsvector weights). A term's words must appear consecutively (a phrase
 *   query). A wildcard is one word: a trailing `*` is an index prefix query (`hel*`); any other
 *   glob (`h?llo`, `*llo`) is matched exactly against the index's word list (SQLite: the FTS5
 *   vocabulary; PostgreSQL: the tsvector's words), prefiltered by the leading literal when there
 *   is one; without one it reads every run's index entry (slow on large projects).
 *   Ranges and `_exists_` on `result`/`prompt` read the run document (rare, not indexed);
 * - families `parameters.*`, `config.*`, `source.*`: `search_fields` (values by path, arrays
 *   flattened at write time); parameter words are first narrowed through the full-text index;
 * - `tool_use.tool_name`: the members of the run document's `tool_use` array (not indexed; a
 *   query that has only this field reads the document of every run of the project it narrows to).
 */
import { sql, type Expression, type SqlBool } from 'kysely';
import type { DialectName } from '../../db/dialect.ts';
import { jsonSomeElement, jsonSomeMember, jsonSql, type JsonElementSql } from '../../db/json-sql.ts';
import {
  RUN_FIELD_LIST,
  UnknownFieldError,
  globParts,
  instantToIso,
  parseDateInterval,
  parseInstant,
  parseNumber,
  runField,
  tokenize,
  visit,
  type FieldSpec,
  type GlobPart,
  type QueryNode,
  type RangeNode,
  type TermNode,
} from '../../query/lucene/index.ts';
import { WORDS_KEY, wordString } from './search-doc.ts';
import {
  FALSE,
  TRUE,
  isWordText,
  leadingLiteral,
  RUN_VALUES,
  searchSql,
  type CmpOp,
  type Cond,
  type RunValue,
  type RunValues,
  type SearchPlan,
  type SearchSql,
  type TextColumn,
  type TextQuery,
} from '../../db/run-search-sql.ts';
import { table } from '../../util/own.ts';
import { SCORE_COLUMNS, SCORES_TABLE, latestScoresMeeting } from '../../scores/table-conditions.ts';

export interface CompileOptions {
  readonly dialect: DialectName;
  /** The field a bare term searches (`defaultQueryPath`); absent = the run's text. */
  readonly defaultPath?: string;
  /** How the condition will be used (db/run-search-sql.ts `SearchPlan`); only the SQL's shape changes. */
  readonly plan?: SearchPlan;
  /** The project searched: score fields then walk that project's scores by name (run_scores indexes). */
  readonly project?: string;
}

type ColumnKind = 'keyword' | 'number' | 'date';
interface ColumnField {
  readonly column: string;
  readonly kind: ColumnKind;
  readonly nullable: boolean;
}

/** Fields stored in a real column of `runs`. */
const COLUMNS: Readonly<Record<string, ColumnField>> = table({
  id: { column: 'id', kind: 'keyword', nullable: false },
  status: { column: 'status', kind: 'keyword', nullable: false },
  modelId: { column: 'model_id', kind: 'keyword', nullable: true },
  model: { column: 'model_id', kind: 'keyword', nullable: true },
  finish_reason: { column: 'finish_reason', kind: 'keyword', nullable: true },
  parent: { column: 'parent_id', kind: 'keyword', nullable: true },
  trace_id: { column: 'trace_id', kind: 'keyword', nullable: true },
  'token_use.prompt': { column: 'token_prompt', kind: 'number', nullable: true },
  'token_use.result': { column: 'token_result', kind: 'number', nullable: true },
  'token_use.total': { column: 'token_total', kind: 'number', nullable: true },
  execution_time: { column: 'execution_time', kind: 'number', nullable: true },
  'cost.total': { column: 'cost_total', kind: 'number', nullable: true },
  created_at: { column: 'created_at', kind: 'date', nullable: false },
  updated_at: { column: 'updated_at', kind: 'date', nullable: false },
});

/** `interaction` / `environment`: a run's ref is `{id, name}`; the id and the name are its values. */
const REFS: Readonly<Record<string, { id: string; name: string; nullable: boolean }>> = table({
  interaction: { id: 'interaction_id', name: 'interaction_name', nullable: false },
  environment: { id: 'environment_id', name: 'environment_name', nullable: true },
});

/** Fields that are one member of the objects of an array in the run document: `<array>.<key>`. */
const MEMBERS: Readonly<Record<string, { array: readonly string[]; key: string }>> = table({
  'tool_use.tool_name': { array: ['tool_use'], key: 'tool_name' },
});

const col = (name: string) => sql.ref(`runs.${name}`);
/** The columns of a score a condition on `scores.<name>` reads. */
const SCORE = SCORE_COLUMNS;

/** Values `row` that note each read of theirs in `reads` (how many uses the SQL makes of each). */
const counting = (row: RunValues, reads: Map<RunValue, number>): RunValues => {
  const read = (k: RunValue) => {
    reads.set(k, (reads.get(k) ?? 0) + 1);
    return row[k];
  };
  return {
    get doc() {
      return read('doc');
    },
    get fields() {
      return read('fields');
    },
    get tsv() {
      return read('tsv');
    },
    get tsvText() {
      return read('tsvText');
    },
  };
};

const and = (parts: Cond[]): Cond =>
  parts.length === 0 ? TRUE : parts.length === 1 ? parts[0] : sql<SqlBool>`(${sql.join(parts, sql` AND `)})`;
const or = (parts: Cond[]): Cond =>
  parts.length === 0 ? FALSE : parts.length === 1 ? parts[0] : sql<SqlBool>`(${sql.join(parts, sql` OR `)})`;
/** A condition over a nullable column: false, never NULL, when the column is NULL. */
const present = (c: Expression<unknown>, cond: Cond, nullable: boolean): Cond =>
  nullable ? sql<SqlBool>`(${c} IS NOT NULL AND ${cond})` : cond;

/** The lower / upper comparisons of a range, in a value domain. */
const bounds = <T>(r: RangeNode, lo: T | null, hi: T | null, cmp: (op: CmpOp, v: T) => Cond): Cond[] => [
  ...(lo === null ? [] : [cmp(r.includeLower ? '>=' : '>', lo)]),
  ...(hi === null ? [] : [cmp(r.includeUpper ? '<=' : '<', hi)]),
];

/** Merges runs of `*` (they mean the same as one). */
const normaliseGlob = (parts: GlobPart[]): GlobPart[] =>
  parts.filter((p, i) => !(p.kind === 'any' && parts[i - 1]?.kind === 'any'));

/**
 * A bound for comparing stored timestamps (`toISOString`, years 0000–9999, so text order is time
 * order): an instant outside that span becomes '' (below every value) or '~' (above every value).
 */
const MIN_ISO_MS = Date.parse('0000-01-01T00:00:00.000Z');
const MAX_ISO_MS = Date.parse('9999-12-31T23:59:59.999Z');
export const isoBound = (ms: number): string => (ms < MIN_ISO_MS ? '' : ms > MAX_ISO_MS ? '~' : instantToIso(ms));

/** How costly a node is to test per run: columns 0, full text 1, JSON (families, members, result/prompt ranges) 2. */
const weight = (n: QueryNode, defaultPath: string | undefined): number => {
  switch (n.kind) {
    case 'and':
    case 'or':
      return Math.max(...n.nodes.map((x) => weight(x, defaultPath)));
    case 'not':
      return weight(n.node, defaultPath);
    case 'all':
      return 0;
    case 'term': {
      // A bare term searches the default path when there is one, else the full text.
      const field = n.field ?? defaultPath ?? null;
      const spec = field === null ? null : runField(field);
      return spec === null
        ? 1
        : spec.score !== undefined
          ? 0
          : spec.family || MEMBERS[spec.name]
            ? 2
            : spec.kind === 'text'
              ? 1
              : 0;
    }
    case 'range':
    case 'exists': {
      const spec = runField(n.field);
      return spec === null ? 0 : spec.family || spec.kind === 'text' || MEMBERS[spec.name] ? 2 : 0;
    }
  }
};

class Compiler {
  private s: SearchSql;
  private readonly j;
  /** The run's values the SQL reads: its columns, or what a read-once subquery gives. */
  private row: RunValues = RUN_VALUES;
  /** Inside a read-once subquery: index prefilters are left out (the root has one for the whole). */
  private readingOnce = false;

  constructor(
    private readonly dialect: DialectName,
    private readonly defaultPath: string | undefined,
    private readonly plan: SearchPlan,
    private readonly project: string | undefined,
  ) {
    this.s = searchSql(dialect, plan);
    this.j = jsonSql(dialect);
  }

  /**
   * The whole query. PostgreSQL detoasts a stored value at each operator that reads it, so a
   * condition that reads the run's documents or text index more than once (32 `parameters.*`
   * terms: 32 reads of `search_fields` and of the tsvector, per row) is compiled over values
   * read once per row (db/run-search-sql.ts `readOnce`). The top-level conditions that read columns only
   * stay outside, where their indexes narrow the runs first, and so does one text-index
   * prefilter the whole condition implies (`impliedText`), which the GIN index can answer.
   */
  compileRoot(node: QueryNode): Cond {
    const once = this.s.readOnce;
    if (once === null) return this.compile(node);
    const direct = this.over(RUN_VALUES, false, () => this.compile(node));
    // One read of the tsvector (an index match) or none: nothing is read twice.
    if (!direct.reads.size || (direct.reads.size === 1 && direct.reads.get('tsv') === 1)) return direct.cond;
    const parts = node.kind === 'and' ? node.nodes : [node];
    const columns: Cond[] = [];
    const heavy: QueryNode[] = [];
    for (const part of parts) {
      const c = this.over(RUN_VALUES, false, () => this.compile(part));
      if (c.reads.size) heavy.push(part);
      else columns.push(c.cond);
    }
    const byWeight = heavy.sort((a, b) => weight(a, this.defaultPath) - weight(b, this.defaultPath));
    const inner = this.over(once.values, true, () => and(byWeight.map((n) => this.compile(n))));
    const text = this.s.textQuery;
    const implied = text && this.impliedText(heavy.length === 1 ? heavy[0] : { kind: 'and', nodes: heavy });
    return and([
      ...columns,
      ...(implied === null || implied === 'true' || !text ? [] : [text.matchOrNotEnded(implied)]),
      once.wrap(new Set(inner.reads.keys()), inner.cond),
    ]);
  }

  /** Compiles with the run's values `row`, noting which of them the SQL reads and how often. */
  private over(row: RunValues, readingOnce: boolean, build: () => Cond): { cond: Cond; reads: Map<RunValue, number> } {
    const reads = new Map<RunValue, number>();
    const saved = { s: this.s, row: this.row, readingOnce: this.readingOnce };
    this.row = counting(row, reads);
    this.s = searchSql(this.dialect, this.plan, this.row);
    this.readingOnce = readingOnce;
    try {
      return { cond: build(), reads };
    } finally {
      ({ s: this.s, row: this.row, readingOnce: this.readingOnce } = saved);
    }
  }

  compile(node: QueryNode): Cond {
    // A boolean subtree of full-text terms alone is one match where the backend can join them
    // (db/run-search-sql.ts `textQuery`): the row's text index is then read once for all of them.
    const text = this.s.textQuery && node.kind !== 'term' ? this.textQuery(node) : null;
    if (text !== null) return this.s.textQuery!.match(text);
    return visit<Cond>(node, {
      term: (t) => this.term(t),
      range: (r) => this.range(r),
      exists: (e) => this.exists(this.spec(e.field)),
      // Cheap tests first: databases mostly keep the written order among equal-cost tests, and a
      // full-text or JSON test on a row that another test already refused is wasted work.
      and: (n) =>
        and(
          [...n.nodes]
            .sort((a, b) => weight(a, this.defaultPath) - weight(b, this.defaultPath))
            .map((x) => this.compile(x)),
        ),
      or: (n) => or(n.nodes.map((x) => this.compile(x))),
      not: (n) => sql<SqlBool>`(NOT ${this.compile(n.node)})`,
      all: () => TRUE,
    });
  }

  private spec(field: string): FieldSpec {
    const spec = runField(field);
    if (spec === null) throw new UnknownFieldError(field, RUN_FIELD_LIST);
    return spec;
  }

  // ---- terms --------------------------------------------------------------------------------

  private term(t: TermNode): Cond {
    const field = t.field ?? this.defaultPath ?? null;
    if (field === null) return this.textTerm('body', t);
    const spec = this.spec(field);
    if (spec.score !== undefined) return this.scoreTerm(spec.score, t);
    if (spec.name === 'result' || spec.name === 'prompt') return this.textTerm(spec.name, t);
    if (spec.family) return spec.kind === 'text' ? this.familyTextTerm(spec, t) : this.familyKeywordTerm(spec, t);
    if (spec.name === 'tags')
      return t.wildcard ? this.s.someTag((tag) => this.s.glob(tag, globParts(t.value))) : this.s.hasTag(t.value);
    const member = MEMBERS[spec.name];
    if (member) {
      const parts = t.wildcard ? globParts(t.value) : null;
      return jsonSomeMember(
        this.dialect,
        this.row.doc,
        member.array,
        member.key,
        parts
          ? (el) => sql<SqlBool>`(${el.kind} = 'string' AND ${this.s.glob(el.text, parts)})`
          : this.scalarEquals(t.value, true)!,
      );
    }
    const ref = REFS[spec.name];
    if (ref) {
      const test = (c: string, nullable: boolean) =>
        present(
          col(c),
          t.wildcard ? this.s.glob(col(c), globParts(t.value)) : sql<SqlBool>`${col(c)} = ${t.value}`,
          nullable,
        );
      return or([test(ref.id, ref.nullable), test(ref.name, true)]);
    }
    const c = COLUMNS[spec.name];
    if (c.kind === 'number') {
      const n = parseNumber(t.value);
      return t.wildcard || n === null
        ? FALSE
        : present(col(c.column), this.s.compareNumber(col(c.column), '=', n), c.nullable);
    }
    if (c.kind === 'date' && !t.wildcard) {
      const span = parseDateInterval(t.value);
      if (span === null) return FALSE;
      return and([
        sql<SqlBool>`${col(c.column)} >= ${isoBound(span.from)}`,
        sql<SqlBool>`${col(c.column)} < ${isoBound(span.to)}`,
      ]);
    }
    // keyword (and a wildcard on a date: a glob over the stored ISO string)
    return present(
      col(c.column),
      t.wildcard ? this.s.glob(col(c.column), globParts(t.value)) : sql<SqlBool>`${col(c.column)} = ${t.value}`,
      c.nullable,
    );
  }

  /**
   * A text query that every run matching `node` matches unless it has not ended, or null when
   * there is none: what the text index can narrow a read-once condition by. A word term on a
   * `parameters.*` field implies its words in the run's text (every parameter string is part of
   * an ended run's text, as `familyTextTerm`'s own prefilter says).
   */
  private impliedText(node: QueryNode): TextQuery | null {
    const t = this.s.textQuery!;
    const exact = this.textQuery(node);
    if (exact !== null) return exact;
    switch (node.kind) {
      case 'and': {
        const parts = node.nodes.map((n) => this.impliedText(n)).filter((p) => p !== null);
        return parts.length ? t.and(parts) : null;
      }
      case 'or': {
        const parts = node.nodes.map((n) => this.impliedText(n));
        return parts.every((p) => p !== null) ? t.or(parts as TextQuery[]) : null;
      }
      case 'term': {
        const field = node.field ?? this.defaultPath ?? null;
        const spec = field === null ? null : runField(field);
        if (!spec?.family || spec.kind !== 'text') return null;
        if (node.wildcard) {
          const parts = this.wordGlob(node);
          if (parts === null) return 'false';
          const lead = leadingLiteral(parts);
          return lead ? t.prefix('body', lead) : null;
        }
        if (this.scalarEquals(node.value, false)) return null;
        const needle = tokenize(node.value);
        return needle.length ? t.phrase('body', needle) : 'false';
      }
      default:
        return null;
    }
  }

  /** The subtree as one text query when every leaf is a phrase or prefix term on the run's text, else null. */
  private textQuery(node: QueryNode): TextQuery | null {
    const t = this.s.textQuery!;
    const all = (nodes: readonly QueryNode[]) => {
      const parts: TextQuery[] = [];
      for (const n of nodes) {
        const q = this.textQuery(n);
        if (q === null) return null;
        parts.push(q);
      }
      return parts;
    };
    switch (node.kind) {
      case 'and':
      case 'or': {
        const parts = all(node.nodes);
        return parts && (node.kind === 'and' ? t.and(parts) : t.or(parts));
      }
      case 'not': {
        const part = this.textQuery(node.node);
        return part && t.not(part);
      }
      case 'all':
        return 'true';
      case 'term': {
        const field = node.field ?? this.defaultPath ?? null;
        const column: TextColumn | null =
          field === null ? 'body' : field === 'result' || field === 'prompt' ? field : null;
        if (column === null) return null;
        if (!node.wildcard) {
          const words = tokenize(node.value);
          return words.length ? t.phrase(column, words) : 'false';
        }
        const parts = this.wordGlob(node);
        if (parts === null) return 'false';
        const prefix = parts.length === 2 && parts[0].kind === 'literal' && parts[1].kind === 'any';
        return prefix ? t.prefix(column, (parts[0] as { text: string }).text) : null;
      }
      default:
        return null;
    }
  }

  /** Words of a text: a phrase, or one word matching a glob. */
  private textTerm(column: TextColumn, t: TermNode): Cond {
    if (t.wildcard) {
      const parts = this.wordGlob(t);
      if (parts === null) return FALSE;
      if (parts.length === 2 && parts[0].kind === 'literal' && parts[1].kind === 'any')
        return this.s.prefix(column, parts[0].text);
      return this.s.wordGlob(column, parts);
    }
    const words = tokenize(t.value);
    return words.length ? this.s.phrase(column, words) : FALSE;
  }

  /** The lower-cased glob of a wildcard term on text, or null when no single word can match it. */
  private wordGlob(t: TermNode): GlobPart[] | null {
    const parts = normaliseGlob(globParts(t.value.toLowerCase()));
    return parts.every((p) => p.kind !== 'literal' || isWordText(p.text)) ? parts : null;
  }

  /** `parameters.*`: strings by their words, numbers and booleans as keyword values. */
  private familyTextTerm(spec: FieldSpec, t: TermNode): Cond {
    const words = [WORDS_KEY + spec.name];
    if (t.wildcard) {
      const parts = this.wordGlob(t);
      if (parts === null) return FALSE;
      const lead = leadingLiteral(parts);
      const exact = jsonSomeElement(this.dialect, this.row.fields, words, (el) => this.s.wordsGlob(el.text, parts));
      // Runs not ended have no full text yet (evaluate.ts rule 1): the prefilter lets them through.
      return lead && !this.readingOnce ? and([this.s.prefix('body', lead, true), exact]) : exact;
    }
    const branches: Cond[] = [];
    const needle = tokenize(t.value);
    if (needle.length) {
      // Every parameter string is part of an ended run's text, so the index narrows first (runs
      // not ended, which have no full text yet, pass the prefilter).
      const exact = jsonSomeElement(this.dialect, this.row.fields, words, (el) =>
        this.s.wordsContain(el.text, wordString(needle)),
      );
      branches.push(this.readingOnce ? exact : and([this.s.phrase('body', needle, true), exact]));
    }
    const scalar = this.scalarEquals(t.value, false);
    if (scalar) branches.push(jsonSomeElement(this.dialect, this.row.fields, [spec.name], scalar));
    return or(branches);
  }

  /** `config.*`, `source.*`: exact strings (or a case-sensitive glob), numbers, booleans. */
  private familyKeywordTerm(spec: FieldSpec, t: TermNode): Cond {
    if (t.wildcard) {
      const parts = globParts(t.value);
      return jsonSomeElement(
        this.dialect,
        this.row.fields,
        [spec.name],
        (el) => sql<SqlBool>`(${el.kind} = 'string' AND ${this.s.glob(el.text, parts)})`,
      );
    }
    return jsonSomeElement(this.dialect, this.row.fields, [spec.name], this.scalarEquals(t.value, true)!);
  }

  /** A JSON element equal to a term's value as keyword (strings only when `strings`), or null when nothing can be. */
  private scalarEquals(value: string, strings: boolean): ((el: JsonElementSql) => Cond) | null {
    const n = parseNumber(value);
    const bool = value === 'true' || value === 'false';
    if (!strings && n === null && !bool) return null;
    return (el) =>
      or([
        ...(strings ? [sql<SqlBool>`(${el.kind} = 'string' AND ${el.text} = ${value})`] : []),
        ...(n !== null ? [sql<SqlBool>`(${el.kind} = 'number' AND ${this.s.compareNumber(el.num, '=', n)})`] : []),
        ...(bool ? [sql<SqlBool>`(${el.kind} = 'boolean' AND ${el.text} = ${value})`] : []),
      ]);
  }

  // ---- scores -------------------------------------------------------------------------------

  /**
   * Runs whose latest score `name` meets one of `arms` (each on SCORE's columns, of one kind): an
   * IN over run_scores or an EXISTS probe (db/run-search-sql.ts `hasRows`), not a join, so NOT stays
   * two-valued. The arms compare the value columns plainly (NULL is no match inside the
   * subquery), so the set walks the index of its kind by value, not every score of the name.
   */
  private scored(name: string, arms: Cond[]): Cond {
    const { rows, probe } = latestScoresMeeting(this.project, name, or(arms));
    return sql<SqlBool>`(${this.s.hasRows(SCORES_TABLE, rows, probe)})`;
  }

  /** A text arm: the rows with a text value (the index skips the numbers' NULLs), tested by `cond`. */
  private scoreText(kind: Cond, cond: Cond): Cond {
    return sql<SqlBool>`(${kind} AND ${SCORE.text} IS NOT NULL AND ${cond})`;
  }

  /** A score's value as a keyword: numbers numerically, booleans as true/false, categories exactly (or by glob). */
  private scoreTerm(name: string, t: TermNode): Cond {
    if (t.wildcard)
      return this.scored(name, [
        this.scoreText(sql<SqlBool>`${SCORE.kind} = 'category'`, this.s.glob(SCORE.text, globParts(t.value))),
      ]);
    const n = parseNumber(t.value);
    return this.scored(name, [
      ...(n !== null ? [sql<SqlBool>`(${SCORE.kind} = 'number' AND ${this.s.indexedNumber(SCORE.num, '=', n)})`] : []),
      sql<SqlBool>`(${SCORE.kind} <> 'number' AND ${SCORE.text} = ${t.value})`,
    ]);
  }

  // ---- ranges -------------------------------------------------------------------------------

  private range(r: RangeNode): Cond {
    const spec = this.spec(r.field);
    if (spec.kind === 'date') {
      const lo = r.lower === null ? null : parseInstant(r.lower);
      const hi = r.upper === null ? null : parseInstant(r.upper);
      if ((r.lower !== null && lo === null) || (r.upper !== null && hi === null)) return FALSE;
      const c = col(COLUMNS[spec.name].column);
      return and(bounds(r, lo, hi, (op, v) => sql<SqlBool>`${c} ${sql.raw(op)} ${isoBound(v)}`));
    }
    const numeric = this.numericBounds(r);
    const text = (value: Expression<unknown>) =>
      and(bounds(r, r.lower, r.upper, (op, v) => this.s.compare(value, op, v)));
    const number = (value: Expression<unknown>) =>
      numeric ? and(bounds(r, numeric.lo, numeric.hi, (op, v) => this.s.compareNumber(value, op, v))) : FALSE;
    if (spec.score !== undefined)
      return this.scored(spec.score, [
        ...(numeric
          ? [
              sql<SqlBool>`(${SCORE.kind} = 'number' AND ${SCORE.num} IS NOT NULL AND ${and(
                bounds(r, numeric.lo, numeric.hi, (op, v) => this.s.indexedNumber(SCORE.num, op, v)),
              )})`,
            ]
          : []),
        this.scoreText(sql<SqlBool>`${SCORE.kind} = 'category'`, text(SCORE.text)),
      ]);
    if (spec.name === 'result' || spec.name === 'prompt')
      return and([this.s.docHas(spec.name), text(this.s.partsText(spec.name))]);
    if (spec.family) {
      return jsonSomeElement(this.dialect, this.row.fields, [spec.name], (el) =>
        or([
          sql<SqlBool>`(${el.kind} = 'string' AND ${text(el.text)})`,
          ...(numeric ? [sql<SqlBool>`(${el.kind} = 'number' AND ${number(el.num)})`] : []),
        ]),
      );
    }
    if (spec.name === 'tags') return this.s.someTag((tag) => text(tag));
    const member = MEMBERS[spec.name];
    if (member) {
      return jsonSomeMember(this.dialect, this.row.doc, member.array, member.key, (el) =>
        or([
          sql<SqlBool>`(${el.kind} = 'string' AND ${text(el.text)})`,
          ...(numeric ? [sql<SqlBool>`(${el.kind} = 'number' AND ${number(el.num)})`] : []),
        ]),
      );
    }
    const ref = REFS[spec.name];
    if (ref)
      return or([
        present(col(ref.id), text(col(ref.id)), ref.nullable),
        present(col(ref.name), text(col(ref.name)), true),
      ]);
    const c = COLUMNS[spec.name];
    return present(col(c.column), c.kind === 'number' ? number(col(c.column)) : text(col(c.column)), c.nullable);
  }

  /** Both given bounds as numbers, or null when one is not a number (then numbers never match). */
  private numericBounds(r: RangeNode): { lo: number | null; hi: number | null } | null {
    const lo = r.lower === null ? null : parseNumber(r.lower);
    const hi = r.upper === null ? null : parseNumber(r.upper);
    return (r.lower !== null && lo === null) || (r.upper !== null && hi === null) ? null : { lo, hi };
  }

  // ---- exists -------------------------------------------------------------------------------

  private exists(spec: FieldSpec): Cond {
    if (spec.score !== undefined) return this.scored(spec.score, [TRUE]);
    if (spec.name === 'result' || spec.name === 'prompt') return this.s.docHas(spec.name);
    if (spec.family) return sql<SqlBool>`(${this.j.type(this.row.fields, [spec.name])} IS NOT NULL)`;
    if (spec.name === 'tags') return this.s.anyTag();
    const member = MEMBERS[spec.name];
    if (member)
      return jsonSomeMember(
        this.dialect,
        this.row.doc,
        member.array,
        member.key,
        (el) => sql<SqlBool>`(${el.kind} IN ('string', 'number', 'boolean', 'object'))`,
      );
    const ref = REFS[spec.name];
    // A run's ref is set exactly when its id column is (the store writes both from the document).
    if (ref) return ref.nullable ? sql<SqlBool>`(${col(ref.id)} IS NOT NULL)` : TRUE;
    const c = COLUMNS[spec.name];
    return c.nullable ? sql<SqlBool>`(${col(c.column)} IS NOT NULL)` : TRUE;
  }
}

/**
 * The condition a query puts on `runs` (see above). Throws UnknownFieldError for a field (or a
 * default path) that is not searchable.
 */
export function compileRunQuery(node: QueryNode, opts: CompileOptions): Cond {
  if (opts.defaultPath !== undefined && runField(opts.defaultPath) === null)
    throw new UnknownFieldError(opts.defaultPath, RUN_FIELD_LIST);
  return new Compiler(opts.dialect, opts.defaultPath, opts.plan ?? {}, opts.project).compileRoot(node);
}

/**
 * The words of the query's full-text terms (not wildcards), for a plan that asks how common they
 * are (db/run-search-sql.ts `SearchPlan.isRare`).
 */
export function fullTextWords(node: QueryNode, defaultPath?: string): string[] {
  const out = new Set<string>();
  const walk = (n: QueryNode): void => {
    switch (n.kind) {
      case 'term': {
        const field = n.field ?? defaultPath ?? null;
        const text = field === null || runField(field)?.kind === 'text';
        if (text && !n.wildcard) for (const w of tokenize(n.value)) out.add(w);
        return;
      }
      case 'and':
      case 'or':
        n.nodes.forEach(walk);
        return;
      case 'not':
        walk(n.node);
        return;
      default:
        return;
    }
  };
  walk(node);
  return [...out];
}

/**
 * Whether the query reads only the run's own columns (status, model, times, tokens, the
 * interaction and environment refs): no stored document, no full text. Such a query walks an
 * index, so a per-row read budget would only cost it its covering index.
 */
export function readsColumnsOnly(node: QueryNode, defaultPath?: string): boolean {
  const isColumn = (field: string | null) => {
    const name = field ?? defaultPath;
    // A score field walks the run_scores indexes, not the run's document.
    return (
      name !== undefined &&
      (Object.hasOwn(COLUMNS, name) || Object.hasOwn(REFS, name.split('.')[0]) || runField(name)?.score !== undefined)
    );
  };
  switch (node.kind) {
    case 'term':
    case 'range':
    case 'exists':
      return isColumn(node.field);
    case 'and':
    case 'or':
      return node.nodes.every((n) => readsColumnsOnly(n, defaultPath));
    case 'not':
      return readsColumnsOnly(node.node, defaultPath);
    case 'all':
      return true;
  }
}
