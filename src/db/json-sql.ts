/**
 * Typed SQL fragments over JSON columns, the same functions for both dialects (style K2/D3).
 * Paths are arrays of keys; values are always bound parameters, never spliced into SQL text.
 * Feature code (query compilers, stores) calls these and never branches on the dialect itself.
 */
import { sql, type Expression, type RawBuilder, type SqlBool } from 'kysely';
import type { DialectName } from './dialect.ts';

/** SQLite JSON path literal `$."a"."b"[0]`: keys quoted so dots and spaces inside a key are safe. */
const sqlitePath = (path: readonly (string | number)[]) =>
  '$' + path.map((k) => (typeof k === 'number' ? `[${k}]` : `."${k.replace(/[\\"]/g, (c) => `\\${c}`)}"`)).join('');

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
  /**
   * The elements of the array in `col` (none when it is not an array) as a table for a FROM clause,
   * named `alias`, with the element as text in its column `value` (a tags facet's rows).
   */
  elementsFrom(col: Expression<unknown>, alias: string): RawBuilder<unknown>;
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
  elementsText: (col, path) =>
    sql`(SELECT CAST(je.value AS TEXT) AS value FROM json_each(${col}, ${sqlitePath(path)}) AS je)`,
  elementsFrom: (col, alias) =>
    sql`json_each(CASE WHEN json_type(${col}) = 'array' THEN ${col} ELSE '[]' END) AS ${sql.id(alias)}`,
  arrayLength: (col, path) =>
    sql<
      number | null
    >`(CASE WHEN json_type(${col}, ${sqlitePath(path)}) = 'array' THEN json_array_length(${col}, ${sqlitePath(path)}) END)`,
  likeCaseSensitive: (value, pattern) =>
    sql<boolean>`(${value} LIKE ${pattern} ESCAPE '\\' AND instr(${value}, '') IS NOT NULL AND ${value} GLOB ${likeToGlob(pattern)})`,
  likeCaseInsensitive: (value, pattern) => sql<boolean>`(lower(${value}) LIKE lower(${pattern}) ESCAPE '\\')`,
};

