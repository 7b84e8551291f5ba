/**
 * Splits the body of a JavaScript template literal into literal text and `${ … }` expression
 * sources, without evaluating anything. Text escapes are cooked as JavaScript does (`\n`, `\``,
 * `\${`, `\u{1F600}`, line continuations …). One leniency: a bare backtick in the text is kept as
 * a literal backtick (JavaScript would end the literal there), so Markdown code fences in prompts
 * work without escaping.
 */
import { syntaxErrorAt as syntaxError } from './template-error.ts';

export type JstPart =
  | { readonly kind: 'text'; readonly text: string }
  /** `offset` is where the expression source starts in the template content. */
  | { readonly kind: 'expr'; readonly source: string; readonly offset: number };

const MAX_NESTING = 64;

export function splitTemplateLiteral(content: string): JstPart[] {
  const parts: JstPart[] = [];
  let text = '';
  let runStart = 0; // start of the pending run of plain characters
  let i = 0;
  while (i < content.length) {
    const c = content.charCodeAt(i);
    if (c === BACKSLASH) {
      text += content.slice(runStart, i);
      const escape = cookEscape(content, i);
      text += escape.text;
      i = runStart = escape.end;
    } else if (c === DOLLAR && content.charCodeAt(i + 1) === OPEN_BRACE) {
      text += content.slice(runStart, i);
      if (text) parts.push({ kind: 'text', text });
      text = '';
      const start = i + 2;
      const end = skipExpression(content, start, i, 0);
      const source = content.slice(start, end);
      if (!source.trim()) throw syntaxError(content, i, 'empty ${} expression');
      parts.push({ kind: 'expr', source, offset: start });
      i = runStart = end + 1;
    } else {
      i++;
    }
  }
  text += content.slice(runStart);
  if (text) parts.push({ kind: 'text', text });
  return parts;
}

/** Returns the index of the `}` that closes the expression starting at `start`. */
function skipExpression(src: string, start: number, openedAt: number, nesting: number): number {
  if (nesting > MAX_NESTING) throw syntaxError(src, openedAt, 'template literals are nested too deeply');
  let depth = 0;
  let i = start;
  while (i < src.length) {
    const c = src.charCodeAt(i);
    if (c === QUOTE || c === DOUBLE_QUOTE) i = skipString(src, i);
    else if (c === BACKTICK) i = skipNestedTemplate(src, i, nesting + 1);
    else if (c === OPEN_BRACE) { depth++; i++; }
    else if (c === CLOSE_BRACE) {
      if (depth === 0) return i;
      depth--; i++;
    } else i++;
  }
  throw syntaxError(src, openedAt, '"${" is never closed: add the matching "}"');
}

/** From an opening quote, returns the index just past the closing quote. */
function skipString(src: string, open: number): number {
  const quote = src.charCodeAt(open);
  for (let i = open + 1; i < src.length; i++) {
    const c = src.charCodeAt(i);
    if (c === BACKSLASH) i++;
    else if (c === quote) return i + 1;
    else if (c === NEWLINE) break;
  }
  throw syntaxError(src, open, 'unterminated string literal');
}

/** From an opening backtick inside an expression, returns the index just past its closing backtick. */
function skipNestedTemplate(src: string, open: number, nesting: number): number {
  for (let i = open + 1; i < src.length; i++) {
    const c = src.charCodeAt(i);
    if (c === BACKSLASH) i++;
    else if (c === BACKTICK) return i + 1;
    else if (c === DOLLAR && src.charCodeAt(i + 1) === OPEN_BRACE) i = skipExpression(src, i + 2, i, nesting);
  }
  throw syntaxError(src, open, 'unterminated nested template literal: add the closing backtick');
}

/** Cooks the escape sequence at `at` (a backslash) the way a JavaScript template literal does. */
function cookEscape(src: string, at: number): { text: string; end: number } {
  const next = src[at + 1];
  switch (next) {
    case undefined:
      throw syntaxError(src, at, 'the template ends with a lone backslash: write \\\\ for a backslash');
    case 'n': return { text: '\n', end: at + 2 };
    case 't': return { text: '\t', end: at + 2 };
    case 'r': return { text: '\r', end: at + 2 };
    case 'b': return { text: '\b', end: at + 2 };
    case 'f': return { text: '\f', end: at + 2 };
    case 'v': return { text: '\v', end: at + 2 };
    // Line continuation: the backslash and the line break disappear.
    case '\r': return { text: '', end: src[at + 2] === '\n' ? at + 3 : at + 2 };
    case '\n': case '\u2028': case '\u2029': return { text: '', end: at + 2 };
    case 'x': {
      const hex = src.slice(at + 2, at + 4);
      if (!/^[0-9a-fA-F]{2}$/.test(hex)) throw badEscape(src, at, '\\x needs two hex digits');
      return { text: String.fromCharCode(parseInt(hex, 16)), end: at + 4 };
    }
    case 'u': return cookUnicode(src, at);
    default:
      if (next >= '0' && next <= '9') {
        const following = src[at + 2];
        if (next === '0' && !(following >= '0' && following <= '9')) return { text: '\0', end: at + 2 };
        throw badEscape(src, at, 'octal escapes are not allowed in template literals');
      }
      // Any other escaped character stands for itself: \` \$ \{ \} \\ \' \" …
      return { text: next, end: at + 2 };
  }
}

function cookUnicode(src: string, at: number): { text: string; end: number } {
  if (src[at + 2] === '{') {
    const close = src.indexOf('}', at + 3);
    const hex = close === -1 ? '' : src.slice(at + 3, close);
    const code = /^[0-9a-fA-F]{1,6}$/.test(hex) ? parseInt(hex, 16) : NaN;
    if (!(code <= 0x10ffff)) throw badEscape(src, at, '\\u{…} needs a code point of at most 10FFFF');
    return { text: String.fromCodePoint(code), end: close + 1 };
  }
  const hex = src.slice(at + 2, at + 6);
  if (!/^[0-9a-fA-F]{4}$/.test(hex)) throw badEscape(src, at, '\\u needs four hex digits or {…}');
  return { text: String.fromCharCode(parseInt(hex, 16)), end: at + 6 };
}

const badEscape = (src: string, at: number, why: string) =>
  syntaxError(src, at, `invalid escape sequence (${why}); write \\\\ for a literal backslash`);

const BACKSLASH = 92;
const DOLLAR = 36;
const OPEN_BRACE = 123;
const CLOSE_BRACE = 125;
const QUOTE = 39;
const DOUBLE_QUOTE = 34;
const BACKTICK = 96;
const NEWLINE = 10;
