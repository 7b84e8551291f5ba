/**
 * The crash test of async runs: the server is killed (SIGKILL) while async runs are queued and
 * running; a new process on the same data completes every one of them, none twice: a run that was
 * queued calls its provider once, a run in its provider call at the crash at most twice.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { TEST_DIALECTS, createPgDatabase } from '../support/server.ts';
import { startServerProcess, until, type ServerProcess } from '../support/processes.ts';

const KEY = `sk-${'async'.repeat(8)}`;
const RUNS = 8;

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: kill -9 with async runs queued and running`, () => {
    it('completes every async run after a restart, none twice', async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'orrery-async-crash-'));
      const pgdb = dialect === 'postgres' ? await createPgDatabase({ migrated: true }) : undefined;
      const env: Record<string, string> = {
        ORRERY_DATA_DIR: dataDir,
        ORRERY_ADMIN_KEY: KEY,
        ORRERY_SECRET: 'crash-test-secret-0123456789',
        ORRERY_ASYNC_CONCURRENCY: '3', // one project takes two slots of three
        ...(pgdb ? { ORRERY_DATABASE_URL: pgdb.url } : {}),
      };
      let server: ServerProcess | undefined;
      try {
        server = await startServerProcess(env);
        const api = async (method: string, path: string, body?: unknown) => {
          const r = await fetch(`${server!.url}/api/v1${path}`, {
            method,
            headers: { authorization: `Bearer ${KEY}`, ...(body ? { 'content-type': 'application/json' } : {}) },
            body: body ? JSON.stringify(body) : undefined,
          });
          return { status: r.status, body: (await r.json()) as any };
        };
        const envId = (
          await api('POST', '/environments', {
            name: 'slow',
            provider: 'test',
            default_model: 'echo',
            config: { chunk_delay_ms: 200 },
          })
        ).body.id;
        const prompt = (
          await api('POST', '/prompts', {
            name: 'p',
            role: 'user',
            content: 'Say: {{text}}',
            content_type: 'handlebars',
          })
        ).body.id;
        const ix = await api('POST', '/interactions', {
          name: 'CrashEcho',
          status: 'draft',
          environment: envId,
          prompts: [{ type: 'template', template: prompt }],
        });
        assert.equal(ix.status, 200, JSON.stringify(ix.body));
        const words = (i: number) => Array.from({ length: 15 }, (_, w) => `r${i}w${w}`).join(' ');
        const ids: string[] = [];
        for (let i = 0; i < RUNS; i++) {
          const r = await api('POST', '/execute/async', {
            type: 'interaction',
            interaction: 'CrashEcho',
            data: { text: words(i) },
          });
          assert.equal(r.status, 200, JSON.stringify(r.body));
          ids.push(r.body.runId);
        }
        // Two running (one project's share of the slots), the rest queued: then the crash.
        const statuses = async () =>
          Promise.all(ids.map(async (id) => (await api('GET', `/runs/${id}`)).body.status as string));
        const before = await until('two async runs to be running', async () => {
          const s = await statuses();
          return s.filter((x) => x === 'processing').length === 2 ? s : undefined;
        });
        assert.ok(before.filter((s) => s === 'created').length >= RUNS - 3, before.join(','));
        const runningAtCrash = ids.filter((_, i) => before[i] === 'processing');
        await server.kill();

        server = await startServerProcess(env);
        for (const [i, id] of ids.entries()) {
          const run = await until(
            `async run ${id} to end after the restart`,
            async () => {
              const r = await api('GET', `/runs/${id}`);
              return r.body.status === 'completed' || r.body.status === 'failed' ? r.body : undefined;
            },
            120_000,
          );
          assert.equal(run.status, 'completed', JSON.stringify(run.error));
          assert.deepEqual(run.result, [{ type: 'text', value: `Say: ${words(i)}` }]);
        }
        await server.stop();
        server = undefined;

        // How many times each run's provider call started (its checkpoint), and no job left.
        const rows = await readRows(dataDir, pgdb?.url);
        assert.equal(rows.jobs, 0, 'no async job is left');
        for (const id of ids) {
          const starts = rows.starts.get(id);
          // Running at the crash (3 s calls): its call was in flight, and ran once more after it, no more.
          if (runningAtCrash.includes(id))
            assert.equal(starts, 2, `${id} (running at the crash) started ${starts} times`);
          // Queued at the crash: never called before it, so called once, after it.
          else assert.equal(starts, 1, `${id} (queued at the crash) started ${starts} times`);
        }
      } finally {
        await server?.kill();
        await pgdb?.drop();
        rmSync(dataDir, { recursive: true, force: true });
      }
    });
  });
}

async function readRows(dataDir: string, url?: string): Promise<{ starts: Map<string, number>; jobs: number }> {
  if (!url) {
    const db = new Database(join(dataDir, 'orrery.db'), { readonly: true });
    try {
      const starts = db.prepare('SELECT run_id, attempts FROM async_runs').all() as Array<{
        run_id: string;
        attempts: number;
      }>;
      const jobs = (db.prepare("SELECT count(*) AS n FROM jobs WHERE kind = 'async-run'").get() as { n: number }).n;
      return { starts: new Map(starts.map((r) => [r.run_id, Number(r.attempts)])), jobs };
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const starts = await client.query('SELECT run_id, attempts FROM async_runs');
    const jobs = await client.query("SELECT count(*) AS n FROM jobs WHERE kind = 'async-run'");
    return {
      starts: new Map(starts.rows.map((r) => [r.run_id as string, Number(r.attempts)])),
      jobs: Number(jobs.rows[0].n),
    };
  } finally {
    await client.end();
  }
}
