import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type {
  ChatMessage,
  Completion,
  CompletionChunk,
  CompletionRequest,
  ModelDriver,
  ProviderConnection,
  ToolDefinition,
} from '../../src/providers/driver.ts';
import { getDriver } from '../../src/providers/registry.ts';
import { assertCanCallTools, knownToolSupport } from '../../src/providers/tool-capabilities.ts';
import { startOpenAIWireServer, type WireServer } from '../support/openai-wire-server.ts';
import { startAnthropicWireServer, type AnthropicWireServer } from '../support/anthropic-wire-server.ts';

const WEATHER: ToolDefinition = {
  name: 'get_weather',
  description: 'The weather in a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};
const TIME: ToolDefinition = {
  name: 'get_time',
  input_schema: { type: 'object', properties: { zone: { type: 'string', enum: ['UTC', 'CET'] } }, required: ['zone'] },
};

/** A finished first turn: the user asked, the model called two tools, the caller answered both. */
const HISTORY: ChatMessage[] = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'Weather and time in Paris?' },
  {
    role: 'assistant',
    content: [
      { type: 'text', text: 'Let me look.' },
      { type: 'tool_use', id: 'call_1', tool_name: 'get_weather', tool_input: { city: 'Paris' } },
      { type: 'tool_use', id: 'call_2', tool_name: 'get_time', tool_input: { zone: 'CET' } },
    ],
  },
  {
    role: 'tool',
    content: [
      { type: 'tool_result', tool_use_id: 'call_1', content: 'Sunny, 21 C' },
      { type: 'tool_result', tool_use_id: 'call_2', content: 'clock offline', is_error: true },
    ],
  },
];

async function finalOf(stream: AsyncIterable<CompletionChunk>): Promise<Completion> {
  let text = '';
  let last: CompletionChunk = {};
  for await (const c of stream) {
    if (c.text) text += c.text;
    if (c.finish_reason || c.tool_use || c.token_use) last = c;
  }
  const out: Completion = { text };
  if (last.finish_reason) out.finish_reason = last.finish_reason;
  if (last.tool_use) out.tool_use = last.tool_use;
  return out;
}

const modes = [
  { mode: 'blocking', run: (d: ModelDriver, c: ProviderConnection, r: CompletionRequest) => d.complete(c, r) },
  { mode: 'streamed', run: (d: ModelDriver, c: ProviderConnection, r: CompletionRequest) => finalOf(d.stream(c, r)) },
] as const;