const postgresJson: JsonSql = {
  dialect: 'postgres',
  text: (col, path) => sql<string | null>`(${col} #>> ${pgPath(path)})`,
  number: (col, path) =>
    sql<
      number | null
    >`(CASE WHEN jsonb_typeof(${col} #> ${pgPath(path)}) = 'number' THEN (${col} #>> ${pgPath(path)})::double precision END)`,
  type: (col, path) => sql<string | null>`jsonb_typeof(${col} #> ${pgPath(path)})`,
  value: (col, path) => sql`(${col} #> ${pgPath(path)})`,
  elementsText: (col, path) =>
    sql`(SELECT je.value AS value FROM jsonb_array_elements_text(CASE WHEN jsonb_typeof(${col} #> ${pgPath(path)}) = 'array' THEN ${col} #> ${pgPath(path)} ELSE '[]'::jsonb END) AS je(value))`,
  elementsFrom: (col, alias) =>
    sql`jsonb_array_elements_text(CASE WHEN jsonb_typeof(${col}) = 'array' THEN ${col} ELSE '[]'::jsonb END) AS ${sql.id(alias)}(value)`,
  arrayLength: (col, path) =>
    sql<
      number | null
    >`(CASE WHEN jsonb_typeof(${col} #> ${pgPath(path)}) = 'array' THEN jsonb_array_length(${col} #> ${pgPath(path)}) END)`,
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

/**
 * Every scalar value (string, number, boolean) inside a JSON document, at any depth, joined by
 * spaces; keys are left out. What a full-text match over property values looks at.
 */
export const jsonScalarsText = (dialect: DialectName, col: Expression<unknown>): RawBuilder<string | null> =>
  dialect === 'postgres'
    ? sql<
        string | null
      >`(SELECT string_agg(v #>> '{}', ' ') FROM jsonb_path_query(${col}, 'strict $.**') AS v WHERE jsonb_typeof(v) IN ('string', 'number', 'boolean'))`
    : sql<string | null>`(SELECT group_concat(jt.atom, ' ') FROM json_tree(${col}) AS jt WHERE jt.atom IS NOT NULL)`;

// ─── Mongo-style find (src/query/find): path traversal and value tests, both dialects ───────────
//
// A *node* is one JSON value as an SQL expression: JSON text on SQLite, jsonb on PostgreSQL, and
// SQL NULL when missing. `findNodes` lists the nodes a dotted path reaches, walking arrays of
// objects the Mongo way; `findItems` adds the elements of the array nodes (Mongo compares a field
// with its array's elements too). Both are FROM items with a caller-chosen alias, read with
// `findNode(alias)` / `findItem(alias)`. Names starting with `_f` are reserved inside them, and a
// `root` must be a qualified column or an outer alias (json_each has columns named id, key, value…).

/** The JSON kinds, as find sees them. */
export type JsonKind = 'string' | 'number' | 'boolean' | 'null' | 'array' | 'object';
type JsonTextComparison = '=' | '<' | '<=' | '>' | '>=';

/** One JSON value: a row of `findItems`/`findElements`, or a node read with `findItemOf`. */
export interface JsonFindItem {
  /** Whether the value is of that kind (false, never NULL, for a row; NULL for a missing node). */
  is(kind: JsonKind): RawBuilder<boolean>;
  isBoolean(value: boolean): RawBuilder<boolean>;
  /** The string; meaningful only where `is('string')`. */
  readonly text: RawBuilder<string | null>;
  /** The number as a double; NULL unless `is('number')`. */
  readonly number: RawBuilder<number | null>;
  /** The value as a node (for arrays and objects: a root for `findNodes` / `findElements`). */
  readonly node: RawBuilder<unknown>;
  /** Deep equality with an array of scalars and arrays (numbers numerically, strings exactly). */
  equalsArray(value: readonly unknown[]): RawBuilder<boolean>;
}

export interface JsonFindSql {
  readonly dialect: DialectName;
  /**
   * FROM item `(…) AS alias`, one row per node at `path` under `root` (never NULL). A step from an
   * object takes its member; from an array, the member of each element that is an object, and also
   * the element at that index when the key is an index (`0`…`999999999`); other values stop.
   */
  findNodes(root: Expression<unknown>, path: readonly string[], alias: string): RawBuilder<unknown>;
  /** The node of a `findNodes` row. */
  findNode(alias: string): RawBuilder<unknown>;
  /** FROM item `(…) AS alias`, one row per item: each node, and each element of each array node. */
  findItems(root: Expression<unknown>, path: readonly string[], alias: string): RawBuilder<unknown>;
  /** FROM item `(…) AS alias`, one row per element of `node` when it is an array (else none). */
  findElements(node: Expression<unknown>, alias: string): RawBuilder<unknown>;
  /** The item of a `findItems` / `findElements` row. */
  findItem(alias: string): JsonFindItem;
  /** A node read as an item (`is` is NULL when the node is missing). */
  findItemOf(node: Expression<unknown>): JsonFindItem;
  /** The node at a fixed path, without walking arrays of objects (keys, or indexes into arrays). */
  findAt(root: Expression<unknown>, path: readonly string[]): RawBuilder<unknown>;
  /**
   * The path as plain member steps: `plain` holds for a row when no node before the last is an
   * array (so the path reaches at most one node, `item`, whose `is` is NULL when it is missing).
   * Read straight from `root` by path, with no derived table per step: SQLite answers every such
   * call of one row from one parse of the document (its JSON cache), however many conditions ask.
   */
  findPlain(root: Expression<unknown>, path: readonly string[]): { plain: RawBuilder<boolean>; item: JsonFindItem };
  /** Text in code-point order (SQLite BINARY, PostgreSQL COLLATE "C"), e.g. for ORDER BY. */
  byteOrder(text: Expression<unknown>): RawBuilder<string | null>;
  /** `text op value` in code-point order, whatever the column's collation. */
  compareText(text: Expression<unknown>, op: JsonTextComparison, value: string): RawBuilder<boolean>;
  /** `text IN (values)` in code-point order, with one bound JSON array (no bind-parameter limit). */
  textIn(text: Expression<unknown>, values: readonly string[]): RawBuilder<boolean>;
  /** `number IN (values)`, with one bound JSON array. */
  numberIn(num: Expression<unknown>, values: readonly number[]): RawBuilder<boolean>;
  /**
   * SQLite GLOB semantics on both dialects: `*` any run, `?` one character (newlines too), `[…]` a
   * class (`[^…]` negated, `a-z` ranges, `]` first is literal), anything else literal, anchored,
   * case-sensitive by code point. `lowerAscii` folds A-Z in the text first (the pattern must then
   * be lower-case).
   */
  glob(text: Expression<unknown>, pattern: string, lowerAscii: boolean): RawBuilder<boolean>;
}

/** A key that is also an array index on a find path. */
const findIndex = (key: string): number | null => (/^(0|[1-9][0-9]{0,8})$/.test(key) ? Number(key) : null);

/** SQLite JSON path of one object member; `\` and `"` escaped (the quoted label decodes escapes). */
const sqliteMember = (key: string) => `$."${key.replace(/[\\"]/g, (c) => `\\${c}`)}"`;

const sqliteItem = (t: RawBuilder<unknown>, x: RawBuilder<unknown>): JsonFindItem => ({
  is: (kind) =>
    kind === 'string'
      ? sql<boolean>`(${t} = 'text')`
      : kind === 'number'
        ? sql<boolean>`(${t} IN ('integer', 'real'))`
        : kind === 'boolean'
          ? sql<boolean>`(${t} IN ('true', 'false'))`
          : sql<boolean>`(${t} = ${sql.lit(kind)})`,
  isBoolean: (value) => sql<boolean>`(${t} = ${sql.lit(value ? 'true' : 'false')})`,
  text: sql<string | null>`${x}`,
  number: sql<number | null>`(CASE WHEN ${t} IN ('integer', 'real') THEN ${x} END)`,
  node: sql`(CASE ${t} WHEN 'array' THEN ${x} WHEN 'object' THEN ${x} WHEN 'null' THEN 'null' WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' ELSE json_quote(${x}) END)`,
  // A string item's value is its bare text, which the JSON functions refuse ("malformed JSON"), and
  // SQLite may test the terms of an AND in any order: a CASE on the type would not guard them,
  // as SQLite folds it away next to the `t = 'array'` term that usually comes with this one.
  equalsArray: (value) =>
    sql<boolean>`(CASE WHEN json_valid(${x}, 5) THEN ${sqliteEqualsJson(x, '$', value)} ELSE 0 END)`,
});

/** Deep equality of the value at `path` in the JSON text `doc` with `value`, element by element. */
function sqliteEqualsJson(doc: Expression<unknown>, path: string, value: unknown): RawBuilder<boolean> {
  if (value === null) return sql<boolean>`(json_type(${doc}, ${path}) = 'null')`;
  if (typeof value === 'boolean')
    return sql<boolean>`(json_type(${doc}, ${path}) = ${sql.lit(value ? 'true' : 'false')})`;
  if (typeof value === 'number')
    return sql<boolean>`(json_type(${doc}, ${path}) IN ('integer', 'real') AND json_extract(${doc}, ${path}) = ${value})`;
  if (typeof value === 'string')
    return sql<boolean>`(json_type(${doc}, ${path}) = 'text' AND json_extract(${doc}, ${path}) = ${value})`;
  if (Array.isArray(value)) {
    const parts = value.map((v, i) => sqliteEqualsJson(doc, `${path}[${i}]`, v));
    return sql<boolean>`(json_type(${doc}, ${path}) = 'array' AND json_array_length(${doc}, ${path}) = ${value.length}${sql.join(
      parts.map((p) => sql` AND ${p}`),
      sql``,
    )})`;
  }
  throw new TypeError('equalsArray: arrays of scalars and arrays only');
}

const sqliteFind: JsonFindSql = {
  dialect: 'sqlite',
  findNodes: (root, path, alias) =>
    sql`(SELECT _fp.v AS v FROM ${sqliteLevels(root, path)} AS _fp WHERE _fp.v IS NOT NULL) AS ${sql.id(alias)}`,
  findNode: (alias) => sql`${sql.ref(`${alias}.v`)}`,
  findItems: (root, path, alias) => sql`(SELECT _fc.type AS t, _fc.value AS x FROM ${sqliteLevels(root, path)} AS _fp,
    jsonb_each(CASE WHEN json_type(_fp.v) = 'array' THEN jsonb_insert(_fp.v, '$[#]', _fp.v) ELSE jsonb_array(jsonb(_fp.v)) END) AS _fc
    WHERE _fp.v IS NOT NULL) AS ${sql.id(alias)}`,
  findElements: (node, alias) =>
    sql`(SELECT _fe.type AS t, _fe.value AS x FROM jsonb_each(CASE WHEN json_type(${node}) = 'array' THEN ${node} ELSE '[]' END) AS _fe) AS ${sql.id(alias)}`,
  findItem: (alias) => sqliteItem(sql.ref(`${alias}.t`), sql.ref(`${alias}.x`)),
  findItemOf: (node) => sqliteItem(sql`json_type(${node})`, sql`(${node} ->> '$')`),
  findAt: (root, path) => {
    let node = sql`${root}`;
    for (const key of path) {
      const index = findIndex(key);
      node =
        index === null
          ? sql`(${node} -> ${sqliteMember(key)})`
          : sql`(SELECT CASE WHEN json_type(_fs.v) = 'array' THEN _fs.v -> ${`$[${index}]`} ELSE _fs.v -> ${sqliteMember(key)} END FROM (SELECT ${node} AS v) AS _fs)`;
    }
    return node;
  },
  findPlain: (root, path) => {
    const to = sqlitePath(path);
    return {
      plain: sql<boolean>`(${sql.join(
        path.map((_, i) => sql`json_type(${root}, ${sqlitePath(path.slice(0, i))}) IS NOT 'array'`),
        sql` AND `,
      )})`,
      item: sqliteItem(sql`json_type(${root}, ${to})`, sql`(${root} ->> ${to})`),
    };
  },
  byteOrder: (text) => sql<string | null>`(${text} COLLATE BINARY)`,
  compareText: (text, op, value) => sql<boolean>`(${text} COLLATE BINARY ${sql.raw(textOp(op))} ${value})`,
  textIn: (text, values) =>
    sql<boolean>`(${text} COLLATE BINARY IN (SELECT value FROM json_each(${JSON.stringify(values)})))`,
  numberIn: (num, values) => sql<boolean>`(${num} IN (SELECT value FROM json_each(${JSON.stringify(values)})))`,
  glob: (text, pattern, lowerAscii) => sql<boolean>`(${lowerAscii ? sql`lower(${text})` : text} GLOB ${pattern})`,
};

/**
 * The nested derived tables of one path walk (SQLite); each level's column `v` may be NULL.
 *
 * Read once: the root is converted to JSONB (`jsonb()`, which SQLite's per-statement JSON cache
 * answers from one parse of the row's text however many conditions ask), and every step stays in
 * JSONB: containers are taken with `jsonb_extract` / `jsonb_each` (a slice of the binary form, no
 * parse and no JSON text written), scalars with `->` as JSON text. Text JSON here would be
 * written out and parsed again by each condition, a full read of the document per condition.
 */
function sqliteLevels(root: Expression<unknown>, path: readonly string[]): RawBuilder<unknown> {
  let level = sql`(SELECT jsonb(${root}) AS v)`;
  for (const key of path) {
    const index = findIndex(key);
    const list = index === null ? sql`_fp.v` : sql`jsonb_insert(_fp.v, '$[#]', _fp.v)`;
    const byIndex =
      index === null
        ? sql``
        : sql` WHEN json_type(_fp.v) = 'array' THEN CASE WHEN _fa.key = json_array_length(_fp.v) THEN ${sqliteStep(sql`_fa.value`, `$[${index}]`)} END`;
    level = sql`(SELECT CASE WHEN _fa.type = 'object' THEN ${sqliteStep(sql`_fa.value`, sqliteMember(key))}${byIndex} END AS v
      FROM ${level} AS _fp, jsonb_each(CASE WHEN json_type(_fp.v) = 'array' THEN ${list} ELSE jsonb_array(jsonb(_fp.v)) END) AS _fa)`;
  }
  return level;
}

/** The value at `path` of a JSONB container: JSONB when it is a container, JSON text when a scalar, NULL when absent. */
const sqliteStep = (node: RawBuilder<unknown>, path: string): RawBuilder<unknown> =>
  sql`(CASE WHEN json_type(${node}, ${path}) IN ('object', 'array') THEN jsonb_extract(${node}, ${path}) ELSE ${node} -> ${path} END)`;

const postgresItem = (x: RawBuilder<unknown>): JsonFindItem => ({
  is: (kind) => sql<boolean>`(jsonb_typeof(${x}) = ${sql.lit(kind)})`,
  isBoolean: (value) => sql<boolean>`(${x} = ${sql.lit(value ? 'true' : 'false')}::jsonb)`,
  text: sql<string | null>`(${x} #>> '{}')`,
  number: sql<number | null>`(CASE WHEN jsonb_typeof(${x}) = 'number' THEN (${x})::double precision END)`,
  node: sql`${x}`,
  equalsArray: (value) => sql<boolean>`(${x} = ${JSON.stringify(value)}::jsonb)`,
});

const postgresFind: JsonFindSql = {
  dialect: 'postgres',
  findNodes: (root, path, alias) =>
    sql`(SELECT _fp.v AS v FROM ${postgresLevels(root, path)} AS _fp WHERE _fp.v IS NOT NULL) AS ${sql.id(alias)}`,
  findNode: (alias) => sql`${sql.ref(`${alias}.v`)}`,
  findItems: (root, path, alias) => sql`(SELECT _fc.x AS x FROM ${postgresLevels(root, path)} AS _fp,
    jsonb_array_elements(CASE WHEN jsonb_typeof(_fp.v) = 'array' THEN _fp.v || jsonb_build_array(_fp.v) ELSE jsonb_build_array(_fp.v) END) AS _fc(x)
    WHERE _fp.v IS NOT NULL) AS ${sql.id(alias)}`,
  findElements: (node, alias) =>
    sql`(SELECT _fe.x AS x FROM jsonb_array_elements(CASE WHEN jsonb_typeof(${node}) = 'array' THEN ${node} ELSE '[]'::jsonb END) AS _fe(x)) AS ${sql.id(alias)}`,
  findItem: (alias) => postgresItem(sql.ref(`${alias}.x`)),
  findItemOf: (node) => postgresItem(sql`${node}`),
  // Step by step: `#>` alone would also take `-1` and `01` as array indexes.
  findAt: (root, path) =>
    path.reduce<RawBuilder<unknown>>(
      (node, key) => (findIndex(key) === null ? sql`(${node} -> ${key}::text)` : sql`(${node} #> ${[key]}::text[])`),
      sql`${root}`,
    ),
  findPlain: (root, path) => {
    return {
      plain: sql<boolean>`(${sql.join(
        path.map((_, i) => sql`jsonb_typeof((${root})::jsonb #> ${pgPath(path.slice(0, i))}) IS DISTINCT FROM 'array'`),
        sql` AND `,
      )})`,
      item: postgresItem(sql`((${root})::jsonb #> ${pgPath(path)})`),
    };
  },
  byteOrder: (text) => sql<string | null>`(${text} COLLATE "C")`,
  compareText: (text, op, value) => sql<boolean>`((${text}) COLLATE "C" ${sql.raw(textOp(op))} ${value})`,
  textIn: (text, values) =>
    sql<boolean>`((${text}) COLLATE "C" IN (SELECT jsonb_array_elements_text(${JSON.stringify(values)}::jsonb)))`,
  numberIn: (num, values) =>
    sql<boolean>`(${num} IN (SELECT (_fn.x)::double precision FROM jsonb_array_elements(${JSON.stringify(values)}::jsonb) AS _fn(x)))`,
  glob: (text, pattern, lowerAscii) =>
    sql<boolean>`(${lowerAscii ? sql`lower((${text}) COLLATE "C")` : sql`(${text})`} COLLATE "C" ~ ${globToPosixRegex(pattern)})`,
};

