/**
 * TOAST blocks of the `runs` table that one request made PostgreSQL read (hits and reads, from
 * pg_statio_user_tables): what a test of "reads a large run once" counts. A backend reports its
 * counters when it goes idle (at once, or up to 10 s later when it reported less than a second
 * ago), so the counter is read until it moves, then once more after a pause.
 */
import assert from 'node:assert/strict';
import type pg from 'pg';

const toastBlocks = async (pool: pg.Pool) => {
  const { rows } = await pool.query<{ n: string }>(
    `SELECT coalesce(toast_blks_hit, 0) + coalesce(toast_blks_read, 0) AS n FROM pg_statio_user_tables WHERE relname = 'runs'`,
  );
  return Number(rows[0].n);
};

export async function toastBlocksOf(pool: pg.Pool, request: () => Promise<void>, what: string): Promise<number> {
  const before = await toastBlocks(pool);
  await request();
  for (let i = 0; i < 300; i++) {
    const now = await toastBlocks(pool);
    if (now > before) {
      await new Promise((res) => setTimeout(res, 200));
      return (await toastBlocks(pool)) - before;
    }
    await new Promise((res) => setTimeout(res, 100));
  }
  assert.fail(`${what} read no TOAST block of the large run`);
}
