/**
 * A conversation's runs go together: DELETE /runs/:id of any of them deletes the whole
 * conversation (the turns before, the continuations, forks), retention keeps a conversation while
 * any of its runs is still within it, and the door's turns go with their runs. `previous_run`
 * filters GET /runs, POST /runs/search and POST /runs/find.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { sql } from 'kysely';
import { TEST_DIALECTS, seedEcho, startTestServer, type TestServer } from '../support/server.ts';

const DAY = 86_400_000;
const runIdOf = (completionId: string) => completionId.replace(/^chatcmpl-/, '');

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: a conversation's runs together`, () => {
    let srv: TestServer;
    let interaction: string;
    let env: string;
    const status = async (id: string) => (await srv.api('GET', `/api/v1/runs/${id}`)).status;
    const first = async () => {
      const r = await srv.api('POST', '/api/v1/runs', { interaction, data: { text: 'hello' } });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body.id as string;
    };
    const next = async (id: string, message = 'more') => {
      const r = await srv.api('POST', '/api/v1/runs/user-message', { run: { id }, environment: env, message });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.previous_run, id);
      return r.body.id as string;
    };
    /** The door records a turn after it answers: wait for the rows (a bounded number of looks). */
    const turnsOf = async (ids: string[]) => {
      for (let i = 0; i < 100 && (await count('door_turns', 'run_id', ids)) < ids.length; i++)
        await new Promise((r) => setTimeout(r, 20));
      return count('door_turns', 'run_id', ids);
    };
    const age = (ids: string[], days: number) =>
      sql`UPDATE runs SET updated_at = ${new Date(Date.now() - days * DAY).toISOString()} WHERE id IN (${sql.join(ids)})`.execute(
        srv.orrery.database.db,
      );
    const count = async (table: string, column: string, ids: string[]) =>
      Number(
        (
          await sql<{
            n: number | string;
          }>`SELECT count(*) AS n FROM ${sql.table(table)} WHERE ${sql.ref(column)} IN (${sql.join(ids)})`.execute(
            srv.orrery.database.db,
          )
        ).rows[0].n,
      );

    before(async () => {
      srv = await startTestServer(dialect);
      const seeded = await seedEcho(srv);
      interaction = seeded.interaction.id;
      env = seeded.env.id;
    });
    after(() => srv.close());

    it('previous_run is a column: GET /runs, search filters and find select by it; false is first runs', async () => {
      const a = await first();
      const b = await next(a);
      const fork = await next(a, 'another way');
      const c = await next(b);
      const list = await srv.api('GET', `/api/v1/runs?previous_run=${a}&limit=100`);
      assert.equal(list.status, 200, JSON.stringify(list.body));
      assert.deepEqual(list.body.map((r: { id: string }) => r.id).sort(), [b, fork].sort());
      const firsts = await srv.api('GET', `/api/v1/runs?previous_run=false&limit=100`);
      const firstIds = firsts.body.map((r: { id: string }) => r.id);
      assert.ok(firstIds.includes(a) && !firstIds.includes(b) && !firstIds.includes(c));
      const searched = await srv.api('POST', '/api/v1/runs/search', { filters: { previous_run: b } });
      assert.equal(searched.status, 200, JSON.stringify(searched.body));
      assert.deepEqual(
        (searched.body.results ?? searched.body).map((r: { id: string }) => r.id),
        [c],
      );
      const found = await srv.api('POST', '/api/v1/runs/find', { query: { previous_run: b } });
      assert.equal(found.status, 200, JSON.stringify(found.body));
      assert.deepEqual(
        found.body.map((r: { id: string }) => r.id),
        [c],
      );
      const bad = await srv.api('GET', `/api/v1/runs?previous_run=${'x'.repeat(3)}&previous_run=&limit=1`);
      assert.ok(bad.status === 200 || bad.status === 400, 'an empty id is answered, never a 500');
    });

    it('DELETE /runs/:id of any run of a conversation deletes all of it, forks included', async () => {
      const a = await first();
      const b = await next(a);
      const fork = await next(a, 'fork');
      const c = await next(b);
      const lone = await first();
      const del = await srv.api('DELETE', `/api/v1/runs/${c}`);
      assert.equal(del.status, 200, JSON.stringify(del.body));
      assert.deepEqual(del.body, { id: c, count: 4 });
      for (const id of [a, b, fork, c]) assert.equal(await status(id), 404, `run ${id} went with its conversation`);
      assert.equal(await count('run_tags', 'run_id', [a, b, fork, c]), 0);
      assert.equal(await status(lone), 200, 'a run of no conversation stays');
      const audit = await srv.api('GET', `/api/v1/audit-trail?resourceId=${c}`);
      assert.deepEqual([...audit.body.events[0].details.conversation_runs].sort(), [a, b, fork, c].sort());
    });

    it('a conversation with a run still executing is a 409 that names it', async () => {
      const a = await first();
      const streaming = await srv.api('POST', '/api/v1/runs/user-message', {
        run: { id: a },
        environment: env,
        message: 'later',
        stream: true,
      });
      assert.equal(streaming.status, 200, JSON.stringify(streaming.body));
      const del = await srv.api('DELETE', `/api/v1/runs/${a}`);
      assert.equal(del.status, 409);
      assert.match(del.body.message, new RegExp(`run ${streaming.body.id} is still (created|processing)`));
      assert.equal(await status(a), 200, 'nothing was deleted');
    });

    it('retention keeps a conversation while any run of it is within, then deletes it whole', async () => {
      const project = srv.orrery.bootstrap.project.id;
      const set = await srv.api('PUT', `/api/v1/projects/${project}`, { retention: { runs_days: 30 } });
      assert.equal(set.status, 200, JSON.stringify(set.body));
      try {
        const a = await first();
        const b = await next(a);
        const c = await next(b);
        const oldLone = await first();
        // Stored first (a run is answered before its commit on SQLite): aging a row not written yet changes nothing.
        await srv.orrery.services.runs.whenStored();
        await age([a, b, oldLone], 40);
        const retention = srv.orrery.services.retention;
        const now = await retention.sweep(new Date());
        assert.ok(now.retainedRuns >= 1, JSON.stringify(now));
        assert.equal(await status(oldLone), 404, 'an old run of no conversation goes');
        for (const id of [a, b, c]) assert.equal(await status(id), 200, `run ${id} stays: turn 3 is recent`);
        const later = await retention.sweep(new Date(Date.now() + 31 * DAY));
        assert.ok(later.retainedRuns >= 3, JSON.stringify(later));
        for (const id of [a, b, c]) assert.equal(await status(id), 404, `run ${id} went with its conversation`);
      } finally {
        await srv.api('PUT', `/api/v1/projects/${project}`, { retention: null });
      }
    });

    it('a conversation whose runs share a ttl goes once its last run expires', async () => {
      const r = await srv.api('POST', '/api/v1/runs', { interaction, data: { text: 'brief' }, ttl: 3600 });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const b = await next(r.body.id);
      await srv.orrery.services.runs.whenStored();
      await sql`UPDATE runs SET expires_at = ${new Date(Date.now() - 1000).toISOString()} WHERE id = ${r.body.id}`.execute(
        srv.orrery.database.db,
      );
      const retention = srv.orrery.services.retention;
      await retention.sweep(new Date());
      assert.equal(await status(r.body.id), 200, 'turn 2 has not expired: turn 1 stays with it');
      await retention.sweep(new Date(Date.now() + 2 * 3600_000));
      assert.equal(await status(r.body.id), 404);
      assert.equal(await status(b), 404);
    });

    it("the door's turns go with their runs: deleted, or swept by retention", async () => {
      const sdk = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: srv.adminKey, maxRetries: 0 });
      const model = `${env}/echo`;
      const messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [{ role: 'user', content: 'one' }];
      const chat = async () => {
        const c = await sdk.chat.completions.create({ model, messages });
        messages.push({ role: 'assistant', content: c.choices[0].message.content ?? '' });
        messages.push({ role: 'user', content: `again ${messages.length}` });
        return runIdOf(c.id);
      };
      const x1 = await chat();
      const x2 = await chat();
      assert.equal((await srv.api('GET', `/api/v1/runs/${x2}`)).body.previous_run, x1);
      assert.ok((await turnsOf([x1, x2])) >= 2, 'each door run recorded its turn');
      const del = await srv.api('DELETE', `/api/v1/runs/${x1}`);
      assert.deepEqual(del.body, { id: x1, count: 2 });
      assert.equal(await count('door_turns', 'run_id', [x1, x2]), 0, 'no turn outlives its run');

      messages.splice(0, messages.length, { role: 'user', content: 'fresh' });
      const y1 = await chat();
      const y2 = await chat();
      assert.ok((await turnsOf([y1, y2])) >= 2);
      const project = srv.orrery.bootstrap.project.id;
      await srv.api('PUT', `/api/v1/projects/${project}`, { retention: { runs_days: 1 } });
      try {
        await srv.orrery.services.retention.sweep(new Date(Date.now() + 2 * DAY));
      } finally {
        await srv.api('PUT', `/api/v1/projects/${project}`, { retention: null });
      }
      assert.equal(await status(y2), 404);
      assert.equal(
        await count('door_turns', 'run_id', [y1, y2]),
        0,
        'retention swept the turns of the runs it deleted',
      );
    });
  });
}
