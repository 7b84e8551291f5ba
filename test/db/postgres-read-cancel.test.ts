/**
 * PostgreSQL: a heavy read whose client goes away is cancelled in the database (db/read-budget.ts),
 * not left to hold its backend until it ends. The read is held by a lock the test takes on the
 * objects table (not runs, which the sweepers use); once the client aborts, the backend stops
 * waiting while the lock is still held, and the server goes on answering.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type pg from 'pg';
import { POSTGRES_ONLY, startTestServer, testPgPool, type TestServer } from '../support/server.ts';

describe('postgres: a read whose client goes away is cancelled', POSTGRES_ONLY, () => {
  let srv: TestServer;
  let pool: pg.Pool;

  before(async () => {
    srv = await startTestServer('postgres');
    pool = testPgPool(srv.databaseUrl!, 2);
    const r = await srv.api('POST', '/api/v1/objects', { name: 'one', properties: { n: 1 } });
    assert.equal(r.status, 200, JSON.stringify(r.body));
  });
  after(async () => {
    await pool?.end();
    await srv?.close();
  });

  /**
   * The server's backends running the find and waiting on a lock, in the database's own view. Only the
   * find's own statement counts (a select of objects with a JSON condition): a background job that
   * touches objects meanwhile waits on the same lock.
   */
  const waiting = async () =>
    Number(
      (
        await pool.query<{ n: string }>(
          `SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'
             AND query LIKE 'select "objects"."id"%' AND query LIKE '%jsonb_typeof%'`,
        )
      ).rows[0].n,
    );
  /** Polls until `test` holds; the cap only keeps a broken guard from hanging the run. */
  const until = async (test: () => Promise<boolean>, what: string) => {
    for (let i = 0; i < 600; i++) {
      if (await test()) return;
      await new Promise((res) => setTimeout(res, 50));
    }
    assert.fail(what);
  };

  it('the find waits on the lock, the client aborts, the backend stops waiting', async () => {
    const holder = await pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE objects IN ACCESS EXCLUSIVE MODE');
      const abort = new AbortController();
      const find = fetch(`${srv.url}/api/v1/objects/find`, {
        method: 'POST',
        headers: { authorization: `Bearer ${srv.adminKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ query: { 'properties.n': 1 } }),
        signal: abort.signal,
      }).catch((err: Error) => err);
      await until(async () => (await waiting()) === 1, 'the find never reached the database');
      abort.abort();
      assert.equal(((await find) as Error).name, 'AbortError');
      await until(async () => (await waiting()) === 0, 'the find still waits in the database after its client left');
      // The lock is still held here: the backend stopped because it was cancelled.
      assert.equal((await srv.api('GET', '/api/v1/environments')).status, 200);
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
    const r = await srv.api('POST', '/api/v1/objects/find', { query: { 'properties.n': 1 } });
    assert.equal(r.status, 200, JSON.stringify(r.body));
  });
});
