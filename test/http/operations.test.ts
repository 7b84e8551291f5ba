import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TEST_DIALECTS, startTestServer, seedEcho, type TestServer } from '../support/server.ts';
import { startServerProcess, until } from '../support/processes.ts';
import { openStream } from '../support/sse.ts';

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: health, readiness and metrics`, () => {
    let srv: TestServer;
    before(async () => {
      srv = await startTestServer(dialect, { metricsToken: 'scrape-me' });
    });
    after(() => srv.close());

    it('answers /ready while the database answers', async () => {
      const r = await srv.api('GET', '/ready', undefined, null);
      assert.equal(r.status, 200);
      assert.equal(r.body.status, 'ready');
      assert.equal(r.body.replica, srv.orrery.replica.id);
    });

    it('fails /ready with 503 when a dependency is down', async () => {
      srv.orrery.readiness.push(async () => {
        throw new Error('blob storage unreachable');
      });
      try {
        const r = await srv.api('GET', '/ready', undefined, null);
        assert.equal(r.status, 503);
        assert.equal(r.body.error, 'not_ready');
        assert.match(r.body.message, /blob storage unreachable/);
      } finally {
        srv.orrery.readiness.pop();
      }
    });

    it("fails /ready with 503 when the data folder's disk has less free space than ORRERY_MIN_FREE_DISK", async () => {
      // No disk here is a petabyte free: the bound stands for a full disk.
      const full = await startTestServer(dialect, { minFreeDiskBytes: 2 ** 50 });
      try {
        const r = await full.api('GET', '/ready', undefined, null);
        assert.equal(r.status, 503);
        assert.equal(r.body.error, 'not_ready');
        assert.match(r.body.message, /ORRERY_MIN_FREE_DISK/);
        assert.equal(
          (await full.api('GET', '/health', undefined, null)).status,
          200,
          'still alive: only readiness fails',
        );
      } finally {
        await full.close();
      }
    });

    it('exports Prometheus metrics behind ORRERY_METRICS_TOKEN', async () => {
      const seeded = await seedEcho(srv);
      await srv.api('POST', '/api/v1/runs', { interaction: seeded.interaction.id, data: { text: 'x' } });
      await srv.api('POST', '/api/v1/runs', {
        interaction: seeded.interaction.id,
        data: { text: 'x' },
        config: { model: 'error' },
      });
      assert.equal((await srv.api('GET', '/metrics', undefined, null)).status, 401);
      const r = await fetch(`${srv.url}/metrics`, { headers: { authorization: 'Bearer scrape-me' } });
      assert.equal(r.status, 200);
      assert.match(r.headers.get('content-type')!, /text\/plain/);
      const text = await r.text();
      assert.match(text, /orrery_runs_total\{status="completed",provider="test",mode="blocking"\} 1/);
      assert.match(text, /orrery_runs_total\{status="failed",provider="test",mode="blocking"\} 1/);
      assert.match(text, /orrery_http_requests_total\{method="POST",route="\/api\/v1\/runs",status="200"\} 1/);
      assert.match(text, /orrery_provider_latency_seconds_bucket\{le="0.005",provider="test",outcome="ok"\}/);
      assert.match(text, /orrery_sse_streams_open 0/);
    });
  });

  describe(`${dialect}: closing`, () => {
    it('waits for a blocking run that no connection holds open before it closes the database', async () => {
      // Closing waited for open connections and streams only: a blocking run whose client had
      // gone (here: injected, no socket at all) lost its final write when the run writer closed
      // under it, and was left `processing` until the sweep failed it.
      const s = await startTestServer(dialect);
      try {
        const env = await s.api('POST', '/api/v1/environments', {
          name: 'slow',
          provider: 'test',
          default_model: 'slow:800',
        });
        const ix = await s.api('POST', '/api/v1/interactions', {
          name: 'Slow',
          environment: env.body.id,
          prompts: [{ type: 'template', template: { role: 'user', content_type: 'text', content: 'patience' } }],
        });
        const answer = s.orrery.app.inject({
          method: 'POST',
          url: '/api/v1/runs',
          headers: { authorization: `Bearer ${s.adminKey}` },
          payload: { interaction: ix.body.id },
        });
        await new Promise((r) => setTimeout(r, 300)); // with the provider
        await s.orrery.app.close();
        const r = await answer;
        assert.equal(r.statusCode, 200, r.body);
        assert.equal(r.json().status, 'completed');
      } finally {
        await s.close().catch(() => {});
      }
    });
  });
}

describe('graceful shutdown', () => {
  it('stops accepting, lets an open stream finish its run, then exits 0', async () => {
    const key = 'sk-shutdown-test-admin-key-0123456789';
    const srv = await startServerProcess({ ORRERY_ADMIN_KEY: key });
    const h = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const post = async (path: string, body: unknown) =>
      (await (await fetch(srv.url + path, { method: 'POST', headers: h, body: JSON.stringify(body) })).json()) as any;
    const env = await post('/api/v1/environments', {
      name: 's',
      provider: 'test',
      default_model: 'echo',
      config: { chunk_delay_ms: 50 },
    });
    const ix = await post('/api/v1/interactions', {
      name: 'S',
      environment: env.id,
      prompts: [
        {
          type: 'template',
          template: { role: 'user', content_type: 'text', content: 'one two three four five six seven eight nine ten' },
        },
      ],
    });
    const run = await post('/api/v1/runs', { interaction: ix.id, stream: true });
    const s = await openStream(`${srv.url}/api/v1/runs/${run.id}/stream?access_token=${key}`);
    assert.equal((await s.next())?.event, 'message');
    const exited = srv.stop();
    const events = await s.all();
    const close = events.at(-1)!;
    assert.equal(close.event, 'close');
    assert.equal(JSON.parse(close.data).status, 'completed');
    assert.equal(await exited, 0);
    await assert.rejects(fetch(`${srv.url}/health`), 'no longer accepting');
  });

  it('lets blocking runs in flight finish and store their outcome before it exits', async () => {
    // Their connections are busy when closing begins; each is closed once it has answered.
    const key = 'sk-shutdown-test-admin-key-0123456789';
    const dataDir = mkdtempSync(join(tmpdir(), 'orrery-shutdown-'));
    const env = { ORRERY_ADMIN_KEY: key, ORRERY_DATA_DIR: dataDir };
    let srv = await startServerProcess(env);
    const h = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const post = async (path: string, body: unknown) =>
      fetch(srv.url + path, { method: 'POST', headers: h, body: JSON.stringify(body) });
    const e = (await (
      await post('/api/v1/environments', { name: 's', provider: 'test', default_model: 'slow:3000' })
    ).json()) as any;
    const ix = (await (
      await post('/api/v1/interactions', {
        name: 'S',
        environment: e.id,
        prompts: [{ type: 'template', template: { role: 'user', content_type: 'text', content: 'patience' } }],
      })
    ).json()) as any;
    const answers = Array.from({ length: 6 }, () => post('/api/v1/runs', { interaction: ix.id }));
    // Closing begins once the server has every run (listed: received and executing, 3 s each), not
    // after a guessed delay: on a loaded machine a request sent could still be on its way.
    await until('the six runs to be received', async () => {
      const listed = await fetch(`${srv.url}/api/v1/runs?limit=10`, { headers: { authorization: h.authorization } });
      return ((await listed.json()) as unknown[]).length === 6 ? true : undefined;
    });
    const exited = srv.stop();
    const replies = await Promise.all(answers);
    assert.deepEqual(
      replies.map((r) => r.status),
      [200, 200, 200, 200, 200, 200],
    );
    const ids = await Promise.all(replies.map(async (r) => ((await r.json()) as any).id as string));
    // Not held open by the clients' keep-alive connections once the runs have answered: those would
    // keep it for 72 s. The 50 s only stops that hang; it is no time bound.
    const held = new Promise<string>((r) => setTimeout(r, 50_000, 'still running 50 s after SIGTERM').unref());
    assert.equal(await Promise.race([exited, held]), 0);
    srv = await startServerProcess(env);
    try {
      for (const id of ids) {
        const run = (await (await fetch(`${srv.url}/api/v1/runs/${id}`, { headers: h })).json()) as any;
        assert.equal(run.status, 'completed', `run ${id} stored as it ended`);
      }
    } finally {
      await srv.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
