import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { startOpenAIWireServer, type WireServer } from '../support/openai-wire-server.ts';
import { startAnthropicWireServer, type AnthropicWireServer } from '../support/anthropic-wire-server.ts';

const PIXEL =
  'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

const WEATHER_TOOL = {
  type: 'function' as const,
  name: 'get_weather',
  description: 'The weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  strict: false,
};

const runIdOf = (responseId: string) => responseId.replace(/^resp_/, '');

const hasToolMessage = (body: Record<string, unknown>) =>
  (body.messages as Array<{ role: string }>).some((m) => m.role === 'tool');

/** The official openai SDK's Responses API (unmodified) against a real Orrery, with OpenAI and Anthropic wire servers behind it. */
for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: the Responses API`, () => {
    let srv: TestServer;
    let openaiWire: WireServer;
    let anthropicWire: AnthropicWireServer;
    let sdk: OpenAI;

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
      for (const env of [
        {
          name: 'oa',
          provider: 'openai',
          endpoint_url: openaiWire.url,
          apiKey: 'sk-test',
          default_model: 'gpt-4o-mini',
        },
        { name: 'claude', provider: 'anthropic', endpoint_url: anthropicWire.url, apiKey: 'sk-ant-test' },
      ]) {
        const e = await srv.api('POST', '/api/v1/environments', env);
        assert.equal(e.status, 200, JSON.stringify(e.body));
      }
      sdk = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: srv.adminKey, maxRetries: 0 });
    });
    after(async () => {
      await srv.close();
      await openaiWire.close();
      await anthropicWire.close();
    });

    it('text: the answer a response, the call a run of sys:responses; store: false accepted and recorded', async () => {
      openaiWire.options = { text: 'Hello from the wire server.' };
      const r = await sdk.responses.create({
        model: 'oa/gpt-4o-mini',
        instructions: 'Be brief.',
        input: 'Hi',
        temperature: 0.2,
        max_output_tokens: 50,
        store: false,
        metadata: { app: 'demo' },
        user: 'alice',
      });
      assert.equal(r.object, 'response');
      assert.match(r.id, /^resp_/);
      assert.equal(r.status, 'completed');
      assert.equal(r.model, 'oa/gpt-4o-mini');
      assert.equal(r.output_text, 'Hello from the wire server.');
      assert.equal(r.output[0].type, 'message');
      assert.equal((r as unknown as { store: boolean }).store, false);
      assert.equal(r.instructions, 'Be brief.');
      assert.ok(r.usage && r.usage.total_tokens > 0);
      const sent = openaiWire.requests.at(-1)!.body;
      assert.deepEqual(sent.messages, [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi' },
      ]);
      assert.equal(sent.temperature, 0.2);
      assert.equal(sent.max_tokens ?? sent.max_completion_tokens, 50);
      const { ref, run } = await findRun(runIdOf(r.id));
      assert.equal(ref.interaction.id, 'sys:responses');
      assert.equal(run.source.type, 'responses');
      assert.equal(run.config.store, false);
      assert.equal(run.config.instructions, 'Be brief.');
      assert.deepEqual(run.prompt, [{ role: 'user', content: 'Hi' }]);
      assert.ok(run.tags.includes('app:demo') && run.tags.includes('user:alice'));
    });

    it('previous_response_id continues from that run: the history sent, only the new input stored, linked', async () => {
      anthropicWire.options = { text: (body) => `turn ${(body.messages as unknown[]).length}` };
      const first = await sdk.responses.create({
        model: 'claude/claude-sonnet-4-5',
        instructions: 'First instructions.',
        input: [
          {
            role: 'user',
            content: [
              { type: 'input_text', text: 'What is this?' },
              { type: 'input_image', image_url: PIXEL, detail: 'auto' },
            ],
          },
        ],
      });
      assert.equal(first.output_text, 'turn 1');
      const second = await sdk.responses.create({
        model: 'claude/claude-sonnet-4-5',
        previous_response_id: first.id,
        input: 'And again?',
      });
      assert.equal(second.output_text, 'turn 3');
      assert.equal(second.previous_response_id, first.id);
      const sent = anthropicWire.requests.at(-1)!.body;
      // The first response's instructions are not carried over, as OpenAI does.
      assert.equal(sent.system, undefined);
      assert.equal(sent.messages[0].content[0].type, 'text');
      assert.equal(sent.messages[0].content[1].type, 'image');
      assert.deepEqual(sent.messages[1], { role: 'assistant', content: 'turn 1' });
      assert.deepEqual(sent.messages[2], { role: 'user', content: 'And again?' });
      const { run } = await findRun(runIdOf(second.id));
      assert.equal(run.previous_run, runIdOf(first.id));
      assert.deepEqual(run.prompt, [{ role: 'user', content: 'And again?' }]);
      const third = await sdk.responses.create({
        model: 'claude/claude-sonnet-4-5',
        previous_response_id: second.id,
        input: 'Once more',
      });
      assert.equal(third.output_text, 'turn 5');
    });

    it('tools: a function_call answered; its function_call_output continues through previous_response_id', async () => {
      openaiWire.options = {
        toolCalls: (body) =>
          hasToolMessage(body) ? undefined : [{ id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' }],
        text: (body) => (hasToolMessage(body) ? 'Sunny in Paris.' : ''),
      };
      const first = await sdk.responses.create({
        model: 'oa/gpt-4o-mini',
        input: 'Weather in Paris?',
        tools: [WEATHER_TOOL],
        tool_choice: 'required',
      });
      const call = first.output.find((o) => o.type === 'function_call');
      assert.ok(call && call.type === 'function_call');
      assert.equal(call.call_id, 'call_1');
      assert.equal(call.name, 'get_weather');
      assert.deepEqual(JSON.parse(call.arguments), { city: 'Paris' });
      assert.equal(openaiWire.requests.at(-1)!.body.tool_choice, 'required');
      const second = await sdk.responses.create({
        model: 'oa/gpt-4o-mini',
        previous_response_id: first.id,
        input: [{ type: 'function_call_output', call_id: 'call_1', output: '{"sky":"clear"}' }],
        tools: [WEATHER_TOOL],
      });
      assert.equal(second.output_text, 'Sunny in Paris.');
      const sent = openaiWire.requests.at(-1)!.body.messages;
      assert.equal(sent[1].tool_calls[0].id, 'call_1');
      assert.deepEqual(sent[2], { role: 'tool', tool_call_id: 'call_1', content: '{"sky":"clear"}' });
      // Without previous_response_id, the same output answers no call: refused by name.
      await assert.rejects(
        sdk.responses.create({
          model: 'oa/gpt-4o-mini',
          input: [{ type: 'function_call_output', call_id: 'call_1', output: 'x' }],
        }),
        (err: any) => err.status === 400 && err.param === 'input[0].call_id',
      );
      // The whole loop in the input, as a client without previous_response_id sends it.
      const whole = await sdk.responses.create({
        model: 'oa/gpt-4o-mini',
        input: [
          { role: 'user', content: 'Weather in Paris?' },
          { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
          { type: 'function_call_output', call_id: 'call_1', output: '{"sky":"clear"}' },
        ],
        tools: [WEATHER_TOOL],
      });
      assert.equal(whole.output_text, 'Sunny in Paris.');
    });

    it("streamed: OpenAI's event sequence, the final response, the run stored; tool calls as function_call items", async () => {
      openaiWire.options = { chunks: ['Bonjour ', 'from ', 'Orrery.'] };
      const stream = sdk.responses.stream({ model: 'oa/gpt-4o-mini', input: 'Say hello' });
      const types: string[] = [];
      for await (const e of stream) types.push(e.type);
      const final = await stream.finalResponse();
      assert.deepEqual(types, [
        'response.created',
        'response.in_progress',
        'response.output_item.added',
        'response.content_part.added',
        'response.output_text.delta',
        'response.output_text.delta',
        'response.output_text.delta',
        'response.output_text.done',
        'response.content_part.done',
        'response.output_item.done',
        'response.completed',
      ]);
      const message = final.output[0];
      assert.ok(message.type === 'message' && message.content[0].type === 'output_text');
      assert.equal(message.content[0].text, 'Bonjour from Orrery.');
      assert.equal(final.status, 'completed');
      const { run } = await findRun(runIdOf(final.id));
      assert.deepEqual(run.result, [{ type: 'text', value: 'Bonjour from Orrery.' }]);

      openaiWire.options = {
        toolCalls: [{ id: 'call_9', name: 'get_weather', arguments: '{"city":"Oslo"}' }],
        text: '',
      };
      const tools = sdk.responses.stream({ model: 'oa/gpt-4o-mini', input: 'Weather in Oslo?', tools: [WEATHER_TOOL] });
      const seen: string[] = [];
      for await (const e of tools) seen.push(e.type);
      const withCall = await tools.finalResponse();
      assert.ok(seen.includes('response.function_call_arguments.delta'));
      assert.ok(!seen.includes('response.output_text.delta'));
      const item = withCall.output.find((o) => o.type === 'function_call');
      assert.ok(item && item.type === 'function_call' && item.arguments === '{"city":"Oslo"}');
    });

    it('a provider that fails: the blocking call an OpenAI error, the stream response.failed; runs failed', async () => {
      openaiWire.options = { fail: { status: 400, message: 'bad thing', type: 'invalid_request_error' } };
      await assert.rejects(
        sdk.responses.create({ model: 'oa/gpt-4o-mini', input: 'x' }),
        (err: any) => err.status === 400 && err.code === 'provider_bad_request',
      );
      const stream = await sdk.responses.create({ model: 'oa/gpt-4o-mini', input: 'x', stream: true });
      const events: any[] = [];
      for await (const e of stream) events.push(e);
      openaiWire.options = {};
      const failed = events.at(-1);
      assert.equal(failed.type, 'response.failed');
      assert.equal(failed.response.status, 'failed');
      assert.equal(failed.response.error.code, 'provider_bad_request');
      const run = (await srv.api('GET', `/api/v1/runs/${runIdOf(failed.response.id)}`)).body;
      assert.equal(run.status, 'failed');
    });

    it("another project's response cannot be continued, nor a made-up one; bad input refused by name", async () => {
      openaiWire.options = {};
      const mine = await sdk.responses.create({ model: 'oa/gpt-4o-mini', input: 'private' });
      const project = await srv.api('POST', '/api/v1/projects', { name: 'Other responses project' });
      const key = await srv.api('POST', '/api/v1/apikeys', { name: 'other', project: project.body.id });
      assert.equal(key.status, 200, JSON.stringify(key.body));
      const envB = await srv.api(
        'POST',
        '/api/v1/environments',
        { name: 'oa', provider: 'openai', endpoint_url: openaiWire.url, apiKey: 'sk-test' },
        key.body.value,
      );
      assert.equal(envB.status, 200, JSON.stringify(envB.body));
      const other = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: key.body.value, maxRetries: 0 });
      const before = openaiWire.requests.length;
      for (const id of [mine.id, 'resp_nothing'])
        await assert.rejects(
          other.responses.create({ model: 'oa/gpt-4o-mini', previous_response_id: id, input: 'leak it' }),
          (err: any) => err.status === 404 && err.param === 'previous_response_id',
        );
      assert.equal(openaiWire.requests.length, before);

      const expect400 = async (body: Record<string, unknown>, param: string) => {
        const r = await srv.api('POST', '/v1/responses', body);
        assert.equal(r.status, 400, JSON.stringify(r.body));
        assert.equal(r.body.error.type, 'invalid_request_error');
        assert.equal(r.body.error.param, param, JSON.stringify(r.body));
      };
      const model = 'oa/gpt-4o-mini';
      await expect400({ model, input: 'x', frobnicate: true }, 'frobnicate');
      await expect400({ model, input: 'x', conversation: 'conv_1' }, 'conversation');
      await expect400({ model, input: 'x', background: true }, 'background');
      await expect400({ model, input: 'x', reasoning: { effort: 'high' } }, 'reasoning');
      await expect400({ model, input: 'x', include: ['reasoning.encrypted_content'] }, 'include');
      await expect400({ model, input: 'x', truncation: 'auto' }, 'truncation');
      await expect400({ model, input: 'x', store: 'no' }, 'store');
      await expect400({ model, input: 'x', tools: [{ type: 'web_search' }] }, 'tools[0].type');
      await expect400({ model, input: [] }, 'input');
      await expect400({ model, input: [{ role: 'robot', content: 'x' }] }, 'input[0].role');
      await expect400({ model, input: [{ type: 'reasoning', summary: [] }] }, 'input[0].type');
      await expect400(
        { model, input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'data:image/png;base64,@@' }] }] },
        'input[0].content[0].image_url',
      );
      await expect400({ model, input: 'x', previous_response_id: 'chatcmpl-1' }, 'previous_response_id');
      await expect400({ model, input: 'x', text: { format: { type: 'json_schema', schema: {} } } }, 'text.format.name');
      await expect400({ model, input: 'x', max_output_tokens: 3 }, 'max_output_tokens');
      const unknownModel = await srv.api('POST', '/v1/responses', { model: 'nowhere/x', input: 'x' });
      assert.equal(unknownModel.status, 404);
      assert.equal(unknownModel.body.error.code, 'model_not_found');
    });

    it('a reader key is refused in OpenAI shape; a streamed client that disconnects leaves its run to end, completed', async () => {
      const key = await srv.api('POST', '/api/v1/apikeys', { name: 'reader', role: 'reader' });
      const reader = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: key.body.value, maxRetries: 0 });
      await assert.rejects(
        reader.responses.create({ model: 'oa/gpt-4o-mini', input: 'x' }),
        (err: any) => err.status === 403 && err.type === 'permission_error' && /interaction:execute/.test(err.message),
      );
      openaiWire.options = { chunks: ['a ', 'b ', 'c ', 'd ', 'e'], chunkDelayMs: 30 };
      const stream = await sdk.responses.create({ model: 'oa/gpt-4o-mini', input: 'slow', stream: true });
      let id = '';
      for await (const e of stream) {
        if (e.type === 'response.created') id = e.response.id;
        if (e.type === 'response.output_text.delta') break;
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
      openaiWire.options = {};
    });

    it('the OpenAPI document describes POST /v1/responses at the origin', async () => {
      const doc = (await srv.api('GET', '/api/v1/openapi.json', undefined, null)).body;
      const op = doc.paths['/v1/responses']?.post;
      assert.ok(op);
      assert.equal(op.servers[0].url, '/');
    });
  });
}
