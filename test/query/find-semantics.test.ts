/**
 * Find queries on real databases, by table: the semantics pinned by hand on the EDGE documents,
 * every query of the table and every sort compared with the independent evaluator
 * (find-evaluator.ts). SQLite, and PostgreSQL when the run includes it.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { compileSort, type SortSpec } from '../../src/query/find/index.ts';
import { type Q, EDGE, DOCS } from './find-documents.ts';
import { FIELD_LIST, resolve, expectedIds, expectedOrder } from './find-evaluator.ts';
import { DIALECTS, type Harness, openHarness, ids } from './find-harness.ts';

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
  describe(`find on ${dialect}: the tables`, () => {
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
  });
}
