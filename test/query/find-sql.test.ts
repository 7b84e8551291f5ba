/**
 * Find queries on real databases: SQLite in memory, and PostgreSQL when the run includes it (`npm
 * test` starts a throwaway cluster; without ORRERY_TEST_PG_URL these fail), in a fresh schema
 * dropped afterwards. Every query's
 * ids must equal those of the evaluator below: plain TypeScript that implements the semantics of
 * src/query/find/compile.ts again, without any of its code.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import SQLite from 'better-sqlite3';
import fc from 'fast-check';
import pg from 'pg';
import {
  Kysely,
  PostgresDialect,
  SqliteDialect,
  sql,
  type ColumnDefinitionBuilder,
  type Expression,
  type SqlBool,
} from 'kysely';
import { jsonSql, type JsonSql } from '../../src/db/json-sql.ts';
import {
  FIND_LIMITS,
  FindQueryError,
  compileFind,
  compileSort,
  type FieldResolver,
  type SortSpec,
} from '../../src/query/find/index.ts';

// ─── Documents ──────────────────────────────────────────────────────────────────────────────────

type J = null | boolean | number | string | J[] | { [k: string]: J };
type Q = Record<string, unknown>;
/** `undefined` JSON columns are SQL NULL; `null` ones hold a JSON null. */
interface Row {
  id: string;
  name: string | null;
  status: string | null;
  n: number | null;
  tags?: J;
  properties?: J;
  metadata?: J;
}

const own = (o: Record<string, J>, key: string, value: J) => {
  Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
  return o;
};

/** Hand-built documents; SEMANTICS below pins what each query must return among them. */
const EDGE: Row[] = [
  {
    id: 'e01',
    name: 'Alpha',
    status: 'ready',
    n: 3,
    tags: ['a', 'b'],
    metadata: { k: 'v' },
    properties: {
      foo: 'bar',
      n: 5,
      items: [
        { sku: 'A-1', qty: 2 },
        { sku: 'B-2', qty: 7 },
      ],
      arr: [1, 5, 10],
      nested: { a: { b: 'deep' } },
      date: '2024-03-05T10:00:00.000Z',
    },
  },
  {
    id: 'e02',
    name: 'alpha',
    status: 'draft',
    n: null,
    tags: ['b', ['a']],
    properties: { foo: ['bar', 'baz'], n: '5', arr: [[1, 2], 3], items: [{ sku: 'B-2' }, { qty: 1 }] },
  },
  {
    id: 'e03',
    name: null,
    status: null,
    n: 10.5,
    tags: null,
    properties: { foo: null, items: { sku: 'A-1', qty: 3 } },
  },
  { id: 'e04', name: 'Δelta\nline', status: 'failed', n: -1, tags: 'a', properties: {}, metadata: [1, 2] },
  {
    id: 'e05',
    name: 'beta',
    status: 'ready',
    n: 0,
    properties: { foo: { bar: 1 }, items: [], arr: [], '0': 'zero', 'we"ird': 'q', 'back\\slash': 'b', flag: true },
  },
  {
    id: 'e06',
    name: 'CAFÉ',
    status: 'Ready',
    n: 2.5,
    tags: [],
    properties: own({ constructor: 'c', foo: [null, 'x'], items: [1, 'A-1', { sku: null }] }, '__proto__', 'p'),
  },
  {
    id: 'e07',
    name: 'café',
    status: 'processing',
    n: 100,
    tags: [1, 2, 3],
    properties: { n: 7, arr: [2, 4], foo: true, nested: { a: [{ b: 'deep' }, { b: 'shallow' }] } },
  },
  {
    id: 'e08',
    name: '',
    status: 'ready',
    n: 1e6,
    tags: ['a', 'b', 'c'],
    properties: { foo: 'Bar', n: 5.0, date: '2023-12-31' },
  },
];

const STRINGS = [
  'a',
  'b',
  'c',
  'A',
  'B',
  'x y',
  'ready',
  'draft',
  'Bar',
  'bar',
  'baz',
  'A-1',
  'B-2',
  'C-3',
  '',
  ' ',
  'café',
  'CAFÉ',
  'Δ',
  '日本',
  '😀',
  'line\nbreak',
  'tab\tx',
  'nbsp\u00a0x',
  'a*b?',
  '[x]',
  '^-]',
  'back\\slash',
  'q"uote',
  "ap'os",
  '2024-03-05',
  '2024-03-05T10:00:00.000Z',
  '2023-12-31T23:59:59.999Z',
  '10',
  '9',
  '-1',
  'zzz',
  'Zebra',
  'kelvin\u212a',
  'ſ',
  'Alpha',
  'alpha',
];
const NUMBERS = [0, 1, -1, 2, 2.5, 3, 5, 7, 10, 100, -0.5, 1e6, 3.0000001, 0.1, 42];
const STATUSES = ['ready', 'draft', 'failed', 'processing', 'Ready', null];

