/**
 * The cost budget of find queries: a query with more JSON-field conditions than
 * FIND_LIMITS.jsonConditions is refused with a 400 before any SQL runs (runs/find,
 * objects/find, objects/count, dynamic collections), a query within the bound still answers, and
 * the server keeps answering another project afterwards; on PostgreSQL a find past
 * ORRERY_QUERY_TIMEOUT is cancelled with a 422.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { FIND_LIMITS } from '../../src/query/find/ast.ts';
import { TEST_DIALECTS, seedEcho, startTestServer, type TestServer } from '../support/server.ts';

const manyOr = (n: number, field: string) => ({
  $or: Array.from({ length: n }, (_, i) => ({ [`${field}.k${i}`]: `v${i}` })),
});

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: find query budget`, () => {
    let srv: TestServer;
    let runId: string;
    let otherKey: string;

    before(async () => {
      srv = await startTestServer(dialect);
      const ix = await seedEcho(srv, { name: 'Budget echo' });
      // A document a few hundred KB large: each JSON scan re-reads it.
      const r = await srv.api('POST', '/api/v1/runs', {
        interaction: ix.interaction.id,
        data: { text: 'x'.repeat(300_000), k3: 'v3' },
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      runId = r.body.id;
      const project = await srv.api('POST', '/api/v1/projects', { name: 'Bystander' });
      const key = await srv.api('POST', '/api/v1/apikeys', { name: 'bystander', project: project.body.id });
      otherKey = key.body.value;
    });
    after(() => srv.close());

    it('refuses past the bound with a 400 naming it, on runs/find, objects/find, objects/count and dynamic collections', async () => {
      const over = FIND_LIMITS.jsonConditions + 1;
      for (const [path, field] of [
        ['/api/v1/runs/find', 'parameters'],
        ['/api/v1/objects/find', 'properties'],
        ['/api/v1/objects/count', 'properties'],
      ]) {
        const r = await srv.api('POST', path, { query: manyOr(over, field) });
        assert.equal(r.status, 400, `${path} ${JSON.stringify(r.body)}`);
        assert.equal(r.body.error, 'query_too_costly');
        assert.equal(r.body.status, 400);
        assert.match(r.body.message, new RegExp(`more than ${FIND_LIMITS.jsonConditions} conditions on JSON fields`));
      }
      // A dynamic collection's query is compiled when it is saved, and refused the same way.
      const col = await srv.api('POST', '/api/v1/collections', {
        name: 'Costly',
        dynamic: true,
        query: manyOr(over, 'properties'),
      });
      assert.equal(col.status, 400, JSON.stringify(col.body));
      assert.equal(col.body.error, 'query_too_costly');
      const ok = await srv.api('POST', '/api/v1/collections', {
        name: 'Within',
        dynamic: true,
        query: manyOr(FIND_LIMITS.jsonConditions, 'properties'),
      });
      assert.equal(ok.status, 200, JSON.stringify(ok.body));
      // Nested fan-out counts too: $and of $or, each within the bound alone.
      const half = Math.ceil(over / 2);
      const nested = { $and: [manyOr(half, 'parameters'), { $nor: manyOr(half, 'parameters').$or }] };
      assert.equal((await srv.api('POST', '/api/v1/runs/find', { query: nested })).status, 400);
    });

    it('answers a query within the bound, and another project afterwards', async () => {
      const r = await srv.api('POST', '/api/v1/runs/find', { query: manyOr(FIND_LIMITS.jsonConditions, 'parameters') });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.deepEqual(
        r.body.map((x: { id: string }) => x.id),
        [runId],
      );
      const list = await srv.api('GET', '/api/v1/runs', undefined, otherKey);
      assert.equal(list.status, 200, JSON.stringify(list.body));
    });
  });
}

// PostgreSQL cancels a find past ORRERY_QUERY_TIMEOUT; the answer is a 422 naming it, not a 500.
if (TEST_DIALECTS.includes('postgres')) {
  describe('postgres: find statement timeout', () => {
    let srv: TestServer;
    let otherKey: string;

    before(async () => {
      // 1 ms: far less than 32 scans of a megabyte document take, whatever the machine.
      srv = await startTestServer('postgres', { queryTimeoutMs: 1 });
      const ix = await seedEcho(srv, { name: 'Timeout echo' });
      // Just under ORRERY_MAX_INLINE_JSON, the largest document a run or object may store inline.
      const big = { text: 'x'.repeat(1_000_000), k3: 'v3' };
      for (const path of ['/api/v1/runs', '/api/v1/objects']) {
        const body =
          path === '/api/v1/runs' ? { interaction: ix.interaction.id, data: big } : { name: 'big', properties: big };
        const r = await srv.api('POST', path, body);
        // The echo model may refuse a prompt this large; the failed run is stored all the same.
        assert.ok(r.status === 200 || r.body.run?.status === 'failed', JSON.stringify(r.body).slice(0, 500));
      }
      const project = await srv.api('POST', '/api/v1/projects', { name: 'Bystander' });
      otherKey = (await srv.api('POST', '/api/v1/apikeys', { name: 'bystander', project: project.body.id })).body.value;
    });
    after(() => srv.close());

    it('answers 422 query_timeout on runs/find, objects/find and objects/count, then serves another project', async () => {
      for (const [path, field] of [
        ['/api/v1/runs/find', 'parameters'],
        ['/api/v1/objects/find', 'properties'],
        ['/api/v1/objects/count', 'properties'],
      ]) {
        const r = await srv.api('POST', path, { query: manyOr(FIND_LIMITS.jsonConditions, field) });
        assert.equal(r.status, 422, `${path} ${JSON.stringify(r.body)}`);
        assert.equal(r.body.error, 'query_timeout');
        assert.equal(r.body.status, 422);
        assert.match(r.body.message, /ORRERY_QUERY_TIMEOUT/);
      }
      const list = await srv.api('GET', '/api/v1/runs', undefined, otherKey);
      assert.equal(list.status, 200, JSON.stringify(list.body));
    });
  });
}