/** The nested derived tables of one path walk (PostgreSQL); each level's column `v` may be NULL. */
function postgresLevels(root: Expression<unknown>, path: readonly string[]): RawBuilder<unknown> {
  let level = sql`(SELECT (${root})::jsonb AS v)`;
  for (const key of path) {
    const index = findIndex(key);
    const list = index === null ? sql`_fp.v` : sql`_fp.v || jsonb_build_array(_fp.v)`;
    // Nested CASE: PostgreSQL does not promise AND order, and jsonb_array_length fails on non-arrays.
    const byIndex =
      index === null
        ? sql``
        : sql` WHEN jsonb_typeof(_fp.v) = 'array' THEN CASE WHEN _fa.i > jsonb_array_length(_fp.v) THEN _fa.x -> ${index}::int END`;
    level = sql`(SELECT CASE WHEN jsonb_typeof(_fa.x) = 'object' THEN _fa.x -> ${key}::text${byIndex} END AS v
      FROM ${level} AS _fp, jsonb_array_elements(CASE WHEN jsonb_typeof(_fp.v) = 'array' THEN ${list} ELSE jsonb_build_array(_fp.v) END) WITH ORDINALITY AS _fa(x, i))`;
  }
  return level;
}

const textOp = (op: JsonTextComparison): string => {
  if (op !== '=' && op !== '<' && op !== '<=' && op !== '>' && op !== '>=')
    throw new TypeError(`compareText: bad operator ${String(op)}`);
  return op;
};

