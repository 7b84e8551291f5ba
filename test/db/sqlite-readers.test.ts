/**
 * SQLite reader threads (db/sqlite-readers.ts): a heavy find runs off the HTTP thread, so
 * `/health` and another project's `GET /runs` answer while it runs; it still sees what was
 * acknowledged before it (read-your-writes); and its budget is checked as it runs, past
 * ORRERY_QUERY_TIMEOUT (422 query_timeout) or ORRERY_QUERY_MAX_READ (422 query_too_costly).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setImmediate as turn } from 'node:timers/promises';
import { sql } from 'kysely';
import { ReadBudgetExceeded, readersOf } from '../../src/db/sqlite-readers.ts';
import { FIND_LIMITS } from '../../src/query/find/ast.ts';
import { seedEcho, startTestServer, type TestServer } from '../support/server.ts';

/** A document whose path `items.sku` walks an array of 7,000 objects (about 0.5 MB). */
const bigData = (tag: string) => ({
  items: Array.from({ length: 7000 }, (_, i) => ({ sku: `${tag}-${i}`, note: 'n'.repeat(50) })),
  text: tag,
});
/** As many conditions as the bound allows, each walking that array. */
const heavyQuery = {
  $or: Array.from({ length: FIND_LIMITS.jsonConditions }, (_, i) => ({ 'parameters.items.sku': `none-${i}` })),
};

async function seedBig(srv: TestServer, n: number): Promise<string> {
  const ix = await seedEcho(srv, { name: 'Big echo' });
  for (let i = 0; i < n; i++) {
    const r = await srv.api('POST', '/api/v1/runs', { interaction: ix.interaction.id, data: bigData(`b${i}`) });
    assert.equal(r.status, 200, JSON.stringify(r.body).slice(0, 300));
  }
  return ix.interaction.id;
}

describe('sqlite: heavy reads on reader threads', () => {
  let srv: TestServer;
  let interaction: string;
  let otherKey: string;

  before(async () => {
    // A budget far above what the heavy find takes on a loaded machine: this test is about who answers first.
    srv = await startTestServer('sqlite', { sqliteReaders: 2, queryTimeoutMs: 600_000 });
    interaction = await seedBig(srv, 3);
    const project = await srv.api('POST', '/api/v1/projects', { name: 'Bystander' });
    otherKey = (await srv.api('POST', '/api/v1/apikeys', { name: 'bystander', project: project.body.id })).body.value;
  });
  after(() => srv.close());

  it('answers /health and another project while a heavy find runs, before the find does', async () => {
    const readers = readersOf(srv.orrery.database.db);
    assert.ok(readers, 'the SQLite database has reader threads');
    const order: string[] = [];
    const heavy = srv.api('POST', '/api/v1/runs/find', { query: heavyQuery }).then((r) => {
      order.push('find');
      return r;
    });
    // Until the find is running on a thread; were it on the HTTP thread, this loop would not get
    // a turn before it had ended.
    while (readers.busy === 0 && !order.length) await turn();
    assert.equal(order.length, 0, 'the find was still running when the other requests were sent');
    const [health, list] = await Promise.all([
      srv.api('GET', '/health', undefined, null).then((r) => (order.push('health'), r)),
      srv.api('GET', '/api/v1/runs', undefined, otherKey).then((r) => (order.push('other project'), r)),
    ]);
    assert.equal(health.status, 200);
    assert.equal(list.status, 200, JSON.stringify(list.body));
    const found = await heavy;
    assert.equal(found.status, 200, JSON.stringify(found.body).slice(0, 300));
    assert.deepEqual(found.body, []);
    assert.deepEqual(order.slice(-1), ['find'], `answered in the order ${order.join(', ')}`);
  });

  it('sees a run and an object as soon as their creation was answered', async () => {
    for (let i = 0; i < 5; i++) {
      const run = await srv.api('POST', '/api/v1/runs', { interaction, data: { text: `fresh-${i}` } });
      assert.equal(run.status, 200, JSON.stringify(run.body));
      const found = await srv.api('POST', '/api/v1/runs/find', { query: { 'parameters.text': `fresh-${i}` } });
      assert.deepEqual(
        found.body.map((r: { id: string }) => r.id),
        [run.body.id],
      );
      const obj = await srv.api('POST', '/api/v1/objects', { name: `o${i}`, properties: { fresh: i } });
      assert.equal(obj.status, 200, JSON.stringify(obj.body));
      const count = await srv.api('POST', '/api/v1/objects/count', { query: { 'properties.fresh': i } });
      assert.deepEqual(count.body, { count: 1 });
    }
  });
});

