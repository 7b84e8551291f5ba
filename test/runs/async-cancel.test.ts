/**
 * Async runs: cancellation (the official client's workflows.cancel) of queued and running runs,
 * and the step and run timeouts.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';

/** An interaction named `name` on the test provider's `model`, its provider retries off. */
async function seedModel(srv: TestServer, name: string, model: string, token = srv.adminKey): Promise<void> {
  const env = await srv.api(
    'POST',
    '/api/v1/environments',
    { name: `${name} env`, provider: 'test', default_model: model, config: { retries: 0 } },
    token,
  );
  const prompt = await srv.api(
    'POST',
    '/api/v1/prompts',
    { name: `${name} prompt`, role: 'user', content: 'Say: {{text}}', content_type: 'handlebars' },
    token,
  );
  const ix = await srv.api(
    'POST',
    '/api/v1/interactions',
    { name, status: 'draft', environment: env.body.id, prompts: [{ type: 'template', template: prompt.body.id }] },
    token,
  );
  assert.equal(ix.status, 200, JSON.stringify(ix.body));
}

async function ended(srv: TestServer, id: string) {
  for (;;) {
    const run = (await srv.api('GET', `/api/v1/runs/${id}`)).body;
    if (run.status === 'completed' || run.status === 'failed') return run;
    await sleep(50);
  }
}

async function statusOf(srv: TestServer, id: string, status: string) {
  for (;;) {
    const run = (await srv.api('GET', `/api/v1/runs/${id}`)).body;
    if (run.status === status) return run;
    await sleep(20);
  }
}

const start = async (srv: TestServer, interaction: string, token = srv.adminKey) => {
  const r = await srv.api(
    'POST',
    '/api/v1/execute/async',
    { type: 'interaction', interaction, data: { text: 'x' } },
    token,
  );
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.runId as string;
};

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: cancelling async runs`, () => {
    let srv: TestServer;
    before(async () => {
      // One run at a time, so that a second run stays queued behind the first.
      srv = await startTestServer(dialect, { asyncConcurrency: 1, asyncCancelPollMs: 20 });
      await seedModel(srv, 'Hangs', 'slow:600000');
      await seedModel(srv, 'Quick', 'echo');
    });
    after(() => srv.close());

    it('stops a running run and fails a queued one at once, through the official client', async () => {
      const client = srv.client();
      const running = await start(srv, 'Hangs');
      await statusOf(srv, running, 'processing');
      const queued = await start(srv, 'Quick');
      assert.equal((await srv.api('GET', `/api/v1/runs/${queued}`)).body.status, 'created');

      const first = await client.store.workflows.cancel(queued, queued, 'not needed');
      assert.match(first.message, /cancelled before it started/);
      const q = (await srv.api('GET', `/api/v1/runs/${queued}`)).body;
      assert.equal(q.status, 'failed', 'failed in the cancel request itself');
      assert.equal(q.error.code, 'cancelled');
      assert.match(q.error.message, /before its provider call: not needed/);

      const second = await client.store.workflows.cancel(running, running, 'user gave up');
      assert.match(second.message, /stops at its next check/);
      const r = await ended(srv, running);
      assert.equal(r.status, 'failed');
      assert.equal(r.error.code, 'cancelled');
      assert.match(r.error.message, /during its provider call: user gave up/);

      // The queue goes on: a new run completes, and the cancelled one was never called.
      const after = await ended(srv, await start(srv, 'Quick'));
      assert.equal(after.status, 'completed');
      assert.equal((await srv.api('GET', `/api/v1/runs/${queued}`)).body.status, 'failed');
    });

    it('refuses what cannot be cancelled with a 4xx that says why', async () => {
      const done = await ended(srv, await start(srv, 'Quick'));
      const again = await srv.api('POST', `/api/v1/workflows/runs/${done.id}/${done.id}/actions/cancel`, {});
      assert.equal(again.status, 409);
      assert.match(again.body.message, /already ended \(completed\)/);

      const blocking = await srv.api('POST', '/api/v1/execute', { interaction: 'Quick', data: { text: 'b' } });
      assert.equal(blocking.status, 200);
      // Ended too: a blocking run ends with its request.
      assert.equal(
        (await srv.api('POST', `/api/v1/workflows/runs/${blocking.body.id}/${blocking.body.id}/actions/cancel`)).status,
        409,
      );

      const unknown = await srv.api('POST', '/api/v1/workflows/runs/nope/nope/actions/cancel', {});
      assert.equal(unknown.status, 404);
      assert.equal(unknown.body.error, 'not_found');
      const running = await start(srv, 'Hangs');
      const mismatched = await srv.api('POST', `/api/v1/workflows/runs/other/${running}/actions/cancel`, {});
      assert.equal(mismatched.status, 404);
      const tooLong = await srv.api('POST', `/api/v1/workflows/runs/${running}/${running}/actions/cancel`, {
        reason: 'x'.repeat(1001),
      });
      assert.equal(tooLong.status, 400);
      const unknownField = await srv.api('POST', `/api/v1/workflows/runs/${running}/${running}/actions/cancel`, {
        force: true,
      });
      assert.equal(unknownField.status, 400);
      assert.match(unknownField.body.message, /force/);

      // Another project's key cannot see, let alone cancel, this project's run.
      const project = (await srv.api('POST', '/api/v1/projects', { name: 'Elsewhere' })).body.id;
      const key = (await srv.api('POST', '/api/v1/apikeys', { name: 'elsewhere', project })).body.value;
      const foreign = await srv.api('POST', `/api/v1/workflows/runs/${running}/${running}/actions/cancel`, {}, key);
      assert.equal(foreign.status, 404);
      // A reader may not cancel.
      const reader = (await srv.api('POST', '/api/v1/apikeys', { name: 'reader', role: 'reader' })).body.value;
      const refused = await srv.api('POST', `/api/v1/workflows/runs/${running}/${running}/actions/cancel`, {}, reader);
      assert.equal(refused.status, 403);
      assert.equal((await srv.api('GET', `/api/v1/runs/${running}`)).body.status !== 'failed', true);

      await srv.api('POST', `/api/v1/workflows/runs/${running}/${running}/actions/cancel`, {});
      assert.equal((await ended(srv, running)).error.code, 'cancelled');
    });
  });

  describe(`${dialect}: async run timeouts`, () => {
    it('fails an attempt that outlives the step timeout (step_timeout), and a run that outlives its run timeout (run_timeout)', async () => {
      const srv = await startTestServer(dialect, { asyncStepTimeoutMs: 150 });
      try {
        await seedModel(srv, 'Hangs', 'slow:600000');
        await seedModel(srv, 'Quick', 'echo');
        const r = await ended(srv, await start(srv, 'Hangs'));
        assert.equal(r.status, 'failed');
        assert.equal(r.error.code, 'step_timeout');
        assert.match(r.error.message, /ORRERY_ASYNC_STEP_TIMEOUT/);
        assert.equal((await ended(srv, await start(srv, 'Quick'))).status, 'completed');
      } finally {
        await srv.close();
      }
      const slowRun = await startTestServer(dialect, { asyncRunTimeoutMs: 150 });
      try {
        await seedModel(slowRun, 'Hangs', 'slow:600000');
        const r = await ended(slowRun, await start(slowRun, 'Hangs'));
        assert.equal(r.status, 'failed');
        assert.equal(r.error.code, 'run_timeout');
        assert.match(r.error.message, /ORRERY_ASYNC_RUN_TIMEOUT/);
      } finally {
        await slowRun.close();
      }
    });
  });
}
