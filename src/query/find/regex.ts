/**
 * `$regex` as a GLOB pattern. SQLite has no REGEXP function unless one is registered, so both
 * dialects match through db/json-sql.ts `glob` (SQLite GLOB; the same pattern as a POSIX regex on
 * PostgreSQL): the two databases then accept the same patterns and match the same strings.
 *
 * Supported, with JavaScript's meaning: `^` first and `$` last (else the match may start / end
 * anywhere); literal characters and escaped punctuation (`\.`, `\$`, `\\`…); `.` (any one code
 * point, newlines included); `.*` and `.+` (also lazy); classes `[abc]`, `[a-z]`, `[^…]`; the
 * escapes `\d \D \w \W \s \S \t \n \r \f \v \xHH \uHHHH` inside and outside classes.
 * Refused with a FindQueryError: other quantifiers (`x*`, `x+`, `x?`, `{n}`), alternation `|`,
 * groups and lookarounds, backreferences, `\b`, `\B`, `\p{…}`, NUL. Option `i` folds ASCII letters
 * only (the databases' `lower` is ASCII-only), so `é` does not match `É`.
 */
import { FindQueryError } from './errors.ts';

type Interval = readonly [number, number];
/** One character position: a set of code points (negated: any code point outside it), or `.*`. */
type Piece =
  { readonly kind: 'set'; readonly set: readonly Interval[]; readonly negated: boolean } | { readonly kind: 'star' };

const MAX_CP = 0x10ffff;
const range = (lo: number, hi: number): Interval[] => [[lo, hi]];
const DIGIT = range(0x30, 0x39);
const WORD: Interval[] = [
  [0x30, 0x39],
  [0x41, 0x5a],
  [0x5f, 0x5f],
  [0x61, 0x7a],
];
/** JavaScript's WhiteSpace and LineTerminator. */
const SPACE: Interval[] = [
  [0x09, 0x0d],
  [0x20, 0x20],
  [0xa0, 0xa0],
  [0x1680, 0x1680],
  [0x2000, 0x200a],
  [0x2028, 0x2029],
  [0x202f, 0x202f],
  [0x205f, 0x205f],
  [0x3000, 0x3000],
  [0xfeff, 0xfeff],
];
const SUPPORTED =
  'supported: ^ first, $ last, literal characters, escaped punctuation, ., .*, .+, classes [a-z] [^…], \\d \\w \\s \\D \\W \\S \\t \\n \\r \\f \\v \\xHH \\uHHHH';

/** Sorted, merged, without NUL and surrogates (text values never hold them). */
function normalize(set: readonly Interval[]): Interval[] {
  const parts: [number, number][] = [];
  for (const [lo, hi] of set) {
    for (const [a, b] of [
      [Math.max(lo, 1), Math.min(hi, 0xd7ff)],
      [Math.max(lo, 0xe000), Math.min(hi, MAX_CP)],
    ] as const) {
      if (a <= b) parts.push([a, b]);
    }
  }
  parts.sort((x, y) => x[0] - y[0]);
  const out: [number, number][] = [];
  for (const [a, b] of parts) {
    const last = out[out.length - 1];
    if (last && a <= last[1] + 1) last[1] = Math.max(last[1], b);
    else out.push([a, b]);
  }
  return out;
}

const complement = (set: readonly Interval[]): Interval[] => {
  const out: Interval[] = [];
  let next = 1;
  for (const [lo, hi] of normalize(set)) {
    if (lo > next) out.push([next, lo - 1]);
    next = hi + 1;
  }
  if (next <= MAX_CP) out.push([next, MAX_CP]);
  return normalize(out);
};

/** For ASCII case folding of the text: A-Z become a-z (the folded text has no A-Z). */
const foldSet = (set: readonly Interval[]): Interval[] => {
  const out: Interval[] = [];
  for (const [lo, hi] of set) {
    out.push(...removeRange(lo, hi, 0x41, 0x5a));
    const a = Math.max(lo, 0x41);
    const b = Math.min(hi, 0x5a);
    if (a <= b) out.push([a + 32, b + 32]);
  }
  return normalize(out);
};

const removeRange = (lo: number, hi: number, cutLo: number, cutHi: number): Interval[] => {
  if (hi < cutLo || lo > cutHi) return [[lo, hi]];
  const out: Interval[] = [];
  if (lo < cutLo) out.push([lo, cutLo - 1]);
  if (hi > cutHi) out.push([cutHi + 1, hi]);
  return out;
};

const size = (set: readonly Interval[]) => set.reduce((n, [a, b]) => n + b - a + 1, 0);
const FULL = size(normalize([[0, MAX_CP]]));

