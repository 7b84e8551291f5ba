/**
 * The run writer's thread (SQLite only): a write resolves once it is committed and visible to the
 * main connection, with its search data; claims, failures and a thread that stops reach the caller
 * instead of hanging it; close() waits for what is queued; its bounded young generation (issue 22)
 * does not bound what it can write; it exists only while runs are written (started by the first
 * write, which does not wait for it, and ended when idle: issue 22).
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { Worker } from 'node:worker_threads';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../../src/db/open.ts';
import { newId, nowIso } from '../../src/db/ids.ts';
import { parseLucene } from '../../src/query/lucene/index.ts';
import { compileRunQuery } from '../../src/runs/lucene-sql/index.ts';
import { getRun, prepareRunInsert, prepareRunUpdate } from '../../src/runs/store.ts';
import { openSqliteHandle } from '../../src/db/sqlite-handle.ts';
import { SqliteRunWrites } from '../../src/runs/sqlite-run-writes.ts';
import { findRuns, whereOf } from '../../src/runs/search-store.ts';
import {
  ThreadRunWriter,
  WRITER_YOUNG_GENERATION_MB,
  type ThreadRunWriterOptions,
} from '../../src/runs/run-writer-thread.ts';
import { RunWriter } from '../../src/runs/run-writer.ts';
import { sql } from 'kysely';
import type { RunRow } from '../../src/runs/model.ts';

const SCOPE = { account: 'acc', project: 'prj' };

const runRow = (words: string): RunRow =>
  ({
    id: newId(),
    account_id: SCOPE.account,
    project_id: SCOPE.project,
    interaction_id: 'ix',
    environment_id: null,
    model_id: 'echo',
    status: 'processing',
    parent_id: null,
    finish_reason: null,
    execution_time: null,
    token_prompt: null,
    token_result: null,
    token_total: null,
    tags: ['t1'],
    created_at: nowIso(),
    updated_at: nowIso(),
    executor: 'me',
    doc: {
      result: [],
      parameters: { topic: words },
      prompt: [{ role: 'user', content: words }],
      config: {},
      source: {},
      interaction: { id: 'ix', name: 'Ix' },
    },
  }) as unknown as RunRow;

describe('sqlite: the run writer thread', () => {
  const cleanups: Array<() => Promise<void> | void> = [];
  after(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  /** A writer on a fresh database, its thread ready unless `lazy` (the first write then starts it). */
  async function open(options: ThreadRunWriterOptions & { file?: (dir: string) => string; lazy?: boolean } = {}) {
    const dir = mkdtempSync(join(tmpdir(), 'orrery-rwt-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const opened = await openDatabase({ dataDir: dir });
    cleanups.push(() => opened.db.destroy());
    const writer = new ThreadRunWriter(options.file?.(dir) ?? opened.file!, opened.db, opened.dialect, options);
    cleanups.push(() => writer.close());
    if (!options.lazy) await writer.started();
    const find = async (q: string) =>
      (
        await findRuns(
          opened.db,
          opened.dialect,
          whereOf(opened.dialect, SCOPE, {}, compileRunQuery(parseLucene(q), { dialect: 'sqlite' })),
          100,
          0,
        )
      ).map((r) => r.id);
    return { ...opened, writer, find };
  }

  const workerOf = (writer: ThreadRunWriter) => (writer as unknown as { worker: Worker | undefined }).worker;
  /** Counts the writes that go through the main connection (the writer's single-core path). */
  const countLocal = (writer: ThreadRunWriter) => {
    const local = (writer as unknown as { local: { run: (op: unknown) => Promise<boolean> } }).local;
    const run = local.run.bind(local);
    const counted = { n: 0 };
    local.run = (op) => (counted.n++, run(op));
    return counted;
  };

  it('starts no thread before the first write, which goes through the main connection while the thread loads', async () => {
    const { db, dialect, writer, find } = await open({ lazy: true });
    assert.equal(workerOf(writer), undefined, 'no thread at start (issue 22: an idle server holds none)');
    const local = countLocal(writer);
    const first = runRow('first');
    await writer.insert(first, []);
    assert.ok(await getRun(db, dialect, SCOPE, first.id), 'committed once insert resolves');
    assert.equal(local.n, 1, 'written through the main connection');
    // Prepared for the thread, without its search fields: the main connection computes them.
    assert.deepEqual(await find('parameters.topic:first'), [first.id]);
    assert.ok(workerOf(writer), 'the first write started the thread');
    await writer.started();
    const second = runRow('second');
    await writer.insert(second, []);
    assert.deepEqual(await find('parameters.topic:second'), [second.id], 'the thread derived its search fields');
    assert.ok(await writer.update(second.id, { status: 'completed', updated_at: nowIso(), executor: null }));
    assert.equal(local.n, 1, 'once the thread is ready, writes go to it');
    assert.equal((await getRun(db, dialect, SCOPE, second.id))?.status, 'completed');
  });

  it('ends the thread when no run was written for its idle time, and starts another for the next write', async () => {
    const { db, dialect, writer } = await open({ idleEndMs: 150 });
    await writer.insert(runRow('before'), []);
    const first = workerOf(writer)!;
    const exited = new Promise<number>((r) => first.once('exit', r));
    assert.equal(
      await Promise.race([exited, new Promise((r) => setTimeout(() => r('still running'), 10_000))]),
      0,
      'the idle thread ended on its own',
    );
    assert.equal(workerOf(writer), undefined);
    const after = runRow('after');
    await writer.insert(after, []);
    assert.ok(await getRun(db, dialect, SCOPE, after.id));
    assert.ok(workerOf(writer) && workerOf(writer) !== first, 'the next write started another thread');
    await writer.started();
  });

  it('a thread that cannot start leaves the writes on the main connection and is not tried again at once', async () => {
    const { db, dialect, writer } = await open({ file: (dir) => join(dir, 'no such folder', 'orrery.db'), lazy: true });
    const local = countLocal(writer);
    const started = writer.started();
    const runs = [runRow('one'), runRow('two')];
    await writer.insert(runs[0], []);
    await assert.rejects(started, /run writer thread stopped .* before it was ready/);
    await writer.insert(runs[1], []);
    for (const r of runs) assert.ok(await getRun(db, dialect, SCOPE, r.id));
    assert.equal(local.n, 2);
    assert.equal(workerOf(writer), undefined, 'no new thread within the back-off');
    await assert.rejects(writer.started(), /could not start/);
  });

  it('a wait for a thread still loading ends when the writer closes (it never hangs)', async () => {
    const { writer } = await open({ lazy: true });
    const waited = writer.started().then(
      () => 'ready',
      (err: Error) => err.message,
    );
    await writer.close(); // at once: the thread takes a few hundred ms to load
    const outcome = await Promise.race([waited, new Promise((r) => setTimeout(() => r('still waiting'), 10_000))]);
    assert.match(String(outcome), /^(ready|the run writer is closed.*)$/);
  });

  it('commits inserts and updates with their search data before they resolve', async () => {
    const { db, dialect, writer, find } = await open();
    const runs = Array.from({ length: 40 }, (_, i) => runRow(`word${i} orbit`));
    await Promise.all(runs.map((r) => writer.insert(r, ['t1'])));
    for (const r of runs)
      assert.equal(
        (await getRun(db, dialect, SCOPE, r.id))?.status,
        'processing',
        'the row exists once insert resolves',
      );
    assert.equal((await find('tags:t1')).length, 40);
    assert.deepEqual(await find('orbit'), [], 'no full text before a run ends');

    const ended = await Promise.all(
      runs.map((r) =>
        writer.update(r.id, {
          status: 'completed',
          updated_at: nowIso(),
          executor: null,
          doc: { ...(r.doc as object), result: [{ type: 'text', value: 'answer' }] } as never,
        }),
      ),
    );
    assert.ok(ended.every(Boolean));
    assert.equal((await getRun(db, dialect, SCOPE, runs[7].id))?.status, 'completed');
    assert.deepEqual(await find('word7'), [runs[7].id]);
    assert.equal((await find('answer')).length, 40);
  });

  it('writes what the Kysely path writes: every column, tag and full-text row', async () => {
    // The thread runs its own statements (runs/sqlite-run-writes.ts); RunWriter runs Kysely's. The
    // same writes, through each into its own database, must leave the same rows.
    const a = await open();
    const b = await open();
    const kysely = new RunWriter(b.db, b.dialect);
    const runs = Array.from(
      { length: 12 },
      (_, i) =>
        ({
          ...runRow(`word${i} comet`),
          ...(i % 3 === 0 ? { doc: { ...(runRow('x').doc as object), ttl: 3600 } } : {}),
        }) as RunRow,
    );
    runs[5] = { ...runs[5], status: 'completed', parent_id: runs[4].id } as RunRow; // inserted already ended: full text at once
    for (const w of [a.writer, kysely]) {
      const ended = await Promise.all(runs.map((r, i) => w.insert(r, i % 2 ? ['t1', `n${i}`] : [])));
      assert.equal(ended.length, runs.length);
      const results = await Promise.all([
        ...runs.slice(0, 8).map((r, i) =>
          w.update(
            r.id,
            {
              status: i === 2 ? 'failed' : 'completed',
              updated_at: '2026-01-01T00:00:00.000Z',
              executor: null,
              finish_reason: 'stop',
              token_prompt: 3,
              token_result: i,
              token_total: 3 + i,
              doc: {
                ...(r.doc as object),
                result: [{ type: 'text', value: `answer${i}` }],
                cost: { total: 0.5 * i },
              } as never,
            },
            i === 7 ? 'created' : undefined,
          ),
        ),
        // A patch (no document): a claim that holds. An undefined value leaves its column as it is (as Kysely).
        w.update(runs[9].id, { updated_at: '2026-01-02T00:00:00.000Z', model_id: undefined }, 'processing'),
        w.update(runs[10].id, { updated_at: '2026-01-02T00:00:00.000Z' }, 'created'), // a claim on a run that moved on
        w.update(newId(), { updated_at: '2026-01-02T00:00:00.000Z' }), // no such run
      ]);
      assert.deepEqual(results, [true, true, true, true, true, true, true, false, true, false, false]);
      // A new document without a status (an evaluation): full text only if the stored run has ended.
      assert.equal(
        await w.update(runs[0].id, {
          doc: { ...(runs[0].doc as object), result: [{ type: 'text', value: 'evaluated' }] } as never,
        }),
        true,
      );
      assert.equal(
        await w.update(runs[11].id, {
          doc: { ...(runs[11].doc as object), result: [{ type: 'text', value: 'pending' }] } as never,
        }),
        true,
      );
    }
    const dump = async (o: typeof a) => ({
      runs: (await sql`SELECT * FROM runs ORDER BY id`.execute(o.db)).rows,
      tags: (await sql`SELECT * FROM run_tags ORDER BY run_id, tag`.execute(o.db)).rows,
      fts: (await sql`SELECT term, col, doc, offset FROM runs_fts_instances ORDER BY doc, col, offset`.execute(o.db))
        .rows,
    });
    const [viaThread, viaKysely] = [await dump(a), await dump(b)];
    assert.equal(viaThread.runs.length, 12);
    assert.ok(viaThread.fts.length > 0);
    assert.deepEqual(viaThread, viaKysely);
    assert.deepEqual(await a.find('answer3'), [runs[3].id]);
    assert.deepEqual(await a.find('word5'), [runs[5].id]);
    assert.deepEqual(await a.find('evaluated'), [runs[0].id]);
    assert.deepEqual(await a.find('pending'), []);
  });

  for (const via of ['the thread', 'RunWriter (Kysely, the HTTP thread)'] as const) {
    it(`keeps the order of full-text changes within a batch, through ${via}: the last text of a run is the one found`, async () => {
      // Both write a batch's full text after its other statements (sqlite-run-writes.ts,
      // search-index.ts fullTextLast): a run inserted ended, then given a new document twice in
      // the same transaction, must end up with one full-text row, the last one.
      const o = await open();
      const writer = via === 'the thread' ? o.writer : new RunWriter(o.db, o.dialect);
      const run = { ...runRow('first'), status: 'completed' } as RunRow;
      const withResult = (r: RunRow, value: string) => ({
        doc: { ...(r.doc as object), result: [{ type: 'text', value }] } as never,
      });
      const other = runRow('bystander');
      const writes = [
        writer.insert(run, []),
        writer.insert(other, []),
        writer.update(run.id, withResult(run, 'second')),
        writer.update(other.id, { status: 'completed', updated_at: nowIso(), ...withResult(other, 'elsewhere') }),
        writer.update(run.id, withResult(run, 'third')),
      ];
      assert.deepEqual(await Promise.all(writes), [undefined, undefined, true, true, true]);
      assert.deepEqual(await o.find('third'), [run.id]);
      assert.deepEqual(await o.find('second'), []);
      assert.deepEqual(await o.find('elsewhere'), [other.id]);
      const rows = await sql<{
        n: number;
      }>`SELECT count(DISTINCT doc) AS n FROM runs_fts_instances WHERE term = 'first'`.execute(o.db);
      assert.equal(Number(rows.rows[0].n), 1, "the parameter word is in the run's row alone");
    });
  }

  it('numbers a batch of inserts from one read of the largest search_rowid, in one transaction', async () => {
    // The thread's statements read MAX(search_rowid) once per transaction (sqlite-run-writes.ts).
    // Numbers given twice would break the unique index, and the batch would then be written one
    // write per transaction, each reading the maximum again: counted here.
    const o = await open();
    const handle = openSqliteHandle(o.file!, { eventLoop: false });
    cleanups.push(() => {
      handle.close();
    });
    let maxReads = 0;
    const prepare = handle.prepare.bind(handle);
    handle.prepare = ((text: string) => {
      const statement = prepare(text);
      if (text.includes('MAX(search_rowid)')) {
        const get = statement.get.bind(statement);
        statement.get = ((...args: unknown[]) => (maxReads++, get(...args))) as typeof statement.get;
      }
      return statement;
    }) as typeof handle.prepare;
    const writes = new SqliteRunWrites(handle);
    const first = Array.from({ length: 5 }, (_, i) => runRow(`batch${i}`));
    assert.deepEqual(
      writes.applyAll(first.map((r) => prepareRunInsert(o.dialect, r, ['t1', `n${r.id}`]))),
      first.map(() => ({ value: true })),
    );
    assert.equal(maxReads, 1);
    const second = [runRow('later')];
    assert.deepEqual(
      writes.applyAll([
        ...second.map((r) => prepareRunInsert(o.dialect, r, [])),
        prepareRunUpdate(o.dialect, first[0].id, { status: 'completed', updated_at: nowIso() }),
      ]),
      [{ value: true }, { value: true }],
    );
    assert.equal(maxReads, 2);
    const rows = handle.prepare('SELECT id, search_rowid FROM runs ORDER BY search_rowid').all() as Array<{
      id: string;
      search_rowid: number;
    }>;
    assert.deepEqual(
      rows.map((r) => r.id),
      [...first, ...second].map((r) => r.id),
    );
    assert.deepEqual(
      rows.map((r) => r.search_rowid),
      rows.map((_, i) => rows[0].search_rowid + i),
    );
    const tagRowids = handle
      .prepare('SELECT DISTINCT t.search_rowid = r.search_rowid AS same FROM run_tags t JOIN runs r ON r.id = t.run_id')
      .all();
    assert.deepEqual(tagRowids, [{ same: 1 }]);
  });

  it("ends a run at the row it inserted, and by its id once another connection has moved the run's row", async () => {
    // The thread updates a run it inserted by rowid (sqlite-run-writes.ts, inFlight): here the run
    // is deleted and written again by the main connection, and its old rowid given to another run.
    const o = await open();
    const handle = openSqliteHandle(o.file!, { eventLoop: false });
    cleanups.push(() => {
      handle.close();
    });
    const writes = new SqliteRunWrites(handle);
    const [kept, moved] = [runRow('kept'), runRow('moved')];
    assert.deepEqual(writes.applyAll([prepareRunInsert(o.dialect, kept, []), prepareRunInsert(o.dialect, moved, [])]), [
      { value: true },
      { value: true },
    ]);
    const before = handle.prepare('SELECT rowid AS r, search_rowid AS s FROM runs WHERE id = ?').get(moved.id) as {
      r: number;
      s: number;
    };
    await sql`DELETE FROM runs WHERE id = ${moved.id}`.execute(o.db);
    const other = runRow('other');
    await new RunWriter(o.db, o.dialect).insert(other, []);
    await new RunWriter(o.db, o.dialect).insert(moved, []);
    assert.equal(
      (handle.prepare('SELECT id FROM runs WHERE rowid = ?').get(before.r) as { id: string }).id,
      other.id,
      'the old rowid is now another run',
    );
    const end = (r: RunRow, word: string) =>
      prepareRunUpdate(o.dialect, r.id, {
        status: 'completed',
        updated_at: nowIso(),
        executor: null,
        doc: { ...(r.doc as object), result: [{ type: 'text', value: word }] } as never,
      });
    assert.deepEqual(writes.applyAll([end(kept, 'keptanswer'), end(moved, 'movedanswer')]), [
      { value: true },
      { value: true },
    ]);
    const status = (id: string) =>
      (handle.prepare('SELECT status FROM runs WHERE id = ?').get(id) as { status: string }).status;
    assert.deepEqual([status(kept.id), status(moved.id), status(other.id)], ['completed', 'completed', 'processing']);
    assert.deepEqual(await o.find('keptanswer'), [kept.id]);
    assert.deepEqual(
      await o.find('movedanswer'),
      [moved.id],
      "the full text is at the run's search_rowid now, not the one it was inserted with",
    );
  });

  it('answers false to a claim on a run that moved on, and to an update of no run', async () => {
    const { writer } = await open();
    const run = runRow('claim');
    await writer.insert(run, []);
    assert.equal(await writer.update(run.id, { status: 'processing', updated_at: nowIso() }, 'created'), false);
    assert.equal(await writer.update(newId(), { updated_at: nowIso() }), false);
    assert.equal(await writer.update(run.id, { updated_at: nowIso() }, 'processing'), true);
  });

  it('fails only the write that fails, with the database message, and commits the others of its batch', async () => {
    const { db, dialect, writer } = await open();
    const first = runRow('dup');
    await writer.insert(first, []);
    const others = [runRow('a'), runRow('b')];
    const settled = await Promise.allSettled([
      writer.insert(others[0], []),
      writer.insert({ ...first }, []),
      writer.insert(others[1], []),
    ]);
    assert.equal(settled[0].status, 'fulfilled');
    assert.equal(settled[2].status, 'fulfilled');
    assert.equal(settled[1].status, 'rejected');
    const err = (settled[1] as PromiseRejectedResult).reason as Error & { code?: string };
    assert.match(err.message, /UNIQUE constraint failed: runs\.id/);
    assert.equal(err.code, 'SQLITE_CONSTRAINT_PRIMARYKEY');
    for (const r of others) assert.ok(await getRun(db, dialect, SCOPE, r.id));
  });

  it('fails the writes a stopped thread held, then starts a new thread for the next', async () => {
    const { db, dialect, writer } = await open();
    const thread = workerOf(writer)!;
    const lost = writer.insert(runRow('lost'), []);
    await thread.terminate();
    await assert.rejects(lost, /run writer thread stopped/);
    const next = runRow('next');
    await writer.insert(next, []);
    assert.ok(await getRun(db, dialect, SCOPE, next.id));
    assert.ok(workerOf(writer) && workerOf(writer) !== thread, 'the next write started another thread');
  });

  it('a stopped thread fails only the writes it held, not those given to its replacement', async () => {
    const { db, dialect, writer } = await open();
    const old = workerOf(writer)!;
    old.emit('error', new Error('boom')); // as a thread that throws: 'error' now, 'exit' a little later
    await writer.started(); // its replacement
    assert.notEqual(workerOf(writer), old);
    const next = runRow('next');
    const written = writer.insert(next, []);
    await new Promise((r) => setImmediate(r)); // handed to the new thread
    await old.terminate(); // the old thread's 'exit'
    await written;
    assert.ok(await getRun(db, dialect, SCOPE, next.id));
  });

  it('runs with a bounded young generation and still writes documents larger than it (issue 22)', async () => {
    // runs/run-writer-thread.ts WRITER_YOUNG_GENERATION_MB, Node's resourceLimits: a load must not
    // leave the thread holding V8's largest semi-spaces until the memory reducer runs.
    const { db, dialect, writer } = await open();
    const worker = workerOf(writer)!;
    assert.equal(worker.resourceLimits?.maxYoungGenerationSizeMb, WRITER_YOUNG_GENERATION_MB);
    // A prompt of 3 × the whole young generation: V8 puts it in its large-object space.
    const text = 'orbit '.repeat(Math.ceil((3 * WRITER_YOUNG_GENERATION_MB * 1048576) / 6));
    const plain = runRow('big');
    const big = { ...plain, doc: { ...(plain.doc as object), prompt: [{ role: 'user', content: text }] } } as RunRow;
    const small = Array.from({ length: 500 }, (_, i) => runRow(`word${i}`));
    await Promise.all([big, ...small].map((r) => writer.insert(r, ['t1'])));
    const ended = await Promise.all(
      [big, ...small].map((r) =>
        writer.update(r.id, {
          status: 'completed',
          updated_at: nowIso(),
          executor: null,
          doc: { ...(r.doc as object), result: [{ type: 'text', value: 'answer' }] } as never,
        }),
      ),
    );
    assert.ok(ended.every(Boolean));
    const stored = await getRun(db, dialect, SCOPE, big.id);
    assert.equal(stored?.status, 'completed');
    assert.equal((stored?.doc as { prompt: Array<{ content: string }> }).prompt[0].content.length, text.length);
    assert.equal(workerOf(writer), worker, 'the same thread did all of it (it did not stop)');
  });

  it('close() waits for every queued write', async () => {
    const { db, dialect, writer } = await open();
    const runs = Array.from({ length: 20 }, () => runRow('closing'));
    const writes = runs.map((r) => writer.insert(r, []));
    await writer.close();
    await Promise.all(writes);
    for (const r of runs) assert.ok(await getRun(db, dialect, SCOPE, r.id));
    await assert.rejects(writer.insert(runRow('late'), []), /run writer is closed/);
  });
});
