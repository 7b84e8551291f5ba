import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { startOpenAIWireServer, type WireServer } from '../support/openai-wire-server.ts';
import { startAnthropicWireServer, type AnthropicWireServer } from '../support/anthropic-wire-server.ts';

const WEATHER = {
  name: 'get_weather',
  description: 'The weather in a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

/** Tools through POST /runs with the official client: the calls come back on the run, blocking and streamed. */
for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: tool_definitions on a run`, () => {
    let srv: TestServer;
    let openai: WireServer;
    let anthropic: AnthropicWireServer;
    const ix: Record<string, string> = {};
    before(async () => {
      srv = await startTestServer(dialect);
      openai = await startOpenAIWireServer();
      anthropic = await startAnthropicWireServer();
      const envs = {
        openai: { provider: 'openai', endpoint_url: openai.url, apiKey: 'sk-test', default_model: 'gpt-4o-mini' },
        anthropic: {
          provider: 'anthropic',
          endpoint_url: anthropic.url,
          apiKey: 'sk-ant-test',
          default_model: 'claude-sonnet-4-5',
        },
        test: { provider: 'test', default_model: 'tools' },
        echo: { provider: 'test', default_model: 'echo' },
        old: { provider: 'openai', endpoint_url: openai.url, apiKey: 'sk-test', default_model: 'gpt-3.5-turbo' },
      };
      for (const [name, env] of Object.entries(envs)) {
        const e = await srv.api('POST', '/api/v1/environments', { name, ...env });
        assert.equal(e.status, 200, JSON.stringify(e.body));
        const i = await srv.api('POST', '/api/v1/interactions', {
          name: `ask-${name}`,
          status: 'draft',
          environment: e.body.id,
          prompts: [
            {
              type: 'template',
              template: { role: 'user', content: 'Weather in {{city}}?', content_type: 'handlebars' },
            },
          ],
        });
        assert.equal(i.status, 200, JSON.stringify(i.body));
        ix[name] = i.body.id;
      }
    });
    after(async () => {
      await srv.close();
      await openai.close();
      await anthropic.close();
    });

    it('OpenAI, blocking: the run completes with tool_use and finish_reason tool_use', async () => {
      openai.options = { toolCalls: [{ id: 'call_w1', name: 'get_weather', arguments: '{"city":"Paris"}' }] };
      openai.requests.length = 0;
      const run = await srv.client().interactions.execute(ix.openai, {
        data: { city: 'Paris' },
        tool_definitions: [WEATHER],
        config: { model_options: { tool_choice: 'required' } },
      } as any);
      assert.equal(run.status, 'completed');
      assert.equal(run.finish_reason, 'tool_use');
      assert.deepEqual(run.tool_use, [{ id: 'call_w1', tool_name: 'get_weather', tool_input: { city: 'Paris' } }]);
      const body = openai.requests[0].body;
      assert.deepEqual(body.tools, [
        {
          type: 'function',
          function: { name: 'get_weather', description: WEATHER.description, parameters: WEATHER.input_schema },
        },
      ]);
      assert.equal(body.tool_choice, 'required');
      const stored = await srv.client().runs.retrieve(run.id);
      assert.deepEqual((stored as any).tool_use, run.tool_use);
      assert.equal(stored.finish_reason, 'tool_use');
    });

    it('Anthropic, streamed: the close and the stored run carry the assembled calls', async () => {
      anthropic.options = {
        text: 'Let me check.',
        toolUse: [{ id: 'toolu_w1', name: 'get_weather', input: { city: 'Rome' } }],
        inputChunkSize: 3,
      };
      const chunks: string[] = [];
      const started = await srv
        .client()
        .interactions.execute(
          ix.anthropic,
          { data: { city: 'Rome' }, tool_definitions: [WEATHER] } as any,
          (c: string) => chunks.push(c),
        );
      assert.equal(chunks.join(''), 'Let me check.');
      const final = await srv.client().runs.retrieve(started.id);
      assert.equal(final.status, 'completed');
      assert.equal(final.finish_reason, 'tool_use');
      assert.deepEqual((final as any).tool_use, [
        { id: 'toolu_w1', tool_name: 'get_weather', tool_input: { city: 'Rome' } },
      ]);
      assert.deepEqual(final.result, [{ type: 'text', value: 'Let me check.' }]);
      assert.deepEqual(anthropic.requests.at(-1)!.body.tools, [WEATHER]);
    });

    it('malformed arguments from the model are kept as text with a flag, not a crash', async () => {
      openai.options = { toolCalls: [{ id: 'call_bad', name: 'get_weather', arguments: '{"city": "Par' }] };
      const run = await srv.client().interactions.execute(ix.openai, {
        data: { city: 'Paris' },
        tool_definitions: [WEATHER],
      } as any);
      assert.equal(run.status, 'completed');
      assert.deepEqual(run.tool_use, [
        {
          id: 'call_bad',
          tool_name: 'get_weather',
          tool_input: null,
          tool_input_text: '{"city": "Par',
          tool_input_invalid: true,
        },
      ]);
    });

    it('the test provider tools model needs no key', async () => {
      const run = await srv
        .client()
        .interactions.execute(ix.test, { data: { city: 'Oslo' }, tool_definitions: [WEATHER] } as any);
      assert.equal(run.finish_reason, 'tool_use');
      assert.deepEqual(run.tool_use, [
        { id: 'toolu_test_1_1', tool_name: 'get_weather', tool_input: { city: 'text' } },
      ]);
    });

    it('a model that cannot call tools is a 400 naming it, before any provider call', async () => {
      openai.requests.length = 0;
      const old = await srv.api('POST', '/api/v1/runs', {
        interaction: ix.old,
        data: { city: 'x' },
        tool_definitions: [WEATHER],
      });
      assert.equal(old.status, 400);
      assert.equal(old.body.error, 'tools_unsupported');
      assert.match(old.body.message, /model "gpt-3\.5-turbo" of environment "old" \(openai\) cannot call tools/);
      assert.equal(openai.requests.length, 0, 'nothing reached the provider');
      const echo = await srv.api('POST', '/api/v1/runs', {
        interaction: ix.echo,
        data: { city: 'x' },
        tool_definitions: [WEATHER],
      });
      assert.equal(echo.status, 400);
      assert.match(echo.body.message, /model "echo" .* cannot call tools/);
    });

    it('bad tool definitions and tool choices are 400s that say what to fix', async () => {
      const cases: Array<[Record<string, unknown>, RegExp]> = [
        [
          { tool_definitions: [{ name: 'x', input_schema: { type: 'string' } }] },
          /input_schema must have type "object"/,
        ],
        [{ tool_definitions: [WEATHER, WEATHER] }, /"get_weather" is given twice/],
        [
          { tool_definitions: [WEATHER], config: { model_options: { tool_choice: 'always' } } },
          /tool_choice must be one of auto, none, any, required/,
        ],
        [{ config: { model_options: { tool_choice: 'required' } } }, /the run has no tool_definitions/],
        [{ tool_definitions: [{ name: 'bad name', input_schema: { type: 'object' } }] }, /name/],
      ];
      for (const [extra, text] of cases) {
        const r = await srv.api('POST', '/api/v1/runs', { interaction: ix.test, data: { city: 'x' }, ...extra });
        assert.equal(r.status, 400, JSON.stringify(r.body));
        assert.match(r.body.message, text);
      }
    });
  });
}
