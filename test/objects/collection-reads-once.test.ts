/**
 * PostgreSQL: a dynamic collection's query is a find over the objects' `properties`, and its
 * members' listing, search and facets, and `GET /objects/:id/collections`, read a large object's
 * properties once per row however many conditions the query holds. Measured with the blocks
 * PostgreSQL counts for the request's own SQL (support/toast-blocks.ts), as find-reads-once does
 * for runs and objects: the cost, not a time.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type pg from 'pg';
import { FIND_LIMITS } from '../../src/query/find/ast.ts';
import { POSTGRES_ONLY, startTestServer, testPgPool, type TestServer } from '../support/server.ts';
import { blocksOf } from '../support/toast-blocks.ts';

const MANY = FIND_LIMITS.jsonConditions;
/** Conditions on properties.* that the large object matches none of. */
const orOf = (n: number) => ({ $or: Array.from({ length: n }, (_, i) => ({ [`properties.k${i}`]: `x${i}` })) });
const readsObjects = (text: string) => /^\s*select/i.test(text) && /\bfrom "?objects"?\b/i.test(text);

describe('postgres: a dynamic collection reads each object once per row', POSTGRES_ONLY, () => {
  let srv: TestServer;
  let pool: pg.Pool;
  let bigObject: string;

  const ok = (r: { status: number; body: unknown }, what: string) =>
    assert.equal(r.status, 200, `${what}: ${JSON.stringify(r.body).slice(0, 300)}`);
  const dynamic = async (name: string, query: unknown): Promise<string> => {
    const r = await srv.api('POST', '/api/v1/collections', { name, dynamic: true, query });
    ok(r, `creating ${name}`);
    return r.body.id;
  };

  /** The member forms of one collection, each with the blocks its own SQL read. */
  const memberForms = (id: string) => ({
    list: async () => {
      const r = await srv.api('GET', `/api/v1/collections/${id}/members?limit=1000`);
      ok(r, 'members');
      assert.deepEqual(r.body, [], 'the large object is no member');
    },
    search: async () => {
      const r = await srv.api('POST', `/api/v1/collections/${id}/search`, { query: {}, limit: 100 });
      ok(r, 'members search');
    },
    facets: async () => {
      const r = await srv.api('POST', `/api/v1/collections/${id}/facets`, {
        facets: [{ name: 'status', field: 'status' }],
      });
      ok(r, 'members facets');
    },
  });

  before(async () => {
    srv = await startTestServer('postgres');
    pool = testPgPool(srv.databaseUrl!, 1);
    // Incompressible, so PostgreSQL keeps it out of line (TOAST), as a large document is.
    const o = await srv.api('POST', '/api/v1/objects', {
      name: 'large',
      properties: { text: 'large', blob: randomBytes(300_000).toString('base64') },
    });
    ok(o, 'the large object');
    bigObject = o.body.id;
  });
  after(async () => {
    await pool?.end();
    await srv?.close();
  });

  it(`members of a collection whose query holds ${MANY} conditions on properties.* read about what one does`, async (t) => {
    const one = memberForms(await dynamic('one', orOf(1)));
    const many = memberForms(await dynamic('many', orOf(MANY)));
    for (const form of ['list', 'search', 'facets'] as const) {
      const a = await blocksOf(pool, one[form], readsObjects, `members ${form} (one condition)`);
      const b = await blocksOf(pool, many[form], readsObjects, `members ${form} (${MANY} conditions)`);
      t.diagnostic(`members ${form}: blocks read: ${a} for one condition, ${b} for ${MANY}`);
      // The properties are 400 kB (about 50 blocks): a count below that did not see them read.
      assert.ok(a >= 45, `members ${form}: one condition read ${a} blocks: the large properties were not read`);
      assert.ok(b < a * 2, `members ${form}: one condition read ${a} blocks, ${MANY} read ${b}`);
    }
  });

  it(`GET /objects/:id/collections checks a ${MANY}-condition collection for about what a one-condition one costs`, async (t) => {
    // The difference one more collection makes, whatever the project holds already.
    const containing = () => async () => {
      const r = await srv.api('GET', `/api/v1/objects/${bigObject}/collections`);
      ok(r, 'the collections of the object');
    };
    const before = await blocksOf(pool, containing(), readsObjects, 'containing (before)');
    const added = await dynamic('one more', orOf(1));
    const withOne = await blocksOf(pool, containing(), readsObjects, 'containing (one more with one condition)');
    const oneCost = withOne - before;
    await srv.api('DELETE', `/api/v1/collections/${added}`);
    await dynamic('many more', orOf(MANY));
    const withMany = await blocksOf(pool, containing(), readsObjects, `containing (one more with ${MANY})`);
    const manyCost = withMany - before;
    t.diagnostic(`containing: blocks for one more collection: ${oneCost} (one condition), ${manyCost} (${MANY})`);
    assert.ok(oneCost >= 45, `one more one-condition collection cost ${oneCost} blocks: the properties were not read`);
    assert.ok(
      manyCost < oneCost * 2,
      `one more collection cost ${oneCost} blocks with one condition, ${manyCost} with ${MANY}`,
    );
  });
});
