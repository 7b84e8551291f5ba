/**
 * Find queries (Mongo-style match objects) → one SQL boolean for a WHERE clause. Every value and
 * every JSON key is a bound parameter; columns come only from `resolve` and go through `sql.ref`.
 * Dialect SQL lives in db/json-sql.ts (`jsonFindSql`); nothing here asks which database it is.
 *
 * SEMANTICS (test/query/find-sql.test.ts has an independent evaluator of the same rules and checks
 * SQLite and PostgreSQL against it, id for id):
 *
 * 1. Fields. A key is a dotted path. `resolve` maps it to a text or number column, a whole JSON
 *    column, or a path inside a JSON column; null means unknown (FindQueryError). A NULL column
 *    is a missing field.
 * 2. Nodes of a JSON path. From the column's value, each key steps: from an object to its member;
 *    from an array to that member of each element that is an object and, when the key is an index
 *    (`0`…`999999999`), also to the element at that index; from anything else nowhere. Missing
 *    members are dropped; a JSON null is a node. (`properties.items.sku` reaches every item's sku.)
 * 3. Items: the nodes, and the elements of each array node, one level deep: `{tags: "a"}` tests
 *    the tags array itself and each tag; a tag that is itself an array is not opened.
 * 4. Conditions; each operator holds on its own (`{n: {$gt: 1, $lt: 5}}` may be met by two items):
 *    - equality with v (implicit or $eq): some item equals v. Numbers equal numbers (numerically,
 *      as doubles), strings equal strings (exactly), booleans booleans; an array equals an array
 *      with equal elements in the same order, so `{tags: ["a", "b"]}` is exact array equality.
 *      Objects are not values (refused: use dotted paths or $elemMatch).
 *    - equality with null: the field has no node, or some item is null (Mongo: missing or null).
 *    - $gt $gte $lt $lte v, v a number or a string: some item of the same type compares so, strings
 *      in code-point order (SQLite BINARY, PostgreSQL COLLATE "C"); ISO dates compare as strings.
 *    - $in: equality with any value. $ne, $nin: the negation of $eq, $in.
 *    - $exists: whether the field has a node (a JSON null exists; a NULL column does not).
 *    - $regex: some string item matches (regex.ts: the supported subset; `.` matches newlines;
 *      $options "i" folds ASCII letters only).
 *    - $all [v…]: equality with each v; an empty $all matches nothing.
 *    - $size n: some node is an array of n elements.
 *    - $elemMatch {operators}: some node is an array with one element meeting all of them, the
 *      element taken as a single value (not opened). $elemMatch {fields}: some element that is an
 *      object matches the whole sub-match, paths starting at the element.
 *    - $not {operators}: the negation.
 * 5. The keys of one object, $and, $or and $nor combine whole matches. Every part compiles to
 *    TRUE or FALSE, never NULL, so negations match exactly the rows (fields missing included)
 *    that the positive form does not. An empty query matches every row.
 *
 * Deviations from MongoDB: no equality with objects; `{"a.b": null}` does not match a document
 * whose `a` is an array of objects where some lack `b` but another has a non-null `b`; values of
 * another type never compare (no BSON type order); $regex is a subset; case folding is ASCII;
 * `$type`, `$mod`, `$where`, `$expr`, `$text` and geo operators are refused.
 */
import { sql, type Expression, type SqlBool } from 'kysely';
import {
  jsonFindSql,
  readOnce,
  type JsonFindItem,
  type JsonFindSql,
  type JsonKind,
  type JsonSql,
} from '../../db/json-sql.ts';
import { FIND_LIMITS, type Cond, type FindValue, type MatchNode } from './ast.ts';
import { and, not, or, toSql, type Bool } from './bool.ts';
import { FindQueryError, quoteName } from './errors.ts';
import { parseFind } from './parse.ts';

export type FieldRef =
  /** A real column; `json` is a JSON column as a whole (e.g. a tags array). */
  | { kind: 'column'; column: string; type: 'text' | 'number' | 'json' }
  /** A path inside a JSON column (`properties.a.b` → column `properties`, path `['a', 'b']`). */
  | { kind: 'json'; column: string; path: string[] };

/**
 * Maps a dotted field (split on dots) to its storage, or null when it is not searchable. Columns
 * should be qualified (`objects.name`): the compiled SQL has subqueries over json_each, whose
 * columns (`id`, `key`, `value`, `type`, `path`…) would capture unqualified names.
 */
