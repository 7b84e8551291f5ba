/**
 * SQLite's write-ahead log is checkpointed on a thread (db/wal-checkpointer.ts), not inside the
 * commits of requests: the thread copies the log while writes go on, so the log is reused instead
 * of growing; it ends when writes stop and starts again with the next; connections checkpoint by
 * themselves only past the fallback. Through HTTP, run writes start it.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type SQLite from 'better-sqlite3';
import { FALLBACK_CHECKPOINT_PAGES, openSqliteHandle } from '../../src/db/sqlite-handle.ts';
import { WalCheckpointer } from '../../src/db/wal-checkpointer.ts';
import { TEST_DIALECTS, seedEcho, startTestServer } from '../support/server.ts';

const FAST = { everyMs: 20, idleEndMs: 300, retryAfterMs: 60_000 };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(what: string, ok: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) assert.fail(`timed out waiting until ${what}`);
    await sleep(10);
  }
}

describe('sqlite: the WAL checkpoint thread', () => {
  const cleanups: Array<() => Promise<void> | void> = [];
  after(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  function open(): { db: SQLite.Database; file: string } {
    const dir = mkdtempSync(join(tmpdir(), 'orrery-ckpt-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'orrery.db');
    const db = openSqliteHandle(file, { eventLoop: false });
    cleanups.push(() => {
      db.close();
    });
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)');
    return { db, file };
  }

  /** Frames in the log now (a PASSIVE checkpoint of our own reports it; it copies too, so read it once, last). */
  const logFrames = (db: SQLite.Database) => (db.pragma('wal_checkpoint(PASSIVE)') as Array<{ log: number }>)[0].log;
  const write = (db: SQLite.Database, n: number) => {
    const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
    for (let i = 0; i < n; i++) insert.run('x'.repeat(3000)); // a transaction each, a page or more each
  };

  it('connections checkpoint by themselves only past the fallback', () => {
    const { db } = open();
    assert.equal(db.pragma('wal_autocheckpoint', { simple: true }), FALLBACK_CHECKPOINT_PAGES);
  });

  it('copies the log while writes go on, so that the next write reuses it instead of growing it', async () => {
    const { db } = open();
    // Without the thread: 300 commits leave 300+ frames in the log, and it keeps them.
    write(db, 300);
    await sleep(200);
    write(db, 1);
    const without = logFrames(db);
    assert.ok(without >= 300, `without the thread the log holds every frame (${without})`);

    const { db: db2, file: file2 } = open();
    const ckpt = new WalCheckpointer(file2, FAST);
    cleanups.push(() => ckpt.close());
    write(db2, 300);
    ckpt.wrote();
    assert.ok(ckpt.running);
    // Its rounds copy the log until it ends, idle (a fixed wait was too short on a loaded machine).
    await until('the thread copied the log and ended', () => !ckpt.running);
    write(db2, 1); // begins at the log's start again
    const withThread = logFrames(db2);
    assert.ok(withThread < 10, `with the thread the log was reused: ${withThread} frames (${without} without)`);
    assert.equal((db2.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n, 301);
  });

  it('ends when writes stop, starts again with the next write, and not after close', async () => {
    const { db, file } = open();
    const ckpt = new WalCheckpointer(file, FAST);
    cleanups.push(() => ckpt.close());
    write(db, 5);
    ckpt.wrote();
    assert.ok(ckpt.running);
    await until('the idle thread ended', () => !ckpt.running);
    write(db, 5);
    ckpt.wrote();
    assert.ok(ckpt.running, 'a write after the end starts it again');
    await ckpt.close();
    assert.ok(!ckpt.running);
    ckpt.wrote();
    assert.ok(!ckpt.running, 'closed: a write starts nothing');
  });

  it('a thread that fails is reported, and the next writes start no other for a while', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'orrery-ckpt-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const ckpt = new WalCheckpointer(join(dir, 'no such folder', 'orrery.db'), FAST); // the thread cannot open it
    cleanups.push(() => ckpt.close());
    const errors: string[] = [];
    ckpt.onError = (m) => errors.push(m);
    ckpt.wrote();
    await until('the failed thread ended', () => !ckpt.running);
    assert.equal(errors.length, 1, `reported once: ${JSON.stringify(errors)}`);
    for (let i = 0; i < 20; i++) ckpt.wrote();
    assert.ok(!ckpt.running, 'writes after a failure start no thread');
    await sleep(100);
    assert.equal(errors.length, 1);
  });
});

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: run writes and the checkpoint thread`, () => {
    it(dialect === 'sqlite' ? 'blocking runs start it' : 'PostgreSQL has none', async () => {
      const srv = await startTestServer(dialect);
      try {
        const checkpointer = srv.orrery.services.checkpointer;
        if (dialect === 'postgres') return assert.equal(checkpointer, undefined);
        assert.ok(checkpointer && !checkpointer.running, 'an idle server has no checkpoint thread');
        const { interaction } = await seedEcho(srv);
        for (let i = 0; i < 5; i++) {
          const r = await srv.api('POST', '/api/v1/runs', { interaction: interaction.id, data: { text: `run ${i}` } });
          assert.equal(r.status, 200);
        }
        assert.ok(checkpointer.running, 'run writes started it');
      } finally {
        await srv.close();
      }
    });
  });
}
