import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, startTestServer, seedEcho, type TestServer } from '../support/server.ts';

const WEATHER = {
  name: 'get_weather',
  description: 'The weather in a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

/**
 * Strict execution payloads: an unknown field of POST /runs, POST /execute, the continuations,
 * their config, options and tool results is a 400 naming it; a field of Vertesia's payloads that
 * Orrery does not apply is a 400 naming it and why; no run is stored for either. The official
 * client's own requests still pass.
 */
for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: strict execution payloads`, () => {
    let srv: TestServer;
    let seeded: Awaited<ReturnType<typeof seedEcho>>;
    let toolsEnv: string;
    let toolsIx: string;
    before(async () => {
      srv = await startTestServer(dialect);
      seeded = await seedEcho(srv);
      const env = await srv.api('POST', '/api/v1/environments', {
        name: 'tools',
        provider: 'test',
        default_model: 'tools',
      });
      assert.equal(env.status, 200, JSON.stringify(env.body));
      toolsEnv = env.body.id;
      const ix = await srv.api('POST', '/api/v1/interactions', {
        name: 'ask-tools',
        status: 'draft',
        environment: toolsEnv,
        prompts: [
          { type: 'template', template: { role: 'user', content: 'Weather in {{city}}?', content_type: 'handlebars' } },
        ],
      });
      assert.equal(ix.status, 200, JSON.stringify(ix.body));
      toolsIx = ix.body.id;
    });
    after(() => srv.close());

    const runCount = async () => {
      const r = await srv.api('GET', '/api/v1/runs?limit=1000');
      assert.equal(r.status, 200);
      return r.body.length as number;
    };

    /** A 400 whose message matches, and no run stored. */
    const refused = async (path: string, body: unknown, message: RegExp) => {
      const before = await runCount();
      const r = await srv.api('POST', path, body);
      assert.equal(r.status, 400, JSON.stringify(r.body));
      assert.equal(r.body.error, 'bad_request');
      assert.match(r.body.message, message);
      assert.equal(await runCount(), before, 'no run is stored');
    };

    it('an unknown field at the top, in config and on POST /execute is a 400 naming it', async () => {
      const ok = { interaction: seeded.interaction.id, data: { text: 'x' } };
      await refused('/api/v1/runs', { ...ok, temprature: 0.2 }, /body\.temprature is not a field/);
      await refused('/api/v1/runs', { ...ok, config: { temprature: 0.2 } }, /body\.config\.temprature is not a field/);
      await refused(
        '/api/v1/execute',
        { interaction: 'Echo@draft', data: { text: 'x' }, extra: 1 },
        /body\.extra is not a field/,
      );
    });

    it("Vertesia's fields that Orrery does not apply are refused by name, saying why", async () => {
      const ok = { interaction: seeded.interaction.id, data: { text: 'x' } };
      await refused('/api/v1/runs', { ...ok, prompts: [] }, /^prompts is not applied by Orrery: ad-hoc/);
      await refused('/api/v1/runs', { ...ok, workflow: { run_id: 'r', workflow_id: 'w' } }, /^workflow is not applied/);
      await refused('/api/v1/runs', { ...ok, asyncCompletion: {} }, /^asyncCompletion is not applied/);
      await refused('/api/v1/runs', { ...ok, config: { run_data: 'RESTRICTED' } }, /^config\.run_data is not applied/);
      // config.prompt_cache_key is applied now (OpenAI's prompt_cache_key: test/providers/prompt-cache.test.ts).
      const keyed = await srv.api('POST', '/api/v1/execute', {
        interaction: 'Echo@draft',
        data: { text: 'x' },
        config: { prompt_cache_key: 'k', prompt_cache_mode: 'auto' },
      });
      assert.equal(keyed.status, 200, JSON.stringify(keyed.body));
      assert.equal(keyed.body.config.prompt_cache_key, 'k');
      assert.equal(keyed.body.config.prompt_cache_mode, 'auto');
      await refused('/api/v1/runs', { ...ok, config: { http_timeout: {} } }, /^config\.http_timeout is not applied/);
    });

    it('config.configMode now applies: each of its modes passes, an unknown one is a 400 naming it', async () => {
      const ok = { interaction: seeded.interaction.id, data: { text: 'x' } };
      for (const config of [
        { configMode: 'RUN_CONFIG_ONLY', environment: seeded.env.id },
        { configMode: 'INTERACTION_CONFIG_ONLY' },
      ]) {
        const r = await srv.api('POST', '/api/v1/runs', { ...ok, config });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.equal(r.body.status, 'completed');
        assert.equal(r.body.config.configMode, config.configMode);
      }
      await refused(
        '/api/v1/runs',
        { ...ok, config: { configMode: 'run_only' } },
        /^config\.configMode must be one of/,
      );
    });

    it("the fields Orrery applies pass, and the client's own requests too", async () => {
      const r = await srv.api('POST', '/api/v1/runs', {
        interaction: seeded.interaction.id,
        data: { text: 'x' },
        do_validate: true,
        config: { id: 'cfg-1', configMode: 'RUN_AND_INTERACTION_CONFIG', do_validate: true, max_tokens: 20 },
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.config.id, 'cfg-1');
      assert.equal(r.body.config.max_tokens, 20);
      // do_validate: false now applies (test/runs/validate-schema-refs.test.ts): at the top and in config.
      for (const body of [{ do_validate: false }, { config: { do_validate: false } }]) {
        const kept = await srv.api('POST', '/api/v1/runs', {
          interaction: seeded.interaction.id,
          data: { text: 'x' },
          ...body,
        });
        assert.equal(kept.status, 200, JSON.stringify(kept.body));
        assert.equal(kept.body.config.do_validate, false);
      }
      const client = srv.client();
      const byId = await client.interactions.execute(seeded.interaction.id, {
        data: { text: 'hi' },
        tags: ['t'],
        config: { model_options: { temperature: 0.2 } } as never,
      });
      assert.equal(byId.status, 'completed');
      const byName = await client.interactions.executeByName('Echo@draft', { data: { text: 'hi' } });
      assert.equal(byName.status, 'completed');
      const viaRuns = await client.runs.create({ interaction: seeded.interaction.id, data: { text: 'hi' } });
      assert.equal(viaRuns.status, 'completed');
    });

    it('tool results and user messages: unknown and unapplied fields are 400s naming them', async () => {
      const run = await srv.api('POST', '/api/v1/runs', {
        interaction: toolsIx,
        data: { city: 'Oslo' },
        tool_definitions: [WEATHER],
        conversation: true,
      });
      assert.equal(run.status, 200, JSON.stringify(run.body));
      const base = {
        run: { id: run.body.id },
        environment: toolsEnv,
        tools: [WEATHER],
        results: run.body.tool_use.map((t: any) => ({ tool_use_id: t.id, content: 'ok', is_error: false })),
      };
      await refused('/api/v1/runs/tool-results', { ...base, surprise: 1 }, /body\.surprise is not a field/);
      await refused(
        '/api/v1/runs/tool-results',
        { ...base, results: [{ ...base.results[0], extra: 1 }] },
        /body\.results\.0\.extra is not a field/,
      );
      await refused(
        '/api/v1/runs/tool-results',
        { ...base, results: [{ ...base.results[0], display_message: 'hi' }] },
        /^results\[0\]\.display_message is not applied/,
      );
      await refused('/api/v1/runs/tool-results', { ...base, asyncCompletion: {} }, /^asyncCompletion is not applied/);
      await refused(
        '/api/v1/runs/tool-results',
        { ...base, options: { model: 'tools', include_original_response: true } },
        /^options\.include_original_response is not applied/,
      );
      await refused(
        '/api/v1/runs/user-message',
        { ...base, message: 'and tomorrow?', options: { model: 'tools', bogus: 1 } },
        /body\.options\.bogus is not a field/,
      );
      const client = srv.client();
      const next = await client.runs.sendToolResults({
        ...base,
        options: { model: 'tools' },
        conversation: run.body.conversation,
      } as never);
      assert.equal((next as any).status, 'completed', JSON.stringify(next));
    });
  });
}
