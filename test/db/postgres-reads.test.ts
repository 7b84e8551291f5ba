/**
 * PostgreSQL heavy reads (db/read-budget.ts, db/read-gate.ts): one project's flood of costly finds
 * takes at most ORRERY_PROJECT_READS connections, so another project's requests answer before the
 * flood is over, and none of the flood is refused while its queue has room.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { FIND_LIMITS } from '../../src/query/find/ast.ts';
import { TEST_DIALECTS, seedEcho, startTestServer, type TestServer } from '../support/server.ts';

const heavyQuery = {
  $or: Array.from({ length: FIND_LIMITS.jsonConditions }, (_, i) => ({ 'parameters.items.sku': `none-${i}` })),
};

if (TEST_DIALECTS.includes('postgres')) {
  describe('postgres: one project cannot take the pool', () => {
    let srv: TestServer;
    let otherKey: string;

    before(async () => {
      srv = await startTestServer('postgres', { projectReads: 2 });
      const ix = await seedEcho(srv, { name: 'Big echo' });
      for (let i = 0; i < 2; i++) {
        const items = Array.from({ length: 2000 }, (_, j) => ({ sku: `b${i}-${j}`, note: 'n'.repeat(50) }));
        const r = await srv.api('POST', '/api/v1/runs', { interaction: ix.interaction.id, data: { items } });
        assert.equal(r.status, 200, JSON.stringify(r.body).slice(0, 300));
      }
      const project = await srv.api('POST', '/api/v1/projects', { name: 'Bystander' });
      otherKey = (await srv.api('POST', '/api/v1/apikeys', { name: 'bystander', project: project.body.id })).body.value;
    });
    after(() => srv.close());

    it("answers another project's GET /runs before any of a flood of 12 heavy finds", async () => {
      const order: string[] = [];
      const flood = Array.from({ length: 12 }, () =>
        srv.api('POST', '/api/v1/runs/find', { query: heavyQuery }).then((r) => (order.push('find'), r)),
      );
      const other = await srv.api('GET', '/api/v1/runs', undefined, otherKey);
      order.push('other project');
      assert.equal(other.status, 200, JSON.stringify(other.body));
      const answers = await Promise.all(flood);
      // Each runs to its answer or its own statement timeout: none is refused or fails for want of a connection.
      for (const r of answers)
        assert.ok(r.status === 200 || r.body.error === 'query_timeout', JSON.stringify(r.body).slice(0, 300));
      // Before any of the flood: it never held every connection.
      assert.equal(order[0], 'other project', `answered in the order ${order.join(', ')}`);
    });
  });
}
