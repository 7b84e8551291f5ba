import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { startOpenAIWireServer, type WireServer } from '../support/openai-wire-server.ts';
import {
  startBedrockWireServer,
  TEST_ACCESS_KEY_ID,
  TEST_SECRET,
  type BedrockWireServer,
} from '../support/bedrock-wire-server.ts';

const WEATHER = {
  name: 'get_weather',
  description: 'The weather in a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};
const RESULT = 'Sunny, 21 C';
const ANSWER = 'It is sunny in Paris.';
/** USD per million tokens, set on the environment: each turn's cost follows from its own usage. */
const PRICES = { input: 2, output: 10 };
const TURN_USAGE = [
  { prompt_tokens: 20, completion_tokens: 6, total_tokens: 26 },
  { prompt_tokens: 45, completion_tokens: 9, total_tokens: 54 },
];
const costOf = (u: (typeof TURN_USAGE)[number]) =>
  Math.round(((u.prompt_tokens * PRICES.input + u.completion_tokens * PRICES.output) / 1e6) * 1e9) / 1e9;

const answersCall = (body: any) => body.messages.at(-1)?.role === 'tool';

/**
 * Tools on a Hugging Face Inference Endpoint (TGI's OpenAI-compatible Messages API: `tools`,
 * `tool_calls`, tool messages) blocking and streamed, with the cost of each turn of the loop;
 * a model the environment says calls no tools, and Bedrock models that call tools but cannot
 * stream the calls (llumiverse's `tool_support_streaming`), refused with a 400 naming the model
 * before any provider call. Through the official client, on both databases.
 */
for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: tools on Hugging Face endpoints, and the models that cannot take them`, () => {
    let srv: TestServer;
    let hf: WireServer;
    let bedrock: BedrockWireServer;
    let n = 0;

    before(async () => {
      srv = await startTestServer(dialect);
      hf = await startOpenAIWireServer({
        apiKey: 'hf_token',
        text: (body) => (answersCall(body) ? ANSWER : ''),
        toolCalls: (body) =>
          answersCall(body) ? undefined : [{ id: 'call_w1', name: 'get_weather', arguments: '{"city":"Paris"}' }],
      });
      bedrock = await startBedrockWireServer({
        usage: { inputTokens: 30, outputTokens: 7, totalTokens: 37 },
        text: (body) => (body.messages.at(-1).role === 'user' && body.messages.length > 1 ? ANSWER : ''),
        toolUse: [{ toolUseId: 'tooluse_1', name: 'get_weather', input: { city: 'Paris' } }],
      });
    });
    after(async () => {
      await srv?.close();
      await hf?.close();
      await bedrock?.close();
    });

    async function interaction(env: Record<string, unknown>): Promise<string> {
      const e = await srv.api('POST', '/api/v1/environments', { name: `env ${++n}`, ...env });
      assert.equal(e.status, 200, JSON.stringify(e.body));
      const ix = await srv.api('POST', '/api/v1/interactions', {
        name: `ix ${n}`,
        status: 'draft',
        environment: e.body.id,
        prompts: [
          { type: 'template', template: { role: 'user', content: 'Weather in {{city}}?', content_type: 'handlebars' } },
          { type: 'chat' },
        ],
      });
      assert.equal(ix.status, 200, JSON.stringify(ix.body));
      return ix.body.id;
    }
    const hfEnv = (config?: Record<string, unknown>) => ({
      provider: 'huggingface_ie',
      endpoint_url: hf.origin,
      apiKey: 'hf_token',
      default_model: 'tgi',
      config: { prices: { tgi: PRICES }, ...config },
    });
    const bedrockEnv = (model: string, config?: Record<string, unknown>) => ({
      provider: 'bedrock',
      endpoint_url: bedrock.url,
      apiKey: `${TEST_ACCESS_KEY_ID}:${TEST_SECRET}`,
      default_model: model,
      ...(config ? { config } : {}),
    });

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

    for (const stream of [false, true]) {
      const mode = stream ? 'streamed' : 'blocking';
      it(`huggingface_ie, ${mode}: a tool loop on the Messages API, with the tokens and cost of each turn`, async () => {
        const ix = await interaction(hfEnv());
        hf.requests.length = 0;
        hf.options.usage = TURN_USAGE[0];
        const first = await execute(ix, { data: { city: 'Paris' }, tool_definitions: [WEATHER] }, stream);
        assert.equal(first.status, 'completed', JSON.stringify(first.error));
        assert.equal(first.finish_reason, 'tool_use');
        assert.deepEqual(first.tool_use, [{ id: 'call_w1', tool_name: 'get_weather', tool_input: { city: 'Paris' } }]);
        hf.options.usage = TURN_USAGE[1];
        const second = await execute(
          ix,
          {
            data: {
              city: 'Paris',
              chat: [
                { role: 'assistant', content: [{ type: 'tool_use', ...first.tool_use[0] }] },
                { role: 'tool', content: RESULT, tool_use_id: 'call_w1' },
              ],
            },
            tool_definitions: [WEATHER],
          },
          stream,
        );
        assert.equal(second.status, 'completed', JSON.stringify(second.error));
        assert.equal(second.finish_reason, 'stop');
        assert.deepEqual(second.result, [{ type: 'text', value: ANSWER }]);
        if (stream) assert.equal(second.streamed, ANSWER);

        const [a, b] = hf.requests;
        assert.equal(hf.requests.length, 2);
        assert.equal(a.path, '/v1/chat/completions');
        assert.equal(a.headers.authorization, 'Bearer hf_token');
        const tools = [
          {
            type: 'function',
            function: { name: 'get_weather', description: WEATHER.description, parameters: WEATHER.input_schema },
          },
        ];
        assert.deepEqual(a.body.tools, tools);
        assert.deepEqual(b.body.tools, tools);
        assert.equal(a.body.model, 'tgi');
        assert.equal(a.body.stream, stream ? true : undefined);
        assert.deepEqual(a.body.messages, [{ role: 'user', content: 'Weather in Paris?' }]);
        assert.deepEqual(b.body.messages, [
          { role: 'user', content: 'Weather in Paris?' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: 'call_w1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
            ],
          },
          { role: 'tool', tool_call_id: 'call_w1', content: RESULT },
        ]);

        // Each turn is its own run with its own usage and cost, not the loop's sum.
        for (const [run, usage] of [
          [first, TURN_USAGE[0]],
          [second, TURN_USAGE[1]],
        ] as const) {
          assert.deepEqual(run.token_use, {
            prompt: usage.prompt_tokens,
            result: usage.completion_tokens,
            total: usage.total_tokens,
          });
          assert.equal(run.cost.price_table, 'environment');
          assert.equal(run.cost.total, costOf(usage));
        }
        const search = async (query: string) =>
          ((await srv.api('POST', '/api/v1/runs/search', { query, limit: 100 })).body as { id: string }[]).map(
            (r) => r.id,
          );
        assert.ok(
          (await search(`cost.total:${costOf(TURN_USAGE[0])} AND tool_use.tool_name:get_weather`)).includes(first.id),
        );
        assert.ok(!(await search(`cost.total:${costOf(TURN_USAGE[1])} AND tool_use.tool_name:*`)).includes(second.id));
        assert.ok((await search(`cost.total:${costOf(TURN_USAGE[1])}`)).includes(second.id));
      });
    }

    it('huggingface_ie: a model the environment says calls no tools is a 400 naming it, before any call', async () => {
      const ix = await interaction(hfEnv({ capabilities: { tools: { tgi: false } } }));
      hf.requests.length = 0;
      const res = await srv.api('POST', '/api/v1/runs', {
        interaction: ix,
        data: { city: 'Paris' },
        tool_definitions: [WEATHER],
      });
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.equal(res.body.code ?? res.body.error, 'tools_unsupported');
      assert.match(res.body.message, /model "tgi" of environment "env \d+" \(huggingface_ie\) cannot call tools/);
      assert.equal(hf.requests.length, 0);
      // Without tools the same model answers.
      const plain = await srv.api('POST', '/api/v1/runs', { interaction: ix, data: { city: 'Paris' } });
      assert.equal(plain.status, 200, JSON.stringify(plain.body));
    });

    for (const model of ['us.meta.llama3-1-70b-instruct-v1:0', 'anthropic.claude-3-5-haiku-20241022-v1:0']) {
      it(`bedrock: ${model} calls tools blocking, and a streamed run with tools is a 400 naming it`, async () => {
        const ix = await interaction(bedrockEnv(model));
        bedrock.requests.length = 0;
        const streamed = await srv.api('POST', '/api/v1/runs', {
          interaction: ix,
          data: { city: 'Paris' },
          tool_definitions: [WEATHER],
          stream: true,
        });
        assert.equal(streamed.status, 400, JSON.stringify(streamed.body));
        assert.equal(streamed.body.code ?? streamed.body.error, 'tools_unsupported');
        assert.ok(streamed.body.message.includes(`model "${model}"`), streamed.body.message);
        assert.match(streamed.body.message, /cannot stream tool calls.*run it without stream/);
        assert.equal(bedrock.requests.length, 0, 'refused before any provider call');

        const blocking = await execute(ix, { data: { city: 'Paris' }, tool_definitions: [WEATHER] }, false);
        assert.equal(blocking.status, 'completed', JSON.stringify(blocking.error));
        assert.equal(blocking.tool_use[0].tool_name, 'get_weather');
        assert.match(bedrock.requests[0].path, /\/converse$/);
        // Streamed without tools is fine.
        const text = await execute(ix, { data: { city: 'Paris' } }, true);
        assert.equal(text.status, 'completed', JSON.stringify(text.error));
      });
    }

    it('bedrock: models that stream tool calls stream them; an environment can vouch for one', async () => {
      const nova = await interaction(bedrockEnv('us.amazon.nova-pro-v1:0'));
      const a = await execute(nova, { data: { city: 'Paris' }, tool_definitions: [WEATHER] }, true);
      assert.equal(a.status, 'completed', JSON.stringify(a.error));
      assert.equal(a.tool_use[0].tool_name, 'get_weather');
      const vouched = await interaction(
        bedrockEnv('us.meta.llama3-1-70b-instruct-v1:0', {
          capabilities: { tools: { 'us.meta.llama3-1-70b-instruct-v1:0': true } },
        }),
      );
      bedrock.requests.length = 0;
      const b = await execute(vouched, { data: { city: 'Paris' }, tool_definitions: [WEATHER] }, true);
      assert.equal(b.status, 'completed', JSON.stringify(b.error));
      assert.match(bedrock.requests[0].path, /\/converse-stream$/);
    });
  });
}
