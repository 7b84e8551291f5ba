import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import {
  ProviderError,
  type CompletionChunk,
  type CompletionRequest,
  type ProviderConnection,
} from '../../src/providers/driver.ts';
import { anthropicBaseUrl } from '../../src/providers/anthropic-messages.ts';
import { getDriver } from '../../src/providers/registry.ts';
import {
  startAnthropicWireServer,
  type AnthropicWireOptions,
  type AnthropicWireServer,
} from '../support/anthropic-wire-server.ts';

const anthropic = getDriver('anthropic');
const KEY = 'sk-ant-test';
const req = (over: Partial<CompletionRequest> = {}): CompletionRequest => ({
  model: 'claude-sonnet-4-5',
  messages: [
    { role: 'system', content: 'You are terse.' },
    { role: 'user', content: 'Say hello' },
  ],
  temperature: 0.7,
  ...over,
});

async function collect(it: AsyncIterable<CompletionChunk>): Promise<CompletionChunk[]> {
  const out: CompletionChunk[] = [];
  for await (const c of it) out.push(c);
  return out;
}

async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

async function rejectsProvider(
  p: Promise<unknown>,
  code: ProviderError['code'],
  status: number | undefined,
  text: RegExp,
) {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof ProviderError, `expected ProviderError, got ${String(err)}`);
    assert.equal(err.code, code);
    assert.equal(err.upstreamStatus, status);
    assert.match(err.message, text);
    return true;
  });
}

