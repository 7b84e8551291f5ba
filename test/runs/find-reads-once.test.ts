/**
 * PostgreSQL: a find with many conditions on a run's JSON document reads (detoasts) the stored
 * document once per row, not once per condition (json-sql.ts `readOnce`). Measured with the
 * database's own counter of the TOAST blocks it read for the runs table, so the test holds the
 * cost, not a time: a find of 32 conditions on `parameters.*` must read about what a find of one
 * reads, where before it read 32 times as much.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type pg from 'pg';
import { FIND_LIMITS } from '../../src/query/find/ast.ts';
import { POSTGRES_ONLY, seedEcho, startTestServer, testPgPool, type TestServer } from '../support/server.ts';

const orOf = (n: number) => ({ $or: Array.from({ length: n }, (_, i) => ({ [`parameters.k${i}`]: `x${i}` })) });

describe('postgres: a find reads each stored document once per row', POSTGRES_ONLY, () => {
  let srv: TestServer;
  let pool: pg.Pool;
  let bigRun: string;

  /** TOAST blocks of `runs` read so far (shared hits and reads), once the server's backends have reported them. */
  const toastBlocks = async () => {
    const { rows } = await pool.query<{ n: string }>(
      `SELECT coalesce(toast_blks_hit, 0) + coalesce(toast_blks_read, 0) AS n FROM pg_statio_user_tables WHERE relname = 'runs'`,
    );
    return Number(rows[0].n);
  };
  /**
   * What one find costs in TOAST blocks. A backend reports its counters when it goes idle (at
   * once, or up to 10 s later when it reported less than a second ago), so the counter is read
   * until it moves; the find must read the large document at least once.
   */
  const blocksOf = async (query: unknown) =>
    blocksOfRequest(async () => {
      const r = await srv.api('POST', '/api/v1/runs/find', { query, select: 'id' });
      assert.equal(r.status, 200, JSON.stringify(r.body).slice(0, 300));
      assert.deepEqual(r.body, []);
    });
  const blocksOfRequest = async (request: () => Promise<void>) => {
    const before = await toastBlocks();
    await request();
    for (let i = 0; i < 300; i++) {
      const now = await toastBlocks();
      if (now > before) {
        await new Promise((res) => setTimeout(res, 200));
        return (await toastBlocks()) - before;
      }
      await new Promise((res) => setTimeout(res, 100));
    }
    assert.fail('the find read no TOAST block of the large run');
  };

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
    // The seeding's own counters may be reported late: one find first, so they are in before any measure.
    await blocksOf(orOf(1));
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
    t.diagnostic(`TOAST blocks read: ${a} for one condition, ${b} for ${FIND_LIMITS.jsonConditions}`);
    assert.ok(many < one * 2, `one condition read ${a} TOAST blocks, ${FIND_LIMITS.jsonConditions} read ${b}`);
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
