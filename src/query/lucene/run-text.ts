/**
 * The searchable text of a run, as one string per text field. The run store should fill its
 * full-text columns with these same functions, so the index and the evaluator see the same words
 * in the same order (a phrase may run from one piece into the next, as it does in an FTS column).
 */

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Pieces are joined with a newline: a word separator that keeps pieces apart when read. */
const join = (pieces: readonly string[]): string => pieces.join('\n');

/** `result`: a string, or the `value` of each text part (`{type: 'text', value}`, or a bare string). JSON parts are not text. */
export const resultText = (result: unknown): string => {
  if (typeof result === 'string') return result;
  if (!Array.isArray(result)) return '';
  const pieces: string[] = [];
  for (const part of result) {
    if (typeof part === 'string') pieces.push(part);
    else if (isObject(part) && (part.type === 'text' || part.type === undefined) && typeof part.value === 'string')
      pieces.push(part.value);
  }
  return join(pieces);
};

/** `prompt`: a string, or the string `content` of each message. */
export const promptText = (prompt: unknown): string => {
  if (typeof prompt === 'string') return prompt;
  if (!Array.isArray(prompt)) return '';
  const pieces: string[] = [];
  for (const m of prompt) {
    if (typeof m === 'string') pieces.push(m);
    else if (isObject(m) && typeof m.content === 'string') pieces.push(m.content);
    else if (isObject(m) && Array.isArray(m.content)) {
      // Parts: the text a person would search for (text, tool results), not ids or URLs.
      for (const part of m.content)
        if (isObject(part) && typeof part.text === 'string') pieces.push(part.text);
        else if (isObject(part) && typeof part.content === 'string') pieces.push(part.content);
    }
  }
  return join(pieces);
};

/** Every string inside a JSON value, depth first, object keys in their order. */
export const stringLeaves = (value: unknown, out: string[] = []): string[] => {
  if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) for (const v of value) stringLeaves(v, out);
  else if (isObject(value)) for (const k of Object.keys(value)) stringLeaves(value[k], out);
  return out;
};

/** The default search text of a run: prompt, then result, then every parameter string. */
export const runText = (doc: {
  readonly prompt?: unknown;
  readonly result?: unknown;
  readonly parameters?: unknown;
}): string =>
  join([promptText(doc.prompt), resultText(doc.result), ...stringLeaves(doc.parameters)].filter((s) => s !== ''));
