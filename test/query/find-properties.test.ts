/**
 * Find queries on real databases, generated (fast-check): queries from every operator, regexes
 * from the supported subset, and arbitrary input, each refused with a FindQueryError or answered
 * as the independent evaluator (find-evaluator.ts) says.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { FindQueryError } from '../../src/query/find/index.ts';
import { type J, type Q, DOCS, NUMBERS, STRINGS } from './find-documents.ts';
import { subject, docNodes, expectedIds } from './find-evaluator.ts';
import { DIALECTS, type Harness, openHarness, ids } from './find-harness.ts';

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

for (const dialect of DIALECTS) {
  describe(`find on ${dialect}: generated queries`, () => {
    let h: Harness;
    before(async () => {
      h = await openHarness(dialect);
    });
    after(async () => {
      await h?.close();
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
  });
}