describe('tool calling on the OpenAI Chat Completions wire', () => {
  let srv: WireServer;
  let conn: ProviderConnection;
  const openai = getDriver('openai');
  before(async () => {
    srv = await startOpenAIWireServer();
    conn = { endpoint_url: srv.url, api_key: 'sk-test' };
  });
  after(() => srv.close());
  const reset = (o: Parameters<typeof startOpenAIWireServer>[0] = {}) => {
    srv.options = o;
    srv.requests.length = 0;
  };

  for (const { mode, run } of modes) {
    it(`${mode}: sends tools and tool_choice, reads several calls in order with their ids and parsed arguments`, async () => {
      reset({
        toolCalls: [
          { id: 'call_a', name: 'get_weather', arguments: '{"city":"Paris, France"}' },
          { id: 'call_b', name: 'get_time', arguments: '{"zone":"CET"}' },
        ],
        argumentChunkSize: 5,
      });
      const out = await run(openai, conn, {
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'Weather and time in Paris?' }],
        tools: [WEATHER, TIME],
        tool_choice: 'any',
      });
      assert.equal(out.finish_reason, 'tool_use');
      assert.equal(out.text, '');
      assert.deepEqual(out.tool_use, [
        { id: 'call_a', tool_name: 'get_weather', tool_input: { city: 'Paris, France' } },
        { id: 'call_b', tool_name: 'get_time', tool_input: { zone: 'CET' } },
      ]);
      const body = srv.requests[0].body;
      assert.deepEqual(body.tools, [
        {
          type: 'function',
          function: { name: 'get_weather', description: 'The weather in a city', parameters: WEATHER.input_schema },
        },
        { type: 'function', function: { name: 'get_time', parameters: TIME.input_schema } },
      ]);
      assert.equal(body.tool_choice, 'required');
      assert.deepEqual(body.messages, [{ role: 'user', content: 'Weather and time in Paris?' }]);
    });

    it(`${mode}: arguments that are not a JSON object are kept as text with a flag`, async () => {
      reset({ toolCalls: [{ id: 'call_x', name: 'get_weather', arguments: '{"city": "Par' }] });
      const out = await run(openai, conn, {
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'Weather?' }],
        tools: [WEATHER],
      });
      assert.equal(out.finish_reason, 'tool_use');
      assert.deepEqual(out.tool_use, [
        {
          id: 'call_x',
          tool_name: 'get_weather',
          tool_input: null,
          tool_input_text: '{"city": "Par',
          tool_input_invalid: true,
        },
      ]);
    });

    it(`${mode}: the history goes back as assistant tool_calls and one tool message per result`, async () => {
      reset({ text: 'Sunny in Paris; the time is unknown.' });
      const out = await run(openai, conn, { model: 'gpt-4o-mini', messages: HISTORY, tools: [WEATHER, TIME] });
      assert.equal(out.text, 'Sunny in Paris; the time is unknown.');
      assert.equal(out.finish_reason, 'stop');
      assert.equal(out.tool_use, undefined);
      assert.deepEqual(srv.requests[0].body.messages, [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'Weather and time in Paris?' },
        {
          role: 'assistant',
          content: 'Let me look.',
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
            { id: 'call_2', type: 'function', function: { name: 'get_time', arguments: '{"zone":"CET"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'Sunny, 21 C' },
        { role: 'tool', tool_call_id: 'call_2', content: 'Error: clock offline' },
      ]);
    });
  }

  it('a plain-text prompt without tools is sent exactly as before (no tools, no tool_choice)', async () => {
    reset();
    await openai.complete(conn, {
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Hi' }],
      temperature: 0.7,
    });
    assert.deepEqual(srv.requests[0].body, {
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Hi' }],
      temperature: 0.7,
    });
  });

  it('tool_choice maps auto, none, required; Mistral keeps its own any', async () => {
    for (const [choice, wire] of [
      ['auto', 'auto'],
      ['none', 'none'],
      ['required', 'required'],
    ] as const) {
      reset();
      await openai.complete(conn, {
        model: 'm',
        messages: [{ role: 'user', content: 'x' }],
        tools: [WEATHER],
        tool_choice: choice,
      });
      assert.equal(srv.requests[0].body.tool_choice, wire);
    }
    reset();
    srv.options = { apiKey: null };
    const mistral = getDriver('mistralai');
    // The OpenAI wire refuses `any`: the request body is what is checked here.
    await mistral
      .complete(
        { endpoint_url: srv.url, api_key: 'k' },
        {
          model: 'mistral-large-latest',
          messages: [{ role: 'user', content: 'x' }],
          tools: [WEATHER],
          tool_choice: 'any',
        },
      )
      .catch(() => undefined);
    assert.equal(srv.requests[0].body.tool_choice, 'any');
  });

  it('the wire server refuses a tool message that answers no call, with the API wording', async () => {
    reset();
    await assert.rejects(
      openai.complete(conn, {
        model: 'gpt-4o-mini',
        messages: [
          { role: 'user', content: 'x' },
          { role: 'tool', content: [{ type: 'tool_result', tool_use_id: 'call_zzz', content: 'r' }] },
        ],
      }),
      /must be a response to a preceeding message with 'tool_calls'/,
    );
  });
});

