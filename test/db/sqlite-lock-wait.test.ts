/**
 * The main thread's SQLite connection waits for a write lock that another connection holds
 * without blocking the event loop, and gives up with SQLITE_BUSY after the wait it is given.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { openDatabase } from '../../src/db/open.ts';
import { whenUnlocked } from '../../src/db/sqlite-lock-wait.ts';
import { nowIso } from '../../src/db/ids.ts';

describe('sqlite: waiting for the write lock on the main thread', () => {
  const cleanups: Array<() => Promise<void> | void> = [];
  after(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  async function open() {
    const dir = mkdtempSync(join(tmpdir(), 'orrery-lock-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const opened = await openDatabase({ dataDir: dir });
    cleanups.push(() => opened.db.destroy());
    // The other writer (in the server: the run writer's thread), here on this thread.
    const other = new SQLite(opened.file!);
    cleanups.push(() => {
      other.close();
    });
    return { ...opened, other };
  }

  // With SQLite's own busy handler the writes would block this thread, which holds the other lock: a timeout, not a hang.
  it(
    'a transaction and a plain write wait with timers while another connection holds the lock',
    { timeout: 15_000 },
    async () => {
      const { db, other } = await open();
      other.prepare('BEGIN IMMEDIATE').run();
      let ticks = 0;
      const ticker = setInterval(() => ticks++, 5);
      setTimeout(() => other.prepare('COMMIT').run(), 150);
      const started = performance.now();
      await Promise.all([
        db
          .transaction()
          .execute((trx) =>
            trx
              .insertInto('replicas')
              .values({ id: 'a', host: 'h', started_at: nowIso(), heartbeat_at: nowIso() })
              .execute(),
          ),
        db
          .insertInto('replicas')
          .values({ id: 'b', host: 'h', started_at: nowIso(), heartbeat_at: nowIso() })
          .execute(),
      ]);
      clearInterval(ticker);
      assert.ok(performance.now() - started >= 140, 'both writes waited for the lock');
      // A thread held by SQLite's busy handler would tick at most once, after the lock went.
      assert.ok(ticks >= 2, `the event loop kept turning while they waited (${ticks} ticks)`);
      const ids = (await db.selectFrom('replicas').select('id').orderBy('id').execute()).map((r) => r.id);
      assert.deepEqual(ids, ['a', 'b']);
    },
  );

  it('gives up with SQLITE_BUSY when the lock is not released in time, and tries until then', async () => {
    const { file, other } = await open();
    other.prepare('BEGIN IMMEDIATE').run();
    const third = new SQLite(file!, { timeout: 0 });
    let tries = 0;
    const insert = async () => {
      tries++;
      third.prepare(`INSERT INTO replicas (id, host, started_at, heartbeat_at) VALUES ('c', 'h', 'x', 'x')`).run();
      return { rows: [] };
    };
    try {
      const started = performance.now();
      await assert.rejects(whenUnlocked(insert, 100), (err: { code?: string }) => err.code === 'SQLITE_BUSY');
      assert.ok(performance.now() - started >= 100);
      // How often depends on how busy the machine is: more than once, since it gave up only at the deadline.
      assert.ok(tries >= 2, `tried again while it waited (${tries} tries)`);
    } finally {
      other.prepare('ROLLBACK').run();
      third.close();
    }
  });
});
