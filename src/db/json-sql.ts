/**
 * Typed SQL fragments over JSON columns, the same functions for both dialects (style K2/D3).
 * Paths are arrays of keys; values are always bound parameters, never spliced into SQL text.
 * Feature code (query compilers, stores) calls these and never branches on the dialect itself.
 */
import { sql, type Expression, type RawBuilder } from 'kysely';
import type { DialectName } from './dialect.ts';

/** SQLite JSON path literal `$."a"."b"[0]`: keys quoted so dots and spaces inside a key are safe. */
const sqlitePath = (path: readonly (string | number)[]) =>
  '$' + path.map((k) => (typeof k === 'number' ? `[${k}]` : `."${k.replace(/"/g, '\\"')}"`)).join('');

/** PostgreSQL text[] path for `#>` / `#>>`. */
const pgPath = (path: readonly (string | number)[]) => path.map(String);

export interface JsonSql {
  readonly dialect: DialectName;
  /** The value at `path` as text (strings unquoted, numbers and booleans as their JSON text); NULL when absent. */
  text(col: Expression<unknown>, path: readonly (string | number)[]): RawBuilder<string | null>;
  /** The value at `path` as a number when it is a JSON number, else NULL (never a cast error). */
  number(col: Expression<unknown>, path: readonly (string | number)[]): RawBuilder<number | null>;
  /** The JSON type at `path`: 'object' | 'array' | 'string' | 'number' | 'boolean' | 'null', NULL when absent. */
  type(col: Expression<unknown>, path: readonly (string | number)[]): RawBuilder<string | null>;
  /** The sub-document at `path`, as a JSON value usable by `elementsText`. */
  value(col: Expression<unknown>, path: readonly (string | number)[]): RawBuilder<unknown>;
  /** A correlated table of the elements of the array at `path`, as text, in a column named `value`. */
  elementsText(col: Expression<unknown>, path: readonly (string | number)[]): RawBuilder<unknown>;
  /** Number of elements of the array at `path` (NULL when not an array). */
  arrayLength(col: Expression<unknown>, path: readonly (string | number)[]): RawBuilder<number | null>;
  /** Case-sensitive LIKE (SQLite's LIKE is case-insensitive for ASCII; GLOB is not portable). */
  likeCaseSensitive(value: Expression<unknown>, pattern: string): RawBuilder<boolean>;
  /** Case-insensitive LIKE. */
  likeCaseInsensitive(value: Expression<unknown>, pattern: string): RawBuilder<boolean>;
}

const sqliteJson: JsonSql = {
  dialect: 'sqlite',
  // json_extract returns SQL values: text for strings, numbers for numbers, 1/0 for booleans.
  text: (col, path) => sql<string | null>`(CASE json_type(${col}, ${sqlitePath(path)})
    WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN NULL
    ELSE CAST(json_extract(${col}, ${sqlitePath(path)}) AS TEXT) END)`,
  number: (col, path) => sql<number | null>`(CASE WHEN json_type(${col}, ${sqlitePath(path)}) IN ('integer', 'real')
    THEN json_extract(${col}, ${sqlitePath(path)}) END)`,
  type: (col, path) => sql<string | null>`(CASE json_type(${col}, ${sqlitePath(path)})
    WHEN 'integer' THEN 'number' WHEN 'real' THEN 'number' WHEN 'text' THEN 'string'
    WHEN 'true' THEN 'boolean' WHEN 'false' THEN 'boolean' ELSE json_type(${col}, ${sqlitePath(path)}) END)`,
  value: (col, path) => sql`json_extract(${col}, ${sqlitePath(path)})`,
  elementsText: (col, path) => sql`(SELECT CAST(je.value AS TEXT) AS value FROM json_each(${col}, ${sqlitePath(path)}) AS je)`,
  arrayLength: (col, path) => sql<number | null>`(CASE WHEN json_type(${col}, ${sqlitePath(path)}) = 'array' THEN json_array_length(${col}, ${sqlitePath(path)}) END)`,
  likeCaseSensitive: (value, pattern) => sql<boolean>`(${value} LIKE ${pattern} ESCAPE '\\' AND instr(${value}, '') IS NOT NULL AND ${value} GLOB ${likeToGlob(pattern)})`,
  likeCaseInsensitive: (value, pattern) => sql<boolean>`(lower(${value}) LIKE lower(${pattern}) ESCAPE '\\')`,
};

const postgresJson: JsonSql = {
  dialect: 'postgres',
  text: (col, path) => sql<string | null>`(${col} #>> ${pgPath(path)})`,
  number: (col, path) => sql<number | null>`(CASE WHEN jsonb_typeof(${col} #> ${pgPath(path)}) = 'number' THEN (${col} #>> ${pgPath(path)})::double precision END)`,
  type: (col, path) => sql<string | null>`jsonb_typeof(${col} #> ${pgPath(path)})`,
  value: (col, path) => sql`(${col} #> ${pgPath(path)})`,
  elementsText: (col, path) => sql`(SELECT je.value AS value FROM jsonb_array_elements_text(CASE WHEN jsonb_typeof(${col} #> ${pgPath(path)}) = 'array' THEN ${col} #> ${pgPath(path)} ELSE '[]'::jsonb END) AS je(value))`,
  arrayLength: (col, path) => sql<number | null>`(CASE WHEN jsonb_typeof(${col} #> ${pgPath(path)}) = 'array' THEN jsonb_array_length(${col} #> ${pgPath(path)}) END)`,
  likeCaseSensitive: (value, pattern) => sql<boolean>`(${value} LIKE ${pattern} ESCAPE '\\')`,
  likeCaseInsensitive: (value, pattern) => sql<boolean>`(${value} ILIKE ${pattern} ESCAPE '\\')`,
};

/** SQLite's LIKE ignores ASCII case; GLOB is case-sensitive. Translate a LIKE pattern to GLOB. */
function likeToGlob(pattern: string): string {
  let out = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '\\' && i + 1 < pattern.length) {
      const n = pattern[++i];
      out += n === '*' || n === '?' || n === '[' ? `[${n}]` : n;
    } else if (c === '%') out += '*';
    else if (c === '_') out += '?';
    else if (c === '*' || c === '?' || c === '[') out += `[${c}]`;
    else out += c;
  }
  return out;
}

export const jsonSql = (dialect: DialectName): JsonSql => (dialect === 'postgres' ? postgresJson : sqliteJson);

/** Escape `%`, `_` and `\` of a literal for use inside a LIKE pattern with ESCAPE '\'. */
export const escapeLike = (literal: string): string => literal.replace(/[\\%_]/g, (c) => `\\${c}`);
