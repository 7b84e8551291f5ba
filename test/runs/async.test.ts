import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { TEST_DIALECTS, startTestServer, seedEcho, type TestServer } from '../support/server.ts';
import { openStream } from '../support/sse.ts';

const WORDS = Array.from({ length: 30 }, (_, i) => `w${i}`).join(' ');

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: async execution (POST /execute/async)`, () => {
    let srv: TestServer;
    before(async () => {
      srv = await startTestServer(dialect);
      await seedEcho(srv, { name: 'AsyncEcho' });
      await seedEcho(srv, { name: 'AsyncSlow', config: { chunk_delay_ms: 30 } });
    });
    after(() => srv.close());

    /** The run once it ended, read through the official client. */
    const ended = async (id: string) => {
      const client = srv.client();
      for (;;) {
        const run = await client.runs.retrieve(id);
        if (run.status === 'completed' || run.status === 'failed') return run;
        await sleep(100);
      }
    };

    it('answers {runId, workflowId} at once through the official client; the run completes and is found by its workflow run id', async () => {
      const client = srv.client();
      const answer = await client.interactions.executeAsync({
        type: 'interaction',
        interaction: 'AsyncEcho',
        data: { text: 'hello async' },
        tags: ['batch-1'],
      });
      assert.deepEqual(Object.keys(answer).sort(), ['runId', 'workflowId']);
      assert.equal(answer.workflowId, answer.runId);
      const run = await ended(answer.runId);
      assert.equal(run.status, 'completed');
      assert.deepEqual(run.result, [{ type: 'text', value: 'Say: hello async' }]);
      assert.deepEqual(run.tags, ['batch-1']);
      assert.equal(run.interaction?.name, 'AsyncEcho');

      const found = await client.runs.search({ query: { workflow_run_ids: [answer.runId] } });
      assert.deepEqual(
        found.map((r: { id: string }) => r.id),
        [answer.runId],
      );
      const byWorkflow = await client.runs.search({ query: { workflow_ids: [answer.workflowId] } });
      assert.deepEqual(
        byWorkflow.map((r: { id: string }) => r.id),
        [answer.runId],
      );
      // A blocking run has no workflow run id, even when named by its own id.
      const blocking = await srv.api('POST', '/api/v1/execute', { interaction: 'AsyncEcho', data: { text: 'b' } });
      assert.equal(blocking.status, 200);
      assert.deepEqual(await client.runs.search({ query: { workflow_run_ids: [blocking.body.id] } }), []);
      const listed = await srv.api('GET', `/api/v1/runs?workflow_run_ids=${answer.runId}`);
      assert.deepEqual(
        listed.body.map((r: { id: string }) => r.id),
        [answer.runId],
      );
    });

    it('is readable while it runs and streams live through GET /runs/:id/stream', async () => {
      const { runId } = await srv.client().interactions.executeAsync({
        type: 'interaction',
        interaction: 'AsyncSlow',
        data: { text: WORDS },
      });
      let seen = (await srv.api('GET', `/api/v1/runs/${runId}`)).body;
      assert.ok(['created', 'processing'].includes(seen.status), seen.status);
      while (seen.status === 'created') seen = (await srv.api('GET', `/api/v1/runs/${runId}`)).body;
      assert.equal(seen.status, 'processing', 'its job claimed it before it ended (30 chunks of 30 ms)');
      const s = await openStream(
        `${srv.url}/api/v1/runs/${runId}/stream?access_token=${encodeURIComponent(srv.adminKey)}`,
      );
      assert.equal(s.res.status, 200);
      const events = await s.all();
      const text = events
        .filter((e) => e.event === 'message')
        .map((e) => JSON.parse(e.data))
        .join('');
      assert.equal(text, `Say: ${WORDS}`);
      const close = events.at(-1)!;
      assert.equal(close.event, 'close');
      const final = JSON.parse(close.data);
      assert.equal(final.id, runId);
      assert.equal(final.status, 'completed');
    });

    it('records a provider failure as a failed run, the start still answered', async () => {
      const env = await srv.api('POST', '/api/v1/environments', {
        name: 'failing',
        provider: 'test',
        default_model: 'error',
      });
      const prompt = await srv.api('POST', '/api/v1/prompts', {
        name: 'p',
        role: 'user',
        content: 'x',
        content_type: 'text',
      });
      const ix = await srv.api('POST', '/api/v1/interactions', {
        name: 'AsyncFails',
        status: 'draft',
        environment: env.body.id,
        prompts: [{ type: 'template', template: prompt.body.id }],
      });
      assert.equal(ix.status, 200, JSON.stringify(ix.body));
      const r = await srv.api('POST', '/api/v1/execute/async', { type: 'interaction', interaction: 'AsyncFails' });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const run = await ended(r.body.runId);
      assert.equal(run.status, 'failed');
      assert.ok(run.error?.message, 'the failure is recorded');
    });

    it('accepts the workflow fields that do nothing at their no-op values', async () => {
      const r = await srv.api('POST', '/api/v1/execute/async', {
        type: 'interaction',
        interaction: 'AsyncEcho',
        data: { text: 'noop' },
        generate_topic: false,
        generate_lessons: false,
        visibility: 'project',
        include_previous_error: false,
        do_validate: true,
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal((await ended(r.body.runId)).status, 'completed');
    });

    it('refuses what it does not apply by name, and bad input with a 4xx that says what to fix', async () => {
      const base = { type: 'interaction', interaction: 'AsyncEcho' };
      const db = srv.orrery.database.db;
      const count = async () => (await db.selectFrom('async_runs').select('run_id').execute()).length;
      const before = await count();
      const cases: Array<[Record<string, unknown>, number, RegExp]> = [
        [{ ...base, type: 'workflow' }, 400, /type must be "interaction"/],
        [{ interaction: 'AsyncEcho' }, 400, /"type"/],
        [{ type: 'interaction' }, 400, /interaction/],
        [{ ...base, interaction: 'NoSuchInteraction' }, 404, /NoSuchInteraction/],
        [{ ...base, workflow: { run_id: 'x' } }, 400, /workflow is not supported/],
        [{ ...base, prompts: [] }, 400, /prompts is not supported/],
        [{ ...base, asyncCompletion: { run_id: 'x' } }, 400, /asyncCompletion is not supported/],
        [{ ...base, task_queue: 'q' }, 400, /task_queue is not supported/],
        [{ ...base, conversation: true }, 400, /conversation is not supported/],
        [{ ...base, stream: true }, 400, /stream is not supported/],
        [{ ...base, surprise: 1 }, 400, /surprise is not a field/],
        [{ ...base, include_previous_error: true }, 400, /include_previous_error: true is not supported/],
        [{ ...base, generate_topic: true }, 400, /generate_topic: true/],
        [{ ...base, visibility: 'private' }, 400, /visibility "private"/],
        [{ ...base, notify_endpoints: ['ftp://example.com/x'] }, 400, /notify_endpoints\[0\] must be an http/],
        [{ ...base, notify_endpoints: ['not a url'] }, 400, /notify_endpoints\[0\] is not a URL/],
        [{ ...base, notify_endpoints: Array(11).fill('http://127.0.0.1/x') }, 400, /notify_endpoints/],
        [{ ...base, tags: Array(101).fill('t') }, 400, /tags/],
        [{ ...base, result_schema: { type: 'nonsense' } }, 400, /result_schema/],
      ];
      for (const [body, status, message] of cases) {
        const r = await srv.api('POST', '/api/v1/execute/async', body);
        assert.equal(r.status, status, `${JSON.stringify(body).slice(0, 120)}: ${JSON.stringify(r.body)}`);
        assert.equal(r.body.status, status);
        assert.equal(typeof r.body.error, 'string');
        assert.match(r.body.message, message, JSON.stringify(body).slice(0, 120));
      }
      assert.equal((await srv.api('POST', '/api/v1/execute/async', base, null)).status, 401);
      assert.equal(await count(), before, 'a refused request starts nothing');
    });

    it('runs many at once, each exactly once', async () => {
      const client = srv.client();
      const ids = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          client.interactions
            .executeAsync({ type: 'interaction', interaction: 'AsyncEcho', data: { text: `n${i}` } })
            .then((a) => a.runId),
        ),
      );
      assert.equal(new Set(ids).size, 40);
      const runs = await Promise.all(ids.map(ended));
      runs.forEach((run, i) => {
        assert.equal(run.status, 'completed');
        assert.deepEqual(run.result, [{ type: 'text', value: `Say: n${i}` }]);
      });
      const found = await client.runs.search({ query: { workflow_run_ids: ids }, limit: 100 });
      assert.equal(found.length, 40);
      const db = srv.orrery.database.db;
      const starts = await db
        .selectFrom('async_runs')
        .select(['run_id', 'attempts'])
        .where('run_id', 'in', ids)
        .execute();
      assert.equal(starts.length, 40);
      assert.ok(
        starts.every((s) => Number(s.attempts) === 1),
        'each provider call started once',
      );
      const jobs = await db.selectFrom('jobs').select('id').where('subject', 'in', ids).execute();
      assert.equal(jobs.length, 0, 'every job is done');
    });
  });
}
