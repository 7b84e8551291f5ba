/**
 * Rate limits and quotas (issue 18): requests and tokens per minute, cost per day, per key and
 * per project; 429 with Retry-After and the headers the official client reads; readable limits
 * and use; exact across two replicas on PostgreSQL.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  POSTGRES_ONLY,
  TEST_DIALECTS,
  createPgDatabase,
  seedEcho,
  startTestServer,
  type TestServer,
} from '../support/server.ts';
import { startServerProcess, type ServerProcess } from '../support/processes.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Per-minute windows: start a burst only with a few seconds of the current minute left to run it in. */
async function freshMinute(needMs = 8000): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < needMs) await sleep(left + 50);
}

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: rate limits and quotas`, () => {
    let srv: TestServer;
    let interaction: string;
    const key = async (name: string, body: Record<string, unknown> = {}) => {
      const r = await srv.api('POST', '/api/v1/apikeys', { name, role: 'developer', ...body });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body as { id: string; value: string; limits: unknown };
    };
    const run = (token: string, text = 'one two three') =>
      srv.api('POST', '/api/v1/runs', { interaction, data: { text } }, token);

    before(async () => {
      srv = await startTestServer(dialect);
      interaction = (await seedEcho(srv)).interaction.id;
    });
    after(() => srv.close());

    it('a key over its requests per minute gets 429 with Retry-After and the pacing headers; other keys go on', async () => {
      const limited = await key('three a minute', { limits: { requests_per_minute: 3 } });
      assert.deepEqual(limited.limits, { requests_per_minute: 3 });
      const free = await key('unlimited');
      const client = srv.client(limited.value);
      await freshMinute();
      // Two requests: the client exchanges its key for a token, then lists.
      assert.ok(Array.isArray(await client.interactions.list()));
      const r = await srv.api('GET', '/api/v1/interactions', undefined, limited.value);
      assert.equal(r.status, 200);
      assert.equal(r.headers.get('x-ratelimit-limit-requests'), '3');
      assert.equal(r.headers.get('x-ratelimit-remaining-requests'), '0');
      const over = await srv.api('GET', '/api/v1/interactions', undefined, limited.value);
      assert.equal(over.status, 429);
      assert.equal(over.body.error, 'rate_limited');
      assert.equal(over.body.status, 429);
      assert.match(over.body.message, /3 requests per minute/);
      assert.equal(over.body.details.resource, 'requests');
      const retryAfter = Number(over.headers.get('retry-after'));
      assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter} whole seconds`);
      assert.equal(over.headers.get('x-ratelimit-reason'), 'pacing');
      assert.equal(over.headers.get('x-ratelimit-window'), 'minute');
      assert.ok(Number(over.headers.get('x-ratelimit-retry-ms')) <= 60_000);
      // The official client reads the same headers and gives up when the wait is longer than it pauses for (3 s).
      await assert.rejects(client.interactions.list(), (err: any) => err.status === 429);
      assert.equal(
        (await srv.api('GET', '/api/v1/interactions', undefined, free.value)).status,
        200,
        'another key is not limited',
      );
      const report = await srv.api('GET', '/api/v1/limits', undefined, free.value);
      assert.equal(report.status, 200);
      assert.equal(report.body.key.limits, null);
    });

    it("a project's limit binds every key of it; only an admin sets it", async () => {
      const project = (await srv.api('POST', '/api/v1/projects', { name: 'Limited project' })).body.id;
      const dev = await key('dev of the project', { project });
      const byDev = await srv.api(
        'PUT',
        `/api/v1/projects/${project}`,
        { limits: { requests_per_minute: 1_000_000 } },
        dev.value,
      );
      assert.equal(byDev.status, 403);
      assert.match(byDev.body.message, /only an admin/);
      const other = await key('another dev', { project });
      await freshMinute();
      const set = await srv.api('PUT', `/api/v1/projects/${project}`, { limits: { requests_per_minute: 4 } });
      assert.equal(set.status, 200, JSON.stringify(set.body));
      assert.deepEqual(set.body.settings.limits, { requests_per_minute: 4 });
      const statuses: number[] = [];
      for (const k of [dev, other, dev, other, dev])
        statuses.push((await srv.api('GET', '/api/v1/environments', undefined, k.value)).status);
      assert.deepEqual(statuses, [200, 200, 200, 200, 429], 'four for the project, whichever key');
      const report = await srv.api('GET', '/api/v1/limits', undefined, other.value);
      assert.equal(report.status, 429, 'reading the report is a request of the project too');
      // The admin key belongs to another project: it is not limited, and clears the limit.
      assert.equal((await srv.api('PUT', `/api/v1/projects/${project}`, { limits: null })).status, 200);
      assert.equal(
        (await srv.api('GET', '/api/v1/environments', undefined, dev.value)).status,
        200,
        'the change applies at once on this replica',
      );
    });

    it('tokens per minute: a run that used up the tokens makes the next run wait; reading is not limited by tokens', async () => {
      const k = await key('token-limited', { limits: { tokens_per_minute: 5 } });
      await freshMinute(15_000);
      const first = await run(k.value, 'alpha beta gamma delta epsilon zeta');
      assert.equal(first.status, 200, JSON.stringify(first.body));
      assert.ok(first.body.token_use.total >= 5, JSON.stringify(first.body.token_use));
      const deadline = Date.now() + 5000;
      let use: any;
      while (Date.now() < deadline) {
        use = (await srv.api('GET', '/api/v1/limits', undefined, k.value)).body.key.use;
        if (use.tokens_this_minute > 0) break;
        await sleep(50);
      }
      assert.equal(use.tokens_this_minute, first.body.token_use.total, "the run's tokens were counted");
      const second = await run(k.value);
      assert.equal(second.status, 429);
      assert.equal(second.body.details.resource, 'tokens');
      assert.equal(second.headers.get('x-ratelimit-resource'), 'tokens');
      assert.equal(
        (await srv.api('GET', '/api/v1/runs?limit=1', undefined, k.value)).status,
        200,
        'reading is not counted against tokens',
      );
    });

    it('cost per day: once a key spent its day, runs are refused until midnight UTC (a quota, not pacing)', async () => {
      const env = (
        await srv.api('POST', '/api/v1/environments', {
          name: 'Priced',
          provider: 'test',
          default_model: 'echo',
          config: { prices: { echo: { input: 100_000, output: 100_000 } } },
        })
      ).body;
      const priced = (
        await srv.api('POST', '/api/v1/interactions', {
          name: 'Priced echo',
          environment: env.id,
          prompts: [{ type: 'template', template: { role: 'user', content_type: 'handlebars', content: '{{text}}' } }],
        })
      ).body;
      const k = await key('a dollar a day', { limits: { cost_per_day: 1 } });
      const first = await srv.api(
        'POST',
        '/api/v1/runs',
        { interaction: priced.id, data: { text: 'spend spend spend spend spend spend' } },
        k.value,
      );
      assert.equal(first.status, 200, JSON.stringify(first.body));
      assert.ok(first.body.cost.total > 1, JSON.stringify(first.body.cost));
      await sleep(300);
      const second = await srv.api('POST', '/api/v1/runs', { interaction: priced.id, data: { text: 'more' } }, k.value);
      assert.equal(second.status, 429, JSON.stringify(second.body));
      assert.equal(second.headers.get('x-ratelimit-reason'), 'quota');
      assert.equal(second.headers.get('x-ratelimit-window'), 'day');
      const untilMidnight = Math.ceil(((Math.floor(Date.now() / 86_400_000) + 1) * 86_400_000 - Date.now()) / 1000);
      assert.ok(Math.abs(Number(second.headers.get('retry-after')) - untilMidnight) <= 2);
      const report = (await srv.api('GET', '/api/v1/limits', undefined, k.value)).body;
      assert.ok(Math.abs(report.key.use.cost_today - first.body.cost.total) < 1e-9);
    });

    it('limits are checked and a key cannot lift its own', async () => {
      const k = await key('self');
      const own = await srv.api('PUT', `/api/v1/apikeys/${k.id}`, { limits: null }, k.value);
      assert.equal(own.status, 403);
      assert.match(own.body.message, /own limits/);
      for (const limits of [
        { requests_per_minute: 0 },
        { requests_per_minute: -1 },
        { requests_per_minute: 1.5 },
        { tokens_per_minute: 'many' },
        { cost_per_day: 0 },
        { burst: 3 },
        [1],
        'fast',
      ]) {
        const onKey = await srv.api('PUT', `/api/v1/apikeys/${k.id}`, { limits });
        assert.equal(onKey.status, 400, `${JSON.stringify(limits)}: ${JSON.stringify(onKey.body)}`);
        assert.match(onKey.body.message, /limits/);
        const onProject = await srv.api('PUT', `/api/v1/projects/${srv.orrery.bootstrap.project.id}`, { limits });
        assert.equal(onProject.status, 400, JSON.stringify(limits));
      }
      const set = await srv.api('PUT', `/api/v1/apikeys/${k.id}`, {
        limits: { requests_per_minute: 100, cost_per_day: 2.5 },
      });
      assert.equal(set.status, 200);
      assert.deepEqual(set.body.limits, { requests_per_minute: 100, cost_per_day: 2.5 });
      const trail = await srv.api('GET', `/api/v1/audit-trail?resourceId=${k.id}`);
      assert.deepEqual(trail.body.events[0].details.changes.limits, {
        before: null,
        after: { requests_per_minute: 100, cost_per_day: 2.5 },
      });
    });
  });
}