describe('tool calling on the Anthropic Messages wire', () => {
  let srv: AnthropicWireServer;
  let conn: ProviderConnection;
  const anthropic = getDriver('anthropic');
  before(async () => {
    srv = await startAnthropicWireServer();
    conn = { endpoint_url: srv.url, api_key: 'sk-ant-test' };
  });
  after(() => srv.close());
  const reset = (o: Parameters<typeof startAnthropicWireServer>[0] = {}) => {
    srv.options = o;
    srv.requests.length = 0;
  };

  for (const { mode, run } of modes) {
    it(`${mode}: sends tools and tool_choice, reads text and several tool_use blocks in order`, async () => {
      reset({
        text: 'Checking.',
        toolUse: [
          { id: 'toolu_01', name: 'get_weather', input: { city: 'Paris' } },
          { id: 'toolu_02', name: 'get_time', input: { zone: 'CET' } },
        ],
        inputChunkSize: 4,
      });
      const out = await run(anthropic, conn, {
        model: 'claude-sonnet-4-5',
        messages: [{ role: 'user', content: 'Weather and time in Paris?' }],
        tools: [WEATHER, TIME],
        tool_choice: 'required',
      });
      assert.equal(out.finish_reason, 'tool_use');
      assert.equal(out.text, 'Checking.');
      assert.deepEqual(out.tool_use, [
        { id: 'toolu_01', tool_name: 'get_weather', tool_input: { city: 'Paris' } },
        { id: 'toolu_02', tool_name: 'get_time', tool_input: { zone: 'CET' } },
      ]);
      const body = srv.requests[0].body;
      assert.deepEqual(body.tools, [
        { name: 'get_weather', description: 'The weather in a city', input_schema: WEATHER.input_schema },
        { name: 'get_time', input_schema: TIME.input_schema },
      ]);
      assert.deepEqual(body.tool_choice, { type: 'any' });
      assert.deepEqual(body.messages, [{ role: 'user', content: 'Weather and time in Paris?' }]);
    });

    it(`${mode}: the history goes back as tool_use blocks and one user turn of tool_result blocks`, async () => {
      reset({ text: 'Sunny.' });
      const out = await run(anthropic, conn, {
        model: 'claude-sonnet-4-5',
        messages: [...HISTORY, { role: 'user', content: 'And tomorrow?' }],
        tools: [WEATHER, TIME],
      });
      assert.equal(out.text, 'Sunny.');
      assert.equal(out.finish_reason, 'stop');
      const body = srv.requests[0].body;
      assert.equal(body.system, 'You are terse.');
      assert.deepEqual(body.messages, [
        { role: 'user', content: 'Weather and time in Paris?' },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Let me look.' },
            { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } },
            { type: 'tool_use', id: 'call_2', name: 'get_time', input: { zone: 'CET' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'call_1', content: 'Sunny, 21 C' },
            { type: 'tool_result', tool_use_id: 'call_2', content: 'clock offline', is_error: true },
            { type: 'text', text: 'And tomorrow?' },
          ],
        },
      ]);
    });
  }

  it('tool_choice maps auto, none, any and required', async () => {
    for (const [choice, wire] of [
      ['auto', 'auto'],
      ['none', 'none'],
      ['any', 'any'],
      ['required', 'any'],
    ] as const) {
      reset();
      await anthropic.complete(conn, {
        model: 'claude-sonnet-4-5',
        messages: [{ role: 'user', content: 'x' }],
        tools: [WEATHER],
        tool_choice: choice,
      });
      assert.deepEqual(srv.requests[0].body.tool_choice, { type: wire });
    }
  });

  it('plain-text turns of one role still join with a blank line, as before', async () => {
    reset();
    await anthropic.complete(conn, {
      model: 'claude-sonnet-4-5',
      messages: [
        { role: 'user', content: 'a' },
        { role: 'user', content: 'b' },
      ],
    });
    assert.deepEqual(srv.requests[0].body.messages, [{ role: 'user', content: 'a\n\nb' }]);
    assert.equal(srv.requests[0].body.tools, undefined);
  });

  it('the wire server refuses a call left without its result, with the API wording', async () => {
    reset();
    await assert.rejects(
      anthropic.complete(conn, { model: 'claude-sonnet-4-5', messages: HISTORY.slice(0, 3) }),
      /tool_use` ids were found without `tool_result` blocks immediately after: call_1, call_2/,
    );
  });
});

describe('the test provider tools model', () => {
  const test = getDriver('test');
  const conn: ProviderConnection = {};

  for (const { mode, run } of modes) {
    it(`${mode}: calls each tool once with schema-sampled arguments, then answers with the results`, async () => {
      const first = await run(test, conn, {
        model: 'tools',
        messages: [{ role: 'user', content: 'go' }],
        tools: [WEATHER, TIME],
      });
      assert.equal(first.finish_reason, 'tool_use');
      assert.equal(first.text, '');
      assert.deepEqual(first.tool_use, [
        { id: 'toolu_test_1_1', tool_name: 'get_weather', tool_input: { city: 'text' } },
        { id: 'toolu_test_1_2', tool_name: 'get_time', tool_input: { zone: 'UTC' } },
      ]);
      const second = await run(test, conn, {
        model: 'tools',
        tools: [WEATHER, TIME],
        messages: [
          { role: 'user', content: 'go' },
          { role: 'assistant', content: first.tool_use!.map((t) => ({ type: 'tool_use' as const, ...t })) },
          {
            role: 'tool',
            content: [
              { type: 'tool_result', tool_use_id: 'toolu_test_1_1', content: 'sunny' },
              { type: 'tool_result', tool_use_id: 'toolu_test_1_2', content: 'no clock', is_error: true },
            ],
          },
        ],
      });
      assert.equal(second.finish_reason, 'stop');
      assert.equal(second.tool_use, undefined);
      assert.equal(second.text, 'get_weather: sunny\nget_time failed: no clock');
    });
  }

  it('without tools, or with tool_choice none, answers as echo', async () => {
    const plain = await test.complete(conn, { model: 'tools', messages: [{ role: 'user', content: 'hello' }] });
    assert.deepEqual([plain.text, plain.finish_reason, plain.tool_use], ['hello', 'stop', undefined]);
    const none = await test.complete(conn, {
      model: 'tools',
      messages: [{ role: 'user', content: 'hello' }],
      tools: [WEATHER],
      tool_choice: 'none',
    });
    assert.equal(none.text, 'hello');
  });
});

describe('which models call tools', () => {
  const env = (provider: string, config?: Record<string, unknown>) => ({ provider, name: 'E', config });

  it('knows the families of the vendored table; unknown compatible models are assumed capable', () => {
    assert.equal(knownToolSupport('openai', 'gpt-4o-mini'), true);
    assert.equal(knownToolSupport('openai', 'gpt-3.5-turbo'), false);
    assert.equal(knownToolSupport('openai', 'text-embedding-3-small'), false);
    assert.equal(knownToolSupport('openai', 'o1-mini'), false);
    assert.equal(knownToolSupport('openai', 'o3-mini'), true);
    assert.equal(knownToolSupport('anthropic', 'claude-sonnet-4-5'), true);
    assert.equal(knownToolSupport('anthropic', 'claude-2.1'), false);
    assert.equal(knownToolSupport('openai_compatible', 'qwen2.5:7b'), true);
    assert.equal(knownToolSupport('groq', 'whisper-large-v3'), false);
    assert.equal(knownToolSupport('groq', 'llama-3.3-70b-versatile'), true);
    assert.equal(knownToolSupport('test', 'tools'), true);
    assert.equal(knownToolSupport('test', 'echo'), false);
  });

  it('refuses a tool-less model with a 400 that names it, and the override decides per environment', () => {
    assert.throws(
      () => assertCanCallTools(env('openai'), 'gpt-3.5-turbo'),
      (e: any) =>
        e.code === 'tools_unsupported' &&
        e.status === 400 &&
        /model "gpt-3\.5-turbo" of environment "E" \(openai\) cannot call tools/.test(e.message),
    );
    assert.doesNotThrow(() => assertCanCallTools(env('openai', { capabilities: { tools: true } }), 'gpt-3.5-turbo'));
    assert.doesNotThrow(() =>
      assertCanCallTools(env('openai', { capabilities: { tools: { 'gpt-3.5-turbo': true } } }), 'gpt-3.5-turbo'),
    );
    assert.throws(
      () => assertCanCallTools(env('openai_compatible', { capabilities: { tools: { 'tiny:1b': false } } }), 'tiny:1b'),
      /the environment says so in config\.capabilities\.tools/,
    );
    assert.throws(
      () => assertCanCallTools(env('openai', { capabilities: { tools: 'yes' } }), 'gpt-4o'),
      (e: any) => e.status === 400 && /config\.capabilities\.tools must be/.test(e.message),
    );
    assert.throws(
      () => assertCanCallTools(env('replicate', { capabilities: { tools: true } }), 'meta/meta-llama-3-8b-instruct'),
      (e: any) =>
        e.code === 'tools_unsupported' &&
        /model "meta\/meta-llama-3-8b-instruct" of environment "E" \(replicate\) cannot call tools: Replicate's predictions take a text prompt only/.test(
          e.message,
        ),
      'a text-only path refuses whatever the environment says',
    );
    assert.throws(
      () => assertCanCallTools(env('watsonx', { api: 'generation' }), 'ibm/granite-3-8b-instruct'),
      /\(watsonx\) cannot call tools: .*text generation API/,
    );
    assert.doesNotThrow(() => assertCanCallTools(env('bedrock'), 'anthropic.claude-3-haiku-20240307-v1:0'));
  });

  it("Bedrock, Vertex AI and watsonx models as llumiverse's tables and IBM's model pages say", () => {
    const cases: Array<[string, string, boolean]> = [
      ['bedrock', 'us.anthropic.claude-sonnet-4-20250514-v1:0', true],
      ['bedrock', 'arn:aws:bedrock:us-east-1:123456789012:inference-profile/eu.amazon.nova-pro-v1:0', true],
      ['bedrock', 'amazon.nova-canvas-v1:0', false],
      ['bedrock', 'meta.llama3-8b-instruct-v1:0', false],
      ['bedrock', 'meta.llama3-1-70b-instruct-v1:0', true],
      ['bedrock', 'deepseek.r1-v1:0', false],
      ['bedrock', 'deepseek.v3-v1:0', true],
      ['bedrock', 'openai.gpt-oss-safeguard-20b', false],
      ['bedrock_mantle', 'openai.gpt-oss-120b', true],
      ['vertexai', 'gemini-2.5-flash', true],
      ['vertexai', 'gemini-2.0-flash-lite-001', false],
      ['vertexai', 'imagen-4.0-generate-001', false],
      ['vertexai', 'locations/us-east5/publishers/anthropic/models/claude-sonnet-4@20250514', true],
      ['watsonx', 'ibm/granite-3-8b-instruct', true],
      ['watsonx', 'meta-llama/llama-3-3-70b-instruct', true],
      ['watsonx', 'meta-llama/llama-guard-3-11b-vision', false],
      ['watsonx', 'google/flan-t5-xl', false],
      ['replicate', 'meta/meta-llama-3-8b-instruct', false],
    ];
    for (const [provider, model, tools] of cases)
      assert.equal(knownToolSupport(provider, model), tools, `${provider} ${model}`);
  });
});