describe('sqlite: the budget of a read on a reader thread', () => {
  it('stops a find past ORRERY_QUERY_TIMEOUT with a 422 query_timeout', async () => {
    // 1 ms: far less than one of these rows takes, whatever the machine; the check runs per row.
    const srv = await startTestServer('sqlite', { sqliteReaders: 1, queryTimeoutMs: 1 });
    try {
      await seedBig(srv, 3);
      const r = await srv.api('POST', '/api/v1/runs/find', { query: heavyQuery });
      assert.equal(r.status, 422, JSON.stringify(r.body).slice(0, 300));
      assert.equal(r.body.error, 'query_timeout');
      assert.match(r.body.message, /ORRERY_QUERY_TIMEOUT/);
      assert.equal((await srv.api('GET', '/health', undefined, null)).status, 200);
    } finally {
      await srv.close();
    }
  });

  it('stops a find that examines more than ORRERY_QUERY_MAX_READ bytes with a 422 naming it', async () => {
    const srv = await startTestServer('sqlite', { sqliteReaders: 1, queryMaxReadBytes: 100_000 });
    try {
      await seedBig(srv, 1);
      for (const [path, field] of [
        ['/api/v1/runs/find', 'parameters'],
        ['/api/v1/objects/find', 'properties'],
      ] as const) {
        if (field === 'properties') {
          const o = await srv.api('POST', '/api/v1/objects', { name: 'big', properties: bigData('o') });
          assert.equal(o.status, 200, JSON.stringify(o.body).slice(0, 300));
        }
        const r = await srv.api('POST', path, { query: { [`${field}.text`]: 'x' } });
        assert.equal(r.status, 422, `${path} ${JSON.stringify(r.body).slice(0, 300)}`);
        assert.equal(r.body.error, 'query_too_costly');
        assert.match(r.body.message, /ORRERY_QUERY_MAX_READ/);
      }
      // A read within the budget (small documents only) answers.
      const small = await srv.api('POST', '/api/v1/objects', { name: 'small', properties: { text: 'x' } });
      assert.equal(small.status, 200);
      const count = await srv.api('POST', '/api/v1/objects/count', { query: { 'properties.text': 'x' } });
      assert.equal(count.status, 422, 'the big object is still among the rows examined');
    } finally {
      await srv.close();
    }
  });
});

/**
 * The backstop of sqlite-readers.ts: a statement that never checks its budget (no `orrery_read`
 * term: a long recursive CTE stands for one huge row) is answered as over budget once
 * its deadline and the grace have passed, its thread is terminated, and a fresh thread serves the
 * next read; the HTTP thread answers all the while.
 */
describe('sqlite: a reader thread whose statement never checks its budget', () => {
  it('is ended past its deadline and replaced, and the server keeps answering', async () => {
    const srv = await startTestServer('sqlite', { sqliteReaders: 1 });
    try {
      const readers = readersOf(srv.orrery.database.db);
      assert.ok(readers, 'the SQLite database has reader threads');
      // Long but finite (seconds: 40 million steps of SQLite's own code, which never returns to
      // JavaScript meanwhile): terminating a thread takes effect only once its native call returns,
      // and a process cannot exit while one of its threads is still inside such a call.
      const long = sql`WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 40000000) SELECT count(*) AS n FROM c`;
      const stuck = readers.all(long.compile(srv.orrery.database.db), 50).then(
        () => assert.fail('the statement answered rows before its thread was ended'),
        (err: unknown) => err,
      );
      // While the thread is stuck, the HTTP thread still answers.
      while (readers.busy === 0) await turn();
      assert.equal((await srv.api('GET', '/health', undefined, null)).status, 200);
      const err = await stuck;
      assert.ok(err instanceof ReadBudgetExceeded, String(err));
      assert.equal(err.budget, 'time');
      // A fresh thread takes the next read, and a find through HTTP answers.
      const one = sql<{ n: number }>`SELECT 1 AS n`;
      assert.deepEqual(await readers.all(one.compile(srv.orrery.database.db), 5000), [{ n: 1 }]);
      const r = await srv.api('POST', '/api/v1/runs/find', { query: { 'parameters.text': 'x' } });
      assert.equal(r.status, 200, JSON.stringify(r.body).slice(0, 300));
      assert.equal(readers.busy, 0);
    } finally {
      await srv.close();
    }
  });
});
