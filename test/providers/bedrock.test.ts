/**
 * Amazon Bedrock: the Runtime's Converse and ConverseStream (SigV4-signed, the stream as binary
 * event-stream frames), the foundation-model listing, and Bedrock Mantle (Chat Completions with a
 * Bedrock API key, given or made from AWS keys). Against local servers on loopback that speak those
 * wires and recompute every signature themselves; through HTTP and the official client.
 */
import { createHash } from 'node:crypto';
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { ONE_DIALECT, startTestServer, type TestServer } from '../support/server.ts';
import {
  startBedrockWireServer,
  eventFrame,
  exceptionFrame,
  verifyBedrockApiKey,
  sigv4Signature,
  TEST_ACCESS_KEY_ID,
  TEST_SECRET,
  type BedrockWireServer,
} from '../support/bedrock-wire-server.ts';
import { startOpenAIWireServer, type WireServer } from '../support/openai-wire-server.ts';
import {
  BedrockConverseDriver,
  bedrockApiKey,
  converseBody,
  decodeEventStream,
  parseKey,
  regionOf,
} from '../../src/providers/bedrock.ts';
import { ProviderError } from '../../src/providers/driver.ts';

const KEY = `${TEST_ACCESS_KEY_ID}:${TEST_SECRET}`;
const CLAUDE = 'us.anthropic.claude-sonnet-4-20250514-v1:0';
const TEXT = 'Bonjour depuis Bedrock, en plusieurs morceaux.';
/** us-east-1 unless this process has AWS_REGION set: the region the driver signs for without config.region. */
const REGION = regionOf({});

