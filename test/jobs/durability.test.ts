/**
 * Content processing survives its server: a server process killed (SIGKILL) in the middle of a
 * job leaves it to the next process on the same data folder and database, which completes it once
 * the lease expires. And two servers on one database process each object once.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServerProcess, type ServerProcess } from '../support/processes.ts';
import { TEST_DIALECTS, createPgDatabase } from '../support/server.ts';
import { makePdf } from '../content/helpers.ts';
import { loadConfig } from '../../src/config.ts';
import { buildServer, type Orrery } from '../../src/server.ts';

const ADMIN = 'sk-durability-test-key-0123456789';

async function api(url: string, method: string, path: string, body?: unknown) {
  const res = await fetch(url + path, {
    method,
    headers: {
      authorization: `Bearer ${ADMIN}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any };
}

async function createPdfObject(url: string, pages: number): Promise<string> {
  const up = await api(url, 'POST', '/api/v1/objects/upload-url', { name: 'long.pdf' });
  const put = await fetch(up.body.url, { method: 'PUT', body: await makePdf(pages) });
  assert.equal(put.status, 200);
  const obj = await api(url, 'POST', '/api/v1/objects', { content: { source: up.body.id } });
  return obj.body.id;
}

async function statusOf(url: string, id: string) {
  return (await api(url, 'GET', `/api/v1/objects/${id}`)).body;
}

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: processing outlives its server`, () => {
    const cleanups: Array<() => Promise<unknown>> = [];
    after(async () => {
      for (const c of cleanups.reverse()) await c().catch(() => {});
    });

    it('a server killed mid-job: the next one on the same data completes the job', { timeout: 180_000 }, async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'orrery-durable-'));
      cleanups.push(async () => rmSync(dataDir, { recursive: true, force: true }));
      const pg = dialect === 'postgres' ? await createPgDatabase({ migrated: true }) : undefined;
      if (pg) cleanups.push(pg.drop);
      const env = {
        ORRERY_DATA_DIR: dataDir,
        ORRERY_ADMIN_KEY: ADMIN,
        ORRERY_SECRET: 'durability-test-secret-0123456789',
        ORRERY_JOB_LEASE: '2',
        ...(pg ? { ORRERY_DATABASE_URL: pg.url } : {}),
      };
      const first: ServerProcess = await startServerProcess(env);
      cleanups.push(() => first.kill());
      // 500 pages keep the job running for seconds after it starts: long enough to be killed mid-way.
      const id = await createPdfObject(first.url, 500);
      for (let i = 0; i < 1000 && (await statusOf(first.url, id)).status !== 'processing'; i++)
        await new Promise((r) => setTimeout(r, 10));
      assert.equal((await statusOf(first.url, id)).status, 'processing');
      await first.kill();

      const second = await startServerProcess(env);
      cleanups.push(() => second.kill());
      let obj = await statusOf(second.url, id);
      assert.notEqual(obj.status, 'ready', 'the first server finished before it was killed: nothing was tested');
      for (let i = 0; i < 1200 && obj.status !== 'ready' && obj.status !== 'failed'; i++) {
        await new Promise((r) => setTimeout(r, 50));
        obj = await statusOf(second.url, id);
      }
      assert.equal(obj.status, 'ready', JSON.stringify(obj.error));
      assert.equal(obj.metadata.page_count, 500);
      const text = (await api(second.url, 'GET', `/api/v1/objects/${id}/text`)).body.text as string;
      assert.equal(text.split('\n\f\n').length, 500);
    });

    it('two servers on one database process each object once', { timeout: 120_000 }, async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'orrery-pair-'));
      cleanups.push(async () => rmSync(dataDir, { recursive: true, force: true }));
      const pg = dialect === 'postgres' ? await createPgDatabase({ migrated: true }) : undefined;
      if (pg) cleanups.push(pg.drop);
      const servers: Orrery[] = [];
      const urls: string[] = [];
      for (let i = 0; i < 2; i++) {
        const config = loadConfig(
          {},
          {
            port: 0,
            host: '127.0.0.1',
            dataDir,
            databaseUrl: pg?.url,
            logLevel: 'silent',
            adminKey: ADMIN,
            secret: 'pair-test-secret-0123456789',
            contentWorkers: 2,
          },
        );
        const orrery = await buildServer(config, { logger: false });
        const url = await orrery.app.listen({ port: 0, host: '127.0.0.1' });
        config.publicUrl = url;
        servers.push(orrery);
        urls.push(url);
        cleanups.push(() => orrery.app.close());
      }
      const ids: string[] = [];
      for (let i = 0; i < 16; i++) ids.push(await createPdfObject(urls[i % 2], 20));
      for (const id of ids) {
        let obj = await statusOf(urls[0], id);
        for (let i = 0; i < 600 && obj.status !== 'ready' && obj.status !== 'failed'; i++) {
          await new Promise((r) => setTimeout(r, 50));
          obj = await statusOf(urls[0], id);
        }
        assert.equal(obj.status, 'ready', JSON.stringify(obj.error));
      }
      const completedJobs = () =>
        Promise.all(
          servers.map(async (s) => {
            const m = await s.metrics.jobs.get();
            return m.values
              .filter((v) => v.labels.kind === 'content' && v.labels.outcome === 'completed')
              .reduce((n, v) => n + v.value, 0);
          }),
        );
      // A job is counted after its object reads ready and its row is deleted: give the last count
      // a moment, then check that no object was processed twice.
      let completed = await completedJobs();
      for (let i = 0; i < 100 && completed[0] + completed[1] < 16; i++) {
        await new Promise((r) => setTimeout(r, 50));
        completed = await completedJobs();
      }
      await new Promise((r) => setTimeout(r, 200));
      completed = await completedJobs();
      assert.equal(completed[0] + completed[1], 16, `content jobs completed per server: ${completed.join(' + ')}`);
    });
  });
}
