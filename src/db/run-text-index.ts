/**
 * The full-text index entries of a run, one form per backend, both made from the same words
 * (search-doc.ts), already lower-cased by `tokenize` in JavaScript:
 *
 * - SQLite: a row of the FTS5 table `runs_fts(body, prompt, result)`, each column the words joined
 *   by single spaces. The table's tokenizer (`unicode61 remove_diacritics 0 categories 'L* N* M*'`)
 *   cuts them back into the same words, and a query's words go through the same tokenizer.
 * - PostgreSQL: one tsvector with every word at its position in `runText`; prompt words carry
 *   weight A, result words weight B, parameter words none (D), so `result:` and `prompt:` are the
 *   same tsquery restricted to a weight, and a phrase may still cross from the prompt into the
 *   result, as in the evaluator. The literal is cast (`::tsvector`), so PostgreSQL's parser and
 *   dictionaries never see the text.
 *
 * PostgreSQL limits (documented in the README): positions stop at 16,383 and a word keeps at most
 * 256 positions, so phrases of three or more words deep inside very long texts may be missed
 * (words and word pairs are lexemes of their own); words over 2,046 bytes are not indexed; a
 * tsvector stops growing at ~1 MB.
 */
import type { RunSearchDoc } from '../runs/lucene-sql/search-doc.ts';

/** Every word of a run, in the order of runText: the prompt's, the result's, the parameters'. */
export const allWords = (s: RunSearchDoc): string[] => [...s.promptWords, ...s.resultWords, ...s.paramWords];

export interface FtsRow {
  readonly body: string;
  readonly prompt: string;
  readonly result: string;
}

export const ftsRow = (s: RunSearchDoc): FtsRow => ({
  body: allWords(s).join(' '),
  prompt: s.promptWords.join(' '),
  result: s.resultWords.join(' '),
});

/** PostgreSQL's limits on a tsvector. */
const TS_MAX_POSITION = 16_383;
const TS_MAX_POSITIONS_PER_WORD = 256;
export const TS_MAX_WORD_BYTES = 2_046;
const TS_MAX_BYTES = 1_000_000;

/** Weight label of each part in the tsvector (parameters: none, i.e. D). */
export const TS_WEIGHT = { prompt: 'A', result: 'B', body: '' } as const;

const quoteLexeme = (w: string): string => `'${w.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;

export const byteLength = (w: string): number => Buffer.byteLength(w, 'utf8');

/** The part of runText a word at index `i` belongs to: its weight label ('' = parameters). */
const weightAt = (s: RunSearchDoc, i: number): string =>
  i < s.promptWords.length ? TS_WEIGHT.prompt : i < s.promptWords.length + s.resultWords.length ? TS_WEIGHT.result : '';

/** The lexeme for two consecutive words (see `tsvectorLiteral`). */
export const pairLexeme = (a: string, b: string): string => `${a} ${b}`;

/**
 * The tsvector literal of a run (see above). Besides each word it holds each pair of consecutive
 * words as one lexeme (`'customer churn'`, weighted A or B only when both words are in the
 * prompt, or both in the result), so a two-word phrase is an exact GIN lookup instead of a
 * position check on every candidate row, and a longer phrase is narrowed by its pairs first.
 */
export function tsvectorLiteral(s: RunSearchDoc): string {
  const positions = new Map<string, string[]>();
  const words = allWords(s);
  let bytes = 0;
  const add = (lexeme: string, i: number, weight: string): void => {
    let list = positions.get(lexeme);
    if (list === undefined) {
      const size = byteLength(lexeme);
      if (size > TS_MAX_WORD_BYTES || bytes + size + 8 > TS_MAX_BYTES) return;
      bytes += size + 8;
      positions.set(lexeme, (list = []));
    }
    if (list.length >= TS_MAX_POSITIONS_PER_WORD) return;
    const pos = Math.min(i + 1, TS_MAX_POSITION);
    if (pos === TS_MAX_POSITION && list.some((e) => e.startsWith(`${TS_MAX_POSITION}`))) return;
    list.push(`${pos}${weight}`);
    bytes += 2;
  };
  for (let i = 0; i < words.length; i++) add(words[i], i, weightAt(s, i));
  for (let i = 0; i + 1 < words.length; i++) {
    const w = weightAt(s, i);
    add(pairLexeme(words[i], words[i + 1]), i, w === weightAt(s, i + 1) ? w : '');
  }
  let out = '';
  for (const [w, list] of positions) out += `${out ? ' ' : ''}${quoteLexeme(w)}:${list.join(',')}`;
  return out;
}
