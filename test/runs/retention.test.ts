/**
 * Retention (issue 18): DELETE /runs/:id forgets a run with everything hanging off it; runs and
 * objects with a ttl disappear once it passes (the sweeper runs every second here); a project's
 * retention deletes old runs; two replicas on PostgreSQL sweep side by side.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import {
  POSTGRES_ONLY,
  TEST_DIALECTS,
  createPgDatabase,
  seedEcho,
  startTestServer,
  type TestServer,
} from '../support/server.ts';
import { startServerProcess, type ServerProcess } from '../support/processes.ts';
import { RunRetention } from '../../src/runs/retention.ts';
import { upload } from '../objects/helpers.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const DAY = 86_400_000;

async function until(what: string, check: () => Promise<boolean>, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(100);
  }
}

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: retention`, () => {
    let srv: TestServer;
    let interaction: string;
    const rows = async (table: string, column: string, value: string): Promise<number> => {
      const r = await sql<{
        n: number | string;
      }>`SELECT count(*) AS n FROM ${sql.table(table)} WHERE ${sql.ref(column)} = ${value}`.execute(
        srv.orrery.database.db,
      );
      return Number(r.rows[0].n);
    };
    const run = async (body: Record<string, unknown> = {}) => {
      const r = await srv.api('POST', '/api/v1/runs', {
        interaction,
        data: { text: 'keep or forget' },
        tags: ['retention'],
        ...body,
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body;
    };

    before(async () => {
      srv = await startTestServer(dialect, { retentionSweepSeconds: 1 });
      interaction = (await seedEcho(srv)).interaction.id;
    });
    after(() => srv.close());

    it('DELETE /runs/:id forgets the run, its tags, chunks, search rows and cached answers', async () => {
      const r = await run({ stream: true });
      const streamed = await fetch(`${srv.url}/api/v1/runs/${r.id}/stream?access_token=${srv.adminKey}`);
      await streamed.text();
      await until(
        'the run completes',
        async () => (await srv.api('GET', `/api/v1/runs/${r.id}`)).body.status === 'completed',
      );
      assert.ok((await rows('run_tags', 'run_id', r.id)) > 0);
      const gone = await srv.api('DELETE', `/api/v1/runs/${r.id}`);
      assert.deepEqual(gone.body, { id: r.id, count: 1 });
      assert.equal((await srv.api('GET', `/api/v1/runs/${r.id}`)).status, 404);
      for (const [table, column] of [
        ['runs', 'id'],
        ['run_tags', 'run_id'],
        ['run_chunks', 'run_id'],
        ['run_cache', 'run_id'],
      ]) {
        assert.equal(await rows(table, column, r.id), 0, `${table} has nothing of it`);
      }
      const found = await srv.api('POST', '/api/v1/runs/search', { query: `id:${r.id}` });
      assert.equal(found.status, 200);
      assert.equal((found.body.results ?? found.body).length, 0, 'search forgot it too');
      if (dialect === 'sqlite') {
        const fts = await sql<{ n: number }>`SELECT count(*) AS n FROM runs_fts WHERE runs_fts MATCH 'forget'`.execute(
          srv.orrery.database.db,
        );
        const left = await sql<{ n: number }>`SELECT count(*) AS n FROM runs WHERE status = 'completed'`.execute(
          srv.orrery.database.db,
        );
        assert.ok(Number(fts.rows[0].n) <= Number(left.rows[0].n), 'no full-text row outlives its run');
      }
      assert.equal((await srv.api('DELETE', `/api/v1/runs/${r.id}`)).status, 404);
      const audit = await srv.api('GET', `/api/v1/audit-trail?resourceId=${r.id}`);
      assert.equal(audit.body.events[0].action, 'delete', 'a deletion asked for is in the audit trail');
    });

    it('a run still executing cannot be deleted', async () => {
      const waiting = await run({ stream: true });
      const r = await srv.api('DELETE', `/api/v1/runs/${waiting.id}`);
      assert.equal(r.status, 409);
      assert.match(r.body.message, /still created/);
    });

    it('a run with a ttl disappears once it passes; one without stays', async () => {
      const short = await run({ ttl: 1 });
      const kept = await run();
      assert.equal(short.ttl, 1);
      await until(
        'the expired run is swept',
        async () => (await srv.api('GET', `/api/v1/runs/${short.id}`)).status === 404,
      );
      assert.equal(await rows('run_tags', 'run_id', short.id), 0);
      assert.equal((await srv.api('GET', `/api/v1/runs/${kept.id}`)).status, 200);
    });

    it('an object with a ttl disappears once it passes, with its file', async () => {
      const file = await upload(srv, 'short-lived.txt', 'gone soon', { type: 'text/plain' });
      const o = await srv.api('POST', '/api/v1/objects', { name: 'short-lived', content: { source: file.id }, ttl: 1 });
      assert.equal(o.status, 200, JSON.stringify(o.body));
      assert.ok(Date.parse(o.body.expires_at) > Date.now());
      const forever = await srv.api('POST', '/api/v1/objects', { name: 'kept', ttl: 3600 });
      const cleared = await srv.api('PUT', `/api/v1/objects/${forever.body.id}`, { ttl: null });
      assert.equal(cleared.body.expires_at, undefined, 'a null ttl keeps the object');
      await until(
        'the expired object is swept',
        async () => (await srv.api('GET', `/api/v1/objects/${o.body.id}`)).status === 404,
      );
      await until(
        'its file is purged',
        async () =>
          (await srv.api('GET', `/api/v1/files/metadata?file=${encodeURIComponent(o.body.content.source)}`)).status ===
          404,
      );
      assert.equal((await srv.api('GET', `/api/v1/objects/${forever.body.id}`)).status, 200);
      const trail = await srv.api('GET', `/api/v1/audit-trail?resourceId=${o.body.id}`);
      assert.equal(trail.body.events[0].principal_type, 'system', 'deleted by the server, not by a key');
    });

    it('a project retention deletes runs older than it; runs with their own ttl follow it instead', async () => {
      const project = srv.orrery.bootstrap.project.id;
      const set = await srv.api('PUT', `/api/v1/projects/${project}`, { retention: { runs_days: 30 } });
      assert.equal(set.status, 200, JSON.stringify(set.body));
      const old = await run();
      const withTtl = await run({ ttl: 100 * 86_400 });
      // The sweeper as it will run 31 days from now (the same code the server's timer calls).
      const retention = new RunRetention({ db: srv.orrery.database.db, dialect: srv.orrery.database.dialect });
      const later = await retention.sweep(new Date(Date.now() + 31 * DAY));
      assert.ok(later.retainedRuns >= 1, JSON.stringify(later));
      assert.equal((await srv.api('GET', `/api/v1/runs/${old.id}`)).status, 404);
      assert.equal((await srv.api('GET', `/api/v1/runs/${withTtl.id}`)).status, 200, 'its own ttl (100 days) wins');
      const cleared = await srv.api('PUT', `/api/v1/projects/${project}`, { retention: null });
      assert.equal(cleared.status, 200);
      const next = await run();
      const none = await retention.sweep(new Date(Date.now() + 31 * DAY));
      assert.equal(none.retainedRuns, 0);
      assert.equal((await srv.api('GET', `/api/v1/runs/${next.id}`)).status, 200);
    });

    it('refuses bad retention and ttl values with a 400 that says what to fix', async () => {
      const project = srv.orrery.bootstrap.project.id;
      for (const retention of [
        { runs_days: 0 },
        { runs_days: -1 },
        { runs_days: 1.5 },
        { runs_days: 'a week' },
        { runs_days: 40_000 },
        { keep: 1 },
        'forever',
      ]) {
        const r = await srv.api('PUT', `/api/v1/projects/${project}`, { retention });
        assert.equal(r.status, 400, JSON.stringify(retention));
        assert.match(r.body.message, /retention/);
      }
      for (const ttl of [-1, 1e12, 'soon']) {
        assert.equal(
          (await srv.api('POST', '/api/v1/runs', { interaction, data: { text: 'x' }, ttl })).status,
          400,
          `run ttl ${ttl}`,
        );
        assert.equal((await srv.api('POST', '/api/v1/objects', { name: 'x', ttl })).status, 400, `object ttl ${ttl}`);
      }
    });
  });
}

describe('postgres: two replicas sweep the same database', POSTGRES_ONLY, () => {
  const KEY = 'sk-retention-replicas-admin-key-0123456789';
  let a: ServerProcess;
  let b: ServerProcess;
  let database: Awaited<ReturnType<typeof createPgDatabase>>;
  const api = async (srv: ServerProcess, method: string, path: string, body?: unknown) => {
    const r = await fetch(srv.url + path, {
      method,
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: r.status, body: (await r.json()) as any };
  };

  before(async () => {
    database = await createPgDatabase({ migrated: true });
    const env = {
      ORRERY_DATABASE_URL: database.url,
      ORRERY_ADMIN_KEY: KEY,
      ORRERY_SECRET: 'shared-retention-secret-0123456789',
      ORRERY_RETENTION_SWEEP: '1',
    };
    [a, b] = await Promise.all([startServerProcess(env), startServerProcess(env)]);
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await database?.drop();
  });

  it('every expired run goes, once, while both replicas keep writing runs', async () => {
    const e = await api(a, 'POST', '/api/v1/environments', { name: 'echo', provider: 'test', default_model: 'echo' });
    const ix = await api(a, 'POST', '/api/v1/interactions', {
      name: 'Sweep',
      environment: e.body.id,
      prompts: [{ type: 'template', template: { role: 'user', content_type: 'handlebars', content: '{{text}}' } }],
    });
    const short: string[] = [];
    const kept: string[] = [];
    for (let i = 0; i < 40; i++) {
      const srv = i % 2 ? a : b;
      const r = await api(srv, 'POST', '/api/v1/runs', {
        interaction: ix.body.id,
        data: { text: `run ${i}` },
        ...(i % 4 === 0 ? {} : { ttl: 1 }),
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      (i % 4 === 0 ? kept : short).push(r.body.id);
    }
    await until(
      'every expired run is swept',
      async () => {
        const listed = await api(a, 'GET', '/api/v1/runs?limit=100');
        const ids = new Set(listed.body.map((r: any) => r.id));
        return short.every((id) => !ids.has(id));
      },
      20_000,
    );
    for (const id of kept) assert.equal((await api(b, 'GET', `/api/v1/runs/${id}`)).status, 200);
    assert.equal((await api(b, 'GET', '/health')).status, 200);
  });
});
