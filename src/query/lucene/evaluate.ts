/**
 * THE SPEC of what a Lucene query matches. This plain-TypeScript evaluator is the reference the
 * SQL compiler (SQLite and PostgreSQL) must agree with, id for id.
 *
 * Documents: a run as JSON (`id, status, modelId, tags[], interaction {id,name}, environment
 * {id,name}, parameters, result [{type,value}], prompt [{role,content}], token_use {prompt,result,
 * total}, execution_time, created_at, updated_at (ISO 8601 as Date#toISOString), finish_reason,
 * config, source, …`). Fields and their kinds: run-fields.ts.
 *
 * 1. Values of a field. The field's path is walked from the root; at every step arrays are
 *    flattened (so `tags` yields each tag and `parameters.items.sku` each item's sku) and
 *    null/undefined are dropped. The field matches when ANY value matches (none → no match).
 *    - `ref` fields (`interaction`, `environment`): a string value is an id; an object gives its
 *      string `id` and its string `name`.
 *    - `result` and `prompt` give ONE text each (run-text.ts: text parts / message contents joined
 *      with "\n"), or nothing when the path is absent.
 *    - The default field (a term with `field: null`) is `opts.defaultPath` when given (with that
 *      field's kind); else ONE text, `runText`: prompt, result and every string in `parameters`.
 *    - Full text is written once, when a run ends: a TERM on `result`, `prompt` or the default
 *      text (rule 2, text) matches only runs whose `status` is `completed` or `failed`. A run
 *      still `created` or `processing` is found by its other fields (status, tags,
 *      `parameters.*`, …), and by ranges and `_exists_` on `result`/`prompt`, which read the
 *      document. (Indexing the text of each run twice, at creation and at its end, cost more
 *      than half of a blocking run's time: bench/README.md.)
 * 2. Term (`value`, `phrase`, `wildcard`), per value, by the field's kind:
 *    - keyword, number, ref, and `config.*` / `source.*`:
 *        string → exact, case-sensitive equality with `value`; a wildcard term is an anchored glob
 *        (`*` any run, `?` one code point, case-sensitive). A phrase is just a quoted exact value.
 *        number → `value` parses as a number (values.ts `parseNumber`) and is equal; never by glob.
 *        boolean → `value` is exactly `true` / `false`. Objects → no match.
 *    - text (`result`, `prompt`, the default text, string values of `parameters.*`):
 *        words are values.ts `tokenize` (lower-cased runs of letters, digits, marks). The term's own
 *        words must appear consecutively in the text (so a term or a phrase of several words is a
 *        phrase match; a term with no words matches nothing). A wildcard term is lower-cased and
 *        must glob-match ONE word (`hel*`, `w?rld`). Numbers and booleans under `parameters.*`
 *        match as keyword values.
 *    - date (`created_at`, `updated_at`): `value` is an ISO 8601 date or date-time and covers
 *        its precision (`2024` the year, `2024-03-05` the day, `…T10:00` the minute; UTC unless a
 *        zone is given); the value's instant must fall in that interval. An unparsable value
 *        matches nothing. A wildcard term globs the stored ISO string (case-sensitive).
 * 3. Range (`[a TO b]`, `{a TO b}`, mixed, and `>`, `>=`, `<`, `<=` with one open end), per value:
 *    - date fields: both bounds and values are parsed as instants (a date-only bound is its
 *      start, so `<=2024-03-05` ends at midnight); any unparsable bound → no match.
 *    - otherwise: a JSON number value compares numerically when every given bound parses as a
 *      number (else no match); a string value (the whole text, for `result`/`prompt`) compares
 *      by Unicode code point (values.ts `compareCodePoints`), even if it looks numeric; other
 *      values never match.
 * 4. `exists` (`_exists_:f`, `f:*`, `f:[* TO *]`): the field yields at least one value by rule 1
 *    on the raw path (an empty array or null does not exist; an empty string does).
 * 5. `and` every, `or` some, `not` the complement (two-valued: a run without the field is matched
 *    by `NOT f:x`; SQL must not let NULL leak out of a negation), `all` every run.
 */
