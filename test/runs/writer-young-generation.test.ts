/**
 * Issue 22: the run writer thread runs with a bounded young generation
 * (runs/run-writer-thread.ts `WRITER_YOUNG_GENERATION_MB`, Node's `resourceLimits`), so that a load
 * does not leave it holding V8's largest semi-spaces until the memory reducer runs. The bound must
 * not limit what it can write: a run document far larger than the young generation is written.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { Worker } from 'node:worker_threads';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../../src/db/open.ts';
import { newId, nowIso } from '../../src/db/ids.ts';
import { getRun } from '../../src/runs/store.ts';
import { ThreadRunWriter, WRITER_YOUNG_GENERATION_MB } from '../../src/runs/run-writer-thread.ts';
import type { RunRow } from '../../src/runs/model.ts';

const SCOPE = { account: 'acc', project: 'prj' };

const runRow = (words: string): RunRow => ({
  id: newId(), account_id: SCOPE.account, project_id: SCOPE.project, interaction_id: 'ix', environment_id: null, model_id: 'echo', status: 'processing',
  parent_id: null, finish_reason: null, execution_time: null, token_prompt: null, token_result: null, token_total: null, tags: ['t1'],
  created_at: nowIso(), updated_at: nowIso(), executor: 'me',
  doc: { result: [], parameters: { topic: 'x' }, prompt: [{ role: 'user', content: words }], config: {}, source: {}, interaction: { id: 'ix', name: 'Ix' } },
} as unknown as RunRow);

describe('sqlite: the run writer thread\'s young generation (issue 22)', () => {
  const cleanups: Array<() => Promise<void> | void> = [];
  after(async () => { for (const c of cleanups.reverse()) await c(); });

  it('starts the thread with the bounded young generation and still writes documents larger than it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'orrery-rwt-young-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const opened = await openDatabase({ dataDir: dir });
    cleanups.push(() => opened.db.destroy());
    const writer = new ThreadRunWriter(opened.file!, opened.db, opened.dialect);
    cleanups.push(() => writer.close());

    const worker = (writer as unknown as { worker: Worker }).worker;
    assert.equal(worker.resourceLimits?.maxYoungGenerationSizeMb, WRITER_YOUNG_GENERATION_MB);

    // A prompt of 3 × the whole young generation: V8 puts it in its large-object space.
    const big = runRow('orbit '.repeat(Math.ceil((3 * WRITER_YOUNG_GENERATION_MB * 1048576) / 6)));
    const small = Array.from({ length: 500 }, (_, i) => runRow(`word${i}`));
    await Promise.all([big, ...small].map((r) => writer.insert(r, ['t1'])));
    const ended = await Promise.all([big, ...small].map((r) => writer.update(r.id, { status: 'completed', updated_at: nowIso(), executor: null, doc: { ...(r.doc as object), result: [{ type: 'text', value: 'answer' }] } as never })));
    assert.ok(ended.every(Boolean));
    const stored = await getRun(opened.db, opened.dialect, SCOPE, big.id);
    assert.equal(stored?.status, 'completed');
    assert.equal((stored?.doc as { prompt: Array<{ content: string }> }).prompt[0].content.length, (big.doc as { prompt: Array<{ content: string }> }).prompt[0].content.length);
    assert.equal((writer as unknown as { worker: Worker }).worker, worker, 'the same thread did all of it (it did not stop)');
  });
});