/** ~200 varied documents from a fixed seed. */
function generate(count: number, seed: number): Row[] {
  let s = seed >>> 0;
  const rand = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];
  const chance = (p: number) => rand() < p;
  const int = (lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1));
  const arr = <T>(gen: () => T, max: number): T[] => Array.from({ length: int(0, max) }, gen);
  const scalar = (): J => {
    const r = rand();
    return r < 0.4 ? pick(STRINGS) : r < 0.75 ? pick(NUMBERS) : r < 0.9 ? chance(0.5) : null;
  };
  const item = (): J => {
    const o: Record<string, J> = {};
    if (chance(0.8)) o.sku = pick(['A-1', 'B-2', 'C-3', 'a-1', 'A-1']);
    if (chance(0.6)) o.qty = int(0, 9);
    if (chance(0.3)) o.tags = arr(() => pick(['a', 'b', 'c']), 3);
    return o;
  };
  const rows: Row[] = [];
  for (let i = 0; i < count; i++) {
    const p: Record<string, J> = {};
    if (chance(0.7)) p.foo = pick([scalar, () => arr(scalar, 3), () => ({ bar: scalar() })])();
    if (chance(0.6)) p.n = pick([() => pick(NUMBERS), () => String(pick(NUMBERS)), () => null])();
    if (chance(0.4)) p.date = pick(STRINGS.filter((x) => /^\d{4}-/.test(x)));
    if (chance(0.3)) p.flag = chance(0.5);
    if (chance(0.6))
      p.items = pick([() => arr(item, 3), item, () => arr(() => (chance(0.7) ? item() : scalar()), 3)])();
    if (chance(0.4)) p.nested = { a: pick([() => ({ b: scalar() }), () => arr(() => ({ b: scalar() }), 3), scalar])() };
    if (chance(0.5))
      p.arr = pick([
        () => arr(() => pick(NUMBERS), 4),
        () => arr(() => arr(() => pick(NUMBERS), 2), 3),
        () => arr(scalar, 3),
      ])();
    if (chance(0.15)) p['0'] = scalar();
    if (chance(0.15)) p['we"ird'] = scalar();
    if (chance(0.1)) own(p, '__proto__', scalar());
    if (chance(0.1)) own(p, 'constructor', scalar());
    const tagsKind = rand();
    const tags: J | undefined =
      tagsKind < 0.1
        ? undefined
        : tagsKind < 0.15
          ? null
          : tagsKind < 0.25
            ? []
            : tagsKind < 0.8
              ? arr(
                  () =>
                    chance(0.7)
                      ? pick(['a', 'b', 'c', 'A', 'x y', 'ready'])
                      : pick([scalar, () => arr(() => pick(['a', 'b']), 2)])(),
                  4,
                )
              : tagsKind < 0.9
                ? pick(['a', 'b'])
                : tagsKind < 0.95
                  ? pick(NUMBERS)
                  : { a: 1 };
    const metaKind = rand();
    const metadata: J | undefined =
      metaKind < 0.3
        ? undefined
        : metaKind < 0.7
          ? { k: scalar(), list: arr(scalar, 3) }
          : metaKind < 0.85
            ? arr(scalar, 3)
            : scalar();
    rows.push({
      id: `g${String(i).padStart(3, '0')}`,
      name: chance(0.85) ? pick(STRINGS) : null,
      status: pick(STATUSES),
      n: chance(0.85) ? pick(NUMBERS) : null,
      ...(tags === undefined ? {} : { tags }),
      properties: p,
      ...(metadata === undefined ? {} : { metadata }),
    });
  }
  return rows;
}

/** What the databases hold, read back the way JSON reads (own `__proto__` keys stay own keys). */
const DOCS: Row[] = JSON.parse(JSON.stringify([...EDGE, ...generate(192, 20240305)]));
const ALL_IDS = DOCS.map((d) => d.id).sort();

// ─── The independent evaluator ──────────────────────────────────────────────────────────────────

const TEXT_COLUMNS = ['id', 'name', 'status'];
const JSON_COLUMNS = ['tags', 'properties', 'metadata'];
const COLUMNS = [...TEXT_COLUMNS, 'n', ...JSON_COLUMNS];
const FIELD_LIST = ['id', 'name', 'status', 'n', 'tags[.<path>]', 'properties[.<path>]', 'metadata[.<path>]'];

const resolve: FieldResolver = (path) => {
  const [head, ...rest] = path;
  if (TEXT_COLUMNS.includes(head) && rest.length === 0) return { kind: 'column', column: `d.${head}`, type: 'text' };
  if (head === 'n' && rest.length === 0) return { kind: 'column', column: 'd.n', type: 'number' };
  if (JSON_COLUMNS.includes(head))
    return rest.length
      ? { kind: 'json', column: `d.${head}`, path: rest }
      : { kind: 'column', column: `d.${head}`, type: 'json' };
  return null;
};

const isObj = (v: unknown): v is Record<string, J> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isIndex = (k: string) => /^(0|[1-9][0-9]{0,8})$/.test(k);
const LOGICAL = ['$and', '$or', '$nor'];

/** The values a path reaches: object members; through arrays, members of object elements and indexed elements. */
function walk(roots: J[], path: readonly string[]): J[] {
  let cur = roots;
  for (const key of path) {
    const next: J[] = [];
    for (const v of cur) {
      if (isObj(v)) {
        if (Object.hasOwn(v, key)) next.push(v[key]);
      } else if (Array.isArray(v)) {
        for (const e of v) if (isObj(e) && Object.hasOwn(e, key)) next.push(e[key]);
        if (isIndex(key) && Number(key) < v.length) next.push(v[Number(key)]);
      }
    }
    cur = next;
  }
  return cur;
}

interface Subject {
  nodes: J[];
  items: J[];
}
const subject = (nodes: J[]): Subject => ({ nodes, items: nodes.flatMap((v) => (Array.isArray(v) ? [v, ...v] : [v])) });

function docNodes(doc: Row, field: string): J[] {
  const [head, ...rest] = field.split('.');
  if (TEXT_COLUMNS.includes(head) || head === 'n') {
    const v = (doc as unknown as Record<string, J>)[head];
    return v === null ? [] : [v];
  }
  const v = (doc as unknown as Record<string, J | undefined>)[head];
  return v === undefined ? [] : walk([v], rest);
}

const utf8Compare = (a: string, b: string) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
const deepEqual = (x: J, v: J): boolean =>
  Array.isArray(v) ? Array.isArray(x) && x.length === v.length && v.every((e, i) => deepEqual(x[i], e)) : x === v;
const asciiLower = (s: string) => s.replace(/[A-Z]/g, (c) => c.toLowerCase());
/** Lower-case the A-Z a pattern denotes (literals, range ends, \x41 and \u0041), leaving escapes like \D alone. */
const foldPattern = (src: string) =>
  src.replace(/\\x([0-9a-fA-F]{2})|\\u([0-9a-fA-F]{4})|\\.|[A-Z]/gs, (m, x, u) => {
    const code = x ? parseInt(x, 16) : u ? parseInt(u, 16) : null;
    if (code !== null) return code >= 0x41 && code <= 0x5a ? String.fromCharCode(code + 32) : m;
    return m.length === 1 ? m.toLowerCase() : m;
  });
function regexTest(src: string, options: string, value: string): boolean {
  const fold = options.includes('i');
  const pattern = fold ? foldPattern(src) : src;
  let re: RegExp;
  try {
    re = new RegExp(pattern, 'su');
  } catch {
    re = new RegExp(pattern, 's');
  }
  return re.test(fold ? asciiLower(value) : value);
}

function equals(s: Subject, v: J): boolean {
  if (v === null) return s.nodes.length === 0 || s.items.some((x) => x === null);
  return s.items.some((x) => deepEqual(x, v));
}

function compare(s: Subject, v: J, ok: (c: number) => boolean): boolean {
  return s.items.some((x) =>
    typeof v === 'number'
      ? typeof x === 'number' && ok(x - v)
      : typeof v === 'string' && typeof x === 'string' && ok(utf8Compare(x, v)),
  );
}

