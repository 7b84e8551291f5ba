import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { startOpenAIWireServer, type WireServer } from '../support/openai-wire-server.ts';
import { startAnthropicWireServer, type AnthropicWireServer } from '../support/anthropic-wire-server.ts';
import { openStream } from '../support/sse.ts';

const WEATHER = {
  name: 'get_weather',
  description: 'The weather in a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

const lastIsResultMessage = (m: any) =>
  m.role === 'tool' || (Array.isArray(m.content) && m.content[0]?.type === 'tool_result');

/** The last message of a request is a tool result (OpenAI: role tool; Anthropic: a user turn of tool_result blocks). */
const lastIsResult = (body: any) => {
  const last = body.messages.at(-1);
  return last.role === 'tool' || (Array.isArray(last.content) && last.content[0]?.type === 'tool_result');
};

/**
 * Continuations through the official client: a tool loop run to its final answer with
 * runs.sendToolResults, a chat continued with runs.sendUserMessage, each provider request checked
 * whole (tools, calls, results, history order), blocking and streamed; and every bad path a 4xx
 * before any provider call.
 */
for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: conversations continued`, () => {
    let srv: TestServer;
    let openai: WireServer;
    let anthropic: AnthropicWireServer;
    const ix: Record<string, string> = {};
    const env: Record<string, string> = {};
    before(async () => {
      srv = await startTestServer(dialect, { conversationMaxTurns: 6 });
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
        old: { provider: 'openai', endpoint_url: openai.url, apiKey: 'sk-test', default_model: 'gpt-3.5-turbo' },
      };
      for (const [name, e] of Object.entries(envs)) {
        const created = await srv.api('POST', '/api/v1/environments', { name, ...e });
        assert.equal(created.status, 200, JSON.stringify(created.body));
        env[name] = created.body.id;
        const i = await srv.api('POST', '/api/v1/interactions', {
          name: `ask-${name}`,
          status: 'draft',
          environment: created.body.id,
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

    const ref = (run: any) => ({ id: run.id, account: run.account, project: run.project });

    it('OpenAI, blocking: a tool loop runs to its answer, each request the whole history in order', async () => {
      const calls = [
        [{ id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' }],
        [
          { id: 'call_2', name: 'get_weather', arguments: '{"city":"Lyon"}' },
          { id: 'call_3', name: 'get_weather', arguments: '{"city":"Nice"}' },
        ],
      ];
      let turn = 0;
      openai.options = {
        toolCalls: () => calls[turn++],
        text: (body: any) => (lastIsResult(body) && turn > calls.length ? 'Sunny everywhere.' : ''),
      };
      openai.requests.length = 0;
      const client = srv.client();
      let run: any = await client.interactions.execute(ix.openai, {
        data: { city: 'Paris' },
        tool_definitions: [WEATHER],
        conversation: true,
      } as any);
      assert.equal(run.finish_reason, 'tool_use');
      assert.equal(run.conversation.orrery_conversation, 1);
      assert.equal(run.conversation.run, run.id);
      assert.equal(run.conversation.turns, 1);
      const first = run.id;
      const ids = [first];
      while (run.tool_use?.length) {
        run = await client.runs.sendToolResults({
          run: ref(run),
          environment: env.openai,
          options: { model: 'gpt-4o-mini' },
          tools: [WEATHER],
          conversation: run.conversation,
          results: run.tool_use.map((t: any) => ({
            tool_use_id: t.id,
            content: `${t.tool_input.city}: 21C`,
            is_error: t.id === 'call_3',
          })),
        } as any);
        ids.push(run.id);
        assert.equal(run.previous_run, ids.at(-2));
      }
      assert.equal(ids.length, 3);
      assert.deepEqual(run.result, [{ type: 'text', value: 'Sunny everywhere.' }]);
      assert.equal(run.conversation.turns, 3);
      assert.equal(run.conversation.run, run.id);

      assert.equal(openai.requests.length, 3);
      const toolsOnWire = [
        {
          type: 'function',
          function: { name: 'get_weather', description: WEATHER.description, parameters: WEATHER.input_schema },
        },
      ];
      for (const r of openai.requests) assert.deepEqual(r.body.tools, toolsOnWire);
      const assistantCall = (id: string, city: string) => ({
        id,
        type: 'function',
        function: { name: 'get_weather', arguments: JSON.stringify({ city }) },
      });
      assert.deepEqual(openai.requests[2].body.messages, [
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: null, tool_calls: [assistantCall('call_1', 'Paris')] },
        { role: 'tool', tool_call_id: 'call_1', content: 'Paris: 21C' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [assistantCall('call_2', 'Lyon'), assistantCall('call_3', 'Nice')],
        },
        { role: 'tool', tool_call_id: 'call_2', content: 'Lyon: 21C' },
        // is_error reaches OpenAI, which has no flag for it, as the content's prefix.
        { role: 'tool', tool_call_id: 'call_3', content: 'Error: Nice: 21C' },
      ]);
      assert.deepEqual(openai.requests[1].body.messages, openai.requests[2].body.messages.slice(0, 3));
      // Each run stores only its own turn.
      const stored = await client.runs.retrieve(ids[1]);
      assert.equal((stored.prompt as any[]).length, 1);
      assert.equal((stored.prompt as any[])[0].role, 'tool');
      assert.equal((stored as any).previous_run, first);
      assert.deepEqual(run.conversation.messages.at(-1), { role: 'assistant', content: 'Sunny everywhere.' });
    });

    it('Anthropic, streamed: the first run and the continuation stream, and the close carries tool_use', async () => {
      // A call on each of the first two turns, then the answer.
      const results = (body: any) => body.messages.filter(lastIsResultMessage).length;
      anthropic.options = {
        toolUse: (body: any) =>
          results(body) < 2
            ? [{ id: `toolu_${results(body) + 1}`, name: 'get_weather', input: { city: 'Rome' } }]
            : undefined,
        text: (body: any) => (results(body) === 2 ? 'It is warm in Rome.' : 'Let me check.'),
      };
      anthropic.requests.length = 0;
      const chunks: string[] = [];
      const started: any = await srv
        .client()
        .interactions.execute(
          ix.anthropic,
          { data: { city: 'Rome' }, tool_definitions: [WEATHER], conversation: true } as any,
          (c: string) => chunks.push(c),
        );
      assert.equal(chunks.join(''), 'Let me check.');
      assert.deepEqual(started.conversation, { orrery_conversation: 1, run: started.id, turns: 1 });
      const first: any = await srv.client().runs.retrieve(started.id);
      assert.deepEqual(first.tool_use, [{ id: 'toolu_1', tool_name: 'get_weather', tool_input: { city: 'Rome' } }]);
      const next = await srv.api('POST', '/api/v1/runs/tool-results', {
        run: { id: started.id },
        environment: env.anthropic,
        options: { model: 'claude-sonnet-4-5' },
        tools: [],
        stream: true,
        results: [{ tool_use_id: 'toolu_1', content: 'Rome: 28C', is_error: false }],
      });
      assert.equal(next.status, 200, JSON.stringify(next.body));
      assert.equal(next.body.status, 'created');
      assert.deepEqual(next.body.conversation, { orrery_conversation: 1, run: next.body.id, turns: 2 });
      const s = await openStream(
        `${srv.url}/api/v1/runs/${next.body.id}/stream?access_token=${encodeURIComponent(srv.adminKey)}`,
      );
      const events = await s.all();
      const text = events.filter((e) => e.event === 'message').map((e) => JSON.parse(e.data));
      assert.equal(text.join(''), 'Let me check.');
      const close = JSON.parse(events.find((e) => e.event === 'close')!.data);
      assert.equal(close.status, 'completed');
      assert.equal(close.previous_run, started.id);
      assert.deepEqual(close.tool_use, [{ id: 'toolu_2', tool_name: 'get_weather', tool_input: { city: 'Rome' } }]);
      const body = anthropic.requests.at(-1)!.body;
      // An empty tools list keeps the tools of the run continued.
      assert.deepEqual(body.tools, [WEATHER]);
      const assistant = (id: string) => ({
        role: 'assistant',
        content: [
          { type: 'text', text: 'Let me check.' },
          { type: 'tool_use', id, name: 'get_weather', input: { city: 'Rome' } },
        ],
      });
      assert.deepEqual(body.messages, [
        { role: 'user', content: 'Weather in Rome?' },
        assistant('toolu_1'),
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'Rome: 28C' }] },
      ]);
      const last: any = await srv.client().runs.sendToolResults({
        run: { id: close.id, account: close.account, project: close.project },
        environment: env.anthropic,
        options: { model: 'claude-sonnet-4-5' },
        tools: [WEATHER],
        results: [{ tool_use_id: 'toolu_2', content: 'no data', is_error: true }],
      } as any);
      assert.deepEqual(last.result, [{ type: 'text', value: 'It is warm in Rome.' }]);
      assert.equal(last.tool_use, undefined);
      assert.deepEqual(anthropic.requests.at(-1)!.body.messages.slice(3), [
        assistant('toolu_2'),
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: 'toolu_2', content: 'no data', is_error: true }],
        },
      ]);
    });

    it('OpenAI, streamed: the tool loop streams each turn, whose close carries the calls assembled from their deltas', async () => {
      let turn = 0;
      openai.options = {
        toolCalls: () =>
          turn++ === 0 ? [{ id: 'call_s1', name: 'get_weather', arguments: '{"city":"Oslo"}' }] : undefined,
        text: (body: any) => (lastIsResult(body) ? 'Cold in Oslo.' : 'Checking.'),
      };
      openai.requests.length = 0;
      const chunks: string[] = [];
      const started: any = await srv
        .client()
        .interactions.execute(
          ix.openai,
          { data: { city: 'Oslo' }, tool_definitions: [WEATHER], conversation: true } as any,
          (c: string) => chunks.push(c),
        );
      assert.equal(chunks.join(''), 'Checking.');
      assert.equal(openai.requests[0].body.stream, true, 'the provider was asked to stream');
      const first: any = await srv.client().runs.retrieve(started.id);
      assert.equal(first.finish_reason, 'tool_use');
      assert.deepEqual(first.tool_use, [{ id: 'call_s1', tool_name: 'get_weather', tool_input: { city: 'Oslo' } }]);
      const next = await srv.api('POST', '/api/v1/runs/tool-results', {
        run: { id: started.id },
        environment: env.openai,
        options: { model: 'gpt-4o-mini' },
        stream: true,
        results: [{ tool_use_id: 'call_s1', content: 'Oslo: -3C' }],
      });
      assert.equal(next.status, 200, JSON.stringify(next.body));
      const s = await openStream(
        `${srv.url}/api/v1/runs/${next.body.id}/stream?access_token=${encodeURIComponent(srv.adminKey)}`,
      );
      const events = await s.all();
      const text = events.filter((e) => e.event === 'message').map((e) => JSON.parse(e.data));
      assert.equal(text.join(''), 'Cold in Oslo.');
      const close = JSON.parse(events.find((e) => e.event === 'close')!.data);
      assert.equal(close.status, 'completed');
      assert.equal(close.previous_run, started.id);
      assert.equal(close.tool_use, undefined);
      const body = openai.requests.at(-1)!.body;
      assert.equal(body.stream, true);
      assert.deepEqual(body.messages, [
        { role: 'user', content: 'Weather in Oslo?' },
        {
          role: 'assistant',
          content: 'Checking.',
          tool_calls: [
            { id: 'call_s1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_s1', content: 'Oslo: -3C' },
      ]);
    });

    it("a compatible model of unknown tool support is sent the tools, and the provider's own refusal is reported", async () => {
      const compat = await srv.api('POST', '/api/v1/environments', {
        name: 'compat-unknown',
        provider: 'openai_compatible',
        endpoint_url: openai.url,
        apiKey: 'sk-test',
        default_model: 'my-local-model',
      });
      assert.equal(compat.status, 200, JSON.stringify(compat.body));
      openai.options = { fail: { status: 400, message: 'tools are not supported by my-local-model', times: 1 } };
      openai.requests.length = 0;
      const r = await srv.api('POST', '/api/v1/runs', {
        interaction: ix.openai,
        data: { city: 'Oslo' },
        tool_definitions: [WEATHER],
        config: { environment: compat.body.id, model: 'my-local-model' },
      });
      assert.equal(openai.requests.length, 1, 'the tools were sent: the model is assumed capable');
      assert.equal(openai.requests[0].body.tools[0].function.name, 'get_weather');
      // The upstream's 400 is the caller's to fix, said as the provider said it, with the run failed.
      assert.equal(r.status, 502, JSON.stringify(r.body));
      assert.equal(r.body.error, 'provider_bad_request');
      assert.match(r.body.message, /HTTP 400: tools are not supported by my-local-model/);
      const stored: any = await srv.client().runs.retrieve(r.body.id);
      assert.equal(stored.status, 'failed');
      assert.equal(stored.error.code, 'provider_bad_request');
      assert.match(stored.error.message, /tools are not supported by my-local-model/);
      openai.options = {};
    });

    it('a chat continued with runs.sendUserMessage sends the history in order', async () => {
      openai.options = { text: (body: any) => `answer ${body.messages.length}` };
      openai.requests.length = 0;
      const client = srv.client();
      const first: any = await client.interactions.execute(ix.openai, { data: { city: 'Oslo' } } as any);
      assert.equal(first.result[0].value, 'answer 1');
      const second: any = await client.runs.sendUserMessage({
        run: ref(first),
        environment: env.openai,
        options: { model: 'gpt-4o-mini' },
        tools: [],
        message: 'And tomorrow?',
      } as any);
      const third: any = await client.runs.sendUserMessage({
        run: ref(second),
        environment: env.openai,
        options: { model: 'gpt-4o-mini' },
        tools: [],
        conversation: second.conversation,
        message: 'Thanks.',
      } as any);
      assert.equal(third.result[0].value, 'answer 5');
      assert.equal(openai.requests[2].body.tools, undefined);
      assert.deepEqual(openai.requests[2].body.messages, [
        { role: 'user', content: 'Weather in Oslo?' },
        { role: 'assistant', content: 'answer 1' },
        { role: 'user', content: 'And tomorrow?' },
        { role: 'assistant', content: 'answer 3' },
        { role: 'user', content: 'Thanks.' },
      ]);
      assert.deepEqual(third.conversation.messages, [
        ...openai.requests[2].body.messages,
        { role: 'assistant', content: 'answer 5' },
      ]);
    });

    it("the interaction's stored model_options.tool_definitions reach the provider", async () => {
      const i = await srv.api('POST', '/api/v1/interactions', {
        name: 'stored-tools',
        status: 'draft',
        environment: env.openai,
        model_options: { tool_definitions: [WEATHER] },
        prompts: [{ type: 'template', template: { role: 'user', content: 'Weather?', content_type: 'text' } }],
      });
      assert.equal(i.status, 200, JSON.stringify(i.body));
      openai.options = { toolCalls: [{ id: 'call_s', name: 'get_weather', arguments: '{"city":"Bern"}' }] };
      const run: any = await srv.client().interactions.execute(i.body.id, {} as any);
      assert.equal(run.finish_reason, 'tool_use');
      assert.equal(openai.requests.at(-1)!.body.tools[0].function.name, 'get_weather');
    });

    /** A run of the test provider's tools model that asked for one call. */
    const toolRun = async () => {
      const run = await srv.api('POST', '/api/v1/runs', {
        interaction: ix.test,
        data: { city: 'Oslo' },
        tool_definitions: [WEATHER],
        conversation: true,
      });
      assert.equal(run.status, 200, JSON.stringify(run.body));
      assert.equal(run.body.tool_use.length, 1);
      return run.body;
    };
    const results = (run: any, content = 'ok') => ({
      run: { id: run.id },
      environment: env.test,
      tools: [WEATHER],
      results: run.tool_use.map((t: any) => ({ tool_use_id: t.id, content, is_error: false })),
    });

    it('the tools model answers with the results it was sent', async () => {
      const run = await toolRun();
      const next = await srv.api('POST', '/api/v1/runs/tool-results', results(run, 'Oslo: 3C'));
      assert.equal(next.status, 200, JSON.stringify(next.body));
      assert.equal(next.body.finish_reason, 'stop');
      assert.match(next.body.result[0].value, /Oslo: 3C/);
    });

    it('an unknown tool_use_id and a missing result are 400s naming the call, before any provider call', async () => {
      const run = await toolRun();
      const before = openai.requests.length;
      const unknown = await srv.api('POST', '/api/v1/runs/tool-results', {
        ...results(run),
        results: [{ tool_use_id: 'nope', content: 'x', is_error: false }],
      });
      assert.equal(unknown.status, 400);
      assert.match(unknown.body.message, /"nope" names no call/);
      const missing = await srv.api('POST', '/api/v1/runs/tool-results', { ...results(run), results: [] });
      assert.equal(missing.status, 400);
      assert.match(missing.body.message, new RegExp(`no result for call ${run.tool_use[0].id}`));
      const owed = await srv.api('POST', '/api/v1/runs/user-message', {
        run: { id: run.id },
        environment: env.test,
        message: 'hi',
      });
      assert.equal(owed.status, 400);
      assert.match(owed.body.message, /every call needs a result/);
      assert.equal(openai.requests.length, before);
    });

    it("another project's run is a 404", async () => {
      const run = await toolRun();
      const project = await srv.api('POST', '/api/v1/projects', { name: 'Elsewhere' });
      const key = await srv.api('POST', '/api/v1/apikeys', { name: 'elsewhere', project: project.body.id });
      const theirs = await srv.api('POST', '/api/v1/runs/tool-results', results(run), key.body.value);
      assert.equal(theirs.status, 404);
      assert.match(theirs.body.message, new RegExp(run.id));
    });

    it('a tool-less model is a 400 naming it, before any provider call', async () => {
      const run = await toolRun();
      openai.requests.length = 0;
      const old = await srv.api('POST', '/api/v1/runs/tool-results', {
        ...results(run),
        environment: env.old,
        options: { model: 'gpt-3.5-turbo' },
      });
      assert.equal(old.status, 400);
      assert.equal(old.body.error, 'tools_unsupported');
      assert.match(old.body.message, /gpt-3\.5-turbo/);
      assert.equal(openai.requests.length, 0);
    });

    it('a conversation that names another run is a 409', async () => {
      const a = await toolRun();
      const b = await toolRun();
      const mismatch = await srv.api('POST', '/api/v1/runs/tool-results', {
        ...results(a),
        conversation: b.conversation,
      });
      assert.equal(mismatch.status, 409);
      assert.equal(mismatch.body.error, 'conversation_mismatch');
      assert.match(mismatch.body.message, new RegExp(`conversation.run is ${b.id}`));
    });

    it('a history past ORRERY_CONVERSATION_MAX_TURNS is a 413 naming the limit', async () => {
      let run: any = await srv.api('POST', '/api/v1/runs', { interaction: ix.test, data: { city: 'Oslo' } });
      run = run.body;
      for (let turn = 2; turn <= 6; turn++) {
        const next = await srv.api('POST', '/api/v1/runs/user-message', {
          run: { id: run.id },
          environment: env.test,
          message: `turn ${turn}`,
        });
        assert.equal(next.status, 200, JSON.stringify(next.body));
        run = next.body;
      }
      assert.equal(run.conversation.turns, 6);
      const past = await srv.api('POST', '/api/v1/runs/user-message', {
        run: { id: run.id },
        environment: env.test,
        message: 'one more',
      });
      assert.equal(past.status, 413);
      assert.equal(past.body.error, 'conversation_too_long');
      assert.match(past.body.message, /limit of 6 \(ORRERY_CONVERSATION_MAX_TURNS\)/);
    });

    it('a middle run lost from the database makes later continuations a 409 that says a turn was lost', async () => {
      const first = await toolRun();
      const second = await srv.api('POST', '/api/v1/runs/tool-results', results(first));
      const third = await srv.api('POST', '/api/v1/runs/user-message', {
        run: { id: second.body.id },
        environment: env.test,
        message: 'more',
      });
      assert.equal(third.status, 200, JSON.stringify(third.body));
      // DELETE /runs/:id takes the whole conversation: a turn is lost only when its row is (a partial restore).
      await sql`DELETE FROM runs WHERE id = ${second.body.id}`.execute(srv.orrery.database.db);
      const lost = await srv.api('POST', '/api/v1/runs/user-message', {
        run: { id: third.body.id },
        environment: env.test,
        message: 'again',
      });
      assert.equal(lost.status, 409);
      assert.equal(lost.body.error, 'conversation_turn_lost');
      assert.match(lost.body.message, new RegExp(`lost turn 2: run ${second.body.id}`));
    });

    it('malformed tool arguments from the model are answered with an error result, and the loop goes on', async () => {
      let turn = 0;
      openai.options = {
        toolCalls: () =>
          turn++ === 0 ? [{ id: 'call_bad', name: 'get_weather', arguments: '{"city": "Par' }] : undefined,
        text: (body: any) => (lastIsResult(body) ? 'Sorry.' : ''),
      };
      const run: any = await srv.client().interactions.execute(ix.openai, {
        data: { city: 'Paris' },
        tool_definitions: [WEATHER],
      } as any);
      assert.equal(run.tool_use[0].tool_input_invalid, true);
      const next: any = await srv.client().runs.sendToolResults({
        run: ref(run),
        environment: env.openai,
        options: { model: 'gpt-4o-mini' },
        tools: [WEATHER],
        results: [{ tool_use_id: 'call_bad', content: 'arguments were not JSON', is_error: true }],
      } as any);
      assert.equal(next.result[0].value, 'Sorry.');
      const sent = openai.requests.at(-1)!.body.messages;
      assert.equal(sent[1].tool_calls[0].function.arguments, '{"city": "Par');
    });

    it('a conversation passed back to POST /runs is a fork: restricted, continued only from what the caller holds', async () => {
      const first = await toolRun();
      const next = await srv.api('POST', '/api/v1/runs/tool-results', results(first, 'Oslo: 3C'));
      const fork = await srv.api('POST', '/api/v1/runs', {
        interaction: ix.test,
        data: { city: 'Bergen' },
        tool_definitions: [WEATHER],
        conversation: next.body.conversation,
      });
      assert.equal(fork.status, 200, JSON.stringify(fork.body));
      assert.equal(fork.body.conversation.turns, 3);
      const without = await srv.api('POST', '/api/v1/runs/tool-results', results(fork.body));
      assert.equal(without.status, 409);
      assert.match(without.body.message, /restricted conversation/);
      const withIt = await srv.api('POST', '/api/v1/runs/tool-results', {
        ...results(fork.body),
        conversation: fork.body.conversation,
      });
      assert.equal(withIt.status, 200, JSON.stringify(withIt.body));
      assert.equal(withIt.body.conversation.turns, 4);
      const bad = await srv.api('POST', '/api/v1/runs', {
        interaction: ix.test,
        conversation: { orrery_conversation: 1, run: 'x', turns: 1, messages: [{ role: 'robot', content: 'x' }] },
      });
      assert.equal(bad.status, 400);
      assert.match(bad.body.message, /conversation.messages\[0\]/);
    });
  });
}
