/**
 * PostgreSQL: a request that finds every pooled connection taken waits at most
 * ORRERY_DATABASE_POOL_WAIT, then answers 503 `database_unavailable` with `Retry-After`, never a
 * hang. The pool is taken by deletes of one run whose row the test holds locked (one row, not the
 * table, so the sweepers and other rows are unaffected); the bystander's 503 comes back while they
 * still wait, and once the lock is released they finish.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type pg from 'pg';
import { POSTGRES_ONLY, seedEcho, startTestServer, testPgPool, type TestServer } from '../support/server.ts';

/** The server's pool (db/open.ts POOL_SIZE). */
const POOL_SIZE = 10;

describe('postgres: an exhausted pool answers 503 with Retry-After', POSTGRES_ONLY, () => {
  let srv: TestServer;
  let pool: pg.Pool;
  let runId: string;

  before(async () => {
    srv = await startTestServer('postgres', { poolWaitMs: 300 });
    pool = testPgPool(srv.databaseUrl!, 2);
    const ix = await seedEcho(srv, { name: 'Pool' });
    const r = await srv.api('POST', '/api/v1/runs', { interaction: ix.interaction.id, data: { text: 'x' } });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    runId = r.body.id;
  });
  after(async () => {
    await pool?.end();
    await srv?.close();
  });

  it('the pool held by deletes waiting on a locked row: another request is a 503, then all finish', async () => {
    const holder = await pool.connect();
    const order: string[] = [];
    const deletes: Promise<number>[] = [];
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT id FROM runs WHERE id = $1 FOR UPDATE', [runId]);
      for (let i = 0; i < POOL_SIZE; i++)
        deletes.push(srv.api('DELETE', `/api/v1/runs/${runId}`).then((r) => (order.push('delete'), r.status)));
      // Until every pooled connection waits on the row lock (the database's own view of its backends).
      for (let waiting = 0; waiting < POOL_SIZE;) {
        await new Promise((res) => setTimeout(res, 50));
        const { rows } = await pool.query<{ n: string }>(
          `SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
        );
        waiting = Number(rows[0].n);
      }
      const other = await srv.api('GET', '/api/v1/environments');
      order.push('other');
      assert.equal(other.status, 503, JSON.stringify(other.body));
      assert.deepEqual(other.body, { error: 'database_unavailable', status: 503, message: other.body.message });
      // It says the pool is busy (not that the database cannot be reached) and which setting to raise.
      assert.match(other.body.message, /every database connection stayed busy/);
      assert.match(other.body.message, /retry later, or raise ORRERY_DATABASE_POOL_WAIT/);
      assert.match(other.headers.get('retry-after') ?? '', /^\d+$/);
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
    const statuses = await Promise.all(deletes);
    assert.equal(order[0], 'other', `answered in the order ${order.join(', ')}`);
    // Every delete finished once the row was free, and the run is gone.
    assert.deepEqual(
      statuses,
      Array.from({ length: POOL_SIZE }, () => 200),
      `deletes answered ${statuses.join(', ')}`,
    );
    assert.equal((await srv.api('GET', `/api/v1/runs/${runId}`)).status, 404);
    assert.equal((await srv.api('GET', '/api/v1/environments')).status, 200);
  });
});
