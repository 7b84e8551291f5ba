/**
 * What the search index holds for one run, derived from its document with the evaluator's own
 * functions (run-text.ts, values.ts), so SQL and the evaluator see the same words and values:
 *
 * - words: `tokenize` of the prompt text, the result text and every parameter string, in the order
 *   of `runText` (their concatenation is exactly `tokenize(runText(doc))`);
 * - fields: for every path under the families (`parameters`, `config`, `source`), the values that
 *   evaluate.ts rule 1 finds there (arrays flattened at every step, nulls dropped, objects as `{}`),
 *   keyed by the dotted path; and for the text family (`parameters`) each string's words as
 *   `" w1 w2 "` under `w:<path>`. A path segment that no query can name (evaluate.ts only walks
 *   keys that run-fields.ts accepts) is left out, so a dotted key never aliases a nested one.
 */
import {
  RUN_FIELD_FAMILIES,
  isPathSegment,
  promptText,
  resultText,
  stringLeaves,
  tokenize,
} from '../../query/lucene/index.ts';

/** The parts of a run document the index is built from. */
export interface SearchSource {
  readonly prompt?: unknown;
  readonly result?: unknown;
  readonly parameters?: unknown;
  readonly config?: unknown;
  readonly source?: unknown;
  readonly media?: unknown;
}

export interface RunSearchDoc {
  readonly promptWords: readonly string[];
  readonly resultWords: readonly string[];
  readonly paramWords: readonly string[];
  /** Path → values, and `w:<path>` → word strings (see above). */
  readonly fields: Readonly<Record<string, unknown[]>>;
}

/** Key prefix of the word strings of a text-family path in `fields`. */
export const WORDS_KEY = 'w:';

/** `" w1 w2 "`: a string's words with a space on each side, so `" a b "` is a containment test. */
export const wordString = (words: readonly string[]): string => ` ${words.join(' ')} `;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const flatten = (v: unknown, out: unknown[]): void => {
  if (v === null || v === undefined) return;
  if (Array.isArray(v)) for (const x of v) flatten(x, out);
  else out.push(v);
};

function addPath(fields: Map<string, unknown[]>, key: string, value: unknown, text: boolean): void {
  const values: unknown[] = [];
  flatten(value, values);
  if (values.length === 0) return;
  let list = fields.get(key);
  if (!list) fields.set(key, (list = []));
  for (const v of values) {
    if (isObject(v)) {
      list.push({});
      for (const k of Object.keys(v)) if (isPathSegment(k)) addPath(fields, `${key}.${k}`, v[k], text);
    } else {
      list.push(v);
      if (text && typeof v === 'string') {
        const wordsKey = WORDS_KEY + key;
        let words = fields.get(wordsKey);
        if (!words) fields.set(wordsKey, (words = []));
        words.push(wordString(tokenize(v)));
      }
    }
  }
}

const FAMILIES = Object.entries(RUN_FIELD_FAMILIES);

/** `fields`: the document's runSearchFields, when the caller has them already. */
export function runSearchDoc(doc: SearchSource, fields: RunSearchDoc['fields'] = runSearchFields(doc)): RunSearchDoc {
  return {
    promptWords: tokenize(promptText(doc.prompt)),
    resultWords: tokenize(resultText(doc.result)),
    paramWords: stringLeaves(doc.parameters).flatMap((s) => tokenize(s)),
    fields,
  };
}

/** The `fields` of runSearchDoc alone (a run that has not ended has no full text to index). */
export function runSearchFields(doc: SearchSource): RunSearchDoc['fields'] {
  // A Map while collecting: paths are new strings each time, and a plain object in dictionary
  // mode hashed each one on every lookup (half the cost of a run's search data, issue 17).
  const fields = new Map<string, unknown[]>();
  for (const [family, kind] of FAMILIES) addPath(fields, family, doc[family as keyof SearchSource], kind === 'text');
  return Object.fromEntries(fields);
}

/**
 * runSearchFields of a document given as its JSON text (a stored `doc` column), as JSON text: for a
 * writer that has the text and not the document (runs/sqlite-run-writes.ts). The document is JSON
 * already, so these are the fields of the document it was written from.
 */
export function runSearchFieldsJson(docText: string): string {
  const doc: unknown = JSON.parse(docText);
  return JSON.stringify(runSearchFields(isObject(doc) ? doc : {}));
}
