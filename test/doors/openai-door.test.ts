import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { startOpenAIWireServer, type WireServer } from '../support/openai-wire-server.ts';
import { startAnthropicWireServer, type AnthropicWireServer } from '../support/anthropic-wire-server.ts';

/** A 1×1 PNG, as a data URL. */
const PIXEL =
  'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

const WEATHER_TOOL = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'The weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

const runIdOf = (completionId: string) => completionId.replace(/^chatcmpl-/, '');

/** The official openai SDK (unmodified) against a real Orrery, with OpenAI and Anthropic wire servers behind it. */
for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: the OpenAI door`, () => {
    let srv: TestServer;
    let openaiWire: WireServer;
    let anthropicWire: AnthropicWireServer;
    let sdk: OpenAI;
    const ids: Record<string, string> = {};

    /** The run behind a call, found through GET /runs (the list) and then retrieved. */
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
        { name: 'offline', provider: 'test', default_model: 'echo' },
      ];
      for (const env of envs) {
        const e = await srv.api('POST', '/api/v1/environments', env);
        assert.equal(e.status, 200, JSON.stringify(e.body));
        ids[env.name] = e.body.id;
      }
      sdk = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: srv.adminKey, maxRetries: 0 });
    });
    after(async () => {
      await srv.close();
      await openaiWire.close();
      await anthropicWire.close();
    });

    it('blocking, OpenAI behind it: the answer in OpenAI shape, the call a run of sys:openai', async () => {
      openaiWire.options = { text: 'Hello from the wire server.' };
      openaiWire.requests.length = 0;
      const answer = await sdk.chat.completions.create({
        model: 'oa/gpt-4o-mini',
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'Hi' },
        ],
        temperature: 0.2,
        max_tokens: 50,
        seed: 7,
        stop: ['END'],
        user: 'alice',
        metadata: { app: 'demo' },
        store: true,
      });
      assert.equal(answer.object, 'chat.completion');
      assert.match(answer.id, /^chatcmpl-/);
      assert.equal(answer.model, 'oa/gpt-4o-mini');
      assert.equal(answer.choices.length, 1);
      assert.equal(answer.choices[0].message.role, 'assistant');
      assert.equal(answer.choices[0].message.content, 'Hello from the wire server.');
      assert.equal(answer.choices[0].finish_reason, 'stop');
      assert.ok(answer.usage && answer.usage.total_tokens > 0);
      const sent = openaiWire.requests.at(-1)!.body;
      assert.equal(sent.model, 'gpt-4o-mini');
      assert.equal(sent.temperature, 0.2);
      assert.equal(sent.max_tokens ?? sent.max_completion_tokens, 50);
      assert.equal(sent.seed, 7);
      assert.deepEqual(sent.stop, ['END']);
      assert.deepEqual(sent.messages, [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi' },
      ]);
      const { ref, run } = await findRun(runIdOf(answer.id));
      assert.equal(ref.interaction.id, 'sys:openai');
      assert.equal(run.source.type, 'openai');
      assert.equal(run.status, 'completed');
      assert.equal(run.modelId, 'gpt-4o-mini');
      assert.equal(run.environment.name, 'oa');
      assert.deepEqual(run.prompt, [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi' },
      ]);
      assert.ok(run.tags.includes('user:alice'));
      assert.ok(run.tags.includes('app:demo'));
      // The official client reads it as any run.
      const viaClient = await srv.client().runs.retrieve(run.id);
      assert.equal(viaClient.status, 'completed');
      assert.equal((viaClient.interaction as { id: string }).id, 'sys:openai');
    });

    it('streamed with include_usage, Anthropic behind it: OpenAI chunks, the usage chunk, the run stored', async () => {
      anthropicWire.options = { text: 'Bonjour from Claude.' };
      const stream = await sdk.chat.completions.create({
        model: 'claude/claude-sonnet-4-5',
        messages: [{ role: 'user', content: 'Say hello' }],
        stream: true,
        stream_options: { include_usage: true },
      });
      const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
      for await (const chunk of stream) chunks.push(chunk);
      assert.ok(chunks.length >= 3);
      for (const c of chunks) {
        assert.equal(c.object, 'chat.completion.chunk');
        assert.equal(c.id, chunks[0].id);
      }
      assert.equal(chunks[0].choices[0].delta.role, 'assistant');
      const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
      assert.equal(text, 'Bonjour from Claude.');
      const last = chunks.at(-1)!;
      assert.deepEqual(last.choices, []);
      assert.ok(last.usage && last.usage.total_tokens > 0);
      assert.equal(chunks.at(-2)!.choices[0].finish_reason, 'stop');
      const { run } = await findRun(runIdOf(chunks[0].id));
      assert.equal(run.status, 'completed');
      assert.equal(run.environment.provider, 'anthropic');
      assert.deepEqual(run.result, [{ type: 'text', value: 'Bonjour from Claude.' }]);
    });

    it('tools, OpenAI behind it: tool_calls answered; the tool result turn stores only itself, linked', async () => {
      openaiWire.options = {
        toolCalls: (body) =>
          (body.messages as Array<{ role: string }>).some((m) => m.role === 'tool')
            ? undefined
            : [{ id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' }],
        text: (body) =>
          (body.messages as Array<{ role: string }>).some((m) => m.role === 'tool') ? 'Sunny in Paris.' : '',
      };
      const messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [
        { role: 'user', content: 'Weather in Paris?' },
      ];
      const first = await sdk.chat.completions.create({
        model: 'oa/gpt-4o-mini',
        messages,
        tools: [WEATHER_TOOL],
        tool_choice: 'required',
      });
      const choice = first.choices[0];
      assert.equal(choice.finish_reason, 'tool_calls');
      assert.equal(choice.message.content, null);
      assert.deepEqual(choice.message.tool_calls, [
        { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
      ]);
      assert.equal(openaiWire.requests.at(-1)!.body.tool_choice, 'required');
      messages.push(choice.message as OpenAI.Chat.Completions.ChatCompletionMessageParam);
      messages.push({ role: 'tool', tool_call_id: 'call_1', content: '{"sky":"clear"}' });
      const second = await sdk.chat.completions.create({ model: 'oa/gpt-4o-mini', messages, tools: [WEATHER_TOOL] });
      assert.equal(second.choices[0].message.content, 'Sunny in Paris.');
      // The provider got the whole conversation …
      const sent = openaiWire.requests.at(-1)!.body.messages;
      assert.equal(sent.length, 3);
      assert.deepEqual(sent[2], { role: 'tool', tool_call_id: 'call_1', content: '{"sky":"clear"}' });
      // … the run stores only the new turn, and links the run it extends.
      const { run } = await findRun(runIdOf(second.id));
      assert.equal(run.previous_run, runIdOf(first.id));
      assert.deepEqual(run.prompt, [
        { role: 'tool', content: [{ type: 'tool_result', tool_use_id: 'call_1', content: '{"sky":"clear"}' }] },
      ]);
      // A third turn extends the second.
      messages.push(second.choices[0].message as OpenAI.Chat.Completions.ChatCompletionMessageParam);
      messages.push({ role: 'user', content: 'And tomorrow?' });
      const third = await sdk.chat.completions.create({ model: 'oa/gpt-4o-mini', messages, tools: [WEATHER_TOOL] });
      const stored = await findRun(runIdOf(third.id));
      assert.equal(stored.run.previous_run, runIdOf(second.id));
      assert.deepEqual(stored.run.prompt, [{ role: 'user', content: 'And tomorrow?' }]);
      // Another model is another conversation: stored whole.
      const other = await sdk.chat.completions.create({ model: 'oa/gpt-4.1', messages, tools: [WEATHER_TOOL] });
      const whole = await findRun(runIdOf(other.id));
      assert.equal(whole.run.previous_run, undefined);
      assert.equal(whole.run.prompt.length, messages.length);
    });

    it('tools streamed, Anthropic behind it: the calls as a tool_calls delta, finish_reason tool_calls', async () => {
      anthropicWire.options = {
        text: 'Checking.',
        toolUse: [{ id: 'toolu_1', name: 'get_weather', input: { city: 'Rome' } }],
      };
      const stream = await sdk.chat.completions.create({
        model: 'claude/claude-sonnet-4-5',
        messages: [{ role: 'user', content: 'Weather in Rome?' }],
        tools: [WEATHER_TOOL],
        stream: true,
      });
      const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
      for await (const chunk of stream) chunks.push(chunk);
      const calls = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
      assert.deepEqual(calls, [
        { index: 0, id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Rome"}' } },
      ]);
      assert.equal(chunks.at(-1)!.choices[0].finish_reason, 'tool_calls');
      const sentTools = anthropicWire.requests.at(-1)!.body.tools;
      assert.equal(sentTools[0].name, 'get_weather');
      const { run } = await findRun(runIdOf(chunks[0].id));
      assert.equal(run.finish_reason, 'tool_use');
    });

    it('images: an image_url part reaches OpenAI as image_url and Anthropic as a base64 block', async () => {
      openaiWire.options = {};
      const content: OpenAI.Chat.Completions.ChatCompletionContentPart[] = [
        { type: 'text', text: 'What is this?' },
        { type: 'image_url', image_url: { url: PIXEL } },
      ];
      const a = await sdk.chat.completions.create({ model: 'oa/gpt-4o', messages: [{ role: 'user', content }] });
      assert.equal(a.choices[0].finish_reason, 'stop');
      assert.deepEqual(openaiWire.requests.at(-1)!.body.messages[0].content[1], {
        type: 'image_url',
        image_url: { url: PIXEL },
      });
      anthropicWire.options = {};
      const b = await sdk.chat.completions.create({
        model: 'claude/claude-sonnet-4-5',
        messages: [{ role: 'user', content }],
      });
      assert.ok(b.choices[0].message.content);
      const block = anthropicWire.requests.at(-1)!.body.messages[0].content.find((x: any) => x.type === 'image');
      assert.equal(block.source.type, 'base64');
      assert.equal(block.source.media_type, 'image/png');
      const { run } = await findRun(runIdOf(b.id));
      assert.deepEqual(run.prompt[0].content[1], { type: 'image', url: PIXEL, media_type: 'image/png' });
    });

    it('response_format json_schema: the answer is the JSON text, the run has the schema', async () => {
      openaiWire.options = { text: '{"city":"Oslo"}' };
      const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
      const answer = await sdk.chat.completions.create({
        model: 'oa/gpt-4o-mini',
        messages: [{ role: 'user', content: 'A city as JSON' }],
        response_format: { type: 'json_schema', json_schema: { name: 'city', schema } },
      });
      assert.deepEqual(JSON.parse(answer.choices[0].message.content!), { city: 'Oslo' });
      const { run } = await findRun(runIdOf(answer.id));
      assert.deepEqual(run.result_schema, schema);
      const objectAnswer = await sdk.chat.completions.create({
        model: 'oa/gpt-4o-mini',
        messages: [{ role: 'user', content: 'A city as JSON' }],
        response_format: { type: 'json_object' },
      });
      assert.deepEqual(JSON.parse(objectAnswer.choices[0].message.content!), { city: 'Oslo' });
    });

    it('an environment the project does not have, without a default environment: 404 model_not_found', async () => {
      for (const model of ['nowhere/gpt-4o-mini', 'echo']) {
        await assert.rejects(
          sdk.chat.completions.create({ model, messages: [{ role: 'user', content: 'Hi' }] }),
          (err: any) =>
            err.status === 404 &&
            err.code === 'model_not_found' &&
            err.param === 'model' &&
            /default_environment/.test(err.message),
        );
      }
    });

    it("a bare model id runs on the project's default environment; GET /v1/models lists <environment>/<model>", async () => {
      const project = (await srv.api('GET', '/api/v1/projects')).body[0].id;
      const conf = await srv.api('PUT', `/api/v1/projects/${project}/configuration`, {
        default_environment: ids.offline,
      });
      assert.equal(conf.status, 200, JSON.stringify(conf.body));
      const answer = await sdk.chat.completions.create({
        model: 'echo',
        messages: [{ role: 'user', content: 'ping' }],
      });
      const { run } = await findRun(runIdOf(answer.id));
      assert.equal(run.environment.name, 'offline');
      assert.equal(run.modelId, 'echo');
      const models = await sdk.models.list();
      const listed = models.data.map((m) => m.id);
      assert.ok(listed.includes('offline/echo'), listed.join(', '));
      assert.ok(models.data.every((m) => m.object === 'model'));
    });

    it('embeddings, float and base64 (the SDK default), each recorded as a run without vectors', async () => {
      const b64 = await sdk.embeddings.create({ model: 'oa/text-embedding-3-small', input: ['one', 'two'] });
      assert.equal(b64.data.length, 2);
      assert.equal(b64.data[0].embedding.length, 1536);
      const float = await sdk.embeddings.create({
        model: 'oa/text-embedding-3-small',
        input: 'one',
        encoding_format: 'float',
      });
      assert.equal(float.data[0].embedding.length, 1536);
      for (let i = 0; i < 1536; i += 97)
        assert.ok(Math.abs(float.data[0].embedding[i] - b64.data[0].embedding[i]) < 1e-6);
      const list = await srv.api('GET', '/api/v1/runs?limit=100');
      const embeddingRuns = list.body.filter(
        (r: any) => r.interaction.id === 'sys:openai' && r.model === 'text-embedding-3-small',
      );
      assert.equal(embeddingRuns.length, 2);
      const run = (await srv.api('GET', `/api/v1/runs/${embeddingRuns[1].id}`)).body;
      assert.equal(run.status, 'completed');
      assert.deepEqual(run.parameters.input, ['one', 'two']);
      assert.deepEqual(run.result, [
        { type: 'json', value: { count: 2, dimensions: 1536, model: 'text-embedding-3-small' } },
      ]);
      // An environment that cannot embed: a 400 in OpenAI's shape, and the call a failed run.
      await assert.rejects(
        sdk.embeddings.create({ model: 'claude/voyage-3', input: 'one' }),
        (err: any) => err.status === 400 && /cannot embed/.test(err.message),
      );
      const failed = (await srv.api('GET', '/api/v1/runs?limit=5')).body.find((r: any) => r.model === 'voyage-3');
      assert.equal(failed?.status, 'failed');
    });

    it('door runs are first-class in search, facets and the official client', async () => {
      const client = srv.client();
      const refs = await client.runs.list({ limit: 200, filters: { interaction: 'sys:openai' } as any });
      assert.ok(refs.length >= 5);
      assert.ok(refs.every((r: any) => r.interaction.id === 'sys:openai'));
      const facets: any = await client.runs.computeFacets({
        facets: [{ name: 'interactions', field: 'interaction' }],
      } as any);
      const bucket = (facets.interactions ?? facets.interaction ?? []).find((b: any) => b._id === 'sys:openai');
      assert.ok(bucket && bucket.count >= 5, JSON.stringify(facets));
      const search = await srv.api('POST', '/api/v1/runs/search', { query: { interaction: 'sys:openai' }, limit: 5 });
      assert.equal(search.status, 200, JSON.stringify(search.body));
    });

    it('reasoning_effort reaches an OpenAI reasoning model as itself and Claude as effort; no temperature to o3-mini', async () => {
      openaiWire.options = {};
      const a = await sdk.chat.completions.create({
        model: 'oa/o3-mini',
        messages: [{ role: 'user', content: 'Think' }],
        reasoning_effort: 'high',
      });
      assert.equal(a.choices[0].finish_reason, 'stop');
      const sent = openaiWire.requests.at(-1)!.body;
      assert.equal(sent.reasoning_effort, 'high');
      assert.equal('temperature' in sent, false, "OpenAI's default temperature is not sent to a reasoning model");
      anthropicWire.options = {};
      await sdk.chat.completions.create({
        model: 'claude/claude-opus-4-6',
        messages: [{ role: 'user', content: 'Think' }],
        reasoning_effort: 'medium',
      });
      const claude = anthropicWire.requests.at(-1)!.body;
      assert.deepEqual(claude.output_config, { effort: 'medium' });
      assert.deepEqual(claude.thinking, { type: 'adaptive', display: 'omitted' });
      // An effort Claude does not take is a 400 in OpenAI's shape.
      await assert.rejects(
        sdk.chat.completions.create({
          model: 'claude/claude-opus-4-6',
          messages: [{ role: 'user', content: 'Think' }],
          reasoning_effort: 'minimal',
        }),
        (err: any) => err instanceof OpenAI.APIError && err.status === 400 && /effort must be one of/.test(err.message),
      );
    });

    it('errors in OpenAI shape: bad parameters, unknown environment, tool message without its call, images, n', async () => {
      const expect400 = async (body: any, param: string | null, status = 400) => {
        await assert.rejects(sdk.chat.completions.create(body), (err: any) => {
          assert.ok(err instanceof OpenAI.APIError, String(err));
          assert.equal(err.status, status, JSON.stringify(err.error));
          assert.equal(err.param, param, JSON.stringify(err.error));
          assert.equal(typeof err.error.message, 'string');
          assert.ok(err.type);
          return true;
        });
      };
      const user = [{ role: 'user', content: 'Hi' }];
      await expect400({ model: 'oa/gpt-4o-mini', messages: user, n: 2 }, 'n');
      await expect400({ model: 'oa/gpt-4o-mini', messages: user, logit_bias: { 1: 2 } }, 'logit_bias');
      await expect400({ model: 'oa/gpt-4o-mini', messages: user, frobnicate: 1 }, 'frobnicate');
      await expect400({ model: 'oa/gpt-4o-mini', messages: [] }, 'messages');
      await expect400({ model: 'oa/gpt-4o-mini', messages: [{ role: 'wizard', content: 'x' }] }, 'messages[0].role');
      await expect400(
        { model: 'oa/gpt-4o-mini', messages: [...user, { role: 'tool', tool_call_id: 'call_x', content: '1' }] },
        'messages[1].tool_call_id',
      );
      await expect400(
        {
          model: 'oa/gpt-4o-mini',
          messages: [
            { role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,@@@' } }] },
          ],
        },
        'messages[0].content[0].image_url.url',
      );
      await expect400({ model: 'oa/gpt-4o-mini', messages: user, temperature: 3 }, 'temperature');
      await expect400({ model: 'oa/gpt-4o-mini', messages: user, tool_choice: 'required' }, 'tool_choice');
      // The rest of the API keeps its own shape.
      const native = await srv.api('GET', '/api/v1/runs/nope');
      assert.equal(native.status, 404);
      assert.equal(native.body.error, 'not_found');
    });

    it('a refused key, a role without interaction:execute and an oversized body answer in OpenAI shape', async () => {
      const bad = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'sk-wrong', maxRetries: 0 });
      await assert.rejects(bad.models.list(), (err: any) => err.status === 401 && err.code === 'invalid_api_key');
      const key = await srv.api('POST', '/api/v1/apikeys', { name: 'reader', role: 'reader' });
      assert.equal(key.status, 200, JSON.stringify(key.body));
      const reader = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: key.body.value, maxRetries: 0 });
      await assert.rejects(
        reader.chat.completions.create({ model: 'echo', messages: [{ role: 'user', content: 'x' }] }),
        (err: any) => err.status === 403 && err.type === 'permission_error' && /interaction:execute/.test(err.message),
      );
      // A key's rate limit, refused by Orrery itself: a 429 in OpenAI's shape with Retry-After.
      const limited = await srv.api('POST', '/api/v1/apikeys', {
        name: 'one a minute',
        role: 'executor',
        limits: { requests_per_minute: 1 },
      });
      assert.equal(limited.status, 200, JSON.stringify(limited.body));
      const slow = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: limited.body.value, maxRetries: 0 });
      await slow.chat.completions.create({ model: 'echo', messages: [{ role: 'user', content: 'once' }] });
      await assert.rejects(
        slow.chat.completions.create({ model: 'echo', messages: [{ role: 'user', content: 'twice' }] }),
        (err: any) =>
          err.status === 429 &&
          err.type === 'rate_limit_error' &&
          err.code === 'rate_limit_exceeded' &&
          Number(err.headers.get('retry-after')) > 0,
      );
      const huge = 'x'.repeat(17 * 1024 * 1024);
      const res = await srv.api('POST', '/v1/chat/completions', {
        model: 'echo',
        messages: [{ role: 'user', content: huge }],
      });
      assert.equal(res.status, 413);
      assert.equal(res.body.error.code, 'request_too_large');
      const missing = await srv.api('GET', '/v1/nothing');
      assert.equal(missing.status, 404);
      assert.equal(missing.body.error.type, 'invalid_request_error');
    });

    it('the OpenAPI document describes the door at the origin, not under /api/v1', async () => {
      const doc = (await srv.api('GET', '/api/v1/openapi.json', undefined, null)).body;
      for (const [path, method] of [
        ['/v1/chat/completions', 'post'],
        ['/v1/embeddings', 'post'],
        ['/v1/models', 'get'],
      ]) {
        const op = doc.paths[path]?.[method];
        assert.ok(op, `${method} ${path} is documented`);
        assert.equal(op.servers[0].url, '/');
      }
    });

    it('a streamed client that disconnects: the run still ends, completed', async () => {
      openaiWire.options = { chunks: ['a ', 'b ', 'c ', 'd ', 'e'], chunkDelayMs: 30 };
      const stream = await sdk.chat.completions.create({
        model: 'oa/gpt-4o-mini',
        messages: [{ role: 'user', content: 'slow' }],
        stream: true,
      });
      let id = '';
      // Leaving the loop cancels the response: the client is gone after the first chunk.
      for await (const chunk of stream) {
        id = chunk.id;
        break;
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
    });

    it('a provider that fails: the blocking call answers its error, the streamed one an error event; both runs failed', async () => {
      openaiWire.options = { fail: { status: 400, message: 'bad thing', type: 'invalid_request_error' } };
      await assert.rejects(
        sdk.chat.completions.create({ model: 'oa/gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }),
        (err: any) => err.status === 400 && err.code === 'provider_bad_request',
      );
      const stream = await sdk.chat.completions.create({
        model: 'oa/gpt-4o-mini',
        messages: [{ role: 'user', content: 'x' }],
        stream: true,
      });
      let id = '';
      await assert.rejects(
        async () => {
          for await (const chunk of stream) id = chunk.id;
        },
        (err: any) => err instanceof OpenAI.APIError,
      );
      openaiWire.options = {};
      const run = (await srv.api('GET', `/api/v1/runs/${runIdOf(id)}`)).body;
      assert.equal(run.status, 'failed');
    });
  });
}
