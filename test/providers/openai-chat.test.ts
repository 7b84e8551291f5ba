import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import {
  ProviderError,
  type CompletionChunk,
  type CompletionRequest,
  type ProviderConnection,
} from '../../src/providers/driver.ts';
import { OpenAIChatDriver, openAIBaseUrl } from '../../src/providers/openai-chat.ts';
import { getDriver } from '../../src/providers/registry.ts';
import { startOpenAIWireServer, type WireServer } from '../support/openai-wire-server.ts';

const compatible = getDriver('openai_compatible');
const KEY = 'sk-test';
const req = (over: Partial<CompletionRequest> = {}): CompletionRequest => ({
  model: 'gpt-4o-mini',
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

/** A port that refuses connections: bind, read the port, close. */
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

describe('openai-chat driver against the OpenAI wire server', () => {
  let srv: WireServer;
  let conn: ProviderConnection;
  before(async () => {
    srv = await startOpenAIWireServer();
    conn = { endpoint_url: srv.url, api_key: KEY };
  });
  after(() => srv.close());
  const reset = (o: Parameters<typeof startOpenAIWireServer>[0] = {}) => {
    srv.options = o;
    srv.requests.length = 0;
  };

  it('completes blocking: text, finish reason, usage, request shape', async () => {
    reset({ text: 'Hello there, friend.', usage: { prompt_tokens: 11, completion_tokens: 4, total_tokens: 15 } });
    const out = await compatible.complete(conn, req({ max_tokens: 50, stop: ['\n\n'], top_p: 0.9 }));
    assert.deepEqual(out, {
      text: 'Hello there, friend.',
      finish_reason: 'stop',
      token_use: { prompt: 11, result: 4, total: 15 },
    });
    assert.equal(srv.requests.length, 1);
    const r = srv.requests[0];
    assert.equal(r.path, '/v1/chat/completions');
    assert.equal(r.headers.authorization, 'Bearer sk-test');
    assert.deepEqual(r.body, {
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'Say hello' },
      ],
      temperature: 0.7,
      top_p: 0.9,
      max_tokens: 50,
      stop: ['\n\n'],
    });
  });

  it('passes other finish reasons through', async () => {
    reset({ text: 'cut', finishReason: 'length' });
    const out = await compatible.complete(conn, req());
    assert.equal(out.finish_reason, 'length');
    const chunks = await collect(compatible.stream(conn, req()));
    assert.equal(chunks.at(-1)?.finish_reason, 'length');
  });

  it('streams text in chunks, with usage and finish reason last', async () => {
    reset({ chunks: ['Hel', 'lo', ' world'], usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 } });
    const chunks = await collect(compatible.stream(conn, req()));
    assert.deepEqual(chunks, [
      { text: 'Hel' },
      { text: 'lo' },
      { text: ' world' },
      { finish_reason: 'stop', token_use: { prompt: 7, result: 3, total: 10 } },
    ]);
    assert.equal(srv.requests[0].body.stream, true);
    assert.deepEqual(srv.requests[0].body.stream_options, { include_usage: true });
  });

  it('conn.config.stream_usage=false leaves stream_options out (for strict servers)', async () => {
    reset({ chunks: ['a', 'b'] });
    const chunks = await collect(compatible.stream({ ...conn, config: { stream_usage: false } }, req()));
    assert.equal('stream_options' in srv.requests[0].body, false);
    assert.deepEqual(chunks, [{ text: 'a' }, { text: 'b' }, { finish_reason: 'stop' }]);
  });

  it('sends result_schema as response_format json_schema', async () => {
    const schema = { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] };
    reset({ text: '{"ok":true}' });
    const out = await compatible.complete(conn, req({ result_schema: schema }));
    assert.equal(out.text, '{"ok":true}');
    assert.deepEqual(srv.requests[0].body.response_format, {
      type: 'json_schema',
      json_schema: { name: 'result', schema, strict: false },
    });
  });

  it('the openai provider sends max_completion_tokens to api.openai.com-style servers', async () => {
    reset();
    const openai = new OpenAIChatDriver({
      provider: 'openai',
      name: 'OpenAI',
      defaultBaseUrl: srv.url,
      requiresApiKey: true,
      maxTokensField: 'max_completion_tokens',
      streamUsage: true,
    });
    await openai.complete({ api_key: KEY }, req({ max_tokens: 20 }));
    assert.equal(srv.requests[0].body.max_completion_tokens, 20);
    assert.equal('max_tokens' in srv.requests[0].body, false);
    await rejectsProvider(openai.complete({}, req()), 'provider_auth', undefined, /OpenAI needs an API key/);
  });

  it('a wrong key is provider_auth with OpenAI’s message', async () => {
    reset();
    const p = compatible.complete({ ...conn, api_key: 'sk-wrong-key-123' }, req());
    await rejectsProvider(
      p,
      'provider_auth',
      401,
      /OpenAI-compatible server at http:\/\/127\.0\.0\.1:\d+\/v1 answered HTTP 401: Incorrect API key provided/,
    );
    await rejectsProvider(
      collect(compatible.stream({ ...conn, api_key: 'nope' }, req())),
      'provider_auth',
      401,
      /Incorrect API key/,
    );
  });

  it('no key at all is a 401 from the server, reported as provider_auth', async () => {
    reset();
    await rejectsProvider(
      compatible.complete({ endpoint_url: srv.url }, req()),
      'provider_auth',
      401,
      /You didn't provide an API key/,
    );
    assert.equal(srv.requests[0].headers.authorization, undefined);
  });

  it('4xx: unknown model is provider_bad_request (404), missing model is 400', async () => {
    reset({ models: ['gpt-4o-mini'] });
    await rejectsProvider(
      compatible.complete(conn, req({ model: 'gpt-nope' })),
      'provider_bad_request',
      404,
      /The model `gpt-nope` does not exist/,
    );
    await rejectsProvider(
      compatible.complete(conn, req({ model: '' })),
      'provider_bad_request',
      400,
      /you must provide a model parameter/,
    );
  });

  it('422 and 429 map to bad_request and rate_limited', async () => {
    reset({ fail: { status: 422, message: 'Unprocessable thing' } });
    await rejectsProvider(
      compatible.complete(conn, req()),
      'provider_bad_request',
      422,
      /HTTP 422: Unprocessable thing/,
    );
    reset({
      fail: {
        status: 429,
        message: 'Rate limit reached for gpt-4o-mini',
        type: 'requests',
        code: 'rate_limit_exceeded',
      },
    });
    await assert.rejects(compatible.complete(conn, req()), (e: ProviderError) => {
      assert.equal(e.code, 'provider_rate_limited');
      assert.equal(e.retryable, true);
      assert.match(e.message, /Rate limit reached/);
      return true;
    });
  });

  it('5xx is provider_error, with a non-JSON body used as the message', async () => {
    reset({ fail: { status: 500, message: 'The server had an error while processing your request.' } });
    await rejectsProvider(compatible.complete(conn, req()), 'provider_error', 500, /HTTP 500: The server had an error/);
    reset({ fail: { status: 502, rawBody: '<html>Bad Gateway</html>' } });
    await rejectsProvider(
      collect(compatible.stream(conn, req())),
      'provider_error',
      502,
      /HTTP 502: <html>Bad Gateway<\/html>/,
    );
  });

  it('an error object mid-stream throws from the iterator after the first chunks', async () => {
    reset({
      chunks: ['one ', 'two ', 'three'],
      midStreamError: { afterChunks: 2, message: 'The server overloaded mid-answer', type: 'server_error' },
    });
    const seen: string[] = [];
    await rejectsProvider(
      (async () => {
        for await (const c of compatible.stream(conn, req())) if (c.text) seen.push(c.text);
      })(),
      'provider_error',
      undefined,
      /failed mid-stream: The server overloaded mid-answer/,
    );
    assert.deepEqual(seen, ['one ', 'two ']);
  });

  it('a stream that stops without [DONE] or finish_reason is a provider_error', async () => {
    // a server that sends one chunk and closes, as a crashed compatible server would
    const raw = await startRawServer('data: {"choices":[{"index":0,"delta":{"content":"half"}}]}\n\n');
    try {
      const seen: CompletionChunk[] = [];
      await rejectsProvider(
        (async () => {
          for await (const c of compatible.stream({ endpoint_url: raw.url }, req())) seen.push(c);
        })(),
        'provider_error',
        undefined,
        /ended the stream before the answer was complete/,
      );
      assert.deepEqual(seen, [{ text: 'half' }]);
    } finally {
      await raw.close();
    }
  });

  it('a malformed blocking answer is provider_error', async () => {
    const raw = await startRawServer('{"object":"chat.completion","choices":[]}', 'application/json');
    try {
      await rejectsProvider(
        compatible.complete({ endpoint_url: raw.url }, req()),
        'provider_error',
        200,
        /without a choice/,
      );
    } finally {
      await raw.close();
    }
    const notJson = await startRawServer('this is not json', 'application/json');
    try {
      await rejectsProvider(
        compatible.complete({ endpoint_url: notJson.url }, req()),
        'provider_error',
        200,
        /not JSON: this is not json/,
      );
    } finally {
      await notJson.close();
    }
  });

  it('a closed port is provider_unreachable', async () => {
    const port = await closedPort();
    const dead = { endpoint_url: `http://127.0.0.1:${port}/v1`, api_key: KEY };
    await rejectsProvider(
      compatible.complete(dead, req()),
      'provider_unreachable',
      undefined,
      new RegExp(
        `is unreachable: connect ECONNREFUSED 127\\.0\\.0\\.1:${port} \\(http://127\\.0\\.0\\.1:${port}/v1/chat/completions\\)`,
      ),
    );
    await rejectsProvider(collect(compatible.stream(dead, req())), 'provider_unreachable', undefined, /ECONNREFUSED/);
  });

  it('a hanging server hits conn.config.timeout_ms as provider_unreachable', async () => {
    reset({ hang: true });
    // The server never answers: only the timeout can end the call (its message names it).
    await rejectsProvider(
      compatible.complete({ ...conn, config: { timeout_ms: 150 } }, req()),
      'provider_unreachable',
      undefined,
      /did not answer within 150 ms/,
    );
    reset({ chunks: ['a ', 'b ', 'c'], hangAfterChunks: 1 });
    const seen: CompletionChunk[] = [];
    await rejectsProvider(
      (async () => {
        for await (const c of compatible.stream({ ...conn, config: { timeout_ms: 150 } }, req())) seen.push(c);
      })(),
      'provider_unreachable',
      undefined,
      /stopped sending within 150 ms/,
    );
    assert.deepEqual(seen, [{ text: 'a ' }]);
  });

  it('abort: rejects with the caller’s AbortError, blocking and mid-stream', async () => {
    reset({ hang: true });
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 50);
    await assert.rejects(compatible.complete(conn, req(), ac.signal), { name: 'AbortError' });

    reset({ chunks: ['a ', 'b ', 'c'], hangAfterChunks: 1 });
    const ac2 = new AbortController();
    const seen: string[] = [];
    await assert.rejects(
      (async () => {
        for await (const c of compatible.stream(conn, req(), ac2.signal)) {
          if (c.text) seen.push(c.text);
          ac2.abort();
        }
      })(),
      { name: 'AbortError' },
    );
    assert.deepEqual(seen, ['a ']);

    const already = AbortSignal.abort();
    await assert.rejects(compatible.complete(conn, req(), already), { name: 'AbortError' });
  });

  it('openai_compatible without an endpoint URL says so', async () => {
    await rejectsProvider(compatible.complete({}, req()), 'provider_bad_request', undefined, /needs an endpoint URL/);
  });
});

