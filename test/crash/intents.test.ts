/**
 * Issue 17: on SQLite, a lone blocking run's provider call starts while its `processing` row is
 * still being committed, and it is answered while its end is being committed; both are in the
 * intent log (runs/run-intents.ts). These tests hold SQLite's write lock from the test, so that
 * nothing commits, and kill the server (SIGKILL): a new process restores a run lost in its provider
 * call as `failed` (executor_lost) with what was sent, a run answered as it was answered (before
 * it fails the dead process's `processing` rows, and never while that run's entry cannot be
 * stored), and does not bring back a run deleted after its row committed, nor one whose project
 * was deleted. Reads of the server wait for a run it answered before storing it.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { TEST_DIALECTS } from '../support/server.ts';
import { startServerProcess, until, type ServerProcess } from '../support/processes.ts';
import { startOpenAIWireServer, type WireServer } from '../support/openai-wire-server.ts';
import { readIntentLog } from '../../src/runs/run-intents.ts';
import { usableCores } from '../../src/util/cpu-quota.ts';

const KEY = `sk-${'intent'.repeat(7)}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A request with the admin key, or with `key`. */
const api = async (server: ServerProcess, method: string, path: string, body?: unknown, key = KEY) => {
  const r = await fetch(`${server.url}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: r.status, body: (await r.json()) as any };
};

const logsIn = (dataDir: string) => {
  const dir = join(dataDir, 'orrery.db-intents');
  return existsSync(dir) ? readdirSync(dir).map((f) => join(dir, f)) : [];
};

/** A server whose run writer thread is ready: its runs are recorded in the intent log (seen in the log folder). */
async function startRecording(dataDir: string, wire: WireServer, env: Record<string, string> = {}) {
  const server = await startServerProcess({
    ORRERY_DATA_DIR: dataDir,
    ORRERY_ADMIN_KEY: KEY,
    ORRERY_SECRET: 'intent-test-secret-0123456789',
    // No heartbeat while the test holds the database's write lock (one at the start, the next in 100 s).
    ORRERY_REPLICA_TIMEOUT: '600',
    ...env,
  });
  const environment = (
    await api(server, 'POST', '/environments', {
      name: 'wire',
      provider: 'openai_compatible',
      endpoint_url: wire.url,
      default_model: 'm',
    })
  ).body.id;
  const ix = (
    await api(server, 'POST', '/interactions', {
      name: 'Topic',
      status: 'draft',
      environment,
      prompts: [
        {
          type: 'template',
          template: { role: 'user', content_type: 'handlebars', content: 'Tell me about {{topic}}' },
        },
      ],
    })
  ).body.id;
  const done: string[] = [];
  await until('the run writer thread to record runs ahead', async () => {
    const r = await api(server, 'POST', '/runs', { interaction: ix, data: { topic: 'warm-up' } });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    done.push(r.body.id);
    return logsIn(dataDir).length ? true : undefined;
  });
  return { server, ix, done };
}

interface Scenario {
  dataDir: string;
  wire: WireServer;
  started: Awaited<ReturnType<typeof startRecording>>;
  /**
   * Waits until the runs before are stored (every entry settled): a run recorded ahead is one that
   * finds the writer with nothing in hand.
   */
  settled(): Promise<void>;
  /** Takes SQLite's write lock from this process (BEGIN IMMEDIATE), once settled(): the server's writer thread cannot commit. */
  lock(): Promise<Database.Database>;
  /** A second server on the same data, with a short replica timeout: it sweeps the first one's log soon. */
  recover(): Promise<ServerProcess>;
}

/**
 * A data folder, a wire server and a recording server (`env`: more of its settings) for `fn`;
 * everything it started is ended after, whatever happened.
 */
async function scenario(fn: (s: Scenario) => Promise<void>, env: Record<string, string> = {}): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'orrery-intents-'));
  const wire = await startOpenAIWireServer({ apiKey: null, text: 'An answer.' });
  const servers: ServerProcess[] = [];
  const locks: Database.Database[] = [];
  try {
    const started = await startRecording(dataDir, wire, env);
    servers.push(started.server);
    const settled = async () => {
      await until('the runs before to be stored', async () => {
        for (const log of logsIn(dataDir)) if ((await readIntentLog(log)).length) return undefined;
        return true;
      });
    };
    await fn({
      dataDir,
      wire,
      started,
      settled,
      lock: async () => {
        await settled();
        const db = new Database(join(dataDir, 'orrery.db'));
        db.exec('BEGIN IMMEDIATE');
        locks.push(db);
        return db;
      },
      recover: async () => {
        const server = await startServerProcess({
          ORRERY_DATA_DIR: dataDir,
          ORRERY_ADMIN_KEY: KEY,
          ORRERY_SECRET: 'intent-test-secret-0123456789',
          ORRERY_REPLICA_TIMEOUT: '2',
        });
        servers.push(server);
        return server;
      },
    });
  } finally {
    for (const db of locks) if (db.open) db.close();
    for (const server of servers) await server.kill();
    await wire.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Ends what lock() took, and lets the writer thread commit again. */
const release = (db: Database.Database) => {
  db.exec('ROLLBACK');
  db.close();
};

// The log exists only for SQLite with the run writer's thread (a second core).
const run = TEST_DIALECTS.includes('sqlite') && usableCores() > 1;

describe(
  'sqlite: a blocking run recorded ahead of its commit, and a crash',
  { skip: !run && 'needs SQLite and two cores' },
  () => {
    it('restores a run whose provider call started before its row committed as failed, with what was sent', () =>
      scenario(async ({ dataDir, wire, started, lock: takeLock, recover }) => {
        const first = started.server;
        // Hold the write lock: the writer thread cannot commit the next run's row.
        const lock = await takeLock();
        const rowsBefore = (lock.prepare('SELECT count(*) AS n FROM runs').get() as { n: number }).n;
        wire.options.hang = true;
        const asked = wire.requests.length;
        const pending = fetch(`${first.url}/api/v1/runs`, {
          method: 'POST',
          headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
          body: JSON.stringify({ interaction: started.ix, data: { topic: 'lost in flight' }, tags: ['crash'] }),
        }).catch(() => undefined);
        await until('the provider call', () => (wire.requests.length > asked ? true : undefined), 10_000);
        assert.match(JSON.stringify(wire.requests.at(-1)!.body), /lost in flight/);
        assert.equal(
          (lock.prepare('SELECT count(*) AS n FROM runs').get() as { n: number }).n,
          rowsBefore,
          'the row is not committed',
        );
        await first.kill();
        await pending;
        release(lock);

        const logs = logsIn(dataDir);
        assert.equal(logs.length, 1);
        const entries = await readIntentLog(logs[0]);
        assert.equal(entries.length, 1, 'the run in flight, and none of the runs stored before it');
        const lost = entries[0].row.id;

        const second = await recover();
        const restored = await until('the lost run', async () => {
          const r = await api(second, 'GET', `/runs/${lost}`);
          return r.status === 200 ? r.body : undefined;
        });
        assert.equal(restored.status, 'failed');
        assert.equal(restored.error.code, 'executor_lost');
        assert.deepEqual(restored.parameters, { topic: 'lost in flight' });
        assert.equal(restored.interaction.id, started.ix);
        assert.deepEqual(restored.tags, ['crash']);
        await until("the dead process's log to be removed", () => (logsIn(dataDir).length === 0 ? true : undefined));
        // The runs answered before the crash are as they were, and the lost one is searchable.
        for (const id of started.done) assert.equal((await api(second, 'GET', `/runs/${id}`)).body.status, 'completed');
        const found = await api(second, 'GET', '/runs?status=failed');
        assert.deepEqual(
          found.body.map((r: { id: string }) => r.id),
          [lost],
        );
      }));

    it('answers a run before it is stored, makes reads wait for it, and stores it whole when its insert failed', () =>
      scenario(async ({ dataDir, started, lock: takeLock }) => {
        const server = started.server;
        const lock = await takeLock();
        const r = await api(server, 'POST', '/runs', { interaction: started.ix, data: { topic: 'stored late' } });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.equal(r.body.status, 'completed', 'answered while the database is locked: its end is in the intent log');
        let read: Awaited<ReturnType<typeof api>> | undefined;
        const reading = api(server, 'GET', `/runs/${r.body.id}`).then((x) => (read = x));
        // The writer thread waits LOCK_WAIT_MS (5 s) for the lock, then once more for the insert alone:
        // the insert has failed by the time the lock goes.
        await sleep(12_000);
        assert.equal(read, undefined, 'a read waits until the run is stored');
        release(lock);
        const stored = await reading;
        assert.equal(stored.status, 200);
        assert.equal(stored.body.status, 'completed');
        assert.deepEqual(stored.body.parameters, { topic: 'stored late' });
        assert.equal(stored.body.result[0].value, 'An answer.');
        assert.deepEqual(await readIntentLog(logsIn(dataDir)[0]), [], 'its entries are settled');
        await server.stop();
        assert.deepEqual(logsIn(dataDir), [], 'a process that stops with every entry settled removes its log');
      }));

    it('restores a run answered before it was stored as it was answered', () =>
      scenario(async ({ dataDir, started, lock: takeLock, recover }) => {
        const first = started.server;
        const lock = await takeLock();
        const count = () => (lock.prepare('SELECT count(*) AS n FROM runs').get() as { n: number }).n;
        const rowsBefore = count();
        const answer = await api(first, 'POST', '/runs', {
          interaction: started.ix,
          data: { topic: 'answered first' },
          tags: ['early'],
        });
        assert.equal(answer.status, 200, JSON.stringify(answer.body));
        assert.equal(answer.body.status, 'completed');
        assert.equal(count(), rowsBefore, 'answered with no row committed');
        const id = answer.body.id as string;
        assert.deepEqual(
          (await readIntentLog(logsIn(dataDir)[0])).map((e) => [e.kind, e.row.id, e.row.status]),
          [
            ['start', id, 'processing'],
            ['end', id, 'completed'],
          ],
        );
        await first.kill();
        release(lock);

        const second = await recover();
        const restored = await until('the answered run', async () => {
          const r = await api(second, 'GET', `/runs/${id}`);
          return r.status === 200 ? r.body : undefined;
        });
        assert.equal(restored.status, 'completed');
        assert.equal(restored.error, undefined);
        assert.deepEqual(restored.result, answer.body.result);
        assert.deepEqual(restored.parameters, { topic: 'answered first' });
        assert.deepEqual(restored.tags, ['early']);
        assert.deepEqual(restored.token_use, answer.body.token_use);
        await until("the dead process's log to be removed", () => (logsIn(dataDir).length === 0 ? true : undefined));
        const found = await api(second, 'POST', '/runs/search', { query: 'tags:early' });
        assert.deepEqual(
          found.body.map((x: { id: string }) => x.id),
          [id],
          'searchable',
        );
      }));

    it('restores a run answered after its insert committed, before its end did, as it was answered', () =>
      scenario(async ({ dataDir, started, settled, recover }) => {
        const first = started.server;
        await settled();
        // Storage that takes a run's insert and refuses its end: every update of a run fails.
        const db = new Database(join(dataDir, 'orrery.db'));
        let answer: Awaited<ReturnType<typeof api>>;
        try {
          db.exec(
            "CREATE TRIGGER refuse_run_updates BEFORE UPDATE ON runs BEGIN SELECT RAISE(ABORT, 'the disk refuses this write'); END",
          );
          answer = await api(first, 'POST', '/runs', {
            interaction: started.ix,
            data: { topic: 'half stored' },
            tags: ['half'],
          });
          assert.equal(answer.status, 200, JSON.stringify(answer.body));
          assert.equal(answer.body.status, 'completed', 'answered though its end could not be stored');
          // The answer may leave before the insert commits (both are in the log): the crash comes after it.
          const row = await until(
            'its insert to commit',
            () =>
              db.prepare('SELECT status FROM runs WHERE id = ?').get(answer.body.id) as { status: string } | undefined,
          );
          assert.equal(row.status, 'processing', 'its end is not stored');
          assert.deepEqual((await readIntentLog(logsIn(dataDir)[0])).at(-1)?.kind, 'end');
          await first.kill();
          db.exec('DROP TRIGGER refuse_run_updates');
        } finally {
          db.close();
        }

        // The dead replica's `processing` row is failed as executor_lost by the sweep unless its log is
        // read first; and while its entry cannot be stored (a trigger refuses the run's completion, not
        // its failure), the sweeps leave its row as it is.
        const db2 = new Database(join(dataDir, 'orrery.db'));
        let second: ServerProcess;
        try {
          db2.exec(
            "CREATE TRIGGER refuse_completion BEFORE UPDATE ON runs WHEN NEW.status = 'completed' BEGIN SELECT RAISE(ABORT, 'the disk refuses this write'); END",
          );
          second = await recover();
          await sleep(4_000); // sweeps every second (ORRERY_REPLICA_TIMEOUT 2)
          assert.equal(
            (db2.prepare('SELECT status FROM runs WHERE id = ?').get(answer.body.id) as { status: string }).status,
            'processing',
            'not failed while its entry waits',
          );
          assert.equal(logsIn(dataDir).length, 1, "the dead process's log stays while a run of it is not stored");
          db2.exec('DROP TRIGGER refuse_completion');
        } finally {
          db2.close();
        }
        const restored = await until('the answered run, stored', async () => {
          const r = await api(second, 'GET', `/runs/${answer.body.id}`);
          return r.body.status === 'processing' ? undefined : r.body;
        });
        assert.equal(restored.status, 'completed');
        assert.equal(restored.error, undefined);
        assert.deepEqual(restored.result, answer.body.result);
        assert.deepEqual(restored.parameters, { topic: 'half stored' });
        assert.deepEqual(restored.tags, ['half']);
        await until("the dead process's log to be removed", () => (logsIn(dataDir).length === 0 ? true : undefined));
      }));

    it('stores a run answered before its end could be stored once storage works again, never failing it', () =>
      scenario(
        async ({ dataDir, started, settled }) => {
          const server = started.server;
          await settled();
          // Storage that takes the run's insert and refuses its end: every update of a run fails.
          const db = new Database(join(dataDir, 'orrery.db'));
          try {
            db.exec(
              "CREATE TRIGGER refuse_run_updates BEFORE UPDATE ON runs BEGIN SELECT RAISE(ABORT, 'the disk refuses this write'); END",
            );
            const answer = await api(server, 'POST', '/runs', {
              interaction: started.ix,
              data: { topic: 'stored later' },
            });
            assert.equal(answer.status, 200, JSON.stringify(answer.body));
            assert.equal(answer.body.status, 'completed');
            const id = answer.body.id as string;
            // Past ORPHAN_AFTER_MS (5 s), over several lost-run sweeps (every 2 s here). Once storage works
            // again, a processing run of this replica that it no longer executes is failed as
            // storage_error by the next sweep; this one must be stored as it was answered instead.
            await sleep(8_000);
            const meanwhile = await api(server, 'GET', `/runs/${id}`);
            assert.equal(meanwhile.body.status, 'processing', 'stored as far as storage allows');
            assert.deepEqual(
              (await readIntentLog(logsIn(dataDir)[0])).at(-1)?.row.id,
              id,
              'its end is still in the intent log',
            );
            db.exec('DROP TRIGGER refuse_run_updates');
            const stored = await until('the run stored as it was answered', async () => {
              const r = await api(server, 'GET', `/runs/${id}`);
              return r.body.status === 'processing' ? undefined : r.body;
            });
            assert.equal(stored.status, 'completed');
            assert.deepEqual(stored.result, answer.body.result);
            assert.deepEqual(await readIntentLog(logsIn(dataDir)[0]), [], 'its entries are settled');
          } finally {
            db.close();
          }
        },
        { ORRERY_REPLICA_TIMEOUT: '4' },
      ));

    it('does not bring a run back into a project deleted before the sweep', () =>
      scenario(async ({ dataDir, wire, started, settled, recover }) => {
        const first = started.server;
        // A second project, with a key, an environment and an interaction of its own.
        const project = (await api(first, 'POST', '/projects', { name: 'Doomed' })).body.id as string;
        const key = (await api(first, 'POST', '/apikeys', { name: 'doomed', role: 'developer', project })).body
          .value as string;
        const as = (method: string, path: string, body: unknown) => api(first, method, path, body, key);
        const environment = (
          await as('POST', '/environments', {
            name: 'wire',
            provider: 'openai_compatible',
            endpoint_url: wire.url,
            default_model: 'm',
          })
        ).body.id;
        const ix = (
          await as('POST', '/interactions', {
            name: 'Doomed topic',
            status: 'draft',
            environment,
            prompts: [
              {
                type: 'template',
                template: { role: 'user', content_type: 'handlebars', content: 'Tell me about {{topic}}' },
              },
            ],
          })
        ).body.id;
        await settled();
        const db = new Database(join(dataDir, 'orrery.db'));
        let id: string;
        try {
          // Storage that refuses that project's runs: the run is answered from the log, never stored.
          db.prepare(
            `CREATE TRIGGER refuse_doomed BEFORE INSERT ON runs WHEN NEW.project_id = '${project}' BEGIN SELECT RAISE(ABORT, 'the disk refuses this write'); END`,
          ).run();
          const answer = await as('POST', '/runs', { interaction: ix, data: { topic: 'soon gone' } });
          assert.equal(answer.status, 200, JSON.stringify(answer.body));
          assert.equal(answer.body.status, 'completed');
          id = answer.body.id;
          assert.deepEqual(
            (await readIntentLog(logsIn(dataDir)[0])).filter((e) => e.row.id === id).map((e) => e.kind),
            ['start', 'end'],
          );
          assert.equal((await api(first, 'DELETE', `/projects/${project}`)).status, 200);
          await first.kill();
          db.exec('DROP TRIGGER refuse_doomed');
        } finally {
          db.close();
        }

        await recover();
        await until("the dead process's log to be swept", () => (logsIn(dataDir).length === 0 ? true : undefined));
        const check = new Database(join(dataDir, 'orrery.db'), { readonly: true });
        try {
          assert.equal(
            (check.prepare('SELECT count(*) AS n FROM runs WHERE id = ?').get(id) as { n: number }).n,
            0,
            'not inserted into the deleted project',
          );
          assert.equal(
            (check.prepare('SELECT count(*) AS n FROM runs WHERE project_id = ?').get(project) as { n: number }).n,
            0,
          );
        } finally {
          check.close();
        }
      }));

    it('does not bring back a run deleted after its row committed', () =>
      scenario(async ({ dataDir, started, recover }) => {
        const first = started.server;
        const last = started.done.at(-1)!;
        // Its entry was the log's last one (it was recorded: the log exists, and it was the last run).
        assert.equal((await api(first, 'DELETE', `/runs/${last}`)).status, 200);
        await first.kill();
        assert.equal(logsIn(dataDir).length, 1);

        const second = await recover();
        await until("the dead process's log to be swept", () => (logsIn(dataDir).length === 0 ? true : undefined));
        assert.equal((await api(second, 'GET', `/runs/${last}`)).status, 404);
        const all = await api(second, 'GET', '/runs');
        assert.deepEqual(all.body.map((r: { id: string }) => r.id).sort(), started.done.slice(0, -1).sort());
      }));
  },
);