describe('anthropic-messages driver against the Anthropic wire server', () => {
  let srv: AnthropicWireServer;
  let conn: ProviderConnection;
  before(async () => {
    srv = await startAnthropicWireServer();
    conn = { endpoint_url: srv.url, api_key: KEY };
  });
  after(() => srv.close());
  const reset = (o: AnthropicWireOptions = {}) => {
    srv.options = o;
    srv.requests.length = 0;
  };

  it('completes blocking: text, finish reason, usage, request shape', async () => {
    reset({ text: 'Hello there.', usage: { input_tokens: 12, output_tokens: 3, cache_read_input_tokens: 5 } });
    const out = await anthropic.complete(conn, req({ stop: ['END'], top_p: 0.5 }));
    assert.deepEqual(out, {
      text: 'Hello there.',
      finish_reason: 'stop',
      token_use: { prompt: 17, result: 3, total: 20, cache_read: 5 },
    });
    const r = srv.requests[0];
    assert.equal(r.path, '/v1/messages');
    assert.equal(r.headers['x-api-key'], KEY);
    assert.equal(r.headers['anthropic-version'], '2023-06-01');
    assert.equal(r.headers.authorization, undefined);
    assert.deepEqual(r.body, {
      model: 'claude-sonnet-4-5',
      max_tokens: 4096,
      system: 'You are terse.',
      messages: [{ role: 'user', content: 'Say hello' }],
      temperature: 0.7,
      top_p: 0.5,
      stop_sequences: ['END'],
    });
  });

  it('keeps a given max_tokens, merges consecutive turns, maps max_tokens stop to length', async () => {
    reset({ text: 'cut off', stopReason: 'max_tokens' });
    const out = await anthropic.complete(
      conn,
      req({
        max_tokens: 12,
        messages: [
          { role: 'system', content: 'A' },
          { role: 'user', content: 'one' },
          { role: 'user', content: 'two' },
          { role: 'assistant', content: 'ok' },
          { role: 'system', content: 'B' },
          { role: 'user', content: 'three' },
        ],
      }),
    );
    assert.equal(out.finish_reason, 'length');
    const b = srv.requests[0].body;
    assert.equal(b.max_tokens, 12);
    assert.equal(b.system, 'A\n\nB');
    assert.deepEqual(b.messages, [
      { role: 'user', content: 'one\n\ntwo' },
      { role: 'assistant', content: 'ok' },
      { role: 'user', content: 'three' },
    ]);
  });

  it('streams text deltas, then finish reason and usage from message_start + message_delta', async () => {
    reset({ chunks: ['Hel', 'lo', ' world'], usage: { input_tokens: 9, output_tokens: 4 } });
    const chunks = await collect(anthropic.stream(conn, req()));
    assert.deepEqual(chunks, [
      { text: 'Hel' },
      { text: 'lo' },
      { text: ' world' },
      { finish_reason: 'stop', token_use: { prompt: 9, result: 4, total: 13 } },
    ]);
    assert.equal(srv.requests[0].body.stream, true);
  });

  it('result_schema becomes a JSON-only instruction in the system prompt', async () => {
    const schema = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] };
    reset({ text: '{"n":1}' });
    const out = await anthropic.complete(conn, req({ result_schema: schema }));
    assert.equal(out.text, '{"n":1}');
    const b = srv.requests[0].body;
    assert.equal('response_format' in b, false);
    assert.ok(
      b.system.startsWith(
        'You are terse.\n\nAnswer only with a JSON value that conforms to the following JSON Schema.',
      ),
    );
    assert.ok(b.system.endsWith(JSON.stringify(schema)));
    // without any system message the instruction is the whole system prompt
    reset({ text: '{"n":1}' });
    await anthropic.complete(conn, req({ result_schema: schema, messages: [{ role: 'user', content: 'x' }] }));
    assert.match(srv.requests[0].body.system, /^Answer only with a JSON value/);
  });

  it('a wrong key is provider_auth with Anthropic’s message; no key fails before the network', async () => {
    reset();
    await rejectsProvider(
      anthropic.complete({ ...conn, api_key: 'sk-ant-wrong' }, req()),
      'provider_auth',
      401,
      /Anthropic at http:\/\/127\.0\.0\.1:\d+ answered HTTP 401: invalid x-api-key/,
    );
    await rejectsProvider(
      collect(anthropic.stream({ ...conn, api_key: 'sk-ant-wrong' }, req())),
      'provider_auth',
      401,
      /invalid x-api-key/,
    );
    await rejectsProvider(
      anthropic.complete({ endpoint_url: srv.url }, req()),
      'provider_auth',
      undefined,
      /needs an API key/,
    );
    assert.equal(srv.requests.length, 2);
  });

  it('4xx: unknown model (404) and an invalid request (400) are provider_bad_request', async () => {
    reset({ models: ['claude-sonnet-4-5'] });
    await rejectsProvider(
      anthropic.complete(conn, req({ model: 'claude-nope' })),
      'provider_bad_request',
      404,
      /HTTP 404: model: claude-nope/,
    );
    reset();
    await rejectsProvider(
      anthropic.complete(conn, req({ temperature: 1.5 })),
      'provider_bad_request',
      400,
      /temperature: Input should be less than or equal to 1/,
    );
  });

  it('429 is rate_limited; 500 and 529 are provider_error', async () => {
    reset({ fail: { status: 429, message: 'Number of request tokens has exceeded your per-minute rate limit' } });
    await rejectsProvider(anthropic.complete(conn, req()), 'provider_rate_limited', 429, /per-minute rate limit/);
    reset({ fail: { status: 500 } });
    await rejectsProvider(anthropic.complete(conn, req()), 'provider_error', 500, /HTTP 500: Internal server error/);
    reset({ fail: { status: 529 } });
    await assert.rejects(collect(anthropic.stream(conn, req())), (e: ProviderError) => {
      assert.equal(e.code, 'provider_error');
      assert.equal(e.upstreamStatus, 529);
      assert.equal(e.retryable, true);
      assert.match(e.message, /HTTP 529: Overloaded/);
      return true;
    });
  });

  it('event: error mid-stream throws from the iterator after the first chunks', async () => {
    reset({
      chunks: ['one ', 'two ', 'three'],
      midStreamError: { afterChunks: 1, type: 'overloaded_error', message: 'Overloaded' },
    });
    const seen: string[] = [];
    await rejectsProvider(
      (async () => {
        for await (const c of anthropic.stream(conn, req())) if (c.text) seen.push(c.text);
      })(),
      'provider_error',
      undefined,
      /Anthropic at .* failed mid-stream: Overloaded/,
    );
    assert.deepEqual(seen, ['one ']);
    reset({ chunks: ['a'], midStreamError: { afterChunks: 0, type: 'rate_limit_error', message: 'slow down' } });
    await rejectsProvider(collect(anthropic.stream(conn, req())), 'provider_rate_limited', undefined, /slow down/);
  });

  it('a closed port is provider_unreachable', async () => {
    const port = await closedPort();
    const dead = { endpoint_url: `http://127.0.0.1:${port}`, api_key: KEY };
    await rejectsProvider(
      anthropic.complete(dead, req()),
      'provider_unreachable',
      undefined,
      new RegExp(
        `is unreachable: connect ECONNREFUSED 127\\.0\\.0\\.1:${port} \\(http://127\\.0\\.0\\.1:${port}/v1/messages\\)`,
      ),
    );
    await rejectsProvider(collect(anthropic.stream(dead, req())), 'provider_unreachable', undefined, /ECONNREFUSED/);
  });

  it('a stalled stream hits the timeout; a hanging server too', async () => {
    reset({ chunks: ['a ', 'b'], hangAfterChunks: 1 });
    const seen: CompletionChunk[] = [];
    await rejectsProvider(
      (async () => {
        for await (const c of anthropic.stream({ ...conn, config: { timeout_ms: 150 } }, req())) seen.push(c);
      })(),
      'provider_unreachable',
      undefined,
      /stopped sending within 150 ms/,
    );
    assert.deepEqual(seen, [{ text: 'a ' }]);
    reset({ hang: true });
    await rejectsProvider(
      anthropic.complete({ ...conn, config: { timeout_ms: 100 } }, req()),
      'provider_unreachable',
      undefined,
      /did not answer within 100 ms/,
    );
  });

  it('abort: rejects with the caller’s AbortError, blocking and mid-stream', async () => {
    reset({ delayMs: 1000 });
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 50);
    // The server answers after 1 s: a call that ignored the signal would resolve, not reject.
    await assert.rejects(anthropic.complete(conn, req(), ac.signal), { name: 'AbortError' });

    reset({ chunks: ['a ', 'b ', 'c'], chunkDelayMs: 300 });
    const ac2 = new AbortController();
    const seen: string[] = [];
    await assert.rejects(
      (async () => {
        for await (const c of anthropic.stream(conn, req(), ac2.signal)) {
          if (c.text) seen.push(c.text);
          setTimeout(() => ac2.abort(), 20);
        }
      })(),
      { name: 'AbortError' },
    );
    assert.deepEqual(seen, ['a ']);
  });

  it('a connection cut mid-stream is a provider_error', async () => {
    reset({ chunks: ['a ', 'b'], hangAfterChunks: 1 });
    const it = anthropic.stream(conn, req())[Symbol.asyncIterator]();
    assert.deepEqual((await it.next()).value, { text: 'a ' });
    const pending = it.next();
    setTimeout(() => void srv.close(), 20); // destroys the open socket
    await rejectsProvider(pending, 'provider_error', undefined, /broke off its answer/);
    srv = await startAnthropicWireServer();
    conn = { endpoint_url: srv.url, api_key: KEY };
  });

  it('a stream that ends cleanly but before message_stop is a provider_error', async () => {
    const { createServer: createHttp } = await import('node:http');
    const raw = createHttp((q, res) => {
      q.resume();
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"half"}}\n\n',
      );
    });
    await new Promise<void>((r) => raw.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(raw.address() as { port: number }).port}`;
      const seen: CompletionChunk[] = [];
      await rejectsProvider(
        (async () => {
          for await (const c of anthropic.stream({ endpoint_url: url, api_key: KEY }, req())) seen.push(c);
        })(),
        'provider_error',
        undefined,
        /ended the stream before message_stop/,
      );
      assert.deepEqual(seen, [{ text: 'half' }]);
    } finally {
      await new Promise<void>((r) => raw.close(() => r()));
    }
  });
});

describe('anthropicBaseUrl', () => {
  it('defaults to api.anthropic.com and drops a trailing /v1', () => {
    assert.equal(anthropicBaseUrl(undefined), 'https://api.anthropic.com');
    assert.equal(anthropicBaseUrl('https://proxy.example/anthropic/'), 'https://proxy.example/anthropic');
    assert.equal(anthropicBaseUrl('https://proxy.example/anthropic/v1'), 'https://proxy.example/anthropic');
    assert.throws(
      () => anthropicBaseUrl('::nope'),
      (e: ProviderError) => e.code === 'provider_bad_request',
    );
  });

  it('reaches the wire server with or without /v1 in the endpoint URL', async () => {
    const srv = await startAnthropicWireServer({ text: 'hi' });
    try {
      assert.equal((await anthropic.complete({ endpoint_url: `${srv.url}/v1`, api_key: KEY }, req())).text, 'hi');
      assert.equal((await anthropic.complete({ endpoint_url: srv.url, api_key: KEY }, req())).text, 'hi');
      assert.deepEqual(
        srv.requests.map((r) => r.path),
        ['/v1/messages', '/v1/messages'],
      );
    } finally {
      await srv.close();
    }
  });
});