import type { QueryNode, RangeNode, TermNode } from './ast.ts';
import { UnknownFieldError } from './errors.ts';
import { RUN_FIELD_LIST, runField, type FieldSpec } from './run-fields.ts';
import { promptText, resultText, runText } from './run-text.ts';
import { compareCodePoints, globToRegExp, parseDateInterval, parseInstant, parseNumber, tokenize } from './values.ts';

export type RunDocument = Readonly<Record<string, unknown>>;

export interface MatchOptions {
  /** The field a bare term searches; absent = the run's text (rule 1). */
  readonly defaultPath?: string;
}

/** Per-document state: the words of each text, computed once. */
interface Ctx {
  readonly doc: RunDocument;
  readonly words: Map<string, string[]>;
}
type Test = (ctx: Ctx) => boolean;
type LeafTest = (leaf: unknown, ctx: Ctx) => boolean;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const pushLeaves = (v: unknown, out: unknown[]): void => {
  if (v === null || v === undefined) return;
  if (Array.isArray(v)) for (const x of v) pushLeaves(x, out);
  else out.push(v);
};

/** Rule 1: the values at a path, arrays flattened at every step, nulls dropped. */
const valuesAt = (doc: unknown, path: readonly string[]): unknown[] => {
  let cur: unknown[] = [doc];
  for (const key of path) {
    const next: unknown[] = [];
    for (const v of cur) if (isObject(v) && Object.hasOwn(v, key)) pushLeaves(v[key], next);
    cur = next;
  }
  return cur;
};

const wordsOf = (text: string, ctx: Ctx): string[] => {
  let w = ctx.words.get(text);
  if (w === undefined) ctx.words.set(text, (w = tokenize(text)));
  return w;
};

const containsRun = (hay: readonly string[], needle: readonly string[]): boolean => {
  outer: for (let i = 0; i + needle.length <= hay.length; i++) {
    for (let j = 0; j < needle.length; j++) if (hay[i + j] !== needle[j]) continue outer;
    return true;
  }
  return false;
};

// ---- rule 2: terms --------------------------------------------------------------------------

const keywordTerm = (t: TermNode): LeafTest => {
  if (t.wildcard) {
    const re = globToRegExp(t.value);
    return (leaf) => typeof leaf === 'string' && re.test(leaf);
  }
  const n = parseNumber(t.value);
  return (leaf) =>
    typeof leaf === 'string'
      ? leaf === t.value
      : typeof leaf === 'number'
        ? n !== null && leaf === n
        : typeof leaf === 'boolean'
          ? String(leaf) === t.value
          : false;
};

const textTerm = (t: TermNode): LeafTest => {
  const asKeyword = keywordTerm(t);
  let onText: (text: string, ctx: Ctx) => boolean;
  if (t.wildcard) {
    const re = globToRegExp(t.value.toLowerCase());
    onText = (text, ctx) => wordsOf(text, ctx).some((w) => re.test(w));
  } else {
    const needle = tokenize(t.value);
    onText = (text, ctx) => needle.length > 0 && containsRun(wordsOf(text, ctx), needle);
  }
  return (leaf, ctx) => (typeof leaf === 'string' ? onText(leaf, ctx) : asKeyword(leaf, ctx));
};

const dateTerm = (t: TermNode): LeafTest => {
  if (t.wildcard) return keywordTerm(t);
  const span = parseDateInterval(t.value);
  if (span === null) return () => false;
  return (leaf) => {
    const at = typeof leaf === 'string' ? parseInstant(leaf) : null;
    return at !== null && at >= span.from && at < span.to;
  };
};

// ---- rule 3: ranges -------------------------------------------------------------------------

const within = <T>(v: T, r: RangeNode, lo: T | null, hi: T | null, cmp: (a: T, b: T) => number): boolean =>
  (lo === null || (r.includeLower ? cmp(v, lo) >= 0 : cmp(v, lo) > 0)) &&
  (hi === null || (r.includeUpper ? cmp(v, hi) <= 0 : cmp(v, hi) < 0));

const valueRange = (r: RangeNode): LeafTest => {
  const nlo = r.lower === null ? null : parseNumber(r.lower);
  const nhi = r.upper === null ? null : parseNumber(r.upper);
  const numeric = (r.lower === null || nlo !== null) && (r.upper === null || nhi !== null);
  return (leaf) =>
    typeof leaf === 'number'
      ? numeric && within(leaf, r, nlo, nhi, (a, b) => a - b)
      : typeof leaf === 'string'
        ? within(leaf, r, r.lower, r.upper, compareCodePoints)
        : false;
};