/** Escape outside or inside a class, after the backslash at `cps[i]`: a set, or one code point. */
function parseEscape(
  cps: readonly string[],
  i: number,
  inClass: boolean,
  at: string,
): { set: Interval[]; negated: boolean; single: boolean; next: number } {
  const c = cps[i + 1];
  const one = (cp: number, next: number) => ({ set: range(cp, cp), negated: false, single: true, next });
  const hex = (n: number) => {
    const digits = cps.slice(i + 2, i + 2 + n).join('');
    if (digits.length !== n || !/^[0-9a-fA-F]+$/.test(digits))
      throw new FindQueryError(`$regex: \\${c} needs ${n} hex digits`, at);
    return parseInt(digits, 16);
  };
  if (c === undefined) throw new FindQueryError('$regex ends with a lone backslash', at);
  switch (c) {
    case 'd':
    case 'D':
      return { set: DIGIT, negated: c === 'D', single: false, next: i + 2 };
    case 'w':
    case 'W':
      return { set: WORD, negated: c === 'W', single: false, next: i + 2 };
    case 's':
    case 'S':
      return { set: SPACE, negated: c === 'S', single: false, next: i + 2 };
    case 't':
      return one(9, i + 2);
    case 'n':
      return one(10, i + 2);
    case 'v':
      return one(11, i + 2);
    case 'f':
      return one(12, i + 2);
    case 'r':
      return one(13, i + 2);
    case 'x':
      return one(hex(2), i + 4);
    case 'u': {
      if (cps[i + 2] === '{') throw new FindQueryError('$regex: \\u{…} is not supported; use \\uHHHH', at);
      const cp = hex(4);
      if (cp >= 0xd800 && cp <= 0xdbff && cps[i + 6] === '\\' && cps[i + 7] === 'u') {
        const low = parseInt(cps.slice(i + 8, i + 12).join(''), 16);
        if (low >= 0xdc00 && low <= 0xdfff) return one(0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00), i + 12);
      }
      if (cp >= 0xd800 && cp <= 0xdfff)
        throw new FindQueryError('$regex: a lone surrogate \\u escape never matches text', at);
      if (cp === 0) throw new FindQueryError('$regex: NUL (\\u0000) is not supported', at);
      return one(cp, i + 6);
    }
    case 'b':
      if (inClass) return one(8, i + 2);
      throw new FindQueryError(`$regex: word boundaries (\\b) are not supported; ${SUPPORTED}`, at);
    default:
      if (/^[A-Za-z0-9]$/.test(c)) {
        throw new FindQueryError(`$regex: the escape \\${c} is not supported; ${SUPPORTED}`, at);
      }
      return one(c.codePointAt(0)!, i + 2);
  }
}

/** The class starting at `cps[i] === '['`. */
function parseClass(cps: readonly string[], i: number, at: string): { piece: Piece; next: number } {
  let j = i + 1;
  let negated = false;
  if (cps[j] === '^') {
    negated = true;
    j++;
  }
  if (cps[j] === ']') {
    if (!negated) throw new FindQueryError('$regex: the empty class [] matches nothing', at);
    return { piece: { kind: 'set', set: [], negated: true }, next: j + 1 };
  }
  const set: Interval[] = [];
  /** One member: a single code point, or a class escape's set. */
  const member = (): { cp: number | null; set: Interval[]; negated: boolean } => {
    const c = cps[j];
    if (c === '\\') {
      const e = parseEscape(cps, j, true, at);
      j = e.next;
      return e.single ? { cp: e.set[0][0], set: e.set, negated: false } : { cp: null, set: e.set, negated: e.negated };
    }
    j++;
    const cp = c.codePointAt(0)!;
    if (cp === 0) throw new FindQueryError('$regex: NUL is not supported', at);
    return { cp, set: range(cp, cp), negated: false };
  };
  while (true) {
    if (j >= cps.length) throw new FindQueryError('$regex: unterminated class, missing ]', at);
    if (cps[j] === ']') break;
    const first = member();
    if (cps[j] === '-' && j + 1 < cps.length && cps[j + 1] !== ']') {
      j++;
      const last = member();
      if (first.cp === null || last.cp === null)
        throw new FindQueryError('$regex: a range cannot start or end with a class escape such as \\d', at);
      if (first.cp > last.cp) throw new FindQueryError('$regex: range out of order in class', at);
      set.push([first.cp, last.cp]);
    } else {
      set.push(...(first.negated ? complement(first.set) : first.set));
    }
  }
  return { piece: { kind: 'set', set: normalize(set), negated }, next: j + 1 };
}

/** Whether the character at `i` is preceded by an odd number of backslashes. */
const escaped = (cps: readonly string[], i: number) => {
  let n = 0;
  for (let k = i - 1; k >= 0 && cps[k] === '\\'; k--) n++;
  return n % 2 === 1;
};