export type FieldResolver = (path: string[]) => FieldRef | null;

/** One candidate value of a field, as the conditions test it. */
interface Item {
  is(kind: JsonKind): Bool;
  isBoolean(value: boolean): Bool;
  readonly text: Expression<unknown>;
  readonly number: Expression<unknown>;
  equalsArray(value: readonly FindValue[]): Bool;
}

/** What a field condition is about: a column, a JSON path, or one array element. */
interface Subject {
  /** The field has a node. */
  exists(): Bool;
  /** Some item satisfies `pred`. */
  anyItem(pred: (it: Item) => Bool): Bool;
  /** Some node is an array satisfying `pred`. */
  anyArray(pred: (node: Expression<unknown>) => Bool): Bool;
}

type FieldSubject = (field: string, path: readonly string[]) => Subject;

const CMP = { gt: '>', gte: '>=', lt: '<', lte: '<=' } as const;

/** A bound number as a double on both databases (an integer column must not make PostgreSQL type it bigint). */
const num = (v: number) => sql`CAST(${v} AS DOUBLE PRECISION)`;
/** `$size` beyond this matches nothing (and would overflow PostgreSQL's int parameter). */
const MAX_ARRAY_LENGTH = 0x7fffffff;

const jsonItem = (j: JsonFindItem): Item => ({
  is: (kind) => j.is(kind),
  isBoolean: (v) => j.isBoolean(v),
  text: j.text,
  number: j.number,
  equalsArray: (v) => j.equalsArray(v),
});

const columnItem = (ref: Expression<unknown>, type: 'text' | 'number'): Item => ({
  is: (kind) => (type === 'text' ? kind === 'string' : kind === 'number'),
  isBoolean: () => false,
  text: ref,
  number: ref,
  equalsArray: () => false,
});

class Compiler {
  private aliases = 0;
  /** JSON scans emitted so far (FIND_LIMITS.jsonConditions). */
  private scans = 0;
  /** False while an alternative form of already counted scans is built (`uncounted`). */
  private counting = true;
  private readonly f: JsonFindSql;

  constructor(private readonly json: JsonSql) {
    this.f = jsonFindSql(json);
  }

  private alias(): string {
    return `m${++this.aliases}`;
  }

  /** Every JSON scan goes through here, so this is where the query's cost is counted. */
  private exists(from: Expression<unknown>, where: Bool): Bool {
    if (where === false) return false;
    if (this.counting && ++this.scans > FIND_LIMITS.jsonConditions) {
      throw new FindQueryError(
        `the query has more than ${FIND_LIMITS.jsonConditions} conditions on JSON fields (FIND_LIMITS.jsonConditions; ` +
          'a null test counts twice); use $in on one field, or split the query',
        '',
        'query_too_costly',
      );
    }
    return sql<SqlBool>`EXISTS (SELECT 1 FROM ${from}${where === true ? sql`` : sql` WHERE ${where}`})`;
  }

  columnSubject(ref: Expression<unknown>, type: 'text' | 'number'): Subject {
    const present = sql<SqlBool>`(${ref} IS NOT NULL)`;
    const item = columnItem(ref, type);
    return { exists: () => present, anyItem: (pred) => and([present, pred(item)]), anyArray: () => false };
  }

  jsonSubject(root: Expression<unknown>, path: readonly string[]): Subject {
    const { f } = this;
    const walked: Subject = {
      exists: () => this.exists(f.findNodes(root, path, this.alias()), true),
      anyItem: (pred) => {
        const a = this.alias();
        return this.exists(f.findItems(root, path, a), pred(jsonItem(f.findItem(a))));
      },
      anyArray: (pred) => {
        const a = this.alias();
        const node = f.findNode(a);
        const p = pred(node);
        return p === false ? false : this.exists(f.findNodes(root, path, a), and([f.findItemOf(node).is('array'), p]));
      },
    };
    if (!path.length) return walked;
    // Most documents have no array before the last step: then the path reaches one node, read by
    // path from the column (once per row, see findPlain), and the walk above is not run at all.
    const { plain, item } = f.findPlain(root, path);
    const one = jsonItem(item);
    const node = item.node;
    const either = (walk: Bool, direct: () => Bool): Bool => {
      if (walk === false) return false;
      const d = this.uncounted(direct);
      return sql<SqlBool>`(CASE WHEN ${plain} THEN COALESCE(${toSql(d)}, FALSE) ELSE ${toSql(walk)} END)`;
    };
    return {
      exists: () => either(walked.exists(), () => sql<SqlBool>`(${item.is('null')} IS NOT NULL)`),
      anyItem: (pred) =>
        either(walked.anyItem(pred), () => {
          const a = this.alias();
          const inElement = pred(jsonItem(f.findItem(a)));
          return or([
            pred(one),
            inElement === false ? false : and([item.is('array'), this.exists(f.findElements(node, a), inElement)]),
          ]);
        }),
      anyArray: (pred) => either(walked.anyArray(pred), () => and([item.is('array'), pred(node)])),
    };
  }

