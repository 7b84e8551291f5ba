/**
 * The content worker threads end soon after their last task (issue 22: a server after a burst of
 * uploads gives their memory back), a thread that keeps getting tasks stays, and the next task
 * after an idle end starts one again.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { IDLE_END_MS, WorkerPool } from '../../src/content/worker/pool.ts';

const count = (pool: WorkerPool, text: string) => pool.run<number>({ op: 'countTokens', text }, 30_000);

it('ends idle content threads and starts one again for the next task', async () => {
  const pool = new WorkerPool({ size: 2, memoryMb: 256, idleMs: 400 });
  try {
    assert.equal(pool.threads, 0, 'no thread before the first task');
    const [a, b] = await Promise.all([count(pool, 'one two three'), count(pool, 'four five six')]);
    assert.ok(a > 0 && b > 0);
    assert.equal(pool.threads, 2, 'two tasks at once start two threads');
    // Tasks closer together than the idle time keep a thread.
    for (let i = 0; i < 6; i++) {
      await sleep(150);
      await count(pool, `again ${i}`);
      assert.ok(pool.threads >= 1, `a thread given a task every 150 ms stays (round ${i})`);
    }
    const until = Date.now() + 10_000;
    while (pool.threads && Date.now() < until) await sleep(25);
    assert.equal(pool.threads, 0, 'idle threads ended');
    assert.ok(await count(pool, 'back again') > 0, 'the next task starts a thread again');
    assert.equal(pool.threads, 1);
  } finally {
    await pool.close();
  }
});

it('ends idle threads within seconds by default, not a minute later', () => {
  assert.ok(IDLE_END_MS <= 15_000, `IDLE_END_MS is ${IDLE_END_MS} ms`);
});