/** A GLOB pattern (SQLite's rules, see `glob`) as an anchored POSIX regex whose literals are all escaped. */
export function globToPosixRegex(pattern: string): string {
  const cps = Array.from(pattern);
  const lit = (c: string) => (/^[A-Za-z0-9]$/.test(c) ? c : `\\U${c.codePointAt(0)!.toString(16).padStart(8, '0')}`);
  let out = '^';
  for (let i = 0; i < cps.length; i++) {
    const c = cps[i];
    if (c === '*') out += '.*';
    else if (c === '?') out += '.';
    else if (c === '[') {
      // SQLite: `^` first negates, `]` first is literal, `-` between two members is a range.
      let j = i + 1;
      let negated = false;
      if (cps[j] === '^') {
        negated = true;
        j++;
      }
      let body = '';
      if (cps[j] === ']') {
        body += lit(']');
        j++;
      }
      let prior = '';
      for (; j < cps.length && cps[j] !== ']'; j++) {
        if (cps[j] === '-' && prior && j + 1 < cps.length && cps[j + 1] !== ']') {
          body += `-${lit(cps[++j])}`;
          prior = '';
        } else {
          body += lit(cps[j]);
          prior = cps[j];
        }
      }
      if (j >= cps.length) throw new TypeError('glob: unterminated [ class');
      out += body ? `[${negated ? '^' : ''}${body}]` : '[^\\s\\S]';
      i = j;
    } else out += lit(c);
  }
  return `${out}$`;
}

