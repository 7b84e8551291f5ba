import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ChatMessage, Completion, CompletionChunk, ToolDefinition } from '../../src/providers/driver.ts';
import { getDriver } from '../../src/providers/registry.ts';
import {
  startBedrockWireServer,
  TEST_ACCESS_KEY_ID,
  TEST_SECRET,
  type BedrockWireServer,
} from '../support/bedrock-wire-server.ts';
import { startVertexWireServer, type VertexWireServer } from '../support/vertex-wire-server.ts';

const WEATHER: ToolDefinition = {
  name: 'get_weather',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

async function finalOf(stream: AsyncIterable<CompletionChunk>): Promise<Completion> {
  let text = '';
  let last: CompletionChunk = {};
  for await (const c of stream) {
    if (c.text) text += c.text;
    if (c.finish_reason || c.tool_use) last = c;
  }
  return {
    text,
    ...(last.finish_reason ? { finish_reason: last.finish_reason } : {}),
    ...(last.tool_use ? { tool_use: last.tool_use } : {}),
  };
}

/** The details of each wire that the HTTP loops do not reach: errors, two calls, ids, signatures. */
describe('tool parts on the Bedrock and Gemini wires, driver by driver', () => {
  let bedrock: BedrockWireServer;
  let vertex: VertexWireServer;
  before(async () => {
    bedrock = await startBedrockWireServer();
    vertex = await startVertexWireServer();
  });
  after(async () => {
    await bedrock.close();
    await vertex.close();
  });

  it('Bedrock: two streamed calls assembled from their deltas; an error result goes with status error', async () => {
    bedrock.options = {
      toolUse: [
        { toolUseId: 'tu_1', name: 'get_weather', input: { city: 'Paris' } },
        { toolUseId: 'tu_2', name: 'get_weather', input: { city: 'Rome, "the eternal"' } },
      ],
      inputChunkSize: 3,
      splitBytes: 11,
    };
    const driver = getDriver('bedrock');
    const conn = { endpoint_url: bedrock.url, api_key: `${TEST_ACCESS_KEY_ID}:${TEST_SECRET}` };
    const req = {
      model: 'anthropic.claude-3-haiku-20240307-v1:0',
      messages: [{ role: 'user' as const, content: 'hi' }],
      tools: [WEATHER],
    };
    const out = await finalOf(driver.stream(conn, req));
    assert.deepEqual(out, {
      text: '',
      finish_reason: 'tool_use',
      tool_use: [
        { id: 'tu_1', tool_name: 'get_weather', tool_input: { city: 'Paris' } },
        { id: 'tu_2', tool_name: 'get_weather', tool_input: { city: 'Rome, "the eternal"' } },
      ],
    });
    bedrock.options = { text: 'ok' };
    const history: ChatMessage[] = [
      { role: 'user', content: 'hi' },
      {
        role: 'assistant',
        content: [
          { type: 'tool_use', ...out.tool_use![0] },
          { type: 'tool_use', ...out.tool_use![1] },
        ],
      },
      {
        role: 'tool',
        content: [
          { type: 'tool_result', tool_use_id: 'tu_1', content: 'Sunny' },
          { type: 'tool_result', tool_use_id: 'tu_2', content: '', is_error: true },
        ],
      },
      { role: 'user', content: 'and tomorrow?' },
    ];
    const second = await driver.complete(conn, { ...req, messages: history });
    assert.equal(second.text, 'ok');
    assert.deepEqual(bedrock.requests.at(-1)!.body.messages.at(-1), {
      role: 'user',
      content: [
        { toolResult: { toolUseId: 'tu_1', content: [{ text: 'Sunny' }] } },
        { toolResult: { toolUseId: 'tu_2', content: [{ text: '[No output]' }], status: 'error' } },
        { text: 'and tomorrow?' },
      ],
    });
    // A result for a call the history does not have is the wire's 400, as Bedrock answers it.
    await assert.rejects(
      driver.complete(conn, {
        ...req,
        messages: [
          history[0],
          history[1],
          { role: 'tool', content: [{ type: 'tool_result', tool_use_id: 'tu_1', content: 'x' }] },
        ],
      }),
      (e: any) =>
        e.code === 'provider_bad_request' &&
        /Expected toolResult blocks at messages\.2\.content for the following Ids: tu_2/.test(e.message),
    );
  });

  it("Gemini: two calls get distinct made ids; Gemini's own ids and thought signatures go back with the calls", async () => {
    const driver = getDriver('vertexai');
    const conn = { endpoint_url: vertex.origin, api_key: vertex.serviceAccount() };
    const req = {
      model: 'gemini-2.5-pro',
      messages: [{ role: 'user' as const, content: 'Paris and Rome?' }],
      tools: [WEATHER],
    };
    vertex.options = {
      functionCalls: [
        { name: 'get_weather', args: { city: 'Paris' } },
        { name: 'get_weather', args: { city: 'Paris' } },
      ],
    };
    const made = await finalOf(driver.stream(conn, req));
    assert.equal(made.tool_use!.length, 2);
    assert.notEqual(made.tool_use![0].id, made.tool_use![1].id, 'the same call twice has two ids');
    vertex.options = {
      functionCalls: [{ id: 'fc-own-1', name: 'get_weather', args: { city: 'Rome' }, thoughtSignature: 'c2lnbmVk' }],
    };
    const own = await driver.complete(conn, req);
    assert.deepEqual(own.tool_use, [
      { id: 'fc-own-1', tool_name: 'get_weather', tool_input: { city: 'Rome' }, thought_signature: 'c2lnbmVk' },
    ]);
    vertex.options = { text: 'Rainy.' };
    const answered = await driver.complete(conn, {
      ...req,
      messages: [
        req.messages[0],
        { role: 'assistant', content: [{ type: 'tool_use', ...own.tool_use![0] }] },
        { role: 'tool', content: [{ type: 'tool_result', tool_use_id: 'fc-own-1', content: '{"sky":"rain"}' }] },
      ],
    });
    assert.equal(answered.text, 'Rainy.');
    assert.deepEqual(vertex.requests.at(-1)!.body.contents.slice(1), [
      {
        role: 'model',
        parts: [
          {
            functionCall: { name: 'get_weather', args: { city: 'Rome' }, id: 'fc-own-1' },
            thoughtSignature: 'c2lnbmVk',
          },
        ],
      },
      {
        role: 'user',
        parts: [{ functionResponse: { name: 'get_weather', response: { sky: 'rain' }, id: 'fc-own-1' } }],
      },
    ]);
    const failed = await driver.complete(conn, {
      ...req,
      messages: [
        req.messages[0],
        { role: 'assistant', content: [{ type: 'tool_use', ...own.tool_use![0] }] },
        {
          role: 'tool',
          content: [{ type: 'tool_result', tool_use_id: 'fc-own-1', content: 'no network', is_error: true }],
        },
      ],
    });
    assert.equal(failed.text, 'Rainy.');
    assert.deepEqual(vertex.requests.at(-1)!.body.contents[2].parts[0].functionResponse.response, {
      error: 'no network',
    });
  });

  it('Gemini: a result for a call the history does not have is refused before the call', async () => {
    const driver = getDriver('vertexai');
    const conn = { endpoint_url: vertex.origin, api_key: vertex.serviceAccount() };
    const before = vertex.requests.filter((r) => r.kind === 'gemini').length;
    await assert.rejects(
      driver.complete(conn, {
        model: 'gemini-2.5-flash',
        tools: [WEATHER],
        messages: [
          { role: 'user', content: 'x' },
          { role: 'tool', content: [{ type: 'tool_result', tool_use_id: 'nowhere', content: 'x' }] },
        ],
      }),
      (e: any) =>
        e.code === 'provider_bad_request' && /answers call "nowhere", which no assistant message/.test(e.message),
    );
    assert.equal(vertex.requests.filter((r) => r.kind === 'gemini').length, before);
  });
});