function matchOps(s: Subject, ops: Record<string, unknown>): boolean {
  return Object.entries(ops).every(([op, v]) => {
    switch (op) {
      case '$eq':
        return equals(s, v as J);
      case '$ne':
        return !equals(s, v as J);
      case '$gt':
        return compare(s, v as J, (c) => c > 0);
      case '$gte':
        return compare(s, v as J, (c) => c >= 0);
      case '$lt':
        return compare(s, v as J, (c) => c < 0);
      case '$lte':
        return compare(s, v as J, (c) => c <= 0);
      case '$in':
        return (v as J[]).some((x) => equals(s, x));
      case '$nin':
        return !(v as J[]).some((x) => equals(s, x));
      case '$all':
        return (v as J[]).length > 0 && (v as J[]).every((x) => equals(s, x));
      case '$exists':
        return s.nodes.length > 0 === v;
      case '$size':
        return s.nodes.some((x) => Array.isArray(x) && x.length === v);
      case '$regex':
        return s.items.some(
          (x) => typeof x === 'string' && regexTest(v as string, (ops.$options as string | undefined) ?? '', x),
        );
      case '$options':
        return true;
      case '$not':
        return !matchOps(s, v as Record<string, unknown>);
      case '$elemMatch': {
        const sub = v as Record<string, unknown>;
        const onValues = Object.keys(sub).some((k) => k.startsWith('$') && !LOGICAL.includes(k));
        return s.nodes.some(
          (node) =>
            Array.isArray(node) &&
            node.some((e) =>
              onValues
                ? matchOps({ nodes: [e], items: [e] }, sub)
                : isObj(e) && matchWith(sub, (field) => walk([e], field.split('.'))),
            ),
        );
      }
      default:
        throw new Error(`evaluator: unexpected operator ${op}`);
    }
  });
}

function matchWith(q: Record<string, unknown>, nodesOf: (field: string) => J[]): boolean {
  return Object.entries(q).every(([key, v]) => {
    if (key === '$and') return (v as Q[]).every((m) => matchWith(m, nodesOf));
    if (key === '$or') return (v as Q[]).some((m) => matchWith(m, nodesOf));
    if (key === '$nor') return !(v as Q[]).some((m) => matchWith(m, nodesOf));
    const s = subject(nodesOf(key));
    return isObj(v) && Object.keys(v).some((k) => k.startsWith('$')) ? matchOps(s, v) : equals(s, v as J);
  });
}

const expectedIds = (q: Q): string[] =>
  DOCS.filter((d) => matchWith(q, (field) => docNodes(d, field)))
    .map((d) => d.id)
    .sort();

/** Sort evaluator: the value at a fixed path, Mongo's type order, code-point strings, then id. */
function sortValue(d: Row, field: string): J | undefined {
  const [head, ...rest] = field.split('.');
  let v = (d as unknown as Record<string, J | undefined>)[head];
  for (const key of rest) {
    if (isObj(v) && Object.hasOwn(v, key)) v = v[key];
    else if (Array.isArray(v) && isIndex(key) && Number(key) < v.length) v = v[Number(key)];
    else return undefined;
  }
  return v;
}
const rank = (v: J | undefined) =>
  v === undefined || v === null
    ? 0
    : typeof v === 'number'
      ? 1
      : typeof v === 'string'
        ? 2
        : Array.isArray(v)
          ? 4
          : typeof v === 'object'
            ? 3
            : 5;
function compareSortValues(a: J | undefined, b: J | undefined): number {
  const r = rank(a) - rank(b);
  if (r !== 0) return r;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'string' && typeof b === 'string') return utf8Compare(a, b);
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
  return 0;
}
const expectedOrder = (sort: SortSpec[]): string[] =>
  [...DOCS]
    .sort((x, y) => {
      for (const { field, order } of sort) {
        const c = compareSortValues(sortValue(x, field), sortValue(y, field));
        if (c !== 0) return order === -1 || order === 'desc' || order === 'descending' ? -c : c;
      }
      return x.id < y.id ? -1 : 1;
    })
    .map((d) => d.id);

// ─── Databases ──────────────────────────────────────────────────────────────────────────────────

type Dialect = 'sqlite' | 'postgres';
const PG_URL = process.env.ORRERY_TEST_PG_URL;
const WANTED = (process.env.ORRERY_TEST_DIALECTS ?? 'sqlite,postgres').split(',').map((d) => d.trim());
// PostgreSQL whenever the run includes it: without ORRERY_TEST_PG_URL its tests fail, not skip.
const DIALECTS = (['sqlite', 'postgres'] as const).filter((d) => WANTED.includes(d));

interface Harness {
  json: JsonSql;
  db: Kysely<any>;
  table: string;
  close(): Promise<void>;
}

const jsonCol = (v: J | undefined) => (v === undefined ? null : JSON.stringify(v));
const toRow = (d: Row) => ({
  ...d,
  tags: jsonCol(d.tags),
  properties: jsonCol(d.properties),
  metadata: jsonCol(d.metadata),
});

