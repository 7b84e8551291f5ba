import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { startOpenAIWireServer, type WireServer } from '../support/openai-wire-server.ts';
import { startAnthropicWireServer, signatureOf, type AnthropicWireServer } from '../support/anthropic-wire-server.ts';
import { can } from '../../src/auth/permissions.ts';
import { KEY_ROLES } from '../../src/auth/principal.ts';

/** A 1×1 PNG, base64. */
const PIXEL = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
/** A few bytes standing for a PDF (the door does not parse it; the provider is sent it). */
const PDF = Buffer.from('%PDF-1.4 a small document').toString('base64');

const WEATHER_TOOL = {
  name: 'get_weather',
  description: 'The weather in a city',
  input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] },
};

/** An error the SDK threw for an answer in Anthropic's shape: its status and error type. */
const anthropicError = (err: any, status: number, type: string): boolean => {
  const body: any = err?.error;
  return (
    err instanceof Anthropic.APIError && err.status === status && body?.type === 'error' && body.error?.type === type
  );
};

const runIdOf = (messageId: string) => messageId.replace(/^msg_/, '');

const hasToolResult = (body: Record<string, unknown>) =>
  (body.messages as Array<{ role: string }>).some((m) => m.role === 'tool');

/** The official @anthropic-ai/sdk (unmodified) against a real Orrery, with Anthropic and OpenAI wire servers behind it. */
for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: the Anthropic door`, () => {
    let srv: TestServer;
    let openaiWire: WireServer;
    let anthropicWire: AnthropicWireServer;
    let sdk: Anthropic;
    const ids: Record<string, string> = {};

    async function findRun(id: string) {
      const list = await srv.api('GET', '/api/v1/runs?limit=100');
      assert.equal(list.status, 200, JSON.stringify(list.body));
      const ref = list.body.find((r: { id: string }) => r.id === id);
      assert.ok(ref, `run ${id} is listed`);
      const run = await srv.api('GET', `/api/v1/runs/${id}`);
      assert.equal(run.status, 200);
      return { ref, run: run.body };
    }

    before(async () => {
      srv = await startTestServer(dialect);
      openaiWire = await startOpenAIWireServer();
      anthropicWire = await startAnthropicWireServer();
      const envs = [
        {
          name: 'oa',
          provider: 'openai',
          endpoint_url: openaiWire.url,
          apiKey: 'sk-test',
          default_model: 'gpt-4o-mini',
        },
        {
          name: 'claude',
          provider: 'anthropic',
          endpoint_url: anthropicWire.url,
          apiKey: 'sk-ant-test',
          default_model: 'claude-sonnet-4-5',
        },
      ];
      for (const env of envs) {
        const e = await srv.api('POST', '/api/v1/environments', env);
        assert.equal(e.status, 200, JSON.stringify(e.body));
        ids[env.name] = e.body.id;
      }
      sdk = new Anthropic({ baseURL: srv.url, apiKey: srv.adminKey, maxRetries: 0 });
    });
    after(async () => {
      await srv.close();
      await openaiWire.close();
      await anthropicWire.close();
    });

    it('blocking, Anthropic behind it: system and sampling applied, the answer a message, the call a run of sys:anthropic', async () => {
      anthropicWire.options = { text: 'Hello from Claude.', usage: { input_tokens: 12, output_tokens: 4 } };
      const message = await sdk.messages.create(
        // Sampling fields this SDK's types no longer list, as older clients still send them.
        {
          model: 'claude/claude-sonnet-4-5',
          max_tokens: 64,
          system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
          messages: [{ role: 'user', content: 'Hi' }],
          temperature: 0.3,
          top_k: 5,
          stop_sequences: ['END'],
          metadata: { user_id: 'alice' },
        } as Anthropic.MessageCreateParamsNonStreaming,
        { headers: { 'x-orrery-tags': 'door-test' } },
      );
      assert.equal(message.type, 'message');
      assert.equal(message.role, 'assistant');
      assert.match(message.id, /^msg_/);
      assert.equal(message.model, 'claude/claude-sonnet-4-5');
      assert.deepEqual(message.content, [{ type: 'text', text: 'Hello from Claude.' }]);
      assert.equal(message.stop_reason, 'end_turn');
      assert.equal(message.usage.input_tokens, 12);
      assert.equal(message.usage.output_tokens, 4);
      const sent = anthropicWire.requests.at(-1)!.body;
      assert.equal(sent.model, 'claude-sonnet-4-5');
      // The breakpoint reaches Claude on the block it was on (anthropic-cache.test.ts has the rest).
      assert.deepEqual(sent.system, [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }]);
      assert.equal(sent.max_tokens, 64);
      assert.equal(sent.temperature, 0.3);
      assert.equal(sent.top_k, 5);
      assert.deepEqual(sent.stop_sequences, ['END']);
      assert.deepEqual(sent.messages, [{ role: 'user', content: 'Hi' }]);
      const { ref, run } = await findRun(runIdOf(message.id));
      assert.equal(ref.interaction.id, 'sys:anthropic');
      assert.equal(run.source.type, 'anthropic');
      assert.equal(run.status, 'completed');
      assert.equal(run.environment.name, 'claude');
      assert.ok(run.tags.includes('user:alice'));
      assert.ok(run.tags.includes('door-test'));
      assert.deepEqual(run.prompt, [
        { role: 'system', content: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }] },
        { role: 'user', content: 'Hi' },
      ]);
      const viaClient = await srv.client().runs.retrieve(run.id);
      assert.equal((viaClient.interaction as { id: string }).id, 'sys:anthropic');
    });

    it("streamed: Anthropic's exact event sequence, input_tokens in message_delta, the run stored", async () => {
      anthropicWire.options = {
        chunks: ['Bonjour ', 'from ', 'Claude.'],
        usage: { input_tokens: 9, output_tokens: 3 },
      };
      const stream = sdk.messages.stream({
        model: 'claude/claude-sonnet-4-5',
        max_tokens: 64,
        messages: [{ role: 'user', content: 'Say hello' }],
      });
      const events: Anthropic.MessageStreamEvent[] = [];
      stream.on('streamEvent', (e) => events.push(e));
      const final = await stream.finalMessage();
      assert.deepEqual(
        events.map((e) => e.type),
        [
          'message_start',
          'content_block_start',
          'content_block_delta',
          'content_block_delta',
          'content_block_delta',
          'content_block_stop',
          'message_delta',
          'message_stop',
        ],
      );
      assert.equal(final.content.length, 1);
      assert.equal(final.content[0].type, 'text');
      assert.equal((final.content[0] as Anthropic.TextBlock).text, 'Bonjour from Claude.');
      assert.equal(final.stop_reason, 'end_turn');
      assert.equal(final.usage.input_tokens, 9);
      assert.equal(final.usage.output_tokens, 3);
      const { run } = await findRun(runIdOf(final.id));
      assert.equal(run.status, 'completed');
      assert.deepEqual(run.result, [{ type: 'text', value: 'Bonjour from Claude.' }]);
      // The raw wire: event names match the data's type, a ping after message_start.
      const raw = await fetch(`${srv.url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': srv.adminKey, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
        body: JSON.stringify({
          model: 'claude/claude-sonnet-4-5',
          max_tokens: 16,
          stream: true,
          messages: [{ role: 'user', content: 'x' }],
        }),
      });
      const text = await raw.text();
      const frames = text
        .split('\n\n')
        .filter((f) => f.startsWith('event:'))
        .map((f) => {
          const [ev, data] = f.split('\n');
          return { event: ev.slice('event: '.length), data: JSON.parse(data.slice('data: '.length)) };
        });
      assert.deepEqual(
        frames.slice(0, 2).map((f) => f.event),
        ['message_start', 'ping'],
      );
      for (const f of frames) assert.equal(f.data.type, f.event);
      assert.equal(frames.at(-1)!.event, 'message_stop');
    });

    it('tools, OpenAI behind it: tool_use blocks answered, tool_result sent on as a tool message; linked turns', async () => {
      openaiWire.options = {
        toolCalls: (body) =>
          hasToolResult(body) ? undefined : [{ id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' }],
        text: (body) => (hasToolResult(body) ? 'Sunny in Paris.' : ''),
      };
      const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'Weather in Paris?' }];
      const first = await sdk.messages.create({
        model: 'oa/gpt-4o-mini',
        max_tokens: 100,
        messages,
        tools: [WEATHER_TOOL],
        tool_choice: { type: 'any' },
      });
      assert.equal(first.stop_reason, 'tool_use');
      assert.deepEqual(first.content, [
        { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } },
      ]);
      const upstream = openaiWire.requests.at(-1)!.body;
      assert.equal(upstream.tool_choice, 'required');
      assert.equal(upstream.tools[0].function.name, 'get_weather');
      messages.push({ role: 'assistant', content: first.content });
      messages.push({
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: 'call_1', content: [{ type: 'text', text: '{"sky":"clear"}' }] }],
      });
      const second = await sdk.messages.create({
        model: 'oa/gpt-4o-mini',
        max_tokens: 100,
        messages,
        tools: [WEATHER_TOOL],
      });
      assert.deepEqual(second.content, [{ type: 'text', text: 'Sunny in Paris.' }]);
      const sent = openaiWire.requests.at(-1)!.body.messages;
      assert.deepEqual(sent[2], { role: 'tool', tool_call_id: 'call_1', content: '{"sky":"clear"}' });
      const { run } = await findRun(runIdOf(second.id));
      assert.equal(run.previous_run, runIdOf(first.id));
      assert.deepEqual(run.prompt, [
        { role: 'tool', content: [{ type: 'tool_result', tool_use_id: 'call_1', content: '{"sky":"clear"}' }] },
      ]);
      // Streamed, the call arrives as a tool_use block with its input as input_json_delta.
      const stream = sdk.messages.stream({
        model: 'oa/gpt-4o-mini',
        max_tokens: 100,
        messages: [{ role: 'user', content: 'Weather in Paris again?' }],
        tools: [WEATHER_TOOL],
      });
      const types: string[] = [];
      stream.on('streamEvent', (e) => types.push(e.type === 'content_block_delta' ? e.delta.type : e.type));
      const final = await stream.finalMessage();
      assert.ok(types.includes('input_json_delta'));
      assert.equal(final.stop_reason, 'tool_use');
      assert.deepEqual(final.content, [
        { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } },
      ]);
    });

    it('tools, Anthropic behind it, with an image, a PDF, a text document and signed thinking in the history', async () => {
      anthropicWire.options = {
        toolUse: (body) =>
          JSON.stringify(body.messages).includes('tool_result')
            ? undefined
            : [{ id: 'toolu_1', name: 'get_weather', input: { city: 'Rome' } }],
        text: (body) => (JSON.stringify(body.messages).includes('tool_result') ? 'Warm in Rome.' : 'Let me look.'),
      };
      const first = await sdk.messages.create({
        model: 'claude/claude-sonnet-4-5',
        max_tokens: 100,
        tools: [WEATHER_TOOL],
        messages: [
          {
            role: 'user',
            content: [
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PIXEL } },
              {
                type: 'document',
                source: { type: 'base64', media_type: 'application/pdf', data: PDF },
                title: 'Brief',
              },
              { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'Rome is in Italy.' } },
              { type: 'text', text: 'Weather where this is?' },
            ],
          },
        ],
      });
      assert.equal(first.stop_reason, 'tool_use');
      assert.deepEqual(first.content, [
        { type: 'text', text: 'Let me look.' },
        { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Rome' } },
      ]);
      const sent = anthropicWire.requests.at(-1)!.body.messages[0].content;
      assert.deepEqual(sent[0], { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PIXEL } });
      assert.deepEqual(sent[1], {
        type: 'document',
        source: { type: 'base64', media_type: 'application/pdf', data: PDF },
      });
      assert.deepEqual(sent[2], { type: 'text', text: 'Rome is in Italy.' });
      const second = await sdk.messages.create({
        model: 'claude/claude-sonnet-4-5',
        max_tokens: 100,
        tools: [WEATHER_TOOL],
        messages: [
          { role: 'user', content: 'Weather in Rome?' },
          {
            role: 'assistant',
            content: [
              { type: 'thinking', thinking: 'The user wants Rome.', signature: signatureOf('The user wants Rome.') },
              ...first.content,
            ] as Anthropic.ContentBlockParam[],
          },
          {
            role: 'user',
            content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '25°C', is_error: false }],
          },
        ],
      });
      assert.deepEqual(second.content, [{ type: 'text', text: 'Warm in Rome.' }]);
      const turns = anthropicWire.requests.at(-1)!.body.messages;
      assert.deepEqual(turns[1].content[0], {
        type: 'thinking',
        thinking: 'The user wants Rome.',
        signature: signatureOf('The user wants Rome.'),
      });
      assert.deepEqual(turns[2].content, [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '25°C' }]);
    });

    it("output_config.format: a JSON Schema answer, sent on as the provider's structured output", async () => {
      openaiWire.options = { text: '{"city":"Paris"}' };
      const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
      const m = await sdk.messages.create({
        model: 'oa/gpt-4o-mini',
        max_tokens: 50,
        messages: [{ role: 'user', content: 'Which city?' }],
        output_config: { format: { type: 'json_schema', schema } },
      });
      assert.deepEqual(JSON.parse((m.content[0] as Anthropic.TextBlock).text), { city: 'Paris' });
      const sent = openaiWire.requests.at(-1)!.body;
      assert.equal(sent.response_format.type, 'json_schema');
      assert.deepEqual(sent.response_format.json_schema.schema.properties, schema.properties);
    });

    it('count_tokens: an estimate that grows with the request, no run, no provider call', async () => {
      const before = anthropicWire.requests.length;
      const runsBefore = (await srv.api('GET', '/api/v1/runs?limit=1000')).body.length;
      const small = await sdk.messages.countTokens({
        model: 'claude/claude-sonnet-4-5',
        messages: [{ role: 'user', content: 'Hello there' }],
      });
      const large = await sdk.messages.countTokens({
        model: 'claude/claude-sonnet-4-5',
        system: 'You are a careful assistant.',
        tools: [WEATHER_TOOL],
        messages: [
          {
            role: 'user',
            content: [
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PIXEL } },
              { type: 'text', text: 'Hello there, what is in this picture and what is the weather like?' },
            ],
          },
        ],
      });
      // The message's overhead (3) and its text in o200k_base, counted by a content worker.
      assert.equal(small.input_tokens, 3 + countTokens('Hello there'));
      assert.ok(large.input_tokens > small.input_tokens + 1600);
      assert.equal(anthropicWire.requests.length, before);
      assert.equal((await srv.api('GET', '/api/v1/runs?limit=1000')).body.length, runsBefore);
      await assert.rejects(
        sdk.messages.countTokens({ model: 'nowhere/x', messages: [{ role: 'user', content: 'x' }] }),
        (err: any) => err.status === 404 && err.error?.error?.type === 'not_found_error',
      );
    });

    it('a bearer token (authToken) works as the key; a wrong key, a reader role and an unknown model answer in Anthropic shape', async () => {
      const bearer = new Anthropic({ baseURL: srv.url, authToken: srv.adminKey, apiKey: null, maxRetries: 0 });
      anthropicWire.options = {};
      const m = await bearer.messages.create({
        model: 'claude/claude-sonnet-4-5',
        max_tokens: 10,
        messages: [{ role: 'user', content: 'x' }],
      });
      assert.equal(m.type, 'message');
      const bad = new Anthropic({ baseURL: srv.url, apiKey: 'sk-wrong', maxRetries: 0 });
      await assert.rejects(
        bad.messages.create({ model: 'claude/x', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }),
        (err: any) => err instanceof Anthropic.AuthenticationError && anthropicError(err, 401, 'authentication_error'),
      );
      const key = await srv.api('POST', '/api/v1/apikeys', { name: 'reader', role: 'reader' });
      const reader = new Anthropic({ baseURL: srv.url, apiKey: key.body.value, maxRetries: 0 });
      await assert.rejects(
        reader.messages.create({ model: 'claude/x', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }),
        (err: any) => anthropicError(err, 403, 'permission_error') && /interaction:execute/.test(err.message),
      );
      await assert.rejects(
        sdk.messages.create({ model: 'nowhere/x', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }),
        (err: any) => anthropicError(err, 404, 'not_found_error'),
      );
    });

    it("another project's environment cannot be reached through the door", async () => {
      const project = await srv.api('POST', '/api/v1/projects', { name: 'Other door project' });
      assert.equal(project.status, 200, JSON.stringify(project.body));
      const key = await srv.api('POST', '/api/v1/apikeys', { name: 'other', project: project.body.id });
      assert.equal(key.status, 200, JSON.stringify(key.body));
      const other = new Anthropic({ baseURL: srv.url, apiKey: key.body.value, maxRetries: 0 });
      for (const model of [`${ids.claude}/claude-sonnet-4-5`, 'claude/claude-sonnet-4-5'])
        await assert.rejects(
          other.messages.create({ model, max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }),
          (err: any) => err.status === 404 && err.error.error.type === 'not_found_error',
        );
    });

    it('bad input: each refusal a 400 in Anthropic shape naming the field; nothing reaches a provider', async () => {
      const before = anthropicWire.requests.length;
      const user = [{ role: 'user', content: 'x' }];
      const expect400 = async (body: Record<string, unknown>, field: RegExp) => {
        const r = await srv.api('POST', '/v1/messages', body, null, { 'x-api-key': srv.adminKey });
        assert.equal(r.status, 400, JSON.stringify(r.body));
        assert.equal(r.body.type, 'error');
        assert.equal(r.body.error.type, 'invalid_request_error');
        assert.match(r.body.error.message, field);
      };
      const model = 'claude/claude-sonnet-4-5';
      await expect400({ model, messages: user }, /^max_tokens: Field required/);
      await expect400({ messages: user, max_tokens: 5 }, /model/);
      await expect400({ model, max_tokens: 5, messages: user, frobnicate: 1 }, /^frobnicate: Extra inputs/);
      await expect400(
        { model, max_tokens: 5, messages: user, output_config: { effort: 'high' } },
        /^output_config\.effort/,
      );
      await expect400({ model, max_tokens: 5, messages: user, speed: 'fast' }, /^speed: not supported/);
      await expect400({ model, max_tokens: 5, messages: user, service_tier: 'auto' }, /^service_tier: not supported/);
      await expect400(
        { model, max_tokens: 5, messages: user, thinking: { type: 'adaptive' } },
        /^thinking: not supported/,
      );
      await expect400({ model, max_tokens: 5, messages: [] }, /^messages:/);
      await expect400({ model, max_tokens: 5, messages: [{ role: 'system', content: 'x' }] }, /^messages\.0\.role/);
      await expect400({ model, max_tokens: 5, messages: user, temperature: 1.5 }, /^temperature/);
      await expect400({ model, max_tokens: 0, messages: user }, /^max_tokens/);
      await expect400(
        {
          model,
          max_tokens: 5,
          messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'nope', content: 'x' }] }],
        },
        /^messages\.0\.content\.0\.tool_use_id/,
      );
      await expect400(
        {
          model,
          max_tokens: 5,
          messages: [
            {
              role: 'user',
              content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: '@@@' } }],
            },
          ],
        },
        /^messages\.0\.content\.0\.source\.data/,
      );
      await expect400(
        {
          model,
          max_tokens: 5,
          messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'file', file_id: 'f' } }] }],
        },
        /^messages\.0\.content\.0\.source/,
      );
      await expect400(
        { model, max_tokens: 5, messages: user, tools: [{ type: 'web_search_20250305', name: 'web_search' }] },
        /^tools\.0\.type/,
      );
      await expect400(
        { model, max_tokens: 5, messages: user, tool_choice: { type: 'tool', name: 'x' } },
        /^tool_choice\.type/,
      );
      await expect400({ model, max_tokens: 5, messages: user, metadata: { tenant: 'x' } }, /^metadata\.tenant/);
      await expect400(
        { model, max_tokens: 5, messages: [{ role: 'user', content: [{ type: 'text', text: 'x', foo: 1 }] }] },
        /^messages\.0\.content\.0\.foo/,
      );
      const notJson = await fetch(`${srv.url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': srv.adminKey, 'content-type': 'application/json' },
        body: '{"model":',
      });
      assert.equal(notJson.status, 400);
      assert.equal(((await notJson.json()) as any).error.type, 'invalid_request_error');
      const huge = await srv.api(
        'POST',
        '/v1/messages',
        { model, max_tokens: 5, messages: [{ role: 'user', content: 'x'.repeat(17 * 1024 * 1024) }] },
        null,
        { 'x-api-key': srv.adminKey },
      );
      assert.equal(huge.status, 413);
      assert.equal(huge.body.error.type, 'request_too_large');
      assert.equal(anthropicWire.requests.length, before);
    });

    it('a provider that fails: the blocking call answers its error, the streamed one an error event; both runs failed', async () => {
      anthropicWire.options = { fail: { status: 400, message: 'bad thing' } };
      await assert.rejects(
        sdk.messages.create({
          model: 'claude/claude-sonnet-4-5',
          max_tokens: 5,
          messages: [{ role: 'user', content: 'x' }],
        }),
        (err: any) => anthropicError(err, 400, 'invalid_request_error') && /bad thing/.test(err.message),
      );
      const stream = sdk.messages.stream({
        model: 'claude/claude-sonnet-4-5',
        max_tokens: 5,
        messages: [{ role: 'user', content: 'x' }],
      });
      let id = '';
      stream.on('streamEvent', (e) => {
        if (e.type === 'message_start') id = e.message.id;
      });
      await assert.rejects(stream.finalMessage(), (err: any) => err instanceof Anthropic.APIError);
      anthropicWire.options = {};
      assert.ok(id);
      const run = (await srv.api('GET', `/api/v1/runs/${runIdOf(id)}`)).body;
      assert.equal(run.status, 'failed');
    });

    it('a streamed client that disconnects leaves its run to end, completed; a rate-limited key gets a 429 with retry-after', async () => {
      anthropicWire.options = { chunks: ['a ', 'b ', 'c ', 'd ', 'e'], chunkDelayMs: 30 };
      const stream = await sdk.messages.create({
        model: 'claude/claude-sonnet-4-5',
        max_tokens: 20,
        messages: [{ role: 'user', content: 'slow' }],
        stream: true,
      });
      let id = '';
      for await (const e of stream) {
        if (e.type === 'message_start') id = e.message.id;
        if (e.type === 'content_block_delta') break;
      }
      assert.ok(id);
      let run: any;
      for (let i = 0; i < 200; i++) {
        run = (await srv.api('GET', `/api/v1/runs/${runIdOf(id)}`)).body;
        if (run.status === 'completed' || run.status === 'failed') break;
        await new Promise((r) => setTimeout(r, 25));
      }
      assert.equal(run.status, 'completed');
      assert.deepEqual(run.result, [{ type: 'text', value: 'a b c d e' }]);
      anthropicWire.options = {};
      const limited = await srv.api('POST', '/api/v1/apikeys', {
        name: 'one a minute',
        role: 'executor',
        limits: { requests_per_minute: 1 },
      });
      assert.equal(limited.status, 200, JSON.stringify(limited.body));
      const slow = new Anthropic({ baseURL: srv.url, apiKey: limited.body.value, maxRetries: 0 });
      const once = {
        model: 'claude/claude-sonnet-4-5',
        max_tokens: 5,
        messages: [{ role: 'user' as const, content: 'x' }],
      };
      await slow.messages.create(once);
      await assert.rejects(
        slow.messages.create(once),
        (err: any) => anthropicError(err, 429, 'rate_limit_error') && Number(err.headers.get('retry-after')) > 0,
      );
    });

    it("route by route, each role is let through or refused with the door's permission named", async () => {
      const routes = ['/v1/messages', '/v1/messages/count_tokens', '/v1/responses'];
      const wrong: string[] = [];
      for (const role of KEY_ROLES) {
        const key =
          role === 'admin'
            ? srv.adminKey
            : (await srv.api('POST', '/api/v1/apikeys', { name: `${role} door key`, role })).body.value;
        for (const route of routes) {
          // An empty body: let through, it is refused as bad input (400); not let through, a 403.
          const r = await srv.api('POST', route, {}, key);
          const allowed = can(role, 'interaction:execute');
          if (allowed && r.status !== 400) wrong.push(`${role} ${route}: ${r.status} ${JSON.stringify(r.body)}`);
          if (!allowed && (r.status !== 403 || !JSON.stringify(r.body).includes('interaction:execute')))
            wrong.push(`${role} ${route}: expected 403, got ${r.status} ${JSON.stringify(r.body)}`);
        }
      }
      assert.deepEqual(wrong, []);
    });

    it('the OpenAPI document describes the door at the origin', async () => {
      const doc = (await srv.api('GET', '/api/v1/openapi.json', undefined, null)).body;
      for (const path of ['/v1/messages', '/v1/messages/count_tokens']) {
        const op = doc.paths[path]?.post;
        assert.ok(op, `POST ${path} is documented`);
        assert.equal(op.servers[0].url, '/');
      }
    });
  });
}
