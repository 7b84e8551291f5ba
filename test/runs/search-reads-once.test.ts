/**
 * PostgreSQL: a run search with many full-text terms reads (detoasts) a run's tsvector once per
 * row, not once per term: a boolean subtree of full-text terms is one tsquery (search-sql.ts
 * `textQuery`). Measured with the database's own counter of the TOAST blocks it read for the runs
 * table, as find-reads-once.test.ts does for JSON conditions, so the test holds the cost, not a
 * time. `NOT (...)` keeps the terms out of the GIN index (a page tests them run by run), which is
 * the form that read the tsvector once per term (64 terms: 64 times the blocks of one).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type pg from 'pg';
import { POSTGRES_ONLY, seedEcho, startTestServer, testPgPool, type TestServer } from '../support/server.ts';

/** `n` words that no run holds, OR-ed. */
const absent = (n: number) => Array.from({ length: n }, (_, i) => `absentword${i}`).join(' OR ');

describe('postgres: a run search reads each run text index once per row', POSTGRES_ONLY, () => {
  let srv: TestServer;
  let pool: pg.Pool;
  let bigRun: string;
  let smallRun: string;

  const toastBlocks = async () => {
    const { rows } = await pool.query<{ n: string }>(
      `SELECT coalesce(toast_blks_hit, 0) + coalesce(toast_blks_read, 0) AS n FROM pg_statio_user_tables WHERE relname = 'runs'`,
    );
    return Number(rows[0].n);
  };
  const search = async (query: string) => {
    const r = await srv.api('POST', '/api/v1/runs/search', { query, limit: 100 });
    assert.equal(r.status, 200, JSON.stringify(r.body).slice(0, 300));
    return (r.body as { id: string }[]).map((x) => x.id);
  };
  /** TOAST blocks one search read; a backend reports its counters when idle, so read until they move. */
  const blocksOf = async (query: string) => {
    const before = await toastBlocks();
    const hits = await search(query);
    assert.ok(hits.includes(bigRun), `the search must reach the large run: ${JSON.stringify(hits)}`);
    for (let i = 0; i < 300; i++) {
      const now = await toastBlocks();
      if (now > before) {
        await new Promise((res) => setTimeout(res, 200));
        return (await toastBlocks()) - before;
      }
      await new Promise((res) => setTimeout(res, 100));
    }
    assert.fail('the search read no TOAST block of the large run');
  };

  before(async () => {
    srv = await startTestServer('postgres');
    pool = testPgPool(srv.databaseUrl!, 1);
    const ix = await seedEcho(srv, { name: 'Large text' });
    // Many distinct random words: a tsvector near its 1 MB cap, stored out of line (TOAST).
    const words = Array.from({ length: 40_000 }, () => `w${randomBytes(5).toString('hex')}`).join(' ');
    const big = await srv.api('POST', '/api/v1/runs', { interaction: ix.interaction.id, data: { text: words } });
    assert.equal(big.status, 200, JSON.stringify(big.body).slice(0, 300));
    bigRun = big.body.id;
    const small = await srv.api('POST', '/api/v1/runs', {
      interaction: ix.interaction.id,
      data: { text: 'alpha beta gamma' },
    });
    assert.equal(small.status, 200, JSON.stringify(small.body).slice(0, 300));
    smallRun = small.body.id;
    // The seeding's own counters may be reported late: one search first.
    await blocksOf(`NOT (${absent(1)})`);
  });
  after(async () => {
    await pool?.end();
    await srv?.close();
  });

  it('64 full-text terms read about what one does', async (t) => {
    const one = await blocksOf(`NOT (${absent(1)})`);
    const many = await blocksOf(`NOT (${absent(64)})`);
    t.diagnostic(`TOAST blocks read: ${one} for one term, ${many} for 64`);
    assert.ok(many < one * 2, `one term read ${one} TOAST blocks, 64 read ${many}`);
  });

  it('a joined query answers as its terms say', async () => {
    assert.deepEqual(await search('(alpha OR absentword1) AND NOT (delta OR "gamma beta")'), [smallRun]);
    assert.deepEqual(await search('alpha AND NOT "beta gamma"'), []);
    assert.deepEqual(await search('alp* AND (prompt:nothing OR beta) AND NOT result:absentword2'), [smallRun]);
    assert.deepEqual(await search('NOT (alpha OR absentword3)'), [bigRun]);
  });
});