async function openHarness(dialect: Dialect): Promise<Harness> {
  if (dialect === 'sqlite') {
    const db = new Kysely<any>({ dialect: new SqliteDialect({ database: new SQLite(':memory:') }) });
    await db.schema
      .createTable('docs')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('name', 'text')
      .addColumn('status', 'text')
      .addColumn('n', 'real')
      .addColumn('tags', 'text')
      .addColumn('properties', 'text')
      .addColumn('metadata', 'text')
      .execute();
    await db.insertInto('docs').values(DOCS.map(toRow)).execute();
    return { json: jsonSql('sqlite'), db, table: 'docs', close: () => db.destroy() };
  }
  if (!PG_URL) throw new Error('ORRERY_TEST_PG_URL is not set: run the tests with `npm test`, which starts PostgreSQL');
  const pool = new pg.Pool({ connectionString: PG_URL, max: 4 });
  pool.on('error', () => {});
  const db = new Kysely<any>({ dialect: new PostgresDialect({ pool }) });
  const schema = `find_test_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  await db.schema.createSchema(schema).execute();
  // Production databases rarely use the C locale: give the text columns a linguistic collation when
  // the server has ICU, so that code-point order must come from the compiled SQL, not the cluster.
  const icu = await sql<{
    n: number;
  }>`SELECT count(*)::int AS n FROM pg_collation WHERE collname = 'und-x-icu'`.execute(db);
  const text = (c: ColumnDefinitionBuilder) => (icu.rows[0].n ? c.modifyEnd(sql`COLLATE "und-x-icu"`) : c);
  await db.schema
    .createTable(`${schema}.docs`)
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', text)
    .addColumn('status', 'text', text)
    .addColumn('n', 'double precision')
    .addColumn('tags', 'jsonb')
    .addColumn('properties', 'jsonb')
    .addColumn('metadata', 'jsonb')
    .execute();
  await db.insertInto(`${schema}.docs`).values(DOCS.map(toRow)).execute();
  return {
    json: jsonSql('postgres'),
    db,
    table: `${schema}.docs`,
    close: async () => {
      try {
        await db.schema.dropSchema(schema).cascade().execute();
      } finally {
        await db.destroy();
      }
    },
  };
}

const where = (h: Harness, q: Q): Expression<SqlBool> => compileFind(q, resolve, h.json, FIELD_LIST);
const query = (h: Harness, q: Q) => h.db.selectFrom(`${h.table} as d`).select('d.id').where(where(h, q));
const ids = async (h: Harness, q: Q): Promise<string[]> =>
  (await query(h, q).execute()).map((r) => r.id as string).sort();

/** Every string a query carries (keys and values), for "never in the SQL text" checks. */
const stringsOf = (v: unknown): string[] =>
  typeof v === 'string'
    ? [v]
    : Array.isArray(v)
      ? v.flatMap(stringsOf)
      : isObj(v)
        ? Object.entries(v).flatMap(([k, x]) => [k, ...stringsOf(x)])
        : [];

// ─── Queries ────────────────────────────────────────────────────────────────────────────────────

/** The semantics, pinned by hand on the EDGE documents (ids outside EDGE are ignored here). */
const SEMANTICS: [Q, string[]][] = [
  [{}, EDGE.map((d) => d.id)],
  [{ tags: 'a' }, ['e01', 'e04', 'e08']],
  [{ tags: ['a', 'b'] }, ['e01']],
  [{ tags: ['a'] }, ['e02']],
  [{ 'properties.foo': null }, ['e03', 'e04', 'e06']],
  [{ 'properties.foo': { $ne: null } }, ['e01', 'e02', 'e05', 'e07', 'e08']],
  [{ 'properties.foo': { $exists: true } }, ['e01', 'e02', 'e03', 'e05', 'e06', 'e07', 'e08']],
  [{ 'properties.items.sku': 'A-1' }, ['e01', 'e03']],
  [{ 'properties.items.sku': null }, ['e04', 'e05', 'e06', 'e07', 'e08']],
  [{ 'properties.items.0.sku': 'B-2' }, ['e02']],
  [{ 'properties.items': 'A-1' }, ['e06']],
  [{ 'properties.n': 5 }, ['e01', 'e08']],
  [{ 'properties.n': { $gt: 4 } }, ['e01', 'e07', 'e08']],
  [{ 'properties.n': { $gte: '5' } }, ['e02']],
  [{ n: { $ne: 3 } }, ['e02', 'e03', 'e04', 'e05', 'e06', 'e07', 'e08']],
  [{ n: null }, ['e02']],
  [{ name: { $regex: '^alpha$', $options: 'i' } }, ['e01', 'e02']],
  [{ name: { $regex: 'café', $options: 'i' } }, ['e07']],
  [{ name: { $regex: '^.elta.line$' } }, ['e04']],
  [{ name: { $regex: '^$' } }, ['e08']],
  [{ 'properties.arr': { $elemMatch: { $gt: 3, $lt: 7 } } }, ['e01', 'e07']],
  [{ 'properties.arr': { $gt: 6, $lt: 2 } }, ['e01']],
  [{ 'properties.arr': { $elemMatch: { $gt: 6, $lt: 2 } } }, []],
  [{ 'properties.arr': [1, 2] }, ['e02']],
  [{ 'properties.arr.0': 1 }, ['e01', 'e02']],
  [{ 'properties.arr.1': { $exists: true } }, ['e01', 'e02', 'e07']],
  [{ 'properties.items': { $elemMatch: { sku: 'B-2', qty: { $gt: 5 } } } }, ['e01']],
  [{ 'properties.items': { $elemMatch: { sku: 'B-2' } } }, ['e01', 'e02']],
  [{ tags: { $size: 2 } }, ['e01', 'e02']],
  [{ tags: { $size: 0 } }, ['e06']],
  [{ tags: { $exists: false } }, ['e05']],
  [{ tags: null }, ['e03', 'e05']],
  [{ tags: { $all: ['a', 'b'] } }, ['e01', 'e08']],
  [{ tags: { $all: [] } }, []],
  [{ tags: { $in: [2, 'c'] } }, ['e07', 'e08']],
  [{ tags: { $nin: ['a', 'b'] } }, ['e03', 'e05', 'e06', 'e07']],
  [{ 'properties.0': 'zero' }, ['e05']],
  [{ 'properties.we"ird': 'q', 'properties.back\\slash': 'b' }, ['e05']],
  [{ 'properties.__proto__': 'p', 'properties.constructor': 'c' }, ['e06']],
  [{ 'properties.nested.a.b': 'shallow' }, ['e07']],
  [{ $nor: [{ status: 'ready' }, { n: { $gt: 50 } }] }, ['e02', 'e03', 'e04', 'e06']],
  [{ status: { $gt: 'Ready' } }, ['e01', 'e02', 'e04', 'e05', 'e07', 'e08']],
  [{ name: { $lt: 'a' } }, ['e01', 'e06', 'e08']],
  [{ 'properties.date': { $gte: '2024-01-01' } }, ['e01']],
  [{ 'properties.flag': true }, ['e05']],
  [{ 'properties.foo': true }, ['e07']],
  [{ 'properties.foo': { $regex: '^bar$', $options: 'i' } }, ['e01', 'e02', 'e08']],
  [{ metadata: { $size: 2 } }, ['e04']],
  [{ 'metadata.0': 1 }, ['e04']],
  [{ $or: [{ name: 'Alpha' }, { 'properties.foo.bar': 1 }], status: 'ready' }, ['e01', 'e05']],
];

/** More queries, compared with the evaluator on all documents. */
const QUERIES: Q[] = [
  ...SEMANTICS.map(([q]) => q),
  { name: 'a' },
  { name: { $in: ['a', 'b', 'café', 'CAFÉ'] } },
  { name: { $nin: ['a', 'b'] } },
  { name: { $exists: false } },
  { name: { $gte: 'b', $lt: 'x' } },
  { name: { $gt: '日' } },
  { name: { $regex: '\\d' } },
  { name: { $regex: '^[A-Z]' } },
  { name: { $regex: '^[a-z]', $options: 'i' } },
  { name: { $regex: '\\s' } },
  { name: { $regex: 'a\\*b\\?' } },
  { name: { $regex: '\\[x\\]' } },
  { name: { $regex: '^\\^-\\]$' } },
  { name: { $regex: '\\\\' } },
  { name: { $regex: '"' } },
  { name: { $regex: '^.$' } },
  { name: { $regex: '😀' } },
  { name: { $regex: 'line.break' } },
  { name: { $regex: '[^\\x00-\\x7f]' } },
  { name: { $regex: 'KELVIN', $options: 'i' } },
  { name: { $not: { $regex: 'a' } } },
  { status: { $in: ['ready', null] } },
  { status: { $ne: 'ready' } },
  { status: { $lte: 'draft' } },
  { n: 3 },
  { n: { $gt: 2 } },
  { n: { $gte: 0, $lte: 10 } },
  { n: { $in: [0, 1, 2.5, 1e6] } },
  { n: { $nin: [0, 1] } },
  { n: { $lt: 0 } },
  { n: '3' },
  { n: { $exists: true } },
  { n: { $gt: 'a' } },
  { n: 0.1 },
  { n: 3.0000001 },
  { tags: 'ready' },
  { tags: 'A' },
  { tags: 1 },
  { tags: true },
  { tags: [] },
  { tags: { $size: 1 } },
  { tags: { $size: 3 } },
  { tags: 'x y' },
  { tags: { $elemMatch: { $eq: 'a' } } },
  { tags: { $elemMatch: { $in: ['a', 'b'] } } },
  { tags: { $elemMatch: { $size: 2 } } },
  { tags: { $elemMatch: { $ne: 'a' } } },
  { tags: { $elemMatch: { $not: { $regex: '^a' } } } },
  { tags: { $in: [['a', 'b']] } },
  { tags: { $all: ['a', ['a', 'b']] } },
  { 'tags.0': 'a' },
  { 'tags.1': { $exists: true } },
  { 'tags.a': 1 },
  { tags: { $regex: 'x' } },
  { tags: { $gt: 'a' } },
  { tags: { $not: { $size: 0 } } },
  { tags: { $exists: true, $ne: null } },
  { 'properties.foo': 'bar' },
  { 'properties.foo': { $in: ['bar', 1, true, null] } },
  { 'properties.foo': '' },
  { 'properties.foo.bar': { $exists: true } },
  { 'properties.foo.bar': null },
  { 'properties.foo': { $size: 2 } },
  { 'properties.foo': { $gt: 2 } },
  { 'properties.n': { $lt: '3' } },
  { 'properties.n': { $in: ['5', 5] } },
  { 'properties.n': null },
  { 'properties.n': { $not: { $gte: 3 } } },
  { 'properties.date': { $lt: '2024-03-05T10:00:00.000Z' } },
  { 'properties.date': { $regex: '^2024-' } },
  { 'properties.items.sku': { $in: ['A-1', 'C-3'] } },
  { 'properties.items.sku': { $regex: '^a', $options: 'i' } },
  { 'properties.items.qty': { $gte: 5 } },
  { 'properties.items.tags': 'a' },
  { 'properties.items.tags': ['a', 'b'] },
  { 'properties.items.1.qty': { $exists: true } },
  { 'properties.items': { $size: 2 } },
  { 'properties.items': { $elemMatch: { qty: { $gt: 3 }, sku: { $regex: '-1$' } } } },
  { 'properties.items': { $elemMatch: { tags: 'b' } } },
  { 'properties.items': { $elemMatch: { $or: [{ qty: 0 }, { sku: 'C-3' }] } } },
  { 'properties.items': { $elemMatch: { sku: null } } },
  { 'properties.items': { $not: { $elemMatch: { qty: { $gt: 1 } } } } },
  { 'properties.nested.a.b': { $exists: true } },
  { 'properties.nested.a.b': { $gt: 1 } },
  { 'properties.nested.a': { $size: 2 } },
  { 'properties.nested.a.0.b': { $exists: true } },
  { 'properties.arr': 5 },
  { 'properties.arr': [] },
  { 'properties.arr': { $all: [1, 5] } },
  { 'properties.arr': { $elemMatch: { $size: 2 } } },
  { 'properties.arr': { $elemMatch: { $elemMatch: { $gt: 5 } } } },
  { 'properties.arr.0': { $gt: 1 } },
  { 'properties.arr.0.0': { $exists: true } },
  { 'properties.0': { $exists: true } },
  { 'properties.we"ird': { $exists: true } },
  { 'properties.__proto__': { $exists: true } },
  { properties: { $exists: true } },
  { properties: { $size: 0 } },
  { 'properties.missing': null },
  { 'properties.missing': { $exists: true } },
  { metadata: null },
  { metadata: { $exists: false } },
  { 'metadata.k': { $in: ['a', 1, true] } },
  { 'metadata.list': { $size: 3 } },
  { metadata: 'a' },
  { 'metadata.0': { $exists: true } },
  { 'metadata.list.0': { $gte: 0 } },
  { $and: [{ status: 'ready' }, { $or: [{ n: { $gt: 5 } }, { tags: 'a' }] }] },
  { $nor: [{ tags: { $exists: true } }] },
  { $or: [{ 'properties.foo': null }, { 'properties.foo': { $size: 0 } }] },
  { $and: [{ $nor: [{ name: 'a' }] }, { $nor: [{ name: null }] }] },
  // Found by the random property below: an element equal to each of several arrays.
  { 'properties.arr': { $elemMatch: { $all: [[], []] } } },
  { 'properties.arr': { $elemMatch: { $all: [[1], [1]] } } },
  { tags: { $all: [[], []] } },
  { 'properties.arr': { $elemMatch: { $eq: [] } } },
];

const SORTS: SortSpec[][] = [
  [{ field: 'name' }],
  [{ field: 'name', order: 'desc' }],
  [{ field: 'n' }],
  [{ field: 'n', order: -1 }],
  [{ field: 'properties.n' }],
  [{ field: 'properties.n', order: -1 }],
  [{ field: 'properties.foo' }, { field: 'status', order: -1 }],
  [{ field: 'tags.0' }],
  [{ field: 'metadata.k', order: 'descending' }],
  [{ field: 'properties.date', order: 'desc' }, { field: 'n' }],
  [{ field: 'tags' }],
  [{ field: 'properties.items.0.sku' }],
  [{ field: 'properties.0' }],
];

// ─── Property-based queries ─────────────────────────────────────────────────────────────────────

const FIELDS = [
  'id',
  'name',
  'status',
  'n',
  'tags',
  'tags.0',
  'tags.1',
  'properties',
  'properties.foo',
  'properties.foo.bar',
  'properties.n',
  'properties.date',
  'properties.flag',
  'properties.items',
  'properties.items.sku',
  'properties.items.qty',
  'properties.items.0',
  'properties.items.0.sku',
  'properties.items.tags',
  'properties.nested.a',
  'properties.nested.a.b',
  'properties.arr',
  'properties.arr.0',
  'properties.arr.1',
  'properties.0',
  'properties.we"ird',
  'properties.__proto__',
  'properties.constructor',
  'properties.missing',
  'metadata',
  'metadata.k',
  'metadata.list',
  'metadata.0',
];
const scalarArb = fc.oneof(
  { arbitrary: fc.constantFrom<J>(...STRINGS, ...NUMBERS, true, false, null, 'A-1', 'B-2', 'C-3'), weight: 6 },
  { arbitrary: fc.string({ maxLength: 3 }), weight: 1 },
  { arbitrary: fc.integer({ min: -5, max: 20 }), weight: 1 },
  { arbitrary: fc.double({ min: -100, max: 100, noNaN: true }), weight: 1 },
);
const valueArb: fc.Arbitrary<J> = fc.oneof(
  { arbitrary: scalarArb, weight: 5 },
  { arbitrary: fc.array(scalarArb, { maxLength: 3 }), weight: 1 },
);
const orderedArb = fc.oneof(fc.constantFrom<J>(...STRINGS, ...NUMBERS), fc.integer({ min: -5, max: 20 }));

/** A regex from the supported subset, valid for JavaScript with the `u` flag too. */
const regexArb = fc
  .tuple(
    fc.boolean(),
    fc.array(
      fc.oneof(
        fc.constantFrom(
          'a',
          'b',
          'A',
          'B',
          'x',
          'y',
          'é',
          'É',
          'Δ',
          '日',
          '😀',
          ' ',
          '-',
          '_',
          '1',
          '0',
          '"',
          "'",
          '/',
          'e',
          'r',
          'l',
        ),
        fc.constantFrom(
          '\\.',
          '\\*',
          '\\?',
          '\\[',
          '\\]',
          '\\(',
          '\\)',
          '\\{',
          '\\}',
          '\\|',
          '\\^',
          '\\$',
          '\\\\',
          '\\/',
          '\\+',
        ),
        fc.constantFrom('.', '.*', '.+', '.*?'),
        fc.constantFrom('\\d', '\\D', '\\w', '\\W', '\\s', '\\S', '\\n', '\\t', '\\x41', '\\u00e9', '\\u00c9', '\\x2d'),
        fc
          .tuple(
            fc.boolean(),
            fc.array(
              fc.constantFrom(
                'a',
                'b',
                'A',
                'z',
                'a-c',
                'A-C',
                '0-9',
                '\\d',
                '\\s',
                '\\-',
                '\\]',
                'é',
                '*',
                '?',
                '[',
                '\\\\',
                'Δ-Ω',
              ),
              { minLength: 1, maxLength: 3 },
            ),
          )
          .map(([neg, members]) => `[${neg ? '^' : ''}${members.join('')}]`),
      ),
      { maxLength: 5 },
    ),
    fc.boolean(),
    fc.constantFrom('', 'i', 's', 'is'),
  )
  .map(([start, parts, end, options]) => ({
    $regex: `${start ? '^' : ''}${parts.join('')}${end ? '$' : ''}`,
    ...(options ? { $options: options } : {}),
  }));

/** The scalars each field holds in DOCS, so that generated conditions often hit. */
const isScalar = (v: J): boolean => v === null || typeof v !== 'object';
const poolOf = (field: string): J[] => [
  ...new Set(DOCS.flatMap((d) => subject(docNodes(d, field)).items).filter(isScalar)),
];
const SUB_FIELDS = ['sku', 'qty', 'tags', 'b', '0'];

const condCache = new Map<string, fc.Arbitrary<unknown>>();
/** Conditions on one field: its own values most of the time, every operator. */
function condArbFor(field: string): fc.Arbitrary<unknown> {
  const cached = condCache.get(field);
  if (cached) return cached;
  const pool = poolOf(field);
  const own = pool.length ? fc.constantFrom(...pool) : scalarArb;
  const value: fc.Arbitrary<J> = fc.oneof(
    { arbitrary: own, weight: 6 },
    { arbitrary: scalarArb, weight: 1 },
    { arbitrary: fc.array(own, { maxLength: 3 }), weight: 1 },
  );
  const ordered = pool.filter((v) => typeof v === 'number' || typeof v === 'string');
  const orderedValue = ordered.length ? fc.oneof(fc.constantFrom(...ordered), orderedArb) : orderedArb;
  const { op } = fc.letrec<{ op: Record<string, unknown> }>((tie) => ({
    op: fc.oneof(
      { maxDepth: 2, depthIdentifier: `op-${field}` },
      { arbitrary: value.map((v) => ({ $eq: v })), weight: 2 },
      { arbitrary: value.map((v) => ({ $ne: v })), weight: 1 },
      {
        arbitrary: fc.tuple(fc.constantFrom('$gt', '$gte', '$lt', '$lte'), orderedValue).map(([o, v]) => ({ [o]: v })),
        weight: 3,
      },
      { arbitrary: fc.array(value, { maxLength: 4 }).map((v) => ({ $in: v })), weight: 2 },
      { arbitrary: fc.array(value, { maxLength: 3 }).map((v) => ({ $nin: v })), weight: 1 },
      { arbitrary: fc.boolean().map((v) => ({ $exists: v })), weight: 1 },
      { arbitrary: regexArb, weight: 1 },
      { arbitrary: fc.array(value, { maxLength: 2 }).map((v) => ({ $all: v })), weight: 1 },
      { arbitrary: fc.integer({ min: 0, max: 3 }).map((v) => ({ $size: v })), weight: 1 },
      { arbitrary: tie('op').map((v) => ({ $not: v })), weight: 1 },
      { arbitrary: tie('op').map((v) => ({ $elemMatch: v })), weight: 1 },
      {
        arbitrary: fc
          .dictionary(
            fc.constantFrom(...SUB_FIELDS),
            fc.oneof(scalarArb, fc.constantFrom<J>('A-1', 'B-2', 'C-3', 'a', 'b', 1, 2, 3, 7)),
            { minKeys: 1, maxKeys: 2 },
          )
          .map((v) => ({ $elemMatch: v })),
        weight: 1,
      },
    ),
  }));
  const cond = fc.oneof(
    { arbitrary: value as fc.Arbitrary<unknown>, weight: 3 },
    { arbitrary: op, weight: 4 },
    { arbitrary: fc.tuple(op, op).map(([a, b]) => ({ ...a, ...b })), weight: 1 },
  );
  condCache.set(field, cond);
  return cond;
}

const fieldCondArb = fc.constantFrom(...FIELDS).chain((field) => condArbFor(field).map((c) => [field, c] as const));
const { match: matchArb } = fc.letrec<{ match: Q }>((tie) => ({
  match: fc.oneof(
    { maxDepth: 3, depthIdentifier: 'match' },
    {
      arbitrary: fc.array(fieldCondArb, { minLength: 1, maxLength: 2 }).map((xs) => Object.fromEntries(xs)),
      weight: 3,
    },
    {
      arbitrary: fc
        .tuple(fc.constantFrom('$and', '$or', '$nor'), fc.array(tie('match'), { minLength: 1, maxLength: 3 }))
        .map(([o, xs]) => ({ [o]: xs })),
      weight: 1,
    },
  ),
}));

/** Anything at all: compile must refuse it with a FindQueryError or run it correctly. */
const junkKeyArb = fc.oneof(
  fc.constantFrom(
    ...FIELDS,
    '$and',
    '$or',
    '$nor',
    '$where',
    '$eq',
    '$ne',
    '$gt',
    '$in',
    '$nin',
    '$regex',
    '$options',
    '$not',
    '$all',
    '$size',
    '$elemMatch',
    '$exists',
    '__proto__',
    'constructor',
    'toString',
    'properties.__proto__',
    'a..b',
    '',
  ),
  fc.string({ maxLength: 6 }),
);
const { junk: junkArb } = fc.letrec<{ junk: unknown }>((tie) => ({
  junk: fc.oneof(
    { maxDepth: 4 },
    fc.jsonValue({ maxDepth: 2 }),
    fc.dictionary(junkKeyArb, tie('junk'), { maxKeys: 3 }),
    fc.array(tie('junk'), { maxLength: 3 }),
  ),
}));
const junkQueryArb = fc.dictionary(junkKeyArb, junkArb, { maxKeys: 3 });

// ─── Tests ──────────────────────────────────────────────────────────────────────────────────────

describe('find: the evaluator', () => {
  it('gives the hand-pinned results on the EDGE documents', () => {
    for (const [q, want] of SEMANTICS)
      assert.deepEqual(
        expectedIds(q).filter((id) => id.startsWith('e')),
        want,
        JSON.stringify(q),
      );
  });

  it('the query table is not trivial', () => {
    const sizes = QUERIES.map((q) => expectedIds(q).length);
    const informative = sizes.filter((n) => n > 0 && n < DOCS.length).length;
    assert.ok(
      informative / QUERIES.length > 0.85,
      `only ${informative} of ${QUERIES.length} queries split the documents`,
    );
  });
});

for (const dialect of DIALECTS) {
  describe(`find on ${dialect}`, () => {
    let h: Harness;
    before(async () => {
      h = await openHarness(dialect);
    });
    after(async () => {
      await h?.close();
    });

    it('pins the semantics on hand-built documents', async () => {
      for (const [q, want] of SEMANTICS)
        assert.deepEqual(
          (await ids(h, q)).filter((id) => id.startsWith('e')),
          want,
          JSON.stringify(q),
        );
    });

    for (const q of QUERIES) {
      it(`= evaluator: ${JSON.stringify(q)}`, async () => {
        assert.deepEqual(await ids(h, q), expectedIds(q));
      });
    }

    it('sorts like the evaluator (Mongo type order, code-point strings, NULLs first ascending)', async () => {
      for (const sort of SORTS) {
        let q = h.db.selectFrom(`${h.table} as d`).select('d.id');
        for (const key of compileSort(sort, resolve, h.json, FIELD_LIST)) q = q.orderBy(key);
        const got = (await q.orderBy('d.id').execute()).map((r) => r.id);
        assert.deepEqual(got, expectedOrder(sort), JSON.stringify(sort));
      }
    });

    it('random queries from every operator match the evaluator (fast-check)', async (t) => {
      let informative = 0;
      let refused = 0;
      let runs = 0;
      await fc.assert(
        fc.asyncProperty(matchArb, async (q) => {
          runs++;
          let got: string[];
          try {
            got = await ids(h, q);
          } catch (err) {
            if (!(err instanceof FindQueryError)) throw err;
            refused++;
            return;
          }
          const want = expectedIds(q);
          if (want.length > 0 && want.length < DOCS.length) informative++;
          assert.deepEqual(got, want, JSON.stringify(q));
        }),
        { numRuns: dialect === 'sqlite' ? 400 : 200 },
      );
      t.diagnostic(`${runs} queries: ${informative} split the documents, ${refused} refused`);
      assert.ok(refused < runs * 0.1, `${refused} of ${runs} generated queries were refused`);
      assert.ok(informative > runs * 0.3, `only ${informative} of ${runs} generated queries split the documents`);
    });

    it('random $regex from the supported subset matches JavaScript (ASCII folding for i)', async () => {
      await fc.assert(
        fc.asyncProperty(
          regexArb,
          fc.constantFrom('name', 'properties.foo', 'tags', 'properties.items.sku'),
          async (re, field) => {
            const q = { [field]: re };
            assert.deepEqual(await ids(h, q), expectedIds(q), JSON.stringify(q));
          },
        ),
        { numRuns: dialect === 'sqlite' ? 300 : 150 },
      );
    });

    it('arbitrary input is refused with a FindQueryError or runs as the evaluator says', async () => {
      await fc.assert(
        fc.asyncProperty(junkQueryArb, async (q) => {
          let got: string[];
          try {
            got = await ids(h, q);
          } catch (err) {
            if (err instanceof FindQueryError) return;
            throw err;
          }
          assert.deepEqual(got, expectedIds(q), JSON.stringify(q));
        }),
        { numRuns: dialect === 'sqlite' ? 400 : 200 },
      );
    });

    it('hostile names and values are bound, never spliced into the SQL', async () => {
      const hostile: Q[] = [
        { name: "'; DROP TABLE docs; --" },
        { name: { $in: ["x'); DELETE FROM docs; --", 'Robert"); --'] } },
        { 'properties.x"; DROP TABLE docs; --': 'v' },
        { "properties.a']; DROP TABLE docs; --": { $exists: true } },
        { 'properties.$."0"[1]': 1 },
        { 'properties.{a,b}': { $gt: 'zz\\"zz' } },
        { name: { $regex: "^'; DROP TABLE docs; --" } },
        { 'properties.items': { $elemMatch: { "sku' OR 1=1 --": 'evil-value-123' } } },
        { tags: ['evil-array-elem-456', 'another-evil-789'] },
        { 'properties.back\\\\slash\\': { $nin: ['evil\\\\value'] } },
        JSON.parse(
          '{"properties.__proto__": "polluted-value-42", "$or": [{"properties.constructor": {"$ne": "prototype-xyz"}}]}',
        ),
      ];
      for (const q of hostile) {
        const compiled = query(h, q).compile();
        for (const s of stringsOf(q)) {
          for (const part of s.split('.')) {
            if (part.length >= 4 && !COLUMNS.includes(part))
              assert.ok(!compiled.sql.includes(part), `SQL text contains ${JSON.stringify(part)}: ${compiled.sql}`);
          }
        }
        assert.deepEqual(await ids(h, q), expectedIds(q), JSON.stringify(q));
      }
      assert.equal(
        (await h.db.selectFrom(`${h.table} as d`).select('d.id').execute()).length,
        DOCS.length,
        'the table is intact',
      );
      assert.equal(({} as Record<string, unknown>).polluted, undefined);
      assert.equal(Object.getPrototypeOf({}), Object.prototype);
    });

    it('refuses hostile operators and fields with a 400-style error, before any SQL', async () => {
      const bad: Q[] = [
        { $where: 'sleep(10000)' },
        { name: { $where: 'this.a == 1' } },
        { $expr: { $gt: ['$n', 1] } },
        JSON.parse('{"__proto__": {"$gt": 1}}'),
        { constructor: 1 },
        { "name' OR '1'='1": 1 },
        { name: { $regex: '(a+)+$' } },
        { name: { $foo: 1 } },
      ];
      for (const q of bad) assert.throws(() => where(h, q), FindQueryError, JSON.stringify(q));
    });

    it('$in and $nin with 10,000 values use one bound JSON array, not 10,000 parameters', async () => {
      const strings = Array.from({ length: 10_000 }, (_, i) => `value-${i}`).concat(['a', 'b', 'café']);
      const numbers = Array.from({ length: 10_000 }, (_, i) => i * 1.5 - 7);
      for (const q of [
        { name: { $in: strings } },
        { tags: { $in: strings } },
        { n: { $in: numbers } },
        { 'properties.n': { $in: [...numbers, ...strings.slice(0, 5000)] } },
        { status: { $nin: strings.concat(['ready']) } },
        { 'properties.items.sku': { $in: strings.concat(['A-1']), $nin: numbers } },
      ]) {
        // As many parameters as the same query with four values: the values are one parameter.
        const few = JSON.parse(JSON.stringify(q), (_k, v) =>
          Array.isArray(v) && v.length > 4 ? [...v.slice(0, 2), ...v.slice(-2)] : v,
        );
        const compiled = query(h, q).compile();
        assert.equal(compiled.parameters.length, query(h, few).compile().parameters.length);
        const got = await ids(h, q);
        assert.deepEqual(got, expectedIds(q));
        assert.ok(got.length > 0 && got.length < DOCS.length, JSON.stringify(q).slice(0, 60));
      }
    });

    // Hostile regexes must not backtrack catastrophically: the test's timeout catches a hang
    // (a wall-clock bound per query would only measure how loaded the machine is).
    it(
      'runs queries at the limits: 500 clauses, 16-segment paths, 16 levels, long regexes',
      { timeout: 120_000 },
      async () => {
        // 499 clauses on a column; on a JSON path only up to the cost bound, past it a refusal.
        const wide = { $or: Array.from({ length: 499 }, (_, i) => ({ name: i % 2 ? `no-${i}` : 'C-3' })) };
        assert.deepEqual(await ids(h, wide), expectedIds(wide));
        const skus = (n: number) => ({
          $or: Array.from({ length: n }, (_, i) => ({ 'properties.items.sku': i % 2 ? `no-${i}` : 'C-3' })),
        });
        assert.deepEqual(await ids(h, skus(FIND_LIMITS.jsonConditions)), expectedIds(skus(FIND_LIMITS.jsonConditions)));
        await assert.rejects(ids(h, skus(499)), (e: FindQueryError) => e.code === 'query_too_costly');
        const longPath = { [`properties${'.items'.repeat(15)}`]: null };
        assert.deepEqual(await ids(h, longPath), expectedIds(longPath));
        let deep: Q = { name: { $not: { $elemMatch: { $eq: 1 } } } };
        for (let i = 0; i < 12; i++) deep = i % 2 ? { $and: [deep, { n: { $ne: i } }] } : { $nor: [deep] };
        assert.deepEqual(await ids(h, deep), expectedIds(deep));
        const regexes = [
          '.*a'.repeat(300) + 'b',
          '[\\s\\S\\d\\w]'.repeat(70),
          '^' + '.+'.repeat(400) + '$',
          '\\D\\W\\S'.repeat(150),
        ];
        for (const re of regexes) {
          const q = { name: { $regex: re, $options: 'i' } };
          assert.deepEqual(await ids(h, q), expectedIds(q));
        }
      },
    );

    it('$size beyond any array length matches nothing rather than failing', async () => {
      assert.deepEqual(await ids(h, { tags: { $size: Number.MAX_SAFE_INTEGER } }), []);
      assert.deepEqual(await ids(h, { n: { $gt: Number.MAX_VALUE } }), []);
      assert.deepEqual(await ids(h, { n: { $gt: -Number.MAX_VALUE } }), expectedIds({ n: { $exists: true } }));
    });
  });
}