describe('postgres: a limit holds exactly across two replicas', POSTGRES_ONLY, () => {
  const KEY = 'sk-limits-replicas-admin-key-0123456789';
  let a: ServerProcess;
  let b: ServerProcess;
  let database: Awaited<ReturnType<typeof createPgDatabase>>;
  const call = async (srv: ServerProcess, method: string, path: string, body?: unknown, token = KEY) => {
    const r = await fetch(srv.url + path, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: r.status, body: (await r.json()) as any };
  };

  before(async () => {
    database = await createPgDatabase({ migrated: true });
    const env = {
      ORRERY_DATABASE_URL: database.url,
      ORRERY_ADMIN_KEY: KEY,
      ORRERY_SECRET: 'shared-limits-secret-0123456789',
    };
    [a, b] = await Promise.all([startServerProcess(env), startServerProcess(env)]);
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await database?.drop();
  });

  it('30 requests at once, half on each replica, against a limit of 20: exactly 20 answered', async () => {
    const dev = (
      await call(a, 'POST', '/api/v1/apikeys', {
        name: 'burst',
        role: 'developer',
        limits: { requests_per_minute: 20 },
      })
    ).body.value;
    await freshMinute(15_000);
    const statuses = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        call(i % 2 ? a : b, 'GET', '/api/v1/interactions', undefined, dev).then((r) => r.status),
      ),
    );
    assert.equal(statuses.filter((s) => s === 200).length, 20, JSON.stringify(statuses));
    assert.equal(statuses.filter((s) => s === 429).length, 10);
    const report = await call(b, 'GET', '/api/v1/limits', undefined, dev);
    assert.equal(report.status, 429, 'the report is a request too, and the key is over');
    const admin = await call(a, 'GET', '/api/v1/apikeys');
    assert.equal(admin.status, 200, 'the admin key is not limited');
  });
});
