/**
 * Experiments outlive their server and keep to the project's limits, on both databases: a server
 * stopped while an experiment runs puts its job back in the queue, and a new server on the same
 * data finishes it, every run made once; the daily cost quota stops an experiment `failed` with
 * the limiter's message, its remaining runs queued, and re-running an item once the quota is
 * raised finishes it.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config.ts';
import { buildServer, type Orrery } from '../../src/server.ts';
import { TEST_DIALECTS, createPgDatabase, startTestServer, type TestServer } from '../support/server.ts';
import { dataset, evaluator, until } from './support.ts';

const KEY = `sk-${'experiments'.repeat(2)}`;

/** A TestServer's `api` over a server built here (the same data across restarts). */
async function serve(dataDir: string, databaseUrl: string | undefined): Promise<{ orrery: Orrery; srv: TestServer }> {
  const config = loadConfig(
    {},
    {
      port: 0,
      host: '127.0.0.1',
      dataDir,
      databaseUrl,
      logLevel: 'silent',
      adminKey: KEY,
      secret: 'experiments-secret-0123456789',
    },
  );
  const orrery = await buildServer(config, { logger: false });
  const url = await orrery.app.listen({ port: 0, host: '127.0.0.1' });
  const api = async (method: string, path: string, body?: unknown, token: string | null = KEY) => {
    const res = await fetch(url + path, {
      method,
      headers: {
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...(token ? { authorization: `Bearer ${token}` } : {}),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
  };
  const srv = { url, dialect: 'sqlite', adminKey: KEY, orrery, dataDir, api } as unknown as TestServer;
  return { orrery, srv };
}

async function seedSlow(srv: TestServer, name: string, config: Record<string, unknown>) {
  const env = await srv.api('POST', '/api/v1/environments', { name, provider: 'test', default_model: 'echo', config });
  const prompt = await srv.api('POST', '/api/v1/prompts', {
    name: `${name} prompt`,
    role: 'user',
    content: 'Say: {{text}}',
    content_type: 'handlebars',
  });
  const ix = await srv.api('POST', '/api/v1/interactions', {
    name,
    status: 'draft',
    environment: env.body.id,
    prompts: [{ type: 'template', template: prompt.body.id }],
  });
  assert.equal(ix.status, 200, JSON.stringify(ix.body));
  const v1 = await srv.api('POST', `/api/v1/interactions/${ix.body.id}/publish`, {});
  assert.equal(v1.status, 200, JSON.stringify(v1.body));
  return v1.body.id as string;
}

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: experiments across restarts and limits`, () => {
    it('resumes a running experiment after a restart, every run made once', async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'orrery-experiments-'));
      const pgdb = dialect === 'postgres' ? await createPgDatabase({ migrated: true }) : undefined;
      let current: Orrery | undefined;
      try {
        const first = await serve(dataDir, pgdb?.url);
        current = first.orrery;
        const version = await seedSlow(first.srv, 'Slow echo', { chunk_delay_ms: 20 });
        const items = Array.from({ length: 12 }, (_, i) => ({
          data: { text: `item ${i} ${'word '.repeat(5)}`.trim() },
          expected: `Say: item ${i} ${'word '.repeat(5)}`.trim(),
        }));
        const ds = await dataset(first.srv, 'restart set', items);
        const exact = await evaluator(first.srv, { name: 'exact', type: 'exact_match' });
        const r = await first.srv.api('POST', '/api/v1/experiments', {
          dataset: ds,
          variants: [{ name: 'only', interaction: version }],
          evaluators: [exact],
          concurrency: 1,
        });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        // Stopped once it has made some runs and not all.
        for (let i = 0; ; i++) {
          const e = await first.srv.api('GET', `/api/v1/experiments/${r.body.id}`);
          if (e.body.progress.done >= 2) break;
          assert.ok(i < 2400, `the experiment made no runs: ${JSON.stringify(e.body)}`);
          await new Promise((res) => setTimeout(res, 50));
        }
        await first.orrery.app.close();
        current = undefined;

        const second = await serve(dataDir, pgdb?.url);
        current = second.orrery;
        const stopped = await second.srv.api('GET', `/api/v1/experiments/${r.body.id}`);
        assert.ok(
          stopped.body.progress.done < 12,
          `it ended before the restart: ${JSON.stringify(stopped.body.progress)}`,
        );
        const done = await until(second.srv, r.body.id, ['completed', 'failed']);
        assert.equal(done.status, 'completed', JSON.stringify(done));
        assert.deepEqual(done.progress, { done: 12, total: 12, completed: 12, failed: 0, canceled: 0 });
        assert.deepEqual(done.variants[0].scores.exact.distribution, { '1': 12 });
        const runs = await second.srv.api('GET', `/api/v1/runs?tag=experiment:${r.body.id}&limit=100`);
        assert.equal(runs.body.length, 12);
      } finally {
        await current?.app.close();
        await pgdb?.drop();
        rmSync(dataDir, { recursive: true, force: true });
      }
    });

    it("stops at the project's daily cost quota, and resumes once it is raised", async () => {
      const srv: TestServer = await startTestServer(dialect);
      try {
        // USD 1 per prompt token and 2 per answer token: "Say: a b c" costs 4 + 8 = 12.
        const version = await seedSlow(srv, 'Priced echo', {
          prices: { echo: { input: 1_000_000, output: 2_000_000 } },
        });
        const ds = await dataset(
          srv,
          'quota set',
          Array.from({ length: 6 }, () => ({ data: { text: 'a b c' } })),
        );
        const project = (await srv.api('GET', '/api/v1/projects')).body[0].id;
        const limited = await srv.api('PUT', `/api/v1/projects/${project}`, { limits: { cost_per_day: 20 } });
        assert.equal(limited.status, 200, JSON.stringify(limited.body));
        const r = await srv.api('POST', '/api/v1/experiments', {
          dataset: ds,
          variants: [{ name: 'priced', interaction: version }],
          concurrency: 1,
        });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        const stopped = await until(srv, r.body.id, ['completed', 'failed']);
        assert.equal(stopped.status, 'failed', JSON.stringify(stopped));
        assert.match(stopped.error, /USD 20 of run cost per day/);
        assert.ok(stopped.progress.done >= 2 && stopped.progress.done < 6, JSON.stringify(stopped.progress));
        assert.equal(stopped.variants[0].cost, 12 * stopped.progress.done);

        assert.equal((await srv.api('PUT', `/api/v1/projects/${project}`, { limits: null })).status, 200);
        const items = await srv.api('GET', `/api/v1/experiments/${r.body.id}/items`);
        const resumed = await srv.api('POST', `/api/v1/experiments/${r.body.id}/items/${items.body[5].item}/rerun`);
        assert.equal(resumed.status, 200, JSON.stringify(resumed.body));
        const done = await until(srv, r.body.id, ['completed', 'failed']);
        assert.equal(done.status, 'completed', JSON.stringify(done));
        assert.equal(done.progress.done, 6);
        assert.equal(done.variants[0].cost, 72);
        assert.deepEqual(done.variants[0].token_use, { prompt: 24, result: 24, total: 48 });
      } finally {
        await srv.close();
      }
    });
  });
}
