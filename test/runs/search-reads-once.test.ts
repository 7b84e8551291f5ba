/**
 * PostgreSQL: a run search with many full-text terms reads (detoasts) a run's tsvector once per
 * row, not once per term: a boolean subtree of full-text terms is one tsquery (search-sql.ts
 * `textQuery`). `NOT (...)` keeps the terms out of the GIN index (a page tests them run by run),
 * which is the form that read the tsvector once per term (64 terms: 64 times the blocks of one).
 * The other forms that test a run row by row (`parameters.*` words, wildcards that are not
 * prefixes, `tool_use.tool_name`) read the run's values once per row too (compile.ts
 * `compileRoot`). Counted with the blocks of the search's own SQL (support/toast-blocks.ts), as
 * find-reads-once.test.ts does, so the test holds the cost, not a time.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it, type TestContext } from 'node:test';
import type pg from 'pg';
import { POSTGRES_ONLY, seedEcho, startTestServer, testPgPool, type TestServer } from '../support/server.ts';
import { blocksOf as blocksOfRequest, readsRuns } from '../support/toast-blocks.ts';

/** `n` words that no run holds, OR-ed. */
const absent = (n: number) => Array.from({ length: n }, (_, i) => `absentword${i}`).join(' OR ');

describe('postgres: a run search reads each run text index once per row', POSTGRES_ONLY, () => {
  let srv: TestServer;
  let pool: pg.Pool;
  let bigRun: string;
  let smallRun: string;
  let firstWord: string;

  const search = async (query: string) => {
    const r = await srv.api('POST', '/api/v1/runs/search', { query, limit: 100 });
    assert.equal(r.status, 200, JSON.stringify(r.body).slice(0, 300));
    return (r.body as { id: string }[]).map((x) => x.id);
  };
  /** Blocks the search's own SQL over `runs` read (toast-blocks.ts); `reach`: it must find the large run. */
  const blocksOf = (query: string, reach = true) =>
    blocksOfRequest(
      pool,
      async () => {
        const hits = await search(query);
        if (reach) assert.ok(hits.includes(bigRun), `the search must reach the large run: ${JSON.stringify(hits)}`);
      },
      readsRuns,
      'the search',
    );
  /** The blocks of `one` and of `many`, with the large run's own reads seen in `one`. */
  const compare = async (t: TestContext, what: string, one: string, many: string, reach = true) => {
    const a = await blocksOf(one, reach);
    const b = await blocksOf(many, reach);
    t.diagnostic(`blocks read: ${a} for one ${what}, ${b} for many`);
    assert.ok(a >= 45, `one ${what} read ${a} blocks: the large run was not read`);
    assert.ok(b < a * 2, `one ${what} read ${a} blocks, many read ${b}`);
  };

  before(async () => {
    srv = await startTestServer('postgres');
    pool = testPgPool(srv.databaseUrl!, 1);
    const ix = await seedEcho(srv, { name: 'Large text' });
    // Many distinct random words: a tsvector near its 1 MB cap, stored out of line (TOAST).
    const list = Array.from({ length: 40_000 }, () => `w${randomBytes(5).toString('hex')}`);
    firstWord = list[0];
    const words = list.join(' ');
    const big = await srv.api('POST', '/api/v1/runs', { interaction: ix.interaction.id, data: { text: words } });
    assert.equal(big.status, 200, JSON.stringify(big.body).slice(0, 300));
    bigRun = big.body.id;
    const small = await srv.api('POST', '/api/v1/runs', {
      interaction: ix.interaction.id,
      data: { text: 'alpha beta gamma' },
    });
    assert.equal(small.status, 200, JSON.stringify(small.body).slice(0, 300));
    smallRun = small.body.id;
  });
  after(async () => {
    await pool?.end();
    await srv?.close();
  });

  it('64 full-text terms read about what one does', async (t) => {
    await compare(t, 'term', `NOT (${absent(1)})`, `NOT (${absent(64)})`);
  });

  // A word of the large run's text on a path it lacks: the text index lets the run through, and
  // its parameters are read to refuse it (once per row, not once per term).
  it('64 terms on parameters.* read about what one does', async (t) => {
    const terms = (n: number) => Array.from({ length: n }, (_, i) => `parameters.k${i}:${firstWord}`).join(' OR ');
    await compare(t, 'parameters term', terms(1), terms(64), false);
    assert.deepEqual(await search(`parameters.k0:${firstWord} OR parameters.text:${firstWord}`), [bigRun]);
  });

  it('64 wildcards that are not prefixes read about what one does', async (t) => {
    const globs = (n: number) => Array.from({ length: n }, (_, i) => `*zq${i}z?`).join(' OR ');
    await compare(t, 'wildcard', `NOT (${globs(1)})`, `NOT (${globs(64)})`);
    assert.deepEqual(await search(`*${firstWord.slice(3)}`), [bigRun]);
  });

  it('64 terms on tool_use.tool_name read about what one does', async (t) => {
    const tools = (n: number) => Array.from({ length: n }, (_, i) => `tool_use.tool_name:t${i}`).join(' OR ');
    await compare(t, 'tool_use term', `NOT (${tools(1)})`, `NOT (${tools(64)})`);
  });

  it('a joined query answers as its terms say', async () => {
    assert.deepEqual(await search('(alpha OR absentword1) AND NOT (delta OR "gamma beta")'), [smallRun]);
    assert.deepEqual(await search('alpha AND NOT "beta gamma"'), []);
    assert.deepEqual(await search('alp* AND (prompt:nothing OR beta) AND NOT result:absentword2'), [smallRun]);
    assert.deepEqual(await search('NOT (alpha OR absentword3)'), [bigRun]);
  });
});
