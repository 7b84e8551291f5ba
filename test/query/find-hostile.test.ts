/**
 * Find queries on real databases, hostile and at the limits: names and values bound and never
 * spliced into the SQL, refused operators, huge $in lists, the size and depth bounds.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FIND_LIMITS, FindQueryError } from '../../src/query/find/index.ts';
import { type Q, DOCS } from './find-documents.ts';
import { COLUMNS, expectedIds } from './find-evaluator.ts';
import { DIALECTS, type Harness, openHarness, where, query, ids, stringsOf } from './find-harness.ts';

for (const dialect of DIALECTS) {
  describe(`find on ${dialect}: hostile queries and the limits`, () => {
    let h: Harness;
    before(async () => {
      h = await openHarness(dialect);
    });
    after(async () => {
      await h?.close();
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