/** Find helpers for the dialect of `json` (or of a dialect name). */
export const jsonFindSql = (dialect: DialectName | JsonSql): JsonFindSql =>
  (typeof dialect === 'string' ? dialect : dialect.dialect) === 'postgres' ? postgresFind : sqliteFind;

/** One element of a JSON array, as SQL over the element (see `jsonSomeElement`). */
export interface JsonElementSql {
  /** 'string' | 'number' | 'boolean' | 'object' | 'array' | 'null'. */
  readonly kind: RawBuilder<string>;
  /** Strings as they are, numbers as their JSON text, booleans as 'true' / 'false'; else NULL. */
  readonly text: RawBuilder<string | null>;
  /** The number when the element is a JSON number, else NULL. */
  readonly num: RawBuilder<number | null>;
}

/** A PostgreSQL jsonb value as a JsonElementSql. */
const pgElement = (v: Expression<unknown>): JsonElementSql => ({
  kind: sql<string>`jsonb_typeof(${v})`,
  text: sql<string | null>`(CASE WHEN jsonb_typeof(${v}) IN ('string', 'number', 'boolean') THEN ${v} #>> '{}' END)`,
  num: sql<number | null>`(CASE WHEN jsonb_typeof(${v}) = 'number' THEN (${v} #>> '{}')::double precision END)`,
});

