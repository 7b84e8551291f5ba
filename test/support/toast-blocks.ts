/**
 * The buffer blocks that one request's own SQL made PostgreSQL read, for a test that a large run
 * is read once per row whatever the number of conditions. The statements the in-process server
 * sends while `request` runs (through node-postgres's Client.query) and that `pick` selects are
 * captured, then each is run again under EXPLAIN (ANALYZE, BUFFERS) on the test's own
 * connection, which counts the blocks that statement alone read (heap, index and TOAST; a large
 * document's TOAST blocks are nearly all of them). The cluster's per-table counters
 * (pg_statio_user_tables) counted whatever else read the table meanwhile and were reported late,
 * so a find of one condition once measured 51 blocks and one of 32 measured 2,516.
 */
import assert from 'node:assert/strict';
import pg from 'pg';

interface Statement {
  text: string;
  values: unknown[];
}

type Query = (this: unknown, ...args: unknown[]) => unknown;

/** The statements `pick` selects among those the process sent while `request` ran. */
async function capture(request: () => Promise<void>, pick: (sql: string) => boolean): Promise<Statement[]> {
  const proto = pg.Client.prototype as unknown as { query: Query };
  const original = proto.query;
  const seen: Statement[] = [];
  proto.query = function (this: unknown, ...args: unknown[]) {
    const [text, values] = args;
    if (typeof text === 'string' && pick(text)) seen.push({ text, values: Array.isArray(values) ? values : [] });
    return original.apply(this, args);
  };
  try {
    await request();
  } finally {
    proto.query = original;
  }
  return seen;
}

interface PlanNode {
  'Shared Hit Blocks': number;
  'Shared Read Blocks': number;
}

/** Blocks the statement read when run (a node's counts include its children's and subplans'). */
async function blocksOfStatement(pool: pg.Pool, s: Statement): Promise<number> {
  const { rows } = await pool.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(
    `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${s.text}`,
    s.values,
  );
  const plan = rows[0]['QUERY PLAN'][0].Plan;
  return plan['Shared Hit Blocks'] + plan['Shared Read Blocks'];
}

/** A `pick` for the SELECTs that read the `runs` table (a find's, a search's page and count). */
export const readsRuns = (sql: string): boolean => /^\s*select/i.test(sql) && /\bfrom runs\b/i.test(sql);

/**
 * Blocks read by the statements of `request` that `pick` selects (at least one must be sent),
 * counted on `pool`, a connection to the server's database.
 */
export async function blocksOf(
  pool: pg.Pool,
  request: () => Promise<void>,
  pick: (sql: string) => boolean,
  what: string,
): Promise<number> {
  const statements = await capture(request, pick);
  assert.ok(statements.length, `${what} sent no statement the count selects`);
  let blocks = 0;
  for (const s of statements) blocks += await blocksOfStatement(pool, s);
  return blocks;
}