describe('openAIBaseUrl', () => {
  it('uses a URL with a path as given, and adds /v1 to a bare origin', () => {
    assert.equal(openAIBaseUrl('http://localhost:11434'), 'http://localhost:11434/v1');
    assert.equal(openAIBaseUrl('http://localhost:11434/'), 'http://localhost:11434/v1');
    assert.equal(openAIBaseUrl('http://localhost:8000/v1/'), 'http://localhost:8000/v1');
    assert.equal(openAIBaseUrl('https://api.groq.com/openai/v1'), 'https://api.groq.com/openai/v1');
    assert.equal(openAIBaseUrl('https://openrouter.ai/api/v1'), 'https://openrouter.ai/api/v1');
    assert.throws(
      () => openAIBaseUrl('not a url'),
      (e: ProviderError) => e.code === 'provider_bad_request',
    );
  });

  it('reaches the wire server with or without /v1 in the endpoint URL', async () => {
    const srv = await startOpenAIWireServer({ text: 'hi' });
    try {
      assert.equal((await compatible.complete({ endpoint_url: srv.origin, api_key: KEY }, req())).text, 'hi');
      assert.equal((await compatible.complete({ endpoint_url: `${srv.url}/`, api_key: KEY }, req())).text, 'hi');
      assert.deepEqual(
        srv.requests.map((r) => r.path),
        ['/v1/chat/completions', '/v1/chat/completions'],
      );
    } finally {
      await srv.close();
    }
  });
});

/** A server that answers every request with a fixed body, for malformed answers. */
async function startRawServer(body: string, type = 'text/event-stream') {
  const { createServer: createHttp } = await import('node:http');
  const server = createHttp((_req, res) => {
    _req.resume();
    res.writeHead(200, { 'content-type': type });
    res.end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/v1`;
  return { url, close: () => new Promise<void>((r) => server.close(() => r())) };
}