/**
 * Whether some element of the JSON array at `path` satisfies `test` (never NULL: false when the
 * path is absent or not an array). `test` gets the element as SQL; its own bound values stay bound.
 */
export const jsonSomeElement = (
  dialect: DialectName,
  col: Expression<unknown>,
  path: readonly (string | number)[],
  test: (el: JsonElementSql) => Expression<SqlBool>,
): RawBuilder<SqlBool> => {
  if (dialect === 'postgres') {
    return sql<SqlBool>`EXISTS (SELECT 1 FROM jsonb_array_elements(CASE WHEN jsonb_typeof(${col} #> ${pgPath(path)}) = 'array'
      THEN ${col} #> ${pgPath(path)} ELSE '[]'::jsonb END) AS je(v) WHERE ${test(pgElement(sql.ref('je.v')))})`;
  }
  const el = sqliteElement(sql.ref('je.type'), sql.ref('je.value'));
  // LIMIT 1: SQLite 3.53 turns a plain EXISTS over json_each into a join, and then miscounts
  // OFFSET (it skips joined rows, not outer rows). With a LIMIT the subquery stays a subquery.
  return sql<SqlBool>`EXISTS (SELECT 1 FROM json_each(${col}, ${sqlitePath(path)}) AS je
    WHERE json_type(${col}, ${sqlitePath(path)}) = 'array' AND (${test(el)}) LIMIT 1)`;
};