  /** Builds an alternative form of SQL already counted once (FIND_LIMITS.jsonConditions counts each condition once). */
  private uncounted(build: () => Bool): Bool {
    this.counting = false;
    try {
      return build();
    } finally {
      this.counting = true;
    }
  }

  /** One array element as the whole subject ($elemMatch with operators). */
  private elementSubject(j: JsonFindItem): Subject {
    const item = jsonItem(j);
    return {
      exists: () => true,
      anyItem: (pred) => pred(item),
      anyArray: (pred) => and([j.is('array'), pred(j.node)]),
    };
  }

  match(node: MatchNode, field: FieldSubject): Bool {
    switch (node.kind) {
      case 'and':
        return and(node.nodes.map((n) => this.match(n, field)));
      case 'or':
        return or(node.nodes.map((n) => this.match(n, field)));
      case 'nor':
        return not(or(node.nodes.map((n) => this.match(n, field))));
      case 'field':
        return this.cond(node.cond, field(node.field, node.path));
      default:
        return unreachable(node);
    }
  }

  private cond(c: Cond, s: Subject): Bool {
    const { f } = this;
    switch (c.kind) {
      case 'eq':
        return c.value === null ? this.isNull(s) : s.anyItem((it) => this.equals(it, c.value));
      case 'in': {
        const values = c.values;
        const strings = [...new Set(values.filter((v): v is string => typeof v === 'string'))];
        const numbers = [...new Set(values.filter((v): v is number => typeof v === 'number'))];
        const booleans = [...new Set(values.filter((v): v is boolean => typeof v === 'boolean'))];
        const arrays = values.filter((v): v is readonly FindValue[] => Array.isArray(v));
        const hasNull = values.includes(null);
        const some = s.anyItem((it) =>
          or([
            strings.length === 0
              ? false
              : and([
                  it.is('string'),
                  strings.length === 1 ? f.compareText(it.text, '=', strings[0]) : f.textIn(it.text, strings),
                ]),
            numbers.length === 0
              ? false
              : and([
                  it.is('number'),
                  numbers.length === 1
                    ? sql<SqlBool>`(${it.number} = ${num(numbers[0])})`
                    : f.numberIn(it.number, numbers),
                ]),
            ...booleans.map((b) => it.isBoolean(b)),
            ...arrays.map((a) => this.equals(it, a)),
          ]),
        );
        return hasNull ? or([this.isNull(s), some]) : some;
      }
      case 'cmp': {
        const { value } = c;
        const op = CMP[c.op];
        return s.anyItem((it) =>
          typeof value === 'number'
            ? and([it.is('number'), sql<SqlBool>`(${it.number} ${sql.raw(op)} ${num(value)})`])
            : and([it.is('string'), f.compareText(it.text, op, value)]),
        );
      }
      case 'exists':
        return c.exists ? s.exists() : not(s.exists());
      case 'regex':
        return s.anyItem((it) => and([it.is('string'), f.glob(it.text, c.glob, c.fold)]));
      case 'size':
        return c.size > MAX_ARRAY_LENGTH
          ? false
          : s.anyArray((node) => sql<SqlBool>`(${this.json.arrayLength(node, [])} = ${c.size})`);
      case 'elemMatch':
        return s.anyArray((node) => {
          const a = this.alias();
          return this.exists(f.findElements(node, a), this.cond(c.cond, this.elementSubject(f.findItem(a))));
        });
      case 'elemMatchDoc':
        return s.anyArray((node) => {
          const a = this.alias();
          const el = f.findItem(a);
          const inner = this.match(c.match, (_field, path) => this.jsonSubject(el.node, path));
          return this.exists(f.findElements(node, a), and([el.is('object'), inner]));
        });
      case 'not':
        return not(this.cond(c.cond, s));
      case 'every':
        return and(c.conds.map((x) => this.cond(x, s)));
      default:
        return unreachable(c);
    }
  }