/** The GLOB pattern of a supported regex, lower-case when `fold` (the caller lower-cases the text). */
export function regexToGlob(source: string, fold: boolean, at: string): string {
  const cps = Array.from(source);
  let i = 0;
  let end = cps.length;
  const anchoredStart = cps[0] === '^';
  if (anchoredStart) i = 1;
  const anchoredEnd = end > i && cps[end - 1] === '$' && !escaped(cps, end - 1);
  if (anchoredEnd) end--;
  const pieces: Piece[] = [];
  const any: Piece = { kind: 'set', set: [], negated: true };
  const noQuantifier = () => {
    const q = cps[i];
    if (i < end && (q === '*' || q === '+' || q === '?' || q === '{')) {
      throw new FindQueryError(`$regex: the quantifier ${q} is supported only as .* and .+; ${SUPPORTED}`, at);
    }
  };
  while (i < end) {
    const c = cps[i];
    if (c === '.') {
      i++;
      const q = cps[i];
      if (i < end && (q === '*' || q === '+')) {
        i++;
        if (i < end && cps[i] === '?') i++; // lazy: the same strings match
        if (q === '+') pieces.push(any);
        pieces.push({ kind: 'star' });
      } else pieces.push(any);
      noQuantifier();
    } else if (c === '\\') {
      const e = parseEscape(cps, i, false, at);
      pieces.push({ kind: 'set', set: e.set, negated: e.negated });
      i = e.next;
      noQuantifier();
    } else if (c === '[') {
      const k = parseClass(cps, i, at);
      if (k.next > end) throw new FindQueryError('$regex: unterminated class, missing ]', at);
      pieces.push(k.piece);
      i = k.next;
      noQuantifier();
    } else if (c === '^') {
      throw new FindQueryError('$regex: ^ is supported only at the start (escape it as \\^ for the character)', at);
    } else if (c === '$') {
      throw new FindQueryError('$regex: $ is supported only at the end (escape it as \\$ for the character)', at);
    } else if (c === '|') {
      throw new FindQueryError(`$regex: alternation (|) is not supported; use $or or $in; ${SUPPORTED}`, at);
    } else if (c === '(' || c === ')') {
      throw new FindQueryError(`$regex: groups and lookarounds are not supported; ${SUPPORTED}`, at);
    } else if (c === '*' || c === '+' || c === '?' || c === '{') {
      throw new FindQueryError(
        `$regex: the quantifier ${c} is supported only as .* and .+ (escape it as \\${c} for the character); ${SUPPORTED}`,
        at,
      );
    } else {
      const cp = c.codePointAt(0)!;
      if (cp === 0) throw new FindQueryError('$regex: NUL is not supported', at);
      pieces.push({ kind: 'set', set: range(cp, cp), negated: false });
      i++;
      noQuantifier();
    }
  }
  const tokens: string[] = [];
  const push = (t: string) => {
    if (!(t === '*' && tokens[tokens.length - 1] === '*')) tokens.push(t);
  };
  if (!anchoredStart) push('*');
  for (const p of pieces)
    push(p.kind === 'star' ? '*' : renderSet(fold ? foldSet(p.set) : normalize(p.set), p.negated, at));
  if (!anchoredEnd) push('*');
  const glob = tokens.join('');
  // SQLite refuses GLOB patterns over 50,000 bytes (SQLITE_LIMIT_LIKE_PATTERN_LENGTH).
  if (Buffer.byteLength(glob) > 40_000)
    throw new FindQueryError('$regex is too complex; use fewer or simpler classes', at);
  return glob;
}

const ch = (cp: number) => String.fromCodePoint(cp);

/** One GLOB position for a set (SQLite: `]` first is literal, `^` first negates, `-` last is literal). */
function renderSet(set: readonly Interval[], negated: boolean, at: string): string {
  const n = size(set);
  if ((!negated && n === FULL) || (negated && n === 0)) return '?';
  if ((!negated && n === 0) || (negated && n === FULL))
    throw new FindQueryError('$regex: a class that matches no character', at);
  if (!negated && n === 1) {
    const c = ch(set[0][0]);
    return c === '*' || c === '?' || c === '[' ? `[${c}]` : c;
  }
  let rest: Interval[] = [];
  for (const [lo, hi] of set) {
    let parts: Interval[] = [[lo, hi]];
    for (const special of [0x5d, 0x2d, 0x5e]) parts = parts.flatMap(([a, b]) => removeRange(a, b, special, special));
    rest.push(...parts);
  }
  rest = normalize(rest);
  const has = (cp: number) => set.some(([a, b]) => a <= cp && cp <= b);
  let body = has(0x5d) ? ']' : '';
  body += rest.map(([a, b]) => (a === b ? ch(a) : b === a + 1 ? ch(a) + ch(b) : `${ch(a)}-${ch(b)}`)).join('');
  const caret = has(0x5e);
  const dash = has(0x2d);
  if (caret && body === '' && !negated) body = dash ? '-^' : '^';
  else body += (caret ? '^' : '') + (dash ? '-' : '');
  return `[${negated ? '^' : ''}${body}]`;
}