/** A SQLite JSON scalar, from its json_type and its SQL value, as the element tests read it. */
const sqliteElement = (t: Expression<unknown>, v: Expression<unknown>): JsonElementSql => ({
  kind: sql<string>`(CASE ${t} WHEN 'integer' THEN 'number' WHEN 'real' THEN 'number' WHEN 'text' THEN 'string'
      WHEN 'true' THEN 'boolean' WHEN 'false' THEN 'boolean' ELSE ${t} END)`,
  text: sql<string | null>`(CASE WHEN ${t} = 'text' THEN ${v} WHEN ${t} IN ('integer', 'real') THEN CAST(${v} AS TEXT)
      WHEN ${t} = 'true' THEN 'true' WHEN ${t} = 'false' THEN 'false' END)`,
  num: sql<number | null>`(CASE WHEN ${t} IN ('integer', 'real') THEN ${v} END)`,
});

/**
 * Whether some element of the JSON array at `arrayPath` is an object whose member `key` is a
 * scalar satisfying `test` (never NULL: false when the path is absent, not an array, or no object
 * has the member). `{tool_use: [{tool_name: "a"}, …]}` with `['tool_use']`, `'tool_name'`.
 */
export const jsonSomeMember = (
  dialect: DialectName,
  col: Expression<unknown>,
  arrayPath: readonly string[],
  key: string,
  test: (el: JsonElementSql) => Expression<SqlBool>,
): RawBuilder<SqlBool> => {
  if (dialect === 'postgres') {
    const v = sql`(je.e -> ${key})`;
    return sql<SqlBool>`EXISTS (SELECT 1 FROM jsonb_array_elements(CASE WHEN jsonb_typeof(${col} #> ${pgPath(arrayPath)}) = 'array'
      THEN ${col} #> ${pgPath(arrayPath)} ELSE '[]'::jsonb END) AS je(e)
      WHERE jsonb_typeof(je.e) = 'object' AND (${test(pgElement(v))}))`;
  }
  const member = sqlitePath([key]);
  // json_each gives an object element as JSON text; any other element is not parsed as JSON.
  const t = sql`(CASE WHEN je.type = 'object' THEN json_type(je.value, ${member}) END)`;
  const v = sql`(CASE WHEN je.type = 'object' THEN json_extract(je.value, ${member}) END)`;
  const el = sqliteElement(t, v);
  return sql<SqlBool>`EXISTS (SELECT 1 FROM json_each(${col}, ${sqlitePath(arrayPath)}) AS je
    WHERE json_type(${col}, ${sqlitePath(arrayPath)}) = 'array' AND (${test(el)}) LIMIT 1)`;
};

