/**
 * The content worker processes end soon after their last task (issue 22: a server after a burst of
 * uploads gives their memory back to the system), a process that keeps getting tasks stays, and
 * the next task after an idle end starts one again. An ended process is gone: its pid no longer
 * exists.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { IDLE_END_MS, WorkerPool } from '../../src/content/worker/pool.ts';
import { alive } from '../support/processes.ts';

const count = (pool: WorkerPool, text: string) => pool.run<number>({ op: 'countTokens', text }, 30_000);

it('ends idle content processes (their pids gone) and starts one again for the next task', async () => {
  const pool = new WorkerPool({ size: 2, memoryMb: 256, idleMs: 400 });
  try {
    assert.equal(pool.processes, 0, 'no process before the first task');
    const [a, b] = await Promise.all([count(pool, 'one two three'), count(pool, 'four five six')]);
    assert.ok(a > 0 && b > 0);
    assert.equal(pool.processes, 2, 'two tasks at once start two processes');
    const first = pool.pids;
    assert.equal(first.length, 2);
    assert.ok(
      first.every((pid) => pid !== process.pid && alive(pid)),
      'separate processes, running',
    );
    // Tasks closer together than the idle time keep a process.
    for (let i = 0; i < 6; i++) {
      await sleep(150);
      await count(pool, `again ${i}`);
      assert.ok(pool.processes >= 1, `a process given a task every 150 ms stays (round ${i})`);
    }
    const until = Date.now() + 10_000;
    while (pool.processes && Date.now() < until) await sleep(25);
    assert.equal(pool.processes, 0, 'idle processes ended');
    for (const pid of first) assert.equal(alive(pid), false, `process ${pid} exited`);
    assert.ok((await count(pool, 'back again')) > 0, 'the next task starts a process again');
    assert.equal(pool.processes, 1);
    assert.ok(!first.includes(pool.pids[0]), 'a new process');
  } finally {
    await pool.close();
  }
});

it('ends idle processes within seconds by default, not a minute later', () => {
  assert.ok(IDLE_END_MS <= 15_000, `IDLE_END_MS is ${IDLE_END_MS} ms`);
});
