/**
 * The bound on one project's queue of heavy reads (db/read-gate.ts): with ORRERY_PROJECT_READS
 * reads running and 64 more waiting, the next one is answered 429 `too_many_reads` with
 * `Retry-After` at once, and the waiting ones all answer when the running one can go on. The
 * running read is held by a lock the test takes on the objects table (the runs table, which the
 * sweepers use, is not touched).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type pg from 'pg';
import { POSTGRES_ONLY, startTestServer, testPgPool, type TestServer } from '../support/server.ts';

/** db/open.ts QUEUE_PER_PROJECT. */
const QUEUE_PER_PROJECT = 64;
const EXTRA = 4;

describe('postgres: one project queues at most 64 heavy reads, then 429', POSTGRES_ONLY, () => {
  let srv: TestServer;
  let pool: pg.Pool;

  before(async () => {
    srv = await startTestServer('postgres', { projectReads: 1 });
    pool = testPgPool(srv.databaseUrl!, 1);
    const r = await srv.api('POST', '/api/v1/objects', { name: 'one', properties: { n: 1 } });
    assert.equal(r.status, 200, JSON.stringify(r.body));
  });
  after(async () => {
    await pool?.end();
    await srv?.close();
  });

  it('the reads past the queue are refused while the others wait, then the others answer', async () => {
    const holder = await pool.connect();
    const refused: Array<{ status: number; body: any; retryAfter: string | null }> = [];
    const reads: Promise<number>[] = [];
    let released = false;
    try {
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE objects IN ACCESS EXCLUSIVE MODE');
      let seen!: () => void;
      const allRefused = new Promise<void>((res) => (seen = res));
      for (let i = 0; i < 1 + QUEUE_PER_PROJECT + EXTRA; i++)
        reads.push(
          srv.api('POST', '/api/v1/objects/find', { query: { 'properties.n': 1 } }).then((r) => {
            if (r.status === 429) {
              refused.push({ status: r.status, body: r.body, retryAfter: r.headers.get('retry-after') });
              if (refused.length === EXTRA) seen();
            } else assert.ok(released, `a read answered ${r.status} while the table was locked`);
            return r.status;
          }),
        );
      await allRefused;
    } finally {
      released = true;
      await holder.query('ROLLBACK');
      holder.release();
    }
    const statuses = await Promise.all(reads);
    for (const r of refused) {
      assert.equal(r.body.error, 'too_many_reads', JSON.stringify(r.body));
      assert.match(r.body.message, /ORRERY_PROJECT_READS/);
      assert.match(r.retryAfter ?? '', /^\d+$/);
    }
    assert.equal(statuses.filter((s) => s === 200).length, 1 + QUEUE_PER_PROJECT, statuses.join(','));
    assert.equal(statuses.filter((s) => s === 429).length, EXTRA);
  });
});