/**
 * The string members `key` of the objects in the JSON array at `arrayPath`, as a FROM item
 * (`from`, to follow a table that has `col`), the condition that keeps strings only (`where`) and
 * the value (`value`): what a facet over `tool_use[].tool_name` groups by.
 */
export const jsonMemberStrings = (
  dialect: DialectName,
  col: Expression<unknown>,
  arrayPath: readonly string[],
  key: string,
): { from: RawBuilder<unknown>; where: RawBuilder<SqlBool>; value: RawBuilder<string> } => {
  if (dialect === 'postgres') {
    return {
      from: sql`CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(${col} #> ${pgPath(arrayPath)}) = 'array'
        THEN ${col} #> ${pgPath(arrayPath)} ELSE '[]'::jsonb END) AS je(e)`,
      where: sql<SqlBool>`jsonb_typeof(je.e -> ${key}) = 'string'`,
      value: sql<string>`(je.e ->> ${key})`,
    };
  }
  const member = sqlitePath([key]);
  return {
    from: sql`CROSS JOIN json_each(${col}, ${sqlitePath(arrayPath)}) AS je`,
    where: sql<SqlBool>`(json_type(${col}, ${sqlitePath(arrayPath)}) = 'array'
      AND (CASE WHEN je.type = 'object' THEN json_type(je.value, ${member}) END) = 'text')`,
    value: sql<string>`json_extract(je.value, ${member})`,
  };
};

/** The value at `path` when it is a JSON string, else NULL. */
export const jsonString = (
  dialect: DialectName,
  col: Expression<unknown>,
  path: readonly (string | number)[],
): RawBuilder<string | null> => {
  const j = jsonSql(dialect);
  return sql<string | null>`(CASE WHEN ${j.type(col, path)} = 'string' THEN ${j.text(col, path)} END)`;
};

/**
 * A JSON column that a condition reads at many paths, read once per row. PostgreSQL decompresses
 * and reassembles (detoasts) a stored jsonb value at every operator that reads it, so a condition
 * on n paths of a large document read it n times per row (and held n copies in memory until the
 * row was done). `ref` is the column to compile the condition against and `wrap` gives the
 * condition over it: on PostgreSQL a correlated subquery that detoasts the value once (`|| '{}'`
 * returns the detoasted object itself; `OFFSET 0` keeps the planner from inlining it back into
 * each use); on SQLite the column and the condition as they are. The column must hold objects.
 */
export interface ReadOnce {
  readonly ref: string;
  wrap(condition: Expression<SqlBool>): Expression<SqlBool>;
}

export function readOnce(dialect: DialectName, column: string, alias: string): ReadOnce {
  if (dialect !== 'postgres') return { ref: column, wrap: (condition) => condition };
  return {
    ref: `${alias}.v`,
    wrap: (condition) =>
      sql<SqlBool>`EXISTS (SELECT 1 FROM (SELECT ${sql.ref(column)} || '{}'::jsonb AS v OFFSET 0) AS ${sql.id(alias)} WHERE ${condition})`,
  };
}
