import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { AgentStore } from '../../src/agents/store.ts';

/** An environment and an interaction with one inline template; the interaction's id. */
async function seedInteraction(
  srv: TestServer,
  name: string,
  model: string,
  content: string,
  extra: Record<string, unknown> = {},
  token?: string,
): Promise<string> {
  const env = await srv.api(
    'POST',
    '/api/v1/environments',
    { name: `env-${name}`, provider: 'test', default_model: model },
    token,
  );
  assert.equal(env.status, 200, JSON.stringify(env.body));
  const ix = await srv.api(
    'POST',
    '/api/v1/interactions',
    {
      name,
      status: 'draft',
      environment: env.body.id,
      prompts: [{ type: 'template', template: { role: 'user', content, content_type: 'handlebars' } }],
      ...extra,
    },
    token,
  );
  assert.equal(ix.status, 200, JSON.stringify(ix.body));
  return ix.body.id;
}

const CITY_SCHEMA = {
  type: 'object',
  properties: { city: { type: 'string' } },
  required: ['city'],
};

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: agents (executeAsync type conversation)`, () => {
    let srv: TestServer;
    before(async () => {
      srv = await startTestServer(dialect);
      await seedInteraction(srv, 'Planner', 'tools', 'Plan a trip to {{city}}');
      await seedInteraction(srv, 'Weather', 'echo', 'Weather in {{city}}', { interaction_schema: CITY_SCHEMA });
      await seedInteraction(srv, 'SlowWeather', 'slow:1500', 'Slow weather in {{city}}', {
        interaction_schema: CITY_SCHEMA,
      });
    });
    after(() => srv.close());

    const ended = async (id: string) => {
      for (;;) {
        const run = (await srv.api('GET', `/api/v1/runs/${id}`)).body;
        if (run.status === 'completed' || run.status === 'failed') return run;
        await sleep(50);
      }
    };
    const children = async (id: string) =>
      ((await srv.api('GET', `/api/v1/runs?parent=${id}&limit=100`)).body as Array<Record<string, any>>).sort((a, b) =>
        String(a.created_at).localeCompare(String(b.created_at)),
      );
    /** The agent's completed model calls (its Planner children). */
    const modelCallsDone = async (id: string) =>
      (await children(id)).filter((k) => k.interaction?.name === 'Planner' && k.status === 'completed').length;

    it('runs a tool loop with an interaction tool through the official client: iterations are children linked by previous_run', async () => {
      const answer = await srv.client().interactions.executeAsync({
        type: 'conversation',
        interaction: 'Planner',
        data: { city: 'Paris' },
        tool_names: ['Weather'],
        tags: ['agent-test'],
      } as never);
      assert.deepEqual(Object.keys(answer).sort(), ['runId', 'workflowId']);
      const run = await ended(answer.runId);
      assert.equal(run.status, 'completed', JSON.stringify(run.error));
      const text = run.result.map((r: { value: string }) => r.value).join('');
      assert.match(text, /^Weather: Weather in /, text);
      const kids = await children(answer.runId);
      assert.equal(kids.length, 3, JSON.stringify(kids.map((k) => k.interaction?.name)));
      const [first, tool, second] = await Promise.all(
        kids.map(async (k) => (await srv.api('GET', `/api/v1/runs/${k.id}`)).body),
      );
      assert.equal(first.interaction.name, 'Planner');
      assert.equal(first.finish_reason, 'tool_use');
      assert.equal(first.tool_use[0].tool_name, 'Weather');
      assert.equal(tool.interaction.name, 'Weather');
      assert.deepEqual(tool.parameters, first.tool_use[0].tool_input);
      assert.equal(second.previous_run, first.id);
      assert.equal(second.parent, answer.runId);
      assert.equal(second.status, 'completed');
      const found = await srv.client().runs.search({ query: { workflow_run_ids: [answer.runId] } });
      assert.deepEqual(
        found.map((r: { id: string }) => r.id),
        [answer.runId],
      );
    });

    it('gives the built-in tools by default: objects searched and read, runs searched; a bad call is an error result', async () => {
      const { runId } = (
        await srv.api('POST', '/api/v1/execute/async', {
          type: 'conversation',
          interaction: 'Planner',
          data: { city: 'Oslo' },
        })
      ).body;
      const run = await ended(runId);
      assert.equal(run.status, 'completed', JSON.stringify(run.error));
      const text: string = run.result.map((r: { value: string }) => r.value).join('');
      assert.match(text, /^search_objects: \[/m);
      assert.match(text, /^search_runs: \[/m);
      assert.match(text, /^read_object failed: object .* not found/m);
    });

    it('stops at max_iterations when the model keeps asking for tools', async () => {
      const { runId } = (
        await srv.api('POST', '/api/v1/execute/async', {
          type: 'conversation',
          interaction: 'Planner',
          data: { city: 'Rome' },
          tool_names: ['Weather'],
          max_iterations: 1,
        })
      ).body;
      const run = await ended(runId);
      assert.equal(run.status, 'failed');
      assert.equal(run.error.code, 'max_iterations');
      assert.equal((await children(runId)).length, 2, 'one model call and its tool call, no second model call');
    });

    it('stops between steps when asked: the step under way ends, no next step starts', async () => {
      const { runId } = (
        await srv.api('POST', '/api/v1/execute/async', {
          type: 'conversation',
          interaction: 'Planner',
          data: { city: 'Lima' },
          tool_names: ['SlowWeather'],
        })
      ).body;
      // Once the slow tool's run exists, the agent is inside its tool step.
      while (!(await children(runId)).some((k) => k.interaction?.name === 'SlowWeather')) await sleep(20);
      const stop = await srv.api('POST', `/api/v1/agents/${runId}/signal/stop`, {});
      assert.equal(stop.status, 200, JSON.stringify(stop.body));
      const run = await ended(runId);
      assert.equal(run.status, 'failed');
      assert.equal(run.error.code, 'cancelled');
      const kids = await children(runId);
      assert.equal(kids.filter((k) => k.interaction?.name === 'Planner').length, 1, 'no model call after the stop');
      const again = await srv.api('POST', `/api/v1/agents/${runId}/signal/stop`, {});
      assert.equal(again.status, 409);
      const other = await srv.api('POST', `/api/v1/agents/${runId}/signal/pause`, {});
      assert.equal(other.status, 400);
      assert.match(other.body.message, /only stop/);
    });

    it('an interactive agent waits between turns; a user message naming it is delivered and answered at once', async () => {
      const client = srv.client();
      const { runId } = await client.interactions.executeAsync({
        type: 'conversation',
        interaction: 'Planner',
        data: { city: 'Quito' },
        tool_names: ['Weather'],
        interactive: true,
      } as never);
      /** Sends the message once the agent waits (a 409 says it is still running its turn). */
      const send = async (message: string) => {
        // Bounded so that an agent that never waits again fails the test instead of hanging it.
        for (let i = 0; i < 2400; i++) {
          const r = await srv.api('POST', '/api/v1/runs/user-message', { run: runId, message });
          if (r.status !== 409) return r;
          assert.match(r.body.message, /running/);
          await sleep(50);
        }
        return assert.fail(`the agent never waited for "${message}"`);
      };
      const answered = await send('And in Lima?');
      assert.equal(answered.status, 200, JSON.stringify(answered.body));
      assert.deepEqual(answered.body, { runId, workflowId: runId });
      // Its first turn (model, tool, model) ended before the message; the message starts a second.
      assert.equal((await srv.api('GET', `/api/v1/runs/${runId}`)).body.status, 'processing');
      const twice = await send('x'); // delivered once the second turn waits again
      assert.equal(twice.status, 200);
      const bad = await srv.api('POST', '/api/v1/runs/user-message', {
        run: runId,
        message: 'y',
        tools: [{ name: 't', description: 'd', input_schema: { type: 'object' } }],
      });
      assert.equal(bad.status, 400);
      assert.match(bad.body.message, /tools does not apply/);
      // Wait for the third turn to wait, then stop: a waiting chat that is stopped has completed.
      for (let i = 0; ; i++) {
        const done = await modelCallsDone(runId);
        if (done === 6) break;
        assert.ok(done < 6, `${done} model calls completed where three turns make 6: a step ran twice`);
        assert.ok(i < 2400, `the third turn never ended (${done} of 6 model calls completed)`);
        await sleep(50);
      }
      const stop = await srv.api('POST', `/api/v1/agents/${runId}/signal/stop`, {});
      assert.equal(stop.status, 200);
      const run = await ended(runId);
      assert.equal(run.status, 'completed', JSON.stringify(run.error));
      assert.match(run.result.map((r: { value: string }) => r.value).join(''), /^Weather: Weather in /);
      const turns = (await children(runId)).filter((k) => k.interaction?.name === 'Planner');
      const prompts = await Promise.all(turns.map(async (k) => (await srv.api('GET', `/api/v1/runs/${k.id}`)).body));
      assert.ok(
        prompts.some((r) => JSON.stringify(r.prompt).includes('And in Lima?')),
        'the message reached the model as a user turn',
      );
      const late = await srv.api('POST', '/api/v1/runs/user-message', { run: runId, message: 'late' });
      assert.equal(late.status, 409);
      assert.match(late.body.message, /ended/);
    });

    it('a message delivered the moment an interactive agent is seen waiting starts its next turn (not at its deadline)', async () => {
      // The message is sent from inside the store's write that makes the agent waiting, before the
      // runner goes on: the narrowest window a busy machine can open between the two.
      // The first agent to wait is this test's (the others have ended): its id may not be known yet.
      const original = AgentStore.prototype.setState;
      let waited: string | undefined;
      let delivered: { status: number; body: any } | undefined;
      AgentStore.prototype.setState = async function (this: AgentStore, id, from, to) {
        const changed = await original.call(this, id, from, to);
        if (changed && to === 'waiting' && waited === undefined) {
          waited = id;
          delivered = await srv.api('POST', '/api/v1/runs/user-message', { run: id, message: 'And in Cusco?' });
        }
        return changed;
      };
      let runId: string;
      try {
        runId = (
          await srv.api('POST', '/api/v1/execute/async', {
            type: 'conversation',
            interaction: 'Planner',
            data: { city: 'Quito' },
            tool_names: ['Weather'],
            interactive: true,
          })
        ).body.runId;
        for (let i = 0; ; i++) {
          const done = await modelCallsDone(runId);
          if (done >= 4) break;
          assert.ok(
            i < 2400,
            `the second turn never ran (${done} of 4 model calls completed): the message's job waits for the deadline`,
          );
          await sleep(50);
        }
      } finally {
        AgentStore.prototype.setState = original;
      }
      assert.equal(waited, runId);
      assert.equal(delivered?.status, 200, JSON.stringify(delivered?.body));
      assert.equal((await srv.api('POST', `/api/v1/agents/${runId}/signal/stop`, {})).status, 200);
      assert.equal((await ended(runId)).status, 'completed');
    });

    it('refuses by name the fields it does not apply, unknown tools and out-of-bound iterations, before anything runs', async () => {
      const base = { type: 'conversation', interaction: 'Planner', data: { city: 'x' } };
      const cases: Array<[Record<string, unknown>, RegExp]> = [
        [{ tool_approval_mode: 'auto' }, /tool_approval_mode is not supported/],
        [{ checkpoint_tokens: 100 }, /checkpoint_tokens is not supported/],
        [{ initial_tool_calls: [] }, /initial_tool_calls is not supported/],
        [{ no_such_field: 1 }, /no_such_field is not a field/],
        [{ tool_names: ['Nope'] }, /no tool "Nope"/],
        [{ tool_names: ['bad name!'] }, /is not a tool name/],
        [{ tool_names: ['Planner'] }, /cannot call itself/],
        [{ tool_names: ['Weather'], disable_interaction_tools: true }, /disable_interaction_tools/],
        [{ max_iterations: 1000 }, /at most 100/],
        [{ max_iterations: 1.5 }, /whole number/],
        [{ interactive: 'yes' }, /interactive must be true or false/],
        [{ notify_endpoints: ['https://example.com/x'] }, /notify_endpoints/],
        [{ interaction: 'Missing' }, /Missing/],
      ];
      const before = (await srv.api('GET', '/api/v1/runs?limit=1000')).body.length;
      for (const [extra, message] of cases) {
        const r = await srv.api('POST', '/api/v1/execute/async', { ...base, ...extra });
        assert.ok(r.status === 400 || r.status === 404, `${JSON.stringify(extra)}: ${r.status}`);
        assert.match(r.body.message, message, JSON.stringify(extra));
      }
      assert.equal((await srv.api('GET', '/api/v1/runs?limit=1000')).body.length, before, 'no run was written');
    });

    it("cannot reach another project's interaction as a tool, nor signal another project's agent", async () => {
      const project = await srv.api('POST', '/api/v1/projects', { name: `other-${dialect}` });
      assert.equal(project.status, 200, JSON.stringify(project.body));
      const key = await srv.api('POST', '/api/v1/apikeys', { name: 'other', project: project.body.id });
      assert.equal(key.status, 200, JSON.stringify(key.body));
      await seedInteraction(
        srv,
        'Secret',
        'echo',
        'secret {{city}}',
        { interaction_schema: CITY_SCHEMA },
        key.body.value,
      );
      const r = await srv.api('POST', '/api/v1/execute/async', {
        type: 'conversation',
        interaction: 'Planner',
        tool_names: ['Secret'],
      });
      assert.equal(r.status, 400);
      assert.match(r.body.message, /no tool "Secret"/);
      const mine = (
        await srv.api('POST', '/api/v1/execute/async', {
          type: 'conversation',
          interaction: 'Planner',
          data: { city: 'Bern' },
          tool_names: ['Weather'],
        })
      ).body.runId;
      const theirs = await srv.api('POST', `/api/v1/agents/${mine}/signal/stop`, {}, key.body.value);
      assert.equal(theirs.status, 404);
      assert.equal((await ended(mine)).status, 'completed');
    });
  });
}
