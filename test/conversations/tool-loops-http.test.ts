import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import {
  startBedrockWireServer,
  TEST_ACCESS_KEY_ID,
  TEST_SECRET,
  type BedrockWireServer,
} from '../support/bedrock-wire-server.ts';
import { startVertexWireServer, type VertexWireServer } from '../support/vertex-wire-server.ts';
import { startWatsonxWireServer, type WatsonxWireServer } from '../support/watsonx-wire-server.ts';

const WEATHER = {
  name: 'get_weather',
  description: 'The weather in a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};
const SYSTEM = 'You are terse.';
const QUESTION = 'Weather in Paris?';
const RESULT = 'Sunny, 21 C';
const ANSWER = 'It is sunny in Paris.';

/** The last message of a request answers a call: the wire servers then answer text, else a call. */
const answersCall = (last: any) =>
  [...(Array.isArray(last?.content) ? last.content : []), ...(Array.isArray(last?.parts) ? last.parts : [])].some(
    (b: any) => b?.toolResult || b?.functionResponse || b?.type === 'tool_result',
  );

type Provider = 'bedrock' | 'gemini' | 'claude' | 'watsonx';

/**
 * Tool loops through POST /runs with the official client: a first run with tools ends in tool_use;
 * a second run carries the assistant's calls and the results in data.chat, and the provider gets
 * them in its own wire form (checked exactly here, and by the wire servers' pairing rules).
 */
for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: tool loops on Bedrock, Vertex AI (Gemini, Claude) and watsonx`, () => {
    let srv: TestServer;
    let bedrock: BedrockWireServer;
    let vertex: VertexWireServer;
    let wx: WatsonxWireServer;
    const ix: Record<string, string> = {};
    const envIds: Record<string, string> = {};

    before(async () => {
      srv = await startTestServer(dialect);
      bedrock = await startBedrockWireServer({
        usage: { inputTokens: 30, outputTokens: 7, totalTokens: 37 },
        text: (body) => (answersCall(body.messages.at(-1)) ? ANSWER : ''),
        toolUse: (body) =>
          answersCall(body.messages.at(-1))
            ? undefined
            : [{ toolUseId: 'tooluse_p1', name: 'get_weather', input: { city: 'Paris' } }],
      });
      vertex = await startVertexWireServer({
        usage: { promptTokenCount: 25, candidatesTokenCount: 6, totalTokenCount: 31 },
        claudeUsage: { input_tokens: 40, output_tokens: 9 },
        text: (body) => (answersCall((body.contents ?? body.messages).at(-1)) ? ANSWER : ''),
        functionCalls: (body) =>
          answersCall(body.contents.at(-1)) ? undefined : [{ name: 'get_weather', args: { city: 'Paris' } }],
        claudeToolUse: (body) =>
          answersCall(body.messages.at(-1))
            ? undefined
            : [{ id: 'toolu_v1', name: 'get_weather', input: { city: 'Paris' } }],
      });
      wx = await startWatsonxWireServer({ apiKey: 'ibm-key-1', usage: { prompt_tokens: 20, completion_tokens: 5 } });
      const sa = vertex.serviceAccount();
      const envs: Record<string, Record<string, unknown>> = {
        bedrock: {
          provider: 'bedrock',
          endpoint_url: bedrock.url,
          apiKey: `${TEST_ACCESS_KEY_ID}:${TEST_SECRET}`,
          default_model: 'us.anthropic.claude-sonnet-4-20250514-v1:0',
        },
        gemini: { provider: 'vertexai', endpoint_url: vertex.origin, apiKey: sa, default_model: 'gemini-2.5-flash' },
        claude: {
          provider: 'vertexai',
          endpoint_url: vertex.origin,
          apiKey: sa,
          default_model: 'claude-sonnet-4@20250514',
        },
        watsonx: {
          provider: 'watsonx',
          endpoint_url: wx.origin,
          apiKey: 'ibm-key-1',
          default_model: 'ibm/granite-3-8b-instruct',
          config: { iam_url: wx.iamUrl, project_id: 'proj-1' },
        },
      };
      for (const [name, env] of Object.entries(envs)) {
        const e = await srv.api('POST', '/api/v1/environments', { name, ...env });
        assert.equal(e.status, 200, JSON.stringify(e.body));
        envIds[name] = e.body.id;
        ix[name] = await interaction(e.body.id);
      }
    });
    after(async () => {
      await srv?.close();
      await bedrock?.close();
      await vertex?.close();
      await wx?.close();
    });

    async function interaction(environment: string): Promise<string> {
      const i = await srv.api('POST', '/api/v1/interactions', {
        name: `loop-${Math.random().toString(36).slice(2)}`,
        status: 'draft',
        environment,
        prompts: [
          { type: 'template', template: { role: 'system', content: SYSTEM, content_type: 'text' } },
          { type: 'template', template: { role: 'user', content: 'Weather in {{city}}?', content_type: 'handlebars' } },
          { type: 'chat' },
        ],
      });
      assert.equal(i.status, 200, JSON.stringify(i.body));
      return i.body.id;
    }

    /** One run through the official client, blocking or streamed; the stored run either way. */
    async function execute(id: string, payload: Record<string, unknown>, stream: boolean) {
      const client = srv.client();
      if (!stream) return (await client.interactions.execute(id, payload as any)) as any;
      const chunks: string[] = [];
      const started = await client.interactions.execute(id, payload as any, (c: string) => chunks.push(c));
      const run = (await client.runs.retrieve(started.id)) as any;
      run.streamed = chunks.join('');
      return run;
    }

    /** The whole loop: a call, then the answer to its result. */
    async function loop(provider: Provider, stream: boolean) {
      const first = await execute(ix[provider], { data: { city: 'Paris' }, tool_definitions: [WEATHER] }, stream);
      assert.equal(first.status, 'completed', JSON.stringify(first.error));
      assert.equal(first.finish_reason, 'tool_use');
      assert.equal(first.tool_use.length, 1);
      const call = first.tool_use[0];
      assert.equal(call.tool_name, 'get_weather');
      assert.deepEqual(call.tool_input, { city: 'Paris' });
      const second = await execute(
        ix[provider],
        {
          data: {
            city: 'Paris',
            chat: [
              { role: 'assistant', content: [{ type: 'tool_use', ...call }] },
              { role: 'tool', content: RESULT, tool_use_id: call.id },
            ],
          },
          tool_definitions: [WEATHER],
        },
        stream,
      );
      assert.equal(second.status, 'completed', JSON.stringify(second.error));
      assert.equal(second.finish_reason, 'stop');
      assert.equal(second.tool_use, undefined);
      assert.deepEqual(second.result, [{ type: 'text', value: ANSWER }]);
      if (stream) assert.equal(second.streamed, ANSWER);
      return { first, second, call };
    }

    for (const stream of [false, true]) {
      const mode = stream ? 'streamed' : 'blocking';

      it(`Bedrock Converse, ${mode}: toolConfig, toolUse and toolResult blocks, token use per turn`, async () => {
        bedrock.requests.length = 0;
        const { first, second, call } = await loop('bedrock', stream);
        assert.equal(call.id, 'tooluse_p1');
        const [a, b] = bedrock.requests.map((r) => r.body);
        assert.match(bedrock.requests[0].path, stream ? /\/converse-stream$/ : /\/converse$/);
        const toolConfig = {
          tools: [
            {
              toolSpec: {
                name: 'get_weather',
                description: WEATHER.description,
                inputSchema: { json: WEATHER.input_schema },
              },
            },
          ],
        };
        assert.deepEqual(a.toolConfig, toolConfig);
        assert.deepEqual(a.system, [{ text: SYSTEM }]);
        assert.deepEqual(a.messages, [{ role: 'user', content: [{ text: QUESTION }] }]);
        assert.deepEqual(b.toolConfig, toolConfig);
        assert.deepEqual(b.messages, [
          { role: 'user', content: [{ text: QUESTION }] },
          {
            role: 'assistant',
            content: [{ toolUse: { toolUseId: 'tooluse_p1', name: 'get_weather', input: { city: 'Paris' } } }],
          },
          { role: 'user', content: [{ toolResult: { toolUseId: 'tooluse_p1', content: [{ text: RESULT }] } }] },
        ]);
        for (const run of [first, second]) assert.deepEqual(run.token_use, { prompt: 30, result: 7, total: 37 });
      });

      it(`Vertex AI Gemini, ${mode}: functionDeclarations, functionCall and functionResponse, ids made and mapped back`, async () => {
        vertex.requests.length = 0;
        const { first, second, call } = await loop('gemini', stream);
        assert.match(call.id, /^orrery_fc_[0-9a-f]{20}$/, 'Gemini gave no id: Orrery made one');
        const [a, b] = vertex.requests.filter((r) => r.kind === 'gemini').map((r) => r.body);
        const tools = [
          {
            functionDeclarations: [
              { name: 'get_weather', description: WEATHER.description, parametersJsonSchema: WEATHER.input_schema },
            ],
          },
        ];
        assert.deepEqual(a.tools, tools);
        assert.equal(a.toolConfig, undefined, 'no tool_choice: the provider decides');
        assert.deepEqual(a.contents, [{ role: 'user', parts: [{ text: QUESTION }] }]);
        assert.deepEqual(b.tools, tools);
        assert.deepEqual(b.contents, [
          { role: 'user', parts: [{ text: QUESTION }] },
          // A made id never goes to Gemini: the call and its response pair by name.
          { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'Paris' } } }] },
          { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { output: RESULT } } }] },
        ]);
        for (const run of [first, second]) assert.deepEqual(run.token_use, { prompt: 25, result: 6, total: 31 });
        // The same answer to the same history gets the same id: a retry or a rerun names the call alike.
        const again = await execute(ix.gemini, { data: { city: 'Paris' }, tool_definitions: [WEATHER] }, stream);
        assert.equal(again.tool_use[0].id, call.id);
      });

      it(`Claude on Vertex AI, ${mode}: the Anthropic blocks over ${stream ? 'streamRawPredict' : 'rawPredict'}`, async () => {
        vertex.requests.length = 0;
        const { first, second, call } = await loop('claude', stream);
        assert.equal(call.id, 'toolu_v1');
        const claude = vertex.requests.filter((r) => r.kind === 'claude');
        assert.equal(claude[0].action, stream ? 'streamRawPredict' : 'rawPredict');
        const [a, b] = claude.map((r) => r.body);
        assert.equal(a.anthropic_version, 'vertex-2023-10-16');
        assert.deepEqual(a.tools, [WEATHER]);
        assert.deepEqual(b.messages, [
          { role: 'user', content: QUESTION },
          {
            role: 'assistant',
            content: [{ type: 'tool_use', id: 'toolu_v1', name: 'get_weather', input: { city: 'Paris' } }],
          },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_v1', content: RESULT }] },
        ]);
        for (const run of [first, second]) assert.deepEqual(run.token_use, { prompt: 40, result: 9, total: 49 });
      });

      it(`watsonx.ai chat, ${mode}: tools, assistant tool_calls and tool messages`, async () => {
        wx.options.toolCalls = (body) =>
          body.messages.at(-1)?.role === 'tool'
            ? undefined
            : [{ id: 'chatcmpl-tool-1', name: 'get_weather', arguments: '{"city":"Paris"}' }];
        wx.options.text = ANSWER;
        const before = wx.requests.length;
        const first = await execute(ix.watsonx, { data: { city: 'Paris' }, tool_definitions: [WEATHER] }, stream);
        assert.equal(first.finish_reason, 'tool_use');
        assert.deepEqual(first.tool_use, [
          { id: 'chatcmpl-tool-1', tool_name: 'get_weather', tool_input: { city: 'Paris' } },
        ]);
        const second = await execute(
          ix.watsonx,
          {
            data: {
              city: 'Paris',
              chat: [
                { role: 'assistant', content: [{ type: 'tool_use', ...first.tool_use[0] }] },
                { role: 'tool', content: RESULT, tool_use_id: 'chatcmpl-tool-1' },
              ],
            },
            tool_definitions: [WEATHER],
          },
          stream,
        );
        assert.equal(second.status, 'completed', JSON.stringify(second.error));
        assert.equal(second.finish_reason, 'stop');
        const calls = wx.requests.slice(before).filter((r) => r.path.startsWith('/ml/v1/text/chat'));
        assert.equal(calls[0].path, stream ? '/ml/v1/text/chat_stream' : '/ml/v1/text/chat');
        assert.deepEqual(calls[0].body.tools, [
          {
            type: 'function',
            function: { name: 'get_weather', description: WEATHER.description, parameters: WEATHER.input_schema },
          },
        ]);
        assert.deepEqual(calls[1].body.messages, [
          { role: 'system', content: SYSTEM },
          { role: 'user', content: QUESTION },
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              {
                id: 'chatcmpl-tool-1',
                type: 'function',
                function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
              },
            ],
          },
          { role: 'tool', tool_call_id: 'chatcmpl-tool-1', content: RESULT },
        ]);
        for (const run of [first, second]) assert.deepEqual(run.token_use, { prompt: 20, result: 5, total: 25 });
        wx.options.toolCalls = undefined;
        wx.options.text = undefined;
      });
    }

    it('tool_choice reaches each wire in its own form', async () => {
      bedrock.requests.length = 0;
      vertex.requests.length = 0;
      const payload = {
        data: { city: 'Oslo' },
        tool_definitions: [WEATHER],
        config: { model_options: { tool_choice: 'required' } },
      };
      await execute(ix.bedrock, payload, false);
      await execute(ix.gemini, payload, false);
      const before = wx.requests.length;
      await execute(ix.watsonx, payload, false);
      assert.deepEqual(bedrock.requests[0].body.toolConfig.toolChoice, { any: {} });
      assert.deepEqual(vertex.requests.find((r) => r.kind === 'gemini')!.body.toolConfig, {
        functionCallingConfig: { mode: 'ANY' },
      });
      assert.equal(
        wx.requests.slice(before).find((r) => r.path === '/ml/v1/text/chat')!.body.tool_choice_option,
        'required',
      );
    });

    it('a retry resends the same history', async () => {
      bedrock.requests.length = 0;
      bedrock.options.fail = { status: 503, type: 'ServiceUnavailableException', message: 'Try again', times: 1 };
      const e = await srv.api('POST', '/api/v1/environments', {
        name: `bedrock-retry-${dialect}`,
        provider: 'bedrock',
        endpoint_url: bedrock.url,
        apiKey: `${TEST_ACCESS_KEY_ID}:${TEST_SECRET}`,
        default_model: 'us.anthropic.claude-sonnet-4-20250514-v1:0',
        config: { retries: { max_retries: 2, base_delay_ms: 1 } },
      });
      assert.equal(e.status, 200, JSON.stringify(e.body));
      const id = await interaction(e.body.id);
      const chat = [
        {
          role: 'assistant',
          content: [{ type: 'tool_use', id: 'tooluse_p1', tool_name: 'get_weather', tool_input: { city: 'Paris' } }],
        },
        { role: 'tool', content: RESULT, tool_use_id: 'tooluse_p1' },
      ];
      const run = await execute(id, { data: { city: 'Paris', chat }, tool_definitions: [WEATHER] }, false);
      assert.equal(run.status, 'completed', JSON.stringify(run.error));
      assert.equal(run.attempts.length, 2);
      assert.equal(bedrock.requests.length, 2);
      assert.equal(bedrock.requests[0].raw, bedrock.requests[1].raw, 'the retry sent the same bytes');
      assert.equal(bedrock.requests[1].body.messages.length, 3);
    });

    it('a virtual environment fails over mid-conversation and keeps the history', async () => {
      bedrock.requests.length = 0;
      vertex.requests.length = 0;
      const lb = await srv.api('POST', '/api/v1/environments', {
        name: `lb-${dialect}`,
        provider: 'virtual_lb',
        config: {
          failover: true,
          entries: [
            { model: `${envIds.bedrock}::us.anthropic.claude-sonnet-4-20250514-v1:0`, weight: 1000 },
            { model: `${envIds.claude}::claude-sonnet-4@20250514`, weight: 0.001 },
          ],
        },
      });
      assert.equal(lb.status, 200, JSON.stringify(lb.body));
      const id = await interaction(lb.body.id);
      const first = await execute(id, { data: { city: 'Paris' }, tool_definitions: [WEATHER] }, false);
      assert.equal(first.status, 'completed', JSON.stringify(first.error));
      assert.equal(first.finish_reason, 'tool_use');
      assert.deepEqual(first.tool_use, [{ id: 'tooluse_p1', tool_name: 'get_weather', tool_input: { city: 'Paris' } }]);
      // The second turn: Bedrock is down; Claude on Vertex gets the whole history, in its own form.
      bedrock.options.fail = { status: 400, type: 'ValidationException', message: 'down for this test' };
      const chat = [
        { role: 'assistant', content: [{ type: 'tool_use', ...first.tool_use[0] }] },
        { role: 'tool', content: RESULT, tool_use_id: 'tooluse_p1' },
      ];
      try {
        const second = await execute(id, { data: { city: 'Paris', chat }, tool_definitions: [WEATHER] }, false);
        assert.equal(second.status, 'completed', JSON.stringify(second.error));
        assert.deepEqual(second.result, [{ type: 'text', value: ANSWER }]);
        assert.equal(second.attempts.length, 2);
        assert.equal(second.attempts[0].status, 'failed');
        const claude = vertex.requests.filter((r) => r.kind === 'claude');
        assert.equal(claude.length, 1);
        assert.deepEqual(claude[0].body.messages, [
          { role: 'user', content: QUESTION },
          {
            role: 'assistant',
            content: [{ type: 'tool_use', id: 'tooluse_p1', name: 'get_weather', input: { city: 'Paris' } }],
          },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'tooluse_p1', content: RESULT }] },
        ]);
        assert.deepEqual(claude[0].body.tools, [WEATHER]);
      } finally {
        bedrock.options.fail = undefined;
      }
    });

    it('a virtual environment whose entry cannot call tools is a 400 naming it, before any call', async () => {
      const llama = await srv.api('POST', '/api/v1/environments', {
        name: `llama-${dialect}`,
        provider: 'bedrock',
        endpoint_url: bedrock.url,
        apiKey: `${TEST_ACCESS_KEY_ID}:${TEST_SECRET}`,
      });
      const lb = await srv.api('POST', '/api/v1/environments', {
        name: `lb-llama-${dialect}`,
        provider: 'virtual_lb',
        config: { entries: [{ model: `${llama.body.id}::meta.llama3-8b-instruct-v1:0`, weight: 1 }] },
      });
      const id = await interaction(lb.body.id);
      bedrock.requests.length = 0;
      const r = await srv.api('POST', '/api/v1/runs', {
        interaction: id,
        data: { city: 'x' },
        tool_definitions: [WEATHER],
      });
      assert.equal(r.status, 400);
      assert.equal(r.body.error, 'tools_unsupported');
      assert.match(
        r.body.message,
        /model "meta\.llama3-8b-instruct-v1:0" of environment "llama-\w+" \(bedrock\) cannot call tools/,
      );
      assert.equal(bedrock.requests.length, 0);
    });

    it('tool-less models and text-only paths refuse tools with a 400 naming the model, before any call', async () => {
      const cases: Array<[Record<string, unknown>, RegExp]> = [
        [
          { provider: 'replicate', apiKey: 'r8_x', default_model: 'meta/meta-llama-3-8b-instruct' },
          /model "meta\/meta-llama-3-8b-instruct" of environment "\S+" \(replicate\) cannot call tools: Replicate's predictions take a text prompt only/,
        ],
        [
          {
            provider: 'watsonx',
            endpoint_url: wx.origin,
            apiKey: 'ibm-key-1',
            default_model: 'ibm/granite-3-8b-instruct',
            config: { iam_url: wx.iamUrl, project_id: 'proj-1', api: 'generation' },
          },
          /model "ibm\/granite-3-8b-instruct" .*\(watsonx\) cannot call tools: .*text generation API/,
        ],
        [
          {
            provider: 'watsonx',
            endpoint_url: wx.origin,
            apiKey: 'ibm-key-1',
            default_model: 'google/flan-t5-xl',
            config: { iam_url: wx.iamUrl, project_id: 'proj-1' },
          },
          /model "google\/flan-t5-xl" .*\(watsonx\) cannot call tools/,
        ],
        [
          {
            provider: 'vertexai',
            endpoint_url: vertex.origin,
            apiKey: vertex.serviceAccount(),
            default_model: 'gemini-2.0-flash-lite-001',
          },
          /model "gemini-2\.0-flash-lite-001" .*\(vertexai\) cannot call tools/,
        ],
      ];
      const before = { wx: wx.requests.length, vertex: vertex.requests.length };
      for (const [env, text] of cases) {
        const e = await srv.api('POST', '/api/v1/environments', {
          name: `refuse-${Math.random().toString(36).slice(2)}`,
          ...env,
        });
        assert.equal(e.status, 200, JSON.stringify(e.body));
        const r = await srv.api('POST', '/api/v1/runs', {
          interaction: await interaction(e.body.id),
          data: { city: 'x' },
          tool_definitions: [WEATHER],
        });
        assert.equal(r.status, 400, JSON.stringify(r.body));
        assert.equal(r.body.error, 'tools_unsupported');
        assert.match(r.body.message, text);
      }
      assert.equal(wx.requests.length, before.wx, 'nothing reached watsonx (not even IAM)');
      assert.equal(vertex.requests.length, before.vertex);
    });

    it('a history part that is not one is a 400 that names it', async () => {
      const r = await srv.api('POST', '/api/v1/runs', {
        interaction: ix.bedrock,
        data: { city: 'x', chat: [{ role: 'assistant', content: [{ type: 'tool_use', tool_name: 'get_weather' }] }] },
        tool_definitions: [WEATHER],
      });
      assert.equal(r.status, 400);
      assert.match(r.body.message, /data\.chat\[0\]\.content\[0\] \(tool_use\) needs id and tool_name strings/);
    });
  });
}
