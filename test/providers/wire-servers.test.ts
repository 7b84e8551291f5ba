/** The wire servers themselves answer like the real APIs, so driver tests prove something. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startAnthropicWireServer, type AnthropicWireServer } from '../support/anthropic-wire-server.ts';
import { startOpenAIWireServer, type WireServer } from '../support/openai-wire-server.ts';

const post = (url: string, headers: Record<string, string>, body: unknown) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

describe('OpenAI wire server', () => {
  let srv: WireServer;
  before(async () => (srv = await startOpenAIWireServer({ text: 'a b' })));
  after(() => srv.close());
  const auth = { authorization: 'Bearer sk-test' };

  it('rejects missing model / messages / bad JSON / bad key in OpenAI’s error shape', async () => {
    let r = await post(`${srv.url}/chat/completions`, auth, { messages: [{ role: 'user', content: 'x' }] });
    assert.equal(r.status, 400);
    assert.deepEqual(await r.json(), {
      error: { message: 'you must provide a model parameter', type: 'invalid_request_error', param: null, code: null },
    });
    r = await post(`${srv.url}/chat/completions`, auth, { model: 'm' });
    assert.equal(r.status, 400);
    assert.equal(((await r.json()) as any).error.param, 'messages');
    r = await post(`${srv.url}/chat/completions`, auth, '{nope');
    assert.equal(r.status, 400);
    assert.match(((await r.json()) as any).error.message, /could not parse the JSON body/);
    r = await post(
      `${srv.url}/chat/completions`,
      { authorization: 'Bearer sk-wrong-000000' },
      { model: 'm', messages: [] },
    );
    assert.equal(r.status, 401);
    assert.equal(((await r.json()) as any).error.code, 'invalid_api_key');
  });

  it('streams data chunks, a usage chunk with empty choices, then [DONE]', async () => {
    const r = await post(`${srv.url}/chat/completions`, auth, {
      model: 'm',
      messages: [{ role: 'user', content: 'x y' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    assert.match(r.headers.get('content-type') ?? '', /^text\/event-stream/);
    const lines = (await r.text()).split('\n\n').filter(Boolean);
    assert.equal(lines.at(-1), 'data: [DONE]');
    const chunks = lines.slice(0, -1).map((l) => JSON.parse(l.replace(/^data: /, '')));
    assert.deepEqual(
      chunks.map((c) => c.choices[0]?.delta?.content ?? null),
      ['', 'a ', 'b', null, null],
    );
    assert.equal(chunks.at(-2).choices[0].finish_reason, 'stop');
    assert.deepEqual(chunks.at(-1).choices, []);
    assert.deepEqual(chunks.at(-1).usage, { prompt_tokens: 2, completion_tokens: 2, total_tokens: 4 });
    assert.ok(chunks.slice(0, -1).every((c) => c.usage === null && c.object === 'chat.completion.chunk'));
  });

  it('serves deterministic, normalised embeddings honouring dimensions and base64', async () => {
    const ask = async (body: unknown) => (await post(`${srv.url}/embeddings`, auth, body)).json() as Promise<any>;
    const a = await ask({ model: 'text-embedding-3-small', input: ['hello world', 'other'], dimensions: 8 });
    assert.equal(a.object, 'list');
    assert.equal(a.model, 'text-embedding-3-small');
    assert.deepEqual(a.usage, { prompt_tokens: 3, total_tokens: 3 });
    assert.deepEqual(
      a.data.map((d: any) => [d.object, d.index, d.embedding.length]),
      [
        ['embedding', 0, 8],
        ['embedding', 1, 8],
      ],
    );
    assert.ok(Math.abs(Math.hypot(...a.data[0].embedding) - 1) < 1e-9);
    assert.notDeepEqual(a.data[0].embedding, a.data[1].embedding);
    const b = await ask({ model: 'text-embedding-3-small', input: 'hello world', dimensions: 8 });
    assert.deepEqual(b.data[0].embedding, a.data[0].embedding);
    const full = await ask({ model: 'text-embedding-3-large', input: 'x' });
    assert.equal(full.data[0].embedding.length, 3072);
    const b64 = await ask({
      model: 'text-embedding-3-small',
      input: 'hello world',
      dimensions: 8,
      encoding_format: 'base64',
    });
    const raw = Buffer.from(b64.data[0].embedding, 'base64');
    const floats = new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength));
    assert.equal(floats.length, 8);
    assert.ok(Math.abs(floats[0] - a.data[0].embedding[0]) < 1e-6);
    const bad = await post(`${srv.url}/embeddings`, auth, {
      model: 'text-embedding-3-small',
      input: 'x',
      dimensions: 5000,
    });
    assert.equal(bad.status, 400);
  });
});

describe('Anthropic wire server', () => {
  let srv: AnthropicWireServer;
  before(async () => (srv = await startAnthropicWireServer({ text: 'a b' })));
  after(() => srv.close());
  const h = { 'x-api-key': 'sk-ant-test', 'anthropic-version': '2023-06-01' };

  it('rejects missing fields, system-role messages, missing version and bad keys in Anthropic’s error shape', async () => {
    const cases: [Record<string, string>, unknown, number, string, string][] = [
      [
        h,
        { messages: [{ role: 'user', content: 'x' }], max_tokens: 5 },
        400,
        'invalid_request_error',
        'model: Field required',
      ],
      [h, { model: 'm', max_tokens: 5 }, 400, 'invalid_request_error', 'messages: Field required'],
      [
        h,
        { model: 'm', messages: [{ role: 'user', content: 'x' }] },
        400,
        'invalid_request_error',
        'max_tokens: Field required',
      ],
      [
        { 'x-api-key': 'sk-ant-test' },
        { model: 'm' },
        400,
        'invalid_request_error',
        'anthropic-version: header is required',
      ],
      [{ ...h, 'x-api-key': 'wrong' }, {}, 401, 'authentication_error', 'invalid x-api-key'],
    ];
    for (const [headers, body, status, type, message] of cases) {
      const r = await post(`${srv.url}/v1/messages`, headers, body);
      assert.equal(r.status, status, message);
      const b = (await r.json()) as any;
      assert.equal(b.type, 'error');
      assert.deepEqual(b.error, { type, message });
    }
    const r = await post(`${srv.url}/v1/messages`, h, {
      model: 'm',
      max_tokens: 5,
      messages: [{ role: 'system', content: 's' }],
    });
    assert.match(((await r.json()) as any).error.message, /Unexpected role "system"/);
  });

  it('streams the documented event sequence', async () => {
    const r = await post(`${srv.url}/v1/messages`, h, {
      model: 'm',
      max_tokens: 5,
      messages: [{ role: 'user', content: 'x' }],
      stream: true,
    });
    const events = (await r.text())
      .split('\n\n')
      .filter(Boolean)
      .map((block) => {
        const [ev, data] = block.split('\n');
        const name = ev.replace(/^event: /, '');
        const json = JSON.parse(data.replace(/^data: /, ''));
        assert.equal(json.type, name);
        return name;
      });
    assert.deepEqual(events, [
      'message_start',
      'content_block_start',
      'ping',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
  });
});