const dateRange = (r: RangeNode): LeafTest => {
  const lo = r.lower === null ? null : parseInstant(r.lower);
  const hi = r.upper === null ? null : parseInstant(r.upper);
  if ((r.lower !== null && lo === null) || (r.upper !== null && hi === null)) return () => false;
  return (leaf) => {
    const at = typeof leaf === 'string' ? parseInstant(leaf) : null;
    return at !== null && within(at, r, lo, hi, (a, b) => a - b);
  };
};

// ---- rule 1: where the values come from -----------------------------------------------------

/** The values a term or range looks at (rule 1). */
const sourceOf = (spec: FieldSpec): ((doc: RunDocument) => unknown[]) => {
  if (spec.name === 'result' || spec.name === 'prompt') {
    const text = spec.name === 'result' ? resultText : promptText;
    return (doc) => (valuesAt(doc, spec.path).length === 0 ? [] : [text(doc[spec.name])]);
  }
  if (spec.kind === 'ref') {
    return (doc) =>
      valuesAt(doc, spec.path).flatMap((v) =>
        typeof v === 'string' ? [v] : isObject(v) ? [v.id, v.name].filter((x) => typeof x === 'string') : [],
      );
  }
  return (doc) => valuesAt(doc, spec.path);
};

/** Rule 1: full text is indexed once a run has ended. */
const hasEnded = (doc: RunDocument): boolean => doc.status === 'completed' || doc.status === 'failed';

const specOf = (field: string): FieldSpec => {
  const spec = runField(field);
  if (spec === null) throw new UnknownFieldError(field, RUN_FIELD_LIST);
  return spec;
};

const anyLeaf =
  (values: (doc: RunDocument) => unknown[], test: LeafTest): Test =>
  (ctx) =>
    values(ctx.doc).some((v) => test(v, ctx));

const leafTermTest = (kind: FieldSpec['kind'], t: TermNode): LeafTest =>
  kind === 'text' ? textTerm(t) : kind === 'date' ? dateTerm(t) : keywordTerm(t);

const compileNode = (node: QueryNode, opts: MatchOptions): Test => {
  switch (node.kind) {
    case 'term': {
      const field = node.field ?? opts.defaultPath ?? null;
      if (field === null) return anyLeaf((doc) => (hasEnded(doc) ? [runText(doc)] : []), textTerm(node));
      const spec = specOf(field);
      const source = sourceOf(spec);
      const fullText = spec.name === 'result' || spec.name === 'prompt';
      return anyLeaf(fullText ? (doc) => (hasEnded(doc) ? source(doc) : []) : source, leafTermTest(spec.kind, node));
    }
    case 'range': {
      const spec = specOf(node.field);
      return anyLeaf(sourceOf(spec), spec.kind === 'date' ? dateRange(node) : valueRange(node));
    }
    case 'exists': {
      const spec = specOf(node.field);
      return (ctx) => valuesAt(ctx.doc, spec.path).length > 0;
    }
    case 'and': {
      const parts = node.nodes.map((n) => compileNode(n, opts));
      return (ctx) => parts.every((p) => p(ctx));
    }
    case 'or': {
      const parts = node.nodes.map((n) => compileNode(n, opts));
      return (ctx) => parts.some((p) => p(ctx));
    }
    case 'not': {
      const inner = compileNode(node.node, opts);
      return (ctx) => !inner(ctx);
    }
    case 'all':
      return () => true;
  }
};

/**
 * Compiles a query once into a predicate over run documents (regexps, bounds and the default
 * field resolved up front). Throws UnknownFieldError for a field that is not searchable.
 */
export const compileMatcher = (node: QueryNode, opts: MatchOptions = {}): ((doc: RunDocument) => boolean) => {
  const test = compileNode(node, opts);
  return (doc) => test({ doc, words: new Map() });
};

/** Whether `doc` matches `node` (rules above). */
export const matches = (node: QueryNode, doc: RunDocument, opts: MatchOptions = {}): boolean =>
  compileMatcher(node, opts)(doc);
