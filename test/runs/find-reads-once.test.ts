/**
 * PostgreSQL: a find with many conditions on a run's JSON document reads (detoasts) the stored
 * document once per row, not once per condition (json-sql.ts `readOnce`). Measured with the
 * blocks PostgreSQL counts for the find's own SQL (support/toast-blocks.ts), so the test holds
 * the cost, not a time: a find of 32 conditions on `parameters.*` must read about what a find of one
 * reads, where before it read 32 times as much.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type pg from 'pg';
import { FIND_LIMITS } from '../../src/query/find/ast.ts';
import { POSTGRES_ONLY, seedEcho, startTestServer, testPgPool, type TestServer } from '../support/server.ts';
import { blocksOf as blocksOfRequest, readsRuns } from '../support/toast-blocks.ts';

const orOf = (n: number) => ({ $or: Array.from({ length: n }, (_, i) => ({ [`parameters.k${i}`]: `x${i}` })) });

describe('postgres: a find reads each stored document once per row', POSTGRES_ONLY, () => {
  let srv: TestServer;
  let pool: pg.Pool;
  let bigRun: string;
  let bigObject: string;

  /** Blocks one find's own SQL reads (toast-blocks.ts); the find must answer, and find nothing. */
  const blocksOf = (query: unknown) =>
    blocksOfRequest(
      pool,
      async () => {
        const r = await srv.api('POST', '/api/v1/runs/find', { query, select: 'id' });
        assert.equal(r.status, 200, JSON.stringify(r.body).slice(0, 300));
        assert.deepEqual(r.body, []);
      },
      readsRuns,
      'the find',
    );

  before(async () => {
    srv = await startTestServer('postgres');
    pool = testPgPool(srv.databaseUrl!, 1);
    const ix = await seedEcho(srv, { name: 'Large' });
    // Incompressible, so PostgreSQL keeps it out of line (TOAST), as a large document is.
    const r = await srv.api('POST', '/api/v1/runs', {
      interaction: ix.interaction.id,
      data: { text: 'large', blob: randomBytes(300_000).toString('base64') },
    });
    assert.equal(r.status, 200, JSON.stringify(r.body).slice(0, 300));
    bigRun = r.body.id;
    const o = await srv.api('POST', '/api/v1/objects', {
      name: 'large',
      properties: { text: 'large', blob: randomBytes(300_000).toString('base64') },
    });
    assert.equal(o.status, 200, JSON.stringify(o.body).slice(0, 300));
    bigObject = o.body.id;
  });
  after(async () => {
    await pool?.end();
    await srv?.close();
  });

  it(`${FIND_LIMITS.jsonConditions} conditions on parameters.* read about what one does`, async (t) => {
    assert.ok(bigRun);
    const one = await blocksOf(orOf(1));
    const many = await blocksOf(orOf(FIND_LIMITS.jsonConditions));
    const [a, b] = [one, many].map((n) => `${n}`);
    t.diagnostic(`blocks read: ${a} for one condition, ${b} for ${FIND_LIMITS.jsonConditions}`);
    // The document is 400 kB (about 50 blocks): a count below that did not see it read at all.
    assert.ok(one >= 45, `one condition read ${a} blocks: the large document was not read`);
    assert.ok(many < one * 2, `one condition read ${a} blocks, ${FIND_LIMITS.jsonConditions} read ${b}`);
  });

  // objects/find and objects/count on an object's `properties` (the same compiler, query/find).
  it(`${FIND_LIMITS.jsonConditions} conditions on properties.* read about what one does (objects find and count)`, async (t) => {
    const props = (n: number) => ({
      $or: Array.from({ length: n }, (_, i) => ({ [`properties.k${i}`]: `x${i}` })),
    });
    for (const path of ['/api/v1/objects/find', '/api/v1/objects/count']) {
      const blocks = (query: unknown) =>
        blocksOfRequest(
          pool,
          async () => {
            const r = await srv.api('POST', path, { query });
            assert.equal(r.status, 200, JSON.stringify(r.body).slice(0, 300));
          },
          (text) => /^\s*select/i.test(text) && /\bfrom "?objects"?\b/i.test(text),
          path,
        );
      const one = await blocks(props(1));
      const many = await blocks(props(FIND_LIMITS.jsonConditions));
      t.diagnostic(`${path}: blocks read: ${one} for one condition, ${many} for ${FIND_LIMITS.jsonConditions}`);
      assert.ok(one >= 45, `${path}: one condition read ${one} blocks: the large properties were not read`);
      assert.ok(
        many < one * 2,
        `${path}: one condition read ${one} blocks, ${FIND_LIMITS.jsonConditions} read ${many}`,
      );
    }
    const hit = await srv.api('POST', '/api/v1/objects/find', {
      query: { name: 'large', $or: [{ 'properties.text': 'large' }, { 'properties.k1': 'x' }] },
    });
    assert.equal(hit.status, 200, JSON.stringify(hit.body).slice(0, 300));
    assert.deepEqual(
      hit.body.map((o: { id: string }) => o.id),
      [bigObject],
    );
  });

  it('a find mixing run columns and document paths answers as the document and columns say', async () => {
    const hit = await srv.api('POST', '/api/v1/runs/find', {
      query: { id: bigRun, $or: [{ 'parameters.text': 'large' }, { 'parameters.k1': 'x' }] },
      select: 'id',
    });
    assert.equal(hit.status, 200, JSON.stringify(hit.body));
    assert.deepEqual(
      hit.body.map((r: { id: string }) => r.id),
      [bigRun],
    );
    const miss = await srv.api('POST', '/api/v1/runs/find', {
      query: { id: bigRun, 'parameters.text': 'small' },
      select: 'id',
    });
    assert.deepEqual(miss.body, []);
  });
});
