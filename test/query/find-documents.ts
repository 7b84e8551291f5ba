/**
 * The documents the find tests query: hand-built EDGE documents whose results are pinned by hand,
 * and generated ones (a fixed seed) that every query is compared on.
 */

export type J = null | boolean | number | string | J[] | { [k: string]: J };
export type Q = Record<string, unknown>;
/** `undefined` JSON columns are SQL NULL; `null` ones hold a JSON null. */
export interface Row {
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
export const EDGE: Row[] = [
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

export const STRINGS = [
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
export const NUMBERS = [0, 1, -1, 2, 2.5, 3, 5, 7, 10, 100, -0.5, 1e6, 3.0000001, 0.1, 42];
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
export const DOCS: Row[] = JSON.parse(JSON.stringify([...EDGE, ...generate(192, 20240305)]));
