/**
 * The template worker threads end after a while without a task (issue 22: an idle server gives
 * their memory back), and the next task starts one again.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { TemplatePool } from '../../src/templates/worker/pool.ts';
import { DEFAULT_TEMPLATE_LIMITS } from '../../src/templates/render.ts';

it('ends an idle template thread and starts one again for the next task', async () => {
  const { cpuMs, memoryBytes, maxOutput } = DEFAULT_TEMPLATE_LIMITS;
  const pool = new TemplatePool({ size: 1, limits: { cpuMs, memoryBytes, maxOutput }, idleEndMs: 300 });
  try {
    assert.equal(pool.threadCount, 0, 'no thread before the first task');
    assert.equal((await pool.compileHandlebars('Hello {{name}}')).ok, true);
    assert.equal(pool.threadCount, 1);
    await sleep(100);
    assert.equal(
      (await pool.compileHandlebars('Again {{name}}')).ok,
      true,
      'a task before the idle end keeps the thread',
    );
    assert.equal(pool.threadCount, 1);
    for (const until = Date.now() + 10_000; pool.threadCount && Date.now() < until;) await sleep(50);
    assert.equal(pool.threadCount, 0, 'the idle thread ended');
    assert.equal((await pool.compileHandlebars('Back {{name}}')).ok, true, 'the next task starts a thread again');
    assert.equal(pool.threadCount, 1);
  } finally {
    await pool.close();
  }
});
