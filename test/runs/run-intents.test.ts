/**
 * The intent log (runs/run-intents.ts): what a crash leaves in it is exactly the runs whose rows
 * were not yet stored, whatever the log held before.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  INTENT_LOG_MAX_BYTES,
  INTENT_MAX_DOC_LENGTH,
  RunIntentLog,
  parseIntentLog,
  readIntentLog,
  type RecordedRun,
} from '../../src/runs/run-intents.ts';
import type { RunRow } from '../../src/runs/model.ts';

const row = (id: string, doc: Record<string, unknown> = { parameters: { topic: 'tabs\tand\nnewlines' } }): RunRow => ({
  id,
  account_id: 'a',
  project_id: 'p',
  interaction_id: 'i',
  environment_id: 'e',
  model_id: 'm',
  status: 'processing',
  parent_id: null,
  finish_reason: null,
  execution_time: null,
  token_prompt: null,
  token_result: null,
  token_total: null,
  tags: ['t'],
  created_at: '2026-11-26T00:00:00.000Z',
  updated_at: '2026-11-26T00:00:00.000Z',
  doc: doc as RunRow['doc'],
  executor: 'r1',
});
const record = (log: RunIntentLog, r: RunRow) => log.record(r, JSON.stringify(r.doc));

function withDir(fn: (dir: string) => Promise<void> | void) {
  return async () => {
    const dir = mkdtempSync(join(tmpdir(), 'orrery-intents-'));
    try {
      await fn(dir);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
}

describe('run intent log', () => {
  it(
    'holds the runs not yet settled, with their rows and documents as written',
    withDir(async (dir) => {
      const log = new RunIntentLog({ dir, replica: 'r1' });
      const a = record(log, row('a'));
      const b = record(log, row('b', { parameters: { n: 1 }, prompt: [{ role: 'user', content: 'é ☃' }] }));
      assert.ok(a && b);
      const runs = await readIntentLog(log.file);
      assert.deepEqual(
        runs.map((r) => r.row.id),
        ['a', 'b'],
      );
      const { doc: _doc, ...head } = row('a');
      assert.deepEqual(runs[0].row, head);
      assert.deepEqual(runs[0].doc, { parameters: { topic: 'tabs\tand\nnewlines' } });
      assert.deepEqual(runs[1].doc, { parameters: { n: 1 }, prompt: [{ role: 'user', content: 'é ☃' }] });
      a();
      assert.equal(
        (await readIntentLog(log.file)).length,
        2,
        'an entry settled while another is not stays until the log starts over',
      );
      b();
      assert.deepEqual(await readIntentLog(log.file), [], 'once every entry is settled, nothing is left to restore');
    }),
  );

  it(
    'records the start and the end of a run; the sweep restores each run from its last entry',
    withDir(async (dir) => {
      const dead = new RunIntentLog({ dir, replica: 'dead' });
      const start = record(dead, row('a'))!;
      const ended: RunRow = {
        ...row('a', { parameters: { topic: 'x' }, result: [{ type: 'text', value: 'an answer' }] }),
        status: 'completed',
        executor: null,
      };
      dead.record(ended, JSON.stringify(ended.doc), 'end');
      record(dead, row('b'));
      start(); // the insert committed: the end entry stays until the update commits
      assert.deepEqual(
        (await readIntentLog(dead.file)).map((r) => [r.kind, r.row.id, r.row.status]),
        [
          ['start', 'a', 'processing'],
          ['end', 'a', 'completed'],
          ['start', 'b', 'processing'],
        ],
      );
      const restored: RecordedRun[] = [];
      const own = new RunIntentLog({ dir, replica: 'me' });
      assert.equal((await own.sweep(new Set(['me']), async (r) => (restored.push(r), true))).restored, 2);
      assert.deepEqual(
        restored.map((r) => [r.kind, r.row.id]),
        [
          ['end', 'a'],
          ['start', 'b'],
        ],
        'one restore per run, from its last entry',
      );
      assert.deepEqual(restored[0].doc, ended.doc);
    }),
  );

  it(
    'reads a log of the previous version, whose lines have no kind, as starts',
    withDir(async (dir) => {
      const { doc, ...head } = row('old');
      writeFileSync(
        join(dir, 'old.log'),
        `${'1'.padStart(12, '0')}\t${JSON.stringify(head)}\t${JSON.stringify(doc)}\n`,
      );
      assert.deepEqual(
        (await readIntentLog(join(dir, 'old.log'))).map((r) => [r.kind, r.row.id]),
        [['start', 'old']],
      );
    }),
  );

  it(
    'starts over at the beginning: a longer tail of an earlier start is not read',
    withDir(async (dir) => {
      const log = new RunIntentLog({ dir, replica: 'r1' });
      const long = record(log, row('old-1', { parameters: { text: 'x'.repeat(500) } }))!;
      const long2 = record(log, row('old-2', { parameters: { text: 'y'.repeat(500) } }))!;
      long();
      long2();
      // As long as old-1's line: old-2's line follows it whole, and only its epoch tells it is stale.
      record(log, row('new-1', { parameters: { text: 'q'.repeat(500) } }));
      const lines = readFileSync(log.file, 'utf8').split('\n');
      assert.ok(
        lines[0].includes('new-1') && lines[1].includes('old-2'),
        'the earlier start is still in the file, whole',
      );
      assert.deepEqual(
        (await readIntentLog(log.file)).map((r) => r.row.id),
        ['new-1'],
      );
    }),
  );

  it(
    'reads up to a line cut short, and nothing from a file that is not a log',
    withDir(async (dir) => {
      const log = new RunIntentLog({ dir, replica: 'r1' });
      record(log, row('whole'));
      record(log, row('cut'));
      const text = readFileSync(log.file, 'utf8');
      writeFileSync(log.file, text.slice(0, text.length - 10));
      assert.deepEqual(
        (await readIntentLog(log.file)).map((r) => r.row.id),
        ['whole'],
      );
      writeFileSync(join(dir, 'junk.log'), 'not\ta log\n{}\n');
      assert.deepEqual(await readIntentLog(join(dir, 'junk.log')), []);
      assert.deepEqual(await readIntentLog(join(dir, 'missing.log')), []);
    }),
  );

  it(
    'records no document past its bound, and nothing once the log cannot be written',
    withDir(async (dir) => {
      const log = new RunIntentLog({ dir, replica: 'r1' });
      assert.equal(log.record(row('big'), JSON.stringify({ text: 'x'.repeat(INTENT_MAX_DOC_LENGTH) })), undefined);
      assert.ok(INTENT_LOG_MAX_BYTES > INTENT_MAX_DOC_LENGTH);
      const blocked = join(dir, 'ro');
      writeFileSync(blocked, 'a file where the folder should be');
      const unwritable = new RunIntentLog({ dir: blocked, replica: 'r2' });
      assert.equal(record(unwritable, row('x')), undefined);
      assert.equal(record(unwritable, row('y')), undefined);
    }),
  );

  it(
    'stops recording once unsettled entries fill the log, so it stays bounded',
    withDir(async (dir) => {
      const log = new RunIntentLog({ dir, replica: 'r1' });
      const doc = { text: 'z'.repeat(INTENT_MAX_DOC_LENGTH - 100) };
      let n = 0;
      while (record(log, row(`r${n}`, doc))) n++;
      assert.ok(n > 100 && n * INTENT_MAX_DOC_LENGTH > INTENT_LOG_MAX_BYTES * 0.9, `${n} entries`);
      assert.equal((await readIntentLog(log.file)).length, n);
    }),
  );

  it(
    'sweeps the logs of processes not alive, not its own nor a live one, and removes them',
    withDir(async (dir) => {
      const own = new RunIntentLog({ dir, replica: 'me' });
      const dead = new RunIntentLog({ dir, replica: 'dead' });
      const live = new RunIntentLog({ dir, replica: 'live' });
      record(own, row('own'));
      record(dead, row('d1'));
      record(dead, row('d2'));
      record(live, row('l1'));
      const restored: RecordedRun[] = [];
      const n = (await own.sweep(new Set(['me', 'live']), async (r) => (restored.push(r), r.row.id !== 'd2'))).restored;
      assert.equal(n, 1, 'counts the runs restore stored');
      assert.deepEqual(
        restored.map((r) => r.row.id),
        ['d1', 'd2'],
      );
      assert.equal(existsSync(dead.file), false);
      assert.equal(existsSync(live.file), true);
      assert.equal(existsSync(own.file), true);
    }),
  );

  it(
    'leaves a log whose restore failed for the next sweep, restoring its other runs and the other logs',
    withDir(async (dir) => {
      const own = new RunIntentLog({ dir, replica: 'me' });
      const dead = new RunIntentLog({ dir, replica: 'dead' });
      const other = new RunIntentLog({ dir, replica: 'other' });
      record(dead, row('d1'));
      record(dead, row('d2'));
      record(other, row('o1'));
      const restored: string[] = [];
      const first = await own.sweep(new Set(['me']), async (r) => {
        if (r.row.id === 'd1') throw new Error('database is locked');
        restored.push(r.row.id);
        return true;
      });
      assert.deepEqual(restored.sort(), ['d2', 'o1'], 'one failed restore stops neither its log nor another');
      assert.equal(first.restored, 2);
      assert.deepEqual([...first.unrestored], ['d1']);
      assert.match(String(first.error), /database is locked/);
      assert.equal(existsSync(dead.file), true, 'kept for the next sweep');
      assert.equal(existsSync(other.file), false);
      const second = await own.sweep(new Set(['me']), async () => true);
      assert.equal(second.restored, 2, 'the kept log is read again whole (restoring d2 again finds it stored)');
      assert.deepEqual([...second.unrestored], []);
      assert.equal(second.error, undefined);
      assert.equal(existsSync(dead.file), false);
    }),
  );

  it(
    'parses a large log without holding the event loop',
    withDir(async (dir) => {
      const dead = new RunIntentLog({ dir, replica: 'dead' });
      const doc = { text: 'y'.repeat(INTENT_MAX_DOC_LENGTH - 100) };
      let n = 0;
      while (n < 100 && record(dead, row(`r${n}`, doc))) n++;
      const text = readFileSync(dead.file, 'utf8');
      // Turns of the event loop while it is parsed: a callback that counts each turn it gets.
      let turns = 0;
      let ticking = true;
      const tick = () => {
        turns++;
        if (ticking) setImmediate(tick);
      };
      setImmediate(tick);
      const runs = await parseIntentLog(text);
      ticking = false;
      assert.equal(runs.length, n);
      assert.ok(
        turns >= 10,
        `the event loop turned ${turns} times while ${(text.length / 1e6).toFixed(1)} MB of entries were parsed`,
      );
    }),
  );

  it(
    'removes its own log at close when every entry is settled, and keeps it otherwise',
    withDir(async (dir) => {
      const a = new RunIntentLog({ dir, replica: 'a' });
      record(a, row('x'))!();
      a.close();
      assert.equal(existsSync(a.file), false);
      const b = new RunIntentLog({ dir, replica: 'b' });
      record(b, row('y'));
      b.close();
      assert.deepEqual(
        (await readIntentLog(b.file)).map((r) => r.row.id),
        ['y'],
      );
    }),
  );
});