describe('bedrock: pieces', () => {
  it("the wire server's SigV4 check computes AWS's own test-suite signature (get-vanilla)", () => {
    const signature = sigv4Signature({
      method: 'GET',
      rawPath: '/',
      query: [],
      headers: { host: 'example.amazonaws.com', 'x-amz-date': '20150830T123600Z' },
      signedHeaders: ['host', 'x-amz-date'],
      payloadHash: createHash('sha256').update('').digest('hex'),
      amzDate: '20150830T123600Z',
      scope: '20150830/us-east-1/service/aws4_request',
      secret: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
    });
    assert.equal(signature, '5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31');
  });

  it('decodes event-stream frames however the bytes are split, and refuses a truncated frame', async () => {
    const frames = Buffer.concat([
      eventFrame('messageStart', { role: 'assistant' }),
      eventFrame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'héllo ' } }),
      exceptionFrame('throttlingException', 'Too many tokens, please wait before trying again.'),
    ]);
    const expected = [
      { messageType: 'event', type: 'messageStart', body: { role: 'assistant' } },
      { messageType: 'event', type: 'contentBlockDelta', body: { contentBlockIndex: 0, delta: { text: 'héllo ' } } },
      {
        messageType: 'exception',
        type: 'throttlingException',
        body: { message: 'Too many tokens, please wait before trying again.' },
      },
    ];
    for (const size of [1, 3, 7, 16, 50, frames.length]) {
      async function* pieces() {
        for (let i = 0; i < frames.length; i += size) yield new Uint8Array(frames.subarray(i, i + size));
      }
      const got = [];
      for await (const m of decodeEventStream(pieces(), 'Bedrock')) got.push(m);
      assert.deepEqual(got, expected, `pieces of ${size} bytes`);
    }
    async function* truncated() {
      yield new Uint8Array(frames.subarray(0, frames.length - 5));
    }
    await assert.rejects(
      (async () => {
        for await (const _ of decodeEventStream(truncated(), 'Bedrock'));
      })(),
      (err: unknown) =>
        err instanceof ProviderError &&
        err.code === 'provider_error' &&
        /in the middle of an event-stream frame/.test(err.message),
    );
    const corrupt = Buffer.from(frames);
    corrupt[20] ^= 0xff;
    async function* bad() {
      yield new Uint8Array(corrupt);
    }
    await assert.rejects(
      (async () => {
        for await (const _ of decodeEventStream(bad(), 'Bedrock'));
      })(),
      (err: unknown) =>
        err instanceof ProviderError &&
        err.code === 'provider_error' &&
        /malformed event-stream frame/.test(err.message),
    );
  });

  it('maps the request: system blocks, merged turns, inferenceConfig, top_k per family, the schema as an instruction', () => {
    const body = converseBody({
      model: CLAUDE,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'one' },
        { role: 'user', content: 'two' },
        { role: 'assistant', content: 'ok' },
        { role: 'user', content: 'three' },
      ],
      temperature: 0.3,
      max_tokens: 100,
      top_p: 0.8,
      top_k: 40,
      stop: ['END'],
      seed: 7,
      presence_penalty: 1,
      result_schema: { type: 'object' },
    });
    assert.deepEqual(body.messages, [
      { role: 'user', content: [{ text: 'one\n\ntwo' }] },
      { role: 'assistant', content: [{ text: 'ok' }] },
      { role: 'user', content: [{ text: 'three' }] },
    ]);
    const system = body.system as { text: string }[];
    assert.equal(system[0].text, 'Be brief.');
    assert.match(system[1].text, /JSON Schema/);
    assert.deepEqual(body.inferenceConfig, { maxTokens: 100, temperature: 0.3, topP: 0.8, stopSequences: ['END'] });
    assert.deepEqual(body.additionalModelRequestFields, { top_k: 40 });
    assert.deepEqual(Object.keys(body).sort(), [
      'additionalModelRequestFields',
      'inferenceConfig',
      'messages',
      'system',
    ]);
    const nova = converseBody({ model: 'amazon.nova-pro-v1:0', messages: [{ role: 'user', content: 'x' }], top_k: 5 });
    assert.deepEqual(nova.additionalModelRequestFields, { inferenceConfig: { topK: 5 } });
    const llama = converseBody({
      model: 'meta.llama3-8b-instruct-v1:0',
      messages: [{ role: 'user', content: 'x' }],
      top_k: 5,
    });
    assert.equal(llama.additionalModelRequestFields, undefined, 'Llama takes no top_k field');
    assert.equal(llama.inferenceConfig, undefined);
  });

  it('reads the key: AWS keys, with a session token, a Bedrock API key; anything else names the forms', () => {
    assert.deepEqual(parseKey(KEY, {}, 'Bedrock'), {
      kind: 'sigv4',
      credentials: { accessKeyId: TEST_ACCESS_KEY_ID, secretAccessKey: TEST_SECRET },
    });
    assert.deepEqual(parseKey(`${KEY}:FwoGZXIvYXdzEJr//token`, {}, 'Bedrock'), {
      kind: 'sigv4',
      credentials: {
        accessKeyId: TEST_ACCESS_KEY_ID,
        secretAccessKey: TEST_SECRET,
        sessionToken: 'FwoGZXIvYXdzEJr//token',
      },
    });
    assert.deepEqual(parseKey('ABSKQmVkcm9ja0FQSUtleQ==', {}, 'Bedrock'), {
      kind: 'bearer',
      token: 'ABSKQmVkcm9ja0FQSUtleQ==',
    });
    for (const bad of ['just-a-secret', `${TEST_ACCESS_KEY_ID}:`, 'lowercase-id-here:secret', `${KEY}:tok:extra`]) {
      assert.throws(
        () => parseKey(bad, {}, 'Bedrock'),
        (err: unknown) =>
          err instanceof ProviderError &&
          err.code === 'provider_auth' &&
          /ACCESS_KEY_ID:SECRET_ACCESS_KEY/.test(err.message) &&
          !err.message.includes(bad),
      );
    }
  });

  it('makes a short-term Bedrock API key that verifies against the secret, and not against another', async () => {
    const token = await bedrockApiKey(
      { accessKeyId: TEST_ACCESS_KEY_ID, secretAccessKey: TEST_SECRET },
      'us-west-2',
      new Date('2026-01-02T03:04:05Z'),
    );
    assert.match(token, /^bedrock-api-key-[A-Za-z0-9+/]+=*$/);
    const decoded = Buffer.from(token.slice(16), 'base64').toString();
    assert.match(decoded, /^bedrock\.amazonaws\.com\/\?Action=CallWithBearerToken&/);
    assert.match(decoded, /X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20260102%2Fus-west-2%2Fbedrock%2Faws4_request/);
    assert.match(decoded, /X-Amz-Expires=43200/);
    assert.match(decoded, /&Version=1$/);
    assert.equal(verifyBedrockApiKey(token, TEST_SECRET, TEST_ACCESS_KEY_ID), true);
    assert.equal(verifyBedrockApiKey(token, 'another-secret', TEST_ACCESS_KEY_ID), false);
  });

  it('with no key, the AWS credential chain (here: the environment variables) signs the request', async () => {
    const wire = await startBedrockWireServer({ region: REGION, text: TEXT, sessionToken: 'chain-session' });
    const saved = {
      id: process.env.AWS_ACCESS_KEY_ID,
      secret: process.env.AWS_SECRET_ACCESS_KEY,
      token: process.env.AWS_SESSION_TOKEN,
    };
    process.env.AWS_ACCESS_KEY_ID = TEST_ACCESS_KEY_ID;
    process.env.AWS_SECRET_ACCESS_KEY = TEST_SECRET;
    process.env.AWS_SESSION_TOKEN = 'chain-session';
    try {
      const out = await new BedrockConverseDriver().complete(
        { endpoint_url: wire.url },
        { model: 'amazon.nova-pro-v1:0', messages: [{ role: 'user', content: 'hi' }] },
      );
      assert.equal(out.text, TEXT);
      assert.equal(wire.requests.at(-1)!.headers['x-amz-security-token'], 'chain-session');
    } finally {
      for (const [k, v] of [
        ['AWS_ACCESS_KEY_ID', saved.id],
        ['AWS_SECRET_ACCESS_KEY', saved.secret],
        ['AWS_SESSION_TOKEN', saved.token],
      ] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
      await wire.close();
    }
  });

  it('the driver alone: a blocking answer, and a stream whose frames arrive split', async () => {
    const wire = await startBedrockWireServer({
      region: REGION,
      text: TEXT,
      splitBytes: 5,
      usage: { inputTokens: 11, outputTokens: 6, totalTokens: 20, cacheReadInputTokens: 3 },
    });
    try {
      const driver = new BedrockConverseDriver();
      const conn = { endpoint_url: wire.url, api_key: KEY };
      const req = { model: CLAUDE, messages: [{ role: 'user' as const, content: 'hi' }], max_tokens: 50 };
      const out = await driver.complete(conn, req);
      assert.deepEqual(out, {
        text: TEXT,
        finish_reason: 'stop',
        token_use: { prompt: 14, result: 6, total: 20, cache_read: 3 },
      });
      const chunks = [];
      for await (const c of driver.stream(conn, req)) chunks.push(c);
      assert.equal(
        chunks
          .filter((c) => c.text)
          .map((c) => c.text)
          .join(''),
        TEXT,
      );
      assert.deepEqual(chunks.at(-1), {
        finish_reason: 'stop',
        token_use: { prompt: 14, result: 6, total: 20, cache_read: 3 },
      });
      assert.equal(wire.requests.at(-1)!.path, `/model/${encodeURIComponent(CLAUDE)}/converse-stream`);
    } finally {
      await wire.close();
    }
  });
});