  /** Missing, or some item is null. */
  private isNull(s: Subject): Bool {
    return or([not(s.exists()), s.anyItem((it) => it.is('null'))]);
  }

  private equals(it: Item, v: FindValue): Bool {
    if (v === null) return it.is('null');
    if (typeof v === 'boolean') return it.isBoolean(v);
    if (typeof v === 'number') return and([it.is('number'), sql<SqlBool>`(${it.number} = ${num(v)})`]);
    if (typeof v === 'string') return and([it.is('string'), this.f.compareText(it.text, '=', v)]);
    return and([it.is('array'), it.equalsArray(v)]);
  }
}

const unreachable = (x: never): never => {
  throw new Error(`unhandled find node ${JSON.stringify(x)}`);
};

/** The subject of a top-level field, through `resolve`. */
const topLevel =
  (c: Compiler, resolve: FieldResolver, fieldList?: readonly string[]): FieldSubject =>
  (field, path) => {
    const ref = resolve([...path]);
    if (!ref) {
      throw new FindQueryError(
        `unknown field ${quoteName(field)}${fieldList?.length ? `; fields: ${fieldList.join(', ')}` : ''}`,
      );
    }
    if (ref.kind === 'json') return c.jsonSubject(sql.ref(ref.column), ref.path);
    return ref.type === 'json'
      ? c.jsonSubject(sql.ref(ref.column), [])
      : c.columnSubject(sql.ref(ref.column), ref.type);
  };

/**
 * Compile a match object to a WHERE condition. Throws FindQueryError (a 400) for anything
 * malformed, unsupported or unknown; `fieldList` is shown in the unknown-field message.
 */
export function compileFind(
  match: Record<string, unknown>,
  resolve: FieldResolver,
  json: JsonSql,
  fieldList?: readonly string[],
): Expression<SqlBool> {
  return compileFindNode(parseFind(match), resolve, json, fieldList);
}

/**
 * `compileFind`, with the paths into the JSON column `column` read once per row where the dialect
 * reads a document once per use (db/json-sql.ts `readOnce`): the top-level fields that read it
 * are compiled together against the value read once (`alias`), and those that do not stay
 * outside, so they still narrow the rows (through their indexes) before any document is read.
 * The bounds (FIND_LIMITS) hold for the query as sent: it is compiled whole first.
 */
export function compileFindReadingOnce(
  match: Record<string, unknown>,
  resolve: FieldResolver,
  json: JsonSql,
  fieldList: readonly string[] | undefined,
  column: string,
  alias: string,
): Expression<SqlBool> {
  const whole = compileFind(match, resolve, json, fieldList);
  const once = readOnce(json.dialect, column, alias);
  if (once.ref === column) return whole;
  const readsColumn = (ref: FieldRef | null) => ref?.kind === 'json' && ref.column === column;
  const readsDoc = (key: string) => {
    let reads = false;
    compileFind(
      { [key]: match[key] },
      (path) => {
        const ref = resolve(path);
        if (readsColumn(ref)) reads = true;
        return ref;
      },
      json,
      fieldList,
    );
    return reads;
  };
  const columns: Record<string, unknown> = {};
  const documents: Record<string, unknown> = {};
  for (const key of Object.keys(match)) (readsDoc(key) ? documents : columns)[key] = match[key];
  if (!Object.keys(documents).length) return whole;
  const onceResolve: FieldResolver = (path) => {
    const ref = resolve(path);
    return ref && readsColumn(ref) ? { ...ref, column: once.ref } : ref;
  };
  const onDocument = once.wrap(compileFind(documents, onceResolve, json, fieldList));
  return Object.keys(columns).length
    ? sql<SqlBool>`(${compileFind(columns, resolve, json, fieldList)} AND ${onDocument})`
    : onDocument;
}

/** Compile an already parsed query (parse.ts `parseFind`). */
function compileFindNode(
  node: MatchNode,
  resolve: FieldResolver,
  json: JsonSql,
  fieldList?: readonly string[],
): Expression<SqlBool> {
  const c = new Compiler(json);
  return toSql(c.match(node, topLevel(c, resolve, fieldList)));
}
