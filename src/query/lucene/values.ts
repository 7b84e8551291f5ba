/**
 * Value-level rules shared by the in-memory evaluator and the SQL compiler: what counts as a
 * number, a date, a word, a glob, and how strings order. Keep both sides on these functions.
 */

const NUMBER = /^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$/;

/** A finite decimal number written the usual way (`42`, `-1.5`, `.5`, `1e3`), else null. */
export const parseNumber = (s: string): number | null => {
  if (!NUMBER.test(s)) return null;
  const n = Number(s);
  return Number.isFinite(n) ? n : null;
};

// ---- dates ----------------------------------------------------------------------------------

const ISO =
  /^(\d{4})(?:-(\d{2})(?:-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:?\d{2})?)?)?)?$/i;

export interface DateInterval {
  /** Epoch milliseconds, inclusive. */
  readonly from: number;
  /** Epoch milliseconds, exclusive. */
  readonly to: number;
}

const utc = (y: number, mo: number, d: number, h = 0, mi = 0, s = 0, ms = 0): number => {
  const t = new Date(0);
  t.setUTCFullYear(y, mo, d); // unlike Date.UTC, years 0–99 stay as written
  t.setUTCHours(h, mi, s, ms);
  return t.getTime();
};

/**
 * An ISO 8601 date or date-time (`2024`, `2024-03`, `2024-03-05`, `2024-03-05T10:00`,
 * `…:30.250Z`, `…+02:00`) as the interval its precision covers. Without a zone it is UTC.
 * Invalid calendar values (`2024-02-30`, `25:00`) give null.
 */
export const parseDateInterval = (s: string): DateInterval | null => {
  const m = ISO.exec(s);
  if (!m) return null;
  const [, ys, mos, ds, hs, mis, ss, fs, zone] = m;
  const y = Number(ys);
  const mo = mos === undefined ? 1 : Number(mos);
  const d = ds === undefined ? 1 : Number(ds);
  const h = hs === undefined ? 0 : Number(hs);
  const mi = mis === undefined ? 0 : Number(mis);
  const sec = ss === undefined ? 0 : Number(ss);
  const ms = fs === undefined ? 0 : Number(fs.slice(0, 3).padEnd(3, '0'));
  const daysInMonth = new Date(utc(y, mo, 0)).getUTCDate();
  if (mo < 1 || mo > 12 || d < 1 || d > daysInMonth || h > 23 || mi > 59 || sec > 59) return null;
  let offset = 0;
  if (zone !== undefined && zone.toUpperCase() !== 'Z') {
    const oh = Number(zone.slice(1, 3));
    const om = Number(zone.slice(-2));
    if (oh > 23 || om > 59) return null;
    offset = (zone[0] === '-' ? -1 : 1) * (oh * 60 + om) * 60_000;
  }
  const from = utc(y, mo - 1, d, h, mi, sec, ms) - offset;
  const to =
    mos === undefined
      ? utc(y + 1, 0, 1) - offset
      : ds === undefined
        ? utc(y, mo, 1) - offset
        : hs === undefined
          ? utc(y, mo - 1, d + 1) - offset
          : ss === undefined
            ? from + 60_000
            : fs === undefined
              ? from + 1_000
              : from + 1;
  return { from, to };
};

/** The instant an ISO 8601 string names (its interval's start), in epoch ms, or null. */
export const parseInstant = (s: string): number | null => parseDateInterval(s)?.from ?? null;

/** The stored form of timestamps (`Date#toISOString`), so SQL can compare strings. */
export const instantToIso = (ms: number): string => new Date(ms).toISOString();

// ---- words ----------------------------------------------------------------------------------

const WORD = /[\p{L}\p{N}\p{M}]+/gu;

/**
 * Lower-cased words: maximal runs of Unicode letters, digits and combining marks; everything else
 * separates. (SQLite FTS5 needs `tokenize="unicode61 remove_diacritics 0 categories 'L* N* M*'"`
 * to cut the same way.)
 */
export const tokenize = (text: string): string[] => text.toLowerCase().match(WORD) ?? [];

// ---- globs ----------------------------------------------------------------------------------

export type GlobPart =
  { readonly kind: 'literal'; readonly text: string } | { readonly kind: 'any' } | { readonly kind: 'one' };

/** Splits a wildcard term's value (ast.ts: `\` escapes, `*` any run, `?` one code point). */
export const globParts = (glob: string): GlobPart[] => {
  const parts: GlobPart[] = [];
  let lit = '';
  const flush = (): void => {
    if (lit !== '') parts.push({ kind: 'literal', text: lit });
    lit = '';
  };
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === '\\' && i + 1 < glob.length) lit += glob[++i];
    else if (c === '*') {
      flush();
      parts.push({ kind: 'any' });
    } else if (c === '?') {
      flush();
      parts.push({ kind: 'one' });
    } else lit += c;
  }
  flush();
  return parts;
};

/** An anchored RegExp for a glob; `?` matches one code point and `*` spans newlines. */
export const globToRegExp = (glob: string): RegExp =>
  new RegExp(
    `^${globParts(glob)
      .map((p) => (p.kind === 'any' ? '.*' : p.kind === 'one' ? '.' : p.text.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&')))
      .join('')}$`,
    'su',
  );

// ---- ordering -------------------------------------------------------------------------------

/**
 * Orders strings by Unicode code point (= UTF-8 byte order: SQLite BINARY, PostgreSQL COLLATE "C"),
 * not by UTF-16 unit as `<` does.
 */
export const compareCodePoints = (a: string, b: string): number => {
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const ca = a.codePointAt(i)!;
    const cb = b.codePointAt(j)!;
    if (ca !== cb) return ca < cb ? -1 : 1;
    i += ca > 0xffff ? 2 : 1;
    j += cb > 0xffff ? 2 : 1;
  }
  return i < a.length ? 1 : j < b.length ? -1 : 0;
};