// One database (ONE_DIALECT): the wire protocol does not depend on the storage.
for (const dialect of ONE_DIALECT) {
  describe(`${dialect}: Amazon Bedrock and Bedrock Mantle`, () => {
    let srv: TestServer;
    let wire: BedrockWireServer;
    let openai: WireServer;
    let n = 0;

    before(async () => {
      srv = await startTestServer(dialect);
      wire = await startBedrockWireServer({
        region: REGION,
        text: TEXT,
        usage: { inputTokens: 9, outputTokens: 7, totalTokens: 16 },
      });
      openai = await startOpenAIWireServer({
        apiKey: 'bedrock-api-key-mantle-test',
        text: 'Hello from Mantle',
        usage: { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 },
      });
    });
    after(async () => {
      await srv.close();
      await wire.close();
      await openai.close();
    });

    const setup = async (provider: string, env: Record<string, unknown>, system?: string) => {
      const e = await srv.api('POST', '/api/v1/environments', { name: `${provider} ${++n}`, provider, ...env });
      assert.equal(e.status, 200, JSON.stringify(e.body));
      const prompts = [
        ...(system ? [{ type: 'template', template: { role: 'system', content_type: 'text', content: system } }] : []),
        { type: 'template', template: { role: 'user', content_type: 'text', content: 'Say hello in French' } },
      ];
      const ix = await srv.api('POST', '/api/v1/interactions', {
        name: `ix ${n}`,
        status: 'draft',
        environment: e.body.id,
        prompts,
      });
      assert.equal(ix.status, 200, JSON.stringify(ix.body));
      return { env: e.body.id as string, ix: ix.body.id as string };
    };
    const bedrock = (env: Record<string, unknown> = {}, system?: string) =>
      setup('bedrock', { endpoint_url: wire.url, apiKey: KEY, default_model: CLAUDE, ...env }, system);

    it('blocking runs through HTTP and the official client: signed, the model id encoded in the path, usage and finish reason', async () => {
      const { ix } = await bedrock({}, 'You are terse.');
      const from = wire.requests.length;
      const r = await srv.api('POST', '/api/v1/runs', { interaction: ix });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.status, 'completed');
      assert.equal(r.body.result[0].value, TEXT);
      assert.deepEqual(r.body.token_use, { prompt: 9, result: 7, total: 16 });
      assert.equal(r.body.finish_reason, 'stop');
      const sent = wire.requests[from];
      assert.equal(sent.path, '/model/us.anthropic.claude-sonnet-4-20250514-v1%3A0/converse');
      assert.match(
        String(sent.headers.authorization),
        new RegExp(
          `^AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/\\d{8}/${REGION}/bedrock/aws4_request, SignedHeaders=[^,]*host[^,]*, Signature=[0-9a-f]{64}$`,
        ),
      );
      assert.equal(sent.headers['content-type'], 'application/json');
      // The system prompt is top-level; the conversation holds only the user turn.
      assert.deepEqual(sent.body.system, [{ text: 'You are terse.' }]);
      assert.deepEqual(sent.body.messages, [{ role: 'user', content: [{ text: 'Say hello in French' }] }]);
      const run = await srv.client().interactions.execute(ix, {});
      assert.equal(run.result.text(), TEXT);
      assert.deepEqual(run.token_use, { prompt: 9, result: 7, total: 16 });
    });

    it('a streamed run through the official client: several chunks, joined equal to the text, final run with usage', async () => {
      const { ix } = await bedrock();
      const chunks: string[] = [];
      const streamed = await srv.client().interactions.execute(ix, {}, (c: string) => chunks.push(c));
      assert.ok(chunks.length > 1, `chunks: ${JSON.stringify(chunks)}`);
      assert.equal(chunks.join(''), TEXT);
      assert.match(wire.requests.at(-1)!.path, /\/converse-stream$/);
      const final = await srv.client().runs.retrieve(streamed.id);
      assert.equal(final.status, 'completed');
      assert.deepEqual(final.token_use, { prompt: 9, result: 7, total: 16 });
      assert.equal((final as any).finish_reason, 'stop');
    });

    it('maps model options onto the body Bedrock received', async () => {
      const { ix } = await bedrock();
      const from = wire.requests.length;
      const run = await srv.client().interactions.execute(ix, {
        config: { model_options: { temperature: 0.2, max_tokens: 64, top_p: 0.9, top_k: 30, stop: ['\n\n'] } },
      } as any);
      assert.equal(run.result.text(), TEXT);
      const sent = wire.requests[from].body;
      assert.deepEqual(sent.inferenceConfig, { maxTokens: 64, temperature: 0.2, topP: 0.9, stopSequences: ['\n\n'] });
      assert.deepEqual(sent.additionalModelRequestFields, { top_k: 30 });
      const r = await srv.api('POST', '/api/v1/runs', { interaction: ix, config: { max_tokens: 20 } });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(wire.requests.at(-1)!.body.inferenceConfig.maxTokens, 20);
    });

    it('a session token is sent and signed as x-amz-security-token', async () => {
      wire.options.sessionToken = 'IQoJb3JpZ2luX2VjEJr//session';
      try {
        const { ix } = await bedrock({ apiKey: `${KEY}:IQoJb3JpZ2luX2VjEJr//session` });
        const r = await srv.api('POST', '/api/v1/runs', { interaction: ix });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.equal(wire.requests.at(-1)!.headers['x-amz-security-token'], 'IQoJb3JpZ2luX2VjEJr//session');
        assert.match(String(wire.requests.at(-1)!.headers.authorization), /SignedHeaders=[^,]*x-amz-security-token/);
      } finally {
        wire.options.sessionToken = undefined;
      }
    });

    it('a Bedrock API key goes as a bearer', async () => {
      wire.options.bearerToken = 'ABSKQmVkcm9ja0FQSUtleS10ZXN0';
      try {
        const { ix } = await bedrock({ apiKey: 'ABSKQmVkcm9ja0FQSUtleS10ZXN0' });
        const r = await srv.api('POST', '/api/v1/runs', { interaction: ix });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.equal(wire.requests.at(-1)!.headers.authorization, 'Bearer ABSKQmVkcm9ja0FQSUtleS10ZXN0');
      } finally {
        wire.options.bearerToken = undefined;
      }
    });

    it("a wrong secret fails the run as provider_auth with the provider's message", async () => {
      const { ix } = await bedrock({ apiKey: `${TEST_ACCESS_KEY_ID}:not-the-secret`, config: { retries: 0 } });
      const r = await srv.api('POST', '/api/v1/runs', { interaction: ix });
      assert.equal(r.status, 502);
      assert.equal(r.body.error, 'provider_auth');
      assert.match(
        r.body.message,
        /Bedrock at http:\/\/127\.0\.0\.1:\d+ answered HTTP 403: The request signature we calculated does not match the signature you provided/,
      );
      assert.equal(r.body.run.status, 'failed');
      const chunks: string[] = [];
      const streamed = await srv.client().interactions.execute(ix, {}, (c: string) => chunks.push(c));
      const final = await srv.client().runs.retrieve(streamed.id);
      assert.equal(final.status, 'failed');
      assert.equal((final as any).error.code, 'provider_auth');
      assert.deepEqual(chunks, []);
    });

    it('a malformed key is a clear provider_auth error, and nothing is sent', async () => {
      const { ix } = await bedrock({ apiKey: 'not-an-aws-key', config: { retries: 0 } });
      const from = wire.requests.length;
      const r = await srv.api('POST', '/api/v1/runs', { interaction: ix });
      assert.equal(r.status, 502);
      assert.equal(r.body.error, 'provider_auth');
      assert.match(
        r.body.message,
        /expected ACCESS_KEY_ID:SECRET_ACCESS_KEY, ACCESS_KEY_ID:SECRET_ACCESS_KEY:SESSION_TOKEN, or a Bedrock API key/,
      );
      assert.doesNotMatch(r.body.message, /not-an-aws-key/);
      assert.equal(wire.requests.length, from);
    });

    it('a 429 ThrottlingException with retry-after is retried and the run succeeds; a 400 ValidationException is provider_bad_request', async () => {
      const { ix } = await bedrock({ config: { retries: { base_delay_ms: 5 } } });
      wire.options.fail = {
        status: 429,
        type: 'ThrottlingException',
        message: 'Too many requests, please wait before trying again.',
        headers: { 'retry-after': '1' },
        times: 1,
      };
      const started = Date.now();
      const r = await srv.api('POST', '/api/v1/runs', { interaction: ix });
      wire.options.fail = undefined;
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.ok(Date.now() - started >= 900, 'waited for retry-after');
      assert.equal(r.body.attempts[0].error.code, 'provider_rate_limited');
      assert.match(r.body.attempts[0].error.message, /HTTP 429: Too many requests, please wait/);
      assert.equal(r.body.attempts.at(-1).status, 'completed');
      wire.options.fail = {
        status: 400,
        type: 'ValidationException',
        message: 'The provided model identifier is invalid.',
      };
      const bad = await srv.api('POST', '/api/v1/runs', { interaction: ix });
      wire.options.fail = undefined;
      assert.equal(bad.status, 502);
      assert.equal(bad.body.error, 'provider_bad_request');
      assert.match(bad.body.message, /HTTP 400: The provided model identifier is invalid\./);
      assert.equal(bad.body.run.attempts, undefined, 'not retried');
      wire.options.fail = {
        status: 424,
        type: 'ModelErrorException',
        message: 'The system encountered an unexpected error during processing. Try your request again.',
      };
      const modelError = await srv.api('POST', '/api/v1/runs', { interaction: ix, config: { max_tokens: 10 } });
      wire.options.fail = undefined;
      assert.equal(modelError.body.error, 'provider_error');
      assert.match(modelError.body.message, /HTTP 424: The system encountered an unexpected error/);
      // The wire server's own validation: a temperature above Bedrock's range.
      const refused = await srv.api('POST', '/api/v1/runs', { interaction: ix, config: { temperature: 1.5 } });
      assert.equal(refused.body.error, 'provider_bad_request');
      assert.match(refused.body.message, /inferenceConfig\.temperature/);
    });

    it('a mid-stream exception fails the streamed run with its code and message', async () => {
      const { ix } = await bedrock({ config: { retries: 0 } });
      wire.options.midStreamException = {
        afterChunks: 2,
        type: 'throttlingException',
        message: 'Too many tokens, please wait before trying again.',
      };
      try {
        const chunks: string[] = [];
        const streamed = await srv.client().interactions.execute(ix, {}, (c: string) => chunks.push(c));
        const final = await srv.client().runs.retrieve(streamed.id);
        assert.equal(final.status, 'failed');
        assert.equal((final as any).error.code, 'provider_rate_limited');
        assert.match(
          (final as any).error.message,
          /failed mid-stream: throttlingException: Too many tokens, please wait before trying again\./,
        );
        assert.equal(
          chunks.join(''),
          TEXT.split(/(?<= )/)
            .slice(0, 2)
            .join(''),
        );
        wire.options.midStreamException = {
          afterChunks: 1,
          type: 'modelStreamErrorException',
          message: 'Model stream error: the model stopped.',
        };
        const again = await srv.client().interactions.execute(ix, {}, () => {});
        const failed = await srv.client().runs.retrieve(again.id);
        assert.equal((failed as any).error.code, 'provider_error');
        assert.match((failed as any).error.message, /modelStreamErrorException: Model stream error/);
      } finally {
        wire.options.midStreamException = undefined;
      }
    });

    it('lists the text models and their inference profiles', async () => {
      const { env } = await bedrock();
      const r = await srv.api('GET', `/api/v1/environments/${env}/models`);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.deepEqual(
        r.body.map((m: any) => m.id),
        ['amazon.nova-pro-v1:0', 'meta.llama3-8b-instruct-v1:0', 'us.anthropic.claude-sonnet-4-20250514-v1:0'],
      );
      assert.equal(r.body[0].name, 'Amazon Nova Pro');
      const listing = wire.requests.filter((x) => x.method === 'GET');
      assert.deepEqual(listing.at(-2)!.query, { byOutputModality: 'TEXT' });
      assert.match(String(listing.at(-2)!.headers.authorization), /^AWS4-HMAC-SHA256 /);
      assert.equal(listing.at(-1)!.path, '/inference-profiles');
      // Without the permission to list profiles, the foundation models still list.
      wire.options.inferenceProfiles = null;
      try {
        const partial = await srv.api('GET', `/api/v1/environments/${env}/models`);
        assert.deepEqual(
          partial.body.map((m: any) => m.id),
          ['amazon.nova-pro-v1:0', 'meta.llama3-8b-instruct-v1:0'],
        );
      } finally {
        wire.options.inferenceProfiles = undefined;
      }
      const { env: wrong } = await bedrock({ apiKey: `${TEST_ACCESS_KEY_ID}:wrong` });
      const refused = await srv.api('GET', `/api/v1/environments/${wrong}/models`);
      assert.equal(refused.status, 502);
      assert.match(JSON.stringify(refused.body), /signature we calculated does not match/);
    });

    it('bedrock_mantle: Chat Completions with a Bedrock API key, blocking and streamed, and its model list', async () => {
      const { ix, env } = await setup('bedrock_mantle', {
        endpoint_url: openai.url,
        apiKey: 'bedrock-api-key-mantle-test',
        default_model: 'openai.gpt-oss-120b',
      });
      const from = openai.requests.length;
      const run = await srv
        .client()
        .interactions.execute(ix, { config: { model_options: { max_tokens: 30, temperature: 0.1 } } } as any);
      assert.equal(run.result.text(), 'Hello from Mantle');
      assert.deepEqual(run.token_use, { prompt: 5, result: 3, total: 8 });
      const sent = openai.requests[from];
      assert.equal(sent.path, '/v1/chat/completions');
      assert.equal(sent.headers.authorization, 'Bearer bedrock-api-key-mantle-test');
      assert.equal(sent.body.model, 'openai.gpt-oss-120b');
      assert.equal(sent.body.max_tokens, 30);
      const chunks: string[] = [];
      const streamed = await srv.client().interactions.execute(ix, {}, (c: string) => chunks.push(c));
      assert.ok(chunks.length > 1);
      assert.equal(chunks.join(''), 'Hello from Mantle');
      const final = await srv.client().runs.retrieve(streamed.id);
      assert.equal(final.status, 'completed');
      assert.equal(final.token_use?.total, 8);
      const models = await srv.api('GET', `/api/v1/environments/${env}/models`);
      assert.equal(models.status, 200, JSON.stringify(models.body));
      assert.equal(openai.requests.at(-1)!.path, '/v1/models');
      assert.equal(openai.requests.at(-1)!.headers.authorization, 'Bearer bedrock-api-key-mantle-test');
    });

    it('bedrock_mantle: AWS keys become a short-term Bedrock API key that verifies; a wrong key is provider_auth', async () => {
      const { ix } = await setup('bedrock_mantle', {
        endpoint_url: openai.url,
        apiKey: KEY,
        default_model: 'mistral.magistral-small-2509',
        config: { region: 'us-west-2' },
      });
      openai.options.apiKey = null;
      try {
        const r = await srv.api('POST', '/api/v1/runs', { interaction: ix });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        const bearer = String(openai.requests.at(-1)!.headers.authorization).replace(/^Bearer /, '');
        assert.ok(verifyBedrockApiKey(bearer, TEST_SECRET, TEST_ACCESS_KEY_ID), 'the presigned token verifies');
        assert.match(Buffer.from(bearer.slice(16), 'base64').toString(), /%2Fus-west-2%2Fbedrock%2Faws4_request/);
      } finally {
        openai.options.apiKey = 'bedrock-api-key-mantle-test';
      }
      const { ix: wrong } = await setup('bedrock_mantle', {
        endpoint_url: openai.url,
        apiKey: 'bedrock-api-key-revoked',
        default_model: 'qwen.qwen3-32b-v1:0',
        config: { retries: 0 },
      });
      const refused = await srv.api('POST', '/api/v1/runs', { interaction: wrong });
      assert.equal(refused.status, 502);
      assert.equal(refused.body.error, 'provider_auth');
      assert.match(refused.body.message, /Bedrock Mantle at http:\/\/127\.0\.0\.1:\d+\/v1 answered HTTP 401/);
    });
  });
}
