/** http/vector-json.ts writes number arrays exactly as JSON.stringify does, and splices them into a route's answer. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Fastify from 'fastify';
import fc from 'fast-check';
import { numbersJson, sendWithVectors } from '../../src/http/vector-json.ts';

const wire = (x: number) => Math.round(x * 1e7) / 1e7;

describe('vector JSON', () => {
  it('is JSON.stringify for wire vectors and for any other number', () => {
    const edge = [
      0,
      -0,
      1,
      -1,
      1e-7,
      -1e-7,
      9e-7,
      1e-6,
      0.000001,
      0.0000015,
      -0.0000099,
      0.5,
      0.9999999,
      -0.9999999,
      0.123456789,
      3.5,
      1e21,
      NaN,
      Infinity,
      2 ** 53,
    ];
    assert.equal(numbersJson(edge), JSON.stringify(edge));
    assert.equal(numbersJson([]), '[]');
    const sparse = [0, 0, -0, 3e-7, -9e-7, 0, 0.0421875, 0, -1e-7, 0];
    assert.equal(numbersJson(sparse), JSON.stringify(sparse));
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: -1, max: 1, noNaN: true }).map(wire), { maxLength: 2000 }),
        (xs) => numbersJson(xs) === JSON.stringify(xs),
      ),
    );
    fc.assert(fc.property(fc.array(fc.double(), { maxLength: 50 }), (xs) => numbersJson(xs) === JSON.stringify(xs)));
    // Numbers wider than a wire count's 11 characters, many of them: the buffer makes room as it goes.
    const wide = Array.from(
      { length: 3000 },
      (_, i) => (i % 2 ? -1.2345678901234568e-300 : 123456.78901234567) * (1 + i / 1e6),
    );
    assert.equal(numbersJson(wide), JSON.stringify(wide));
    fc.assert(
      fc.property(
        fc.array(fc.double(), { minLength: 1000, maxLength: 3000 }),
        (xs) => numbersJson(xs) === JSON.stringify(xs),
      ),
      { numRuns: 20 },
    );
  });

  it("answers the schema's fields with the vectors after them; without vectors, as usual", async () => {
    const app = Fastify();
    const schema = {
      type: 'object',
      additionalProperties: false,
      properties: { id: { type: 'string' }, v: { type: 'array', items: { type: 'number' } } },
    };
    app.get('/x', { schema: { response: { 200: schema } } }, async (req, reply) =>
      sendWithVectors(
        reply,
        { id: 'a', secret: 's', ...((req.query as { v?: string }).v ? { v: [0.25, -1e-7, 0.1234567] } : {}) },
        ['v'],
      ),
    );
    const withV = await app.inject('/x?v=1');
    assert.equal(withV.headers['content-type'], 'application/json; charset=utf-8');
    assert.equal(withV.body, '{"id":"a","v":[0.25,-1e-7,0.1234567]}');
    const without = await app.inject('/x');
    assert.equal(without.body, '{"id":"a"}');
    await app.close();
  });

  it('answers several vectors, text that is not ASCII, a number that is not a wire count, and an answer with no other field', async () => {
    const app = Fastify();
    const numbers = { type: 'array', items: { type: 'number' } };
    const schema = {
      type: 'object',
      additionalProperties: false,
      properties: { name: { type: 'string' }, a: numbers, b: numbers },
    };
    const body = { name: 'Ærø ✓ 🪐 "q"', a: [0.5, 12345.678901234, -3e-7], b: [1, -1, 0] };
    app.get('/x', { schema: { response: { 200: schema } } }, async (req, reply) =>
      sendWithVectors(reply, (req.query as { bare?: string }).bare ? { a: body.a, b: body.b } : body, ['a', 'b']),
    );
    const full = await app.inject('/x');
    assert.equal(full.body, JSON.stringify(body));
    assert.equal(Number(full.headers['content-length']), Buffer.byteLength(JSON.stringify(body)));
    assert.deepEqual(JSON.parse(full.body), body);
    const bare = await app.inject('/x?bare=1');
    assert.equal(bare.body, JSON.stringify({ a: body.a, b: body.b }));
    await app.close();
  });
});
