/**
 * The `vertexai` provider against a local server that speaks Vertex AI's wire (token endpoint,
 * Gemini generateContent / streamGenerateContent?alt=sse, Claude rawPredict / streamRawPredict):
 * the service account's JWT exchanged once for an access token and reused, model options,
 * systemInstruction and merged turns, result_schema, finish reasons, Google's errors (bad
 * signature, 429 with retry-after, 400, 403, a blocked prompt), Claude on Vertex, the model list.
 * Through HTTP and the official client.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { ONE_DIALECT, startTestServer, type TestServer } from '../support/server.ts';
import { startVertexWireServer, CLOUD_PLATFORM_SCOPE, type VertexWireServer } from '../support/vertex-wire-server.ts';

const GEMINI_PATH =
  /^\/v1\/projects\/orrery-test\/locations\/us-central1\/publishers\/google\/models\/gemini-2\.5-flash:generateContent$/;

// One database (ONE_DIALECT): the wire protocol does not depend on the storage.
for (const dialect of ONE_DIALECT) {
  describe(`${dialect}: Google Vertex AI (Gemini and Claude)`, () => {
    let srv: TestServer;
    let wire: VertexWireServer;
    let sa: string;
    let n = 0;

    before(async () => {
      srv = await startTestServer(dialect);
      wire = await startVertexWireServer({ text: 'Bonjour from Gemini' });
      sa = wire.serviceAccount();
    });
    after(async () => {
      await srv?.close();
      await wire?.close();
    });

    const prompts = [
      { type: 'template', template: { role: 'system', content_type: 'text', content: 'You are terse.' } },
      { type: 'template', template: { role: 'user', content_type: 'text', content: 'Say hello' } },
      { type: 'template', template: { role: 'user', content_type: 'text', content: 'in French' } },
      { type: 'template', template: { role: 'assistant', content_type: 'text', content: 'Bonjour' } },
      { type: 'template', template: { role: 'user', content_type: 'text', content: 'Again' } },
    ];

    const setup = async (env: Record<string, unknown>, extra: Record<string, unknown> = {}) => {
      const e = await srv.api('POST', '/api/v1/environments', {
        name: `vertex ${++n}`,
        provider: 'vertexai',
        endpoint_url: wire.origin,
        apiKey: sa,
        default_model: 'gemini-2.5-flash',
        ...env,
      });
      assert.equal(e.status, 200, JSON.stringify(e.body));
      const ix = await srv.api('POST', '/api/v1/interactions', {
        name: `vertex ix ${n}`,
        status: 'draft',
        environment: e.body.id,
        prompts,
        ...extra,
      });
      assert.equal(ix.status, 200, JSON.stringify(ix.body));
      return { env: e.body.id as string, ix: ix.body.id as string };
    };
    const tokenRequestsFor = (key: string) => {
      const email = JSON.parse(key).client_email;
      return wire.requests.filter(
        (r) => r.kind === 'token' && r.body.assertion && decodeJwt(r.body.assertion).iss === email,
      );
    };

    it('Gemini blocking: the token exchange, the URL, model options, systemInstruction and merged turns; HTTP and the official client', async () => {
      const { ix } = await setup({});
      const from = wire.requests.length;
      const r = await srv.api('POST', '/api/v1/runs', {
        interaction: ix,
        config: {
          model_options: {
            temperature: 0.2,
            max_tokens: 64,
            top_p: 0.9,
            top_k: 20,
            presence_penalty: 0.5,
            frequency_penalty: 0.25,
            seed: 7,
            stop: ['END'],
          },
        },
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.status, 'completed');
      assert.deepEqual(r.body.result, [{ type: 'text', value: 'Bonjour from Gemini' }]);
      assert.equal(r.body.finish_reason, 'stop');
      // word counts: prompt "You are terse." + "Say hello" + "in French" + "Bonjour" + "Again" = 9, answer 3
      assert.deepEqual(r.body.token_use, { prompt: 9, result: 3, total: 12 });

      const sent = wire.requests.slice(from);
      assert.deepEqual(
        sent.map((q) => q.kind),
        ['token', 'gemini'],
      );
      const tokenReq = sent[0];
      assert.equal(tokenReq.headers['content-type'], 'application/x-www-form-urlencoded');
      assert.equal(tokenReq.body.grant_type, 'urn:ietf:params:oauth:grant-type:jwt-bearer');
      const header = decodeProtectedHeader(tokenReq.body.assertion);
      const claims = decodeJwt(tokenReq.body.assertion);
      const key = JSON.parse(sa);
      assert.equal(header.alg, 'RS256');
      assert.equal(header.kid, key.private_key_id);
      assert.equal(claims.iss, key.client_email);
      assert.equal(claims.aud, wire.tokenUri);
      assert.equal(claims.scope, CLOUD_PLATFORM_SCOPE);
      assert.equal(claims.exp! - claims.iat!, 3600);

      const call = sent[1];
      assert.match(call.path, GEMINI_PATH);
      const bearer = String(call.headers.authorization).replace(/^Bearer /, '');
      assert.ok(wire.issued.has(bearer), 'the call carries the issued token');
      assert.deepEqual(call.body.systemInstruction, { parts: [{ text: 'You are terse.' }] });
      assert.deepEqual(call.body.contents, [
        { role: 'user', parts: [{ text: 'Say hello' }, { text: 'in French' }] },
        { role: 'model', parts: [{ text: 'Bonjour' }] },
        { role: 'user', parts: [{ text: 'Again' }] },
      ]);
      assert.deepEqual(call.body.generationConfig, {
        temperature: 0.2,
        maxOutputTokens: 64,
        topP: 0.9,
        topK: 20,
        stopSequences: ['END'],
        presencePenalty: 0.5,
        frequencyPenalty: 0.25,
        seed: 7,
      });

      const run = await srv
        .client()
        .interactions.execute(ix, { config: { model_options: { temperature: 0.1 } } } as any);
      assert.equal(run.status, 'completed');
      assert.equal(run.result.text(), 'Bonjour from Gemini');
      assert.equal(run.token_use?.total, 12);
      assert.equal(wire.requests.at(-1)!.body.generationConfig.temperature, 0.1);
    });

    it('Gemini streamed through the official client: several chunks, the final run with token_use and finish_reason', async () => {
      const { ix } = await setup({});
      wire.options.text = 'Bonjour, je suis Gemini sur Vertex';
      wire.options.usage = {
        promptTokenCount: 11,
        candidatesTokenCount: 6,
        thoughtsTokenCount: 4,
        totalTokenCount: 21,
      };
      try {
        const chunks: string[] = [];
        const started = await srv.client().interactions.execute(ix, {}, (c: string) => chunks.push(c));
        assert.ok(chunks.length > 1, `several chunks, got ${chunks.length}`);
        assert.equal(chunks.join(''), 'Bonjour, je suis Gemini sur Vertex');
        const call = wire.requests.at(-1)!;
        assert.equal(call.kind, 'gemini');
        assert.equal(call.action, 'streamGenerateContent');
        assert.deepEqual(call.query, { alt: 'sse' });
        const final = await srv.client().runs.retrieve(started.id);
        assert.equal(final.status, 'completed');
        assert.deepEqual(final.result, [{ type: 'text', value: chunks.join('') }]);
        assert.equal(final.finish_reason, 'stop');
        // the thinking tokens count as result, so prompt + result = total
        assert.deepEqual(final.token_use, { prompt: 11, result: 10, total: 21 });
      } finally {
        wire.options.text = 'Bonjour from Gemini';
        wire.options.usage = undefined;
      }
    });

    it('result_schema asks for JSON with responseJsonSchema and gives a JSON result', async () => {
      const schema = {
        type: 'object',
        required: ['greeting'],
        properties: { greeting: { type: 'string' }, lang: { type: 'string', enum: ['fr', 'en'] } },
      };
      const { ix } = await setup({}, { result_schema: schema });
      wire.options.text = '{"greeting":"Bonjour","lang":"fr"}';
      try {
        const r = await srv.api('POST', '/api/v1/runs', { interaction: ix });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.deepEqual(r.body.result, [{ type: 'json', value: { greeting: 'Bonjour', lang: 'fr' } }]);
        const g = wire.requests.at(-1)!.body.generationConfig;
        assert.equal(g.responseMimeType, 'application/json');
        assert.deepEqual(g.responseJsonSchema, schema);
        assert.equal(g.responseSchema, undefined);
      } finally {
        wire.options.text = 'Bonjour from Gemini';
      }
    });

    it('exchanges the token once and reuses it across runs, Gemini and Claude, blocking and streamed', async () => {
      const key = wire.serviceAccount();
      const { ix } = await setup({ apiKey: key });
      const claudeEnv = await setup({ apiKey: key, default_model: 'claude-sonnet-4@20250514' });
      await srv.api('POST', '/api/v1/runs', { interaction: ix });
      await srv.api('POST', '/api/v1/runs', { interaction: ix });
      const streamed = await srv.client().interactions.execute(ix, {}, () => {});
      assert.equal((await srv.client().runs.retrieve(streamed.id)).status, 'completed');
      const c = await srv.api('POST', '/api/v1/runs', { interaction: claudeEnv.ix });
      assert.equal(c.status, 200, JSON.stringify(c.body));
      assert.equal(tokenRequestsFor(key).length, 1, 'one token exchange for four runs');
      const bearers = new Set(wire.requests.slice(-4).map((q) => q.headers.authorization));
      assert.equal(bearers.size, 1);
    });

    it('a token Vertex refuses (401 UNAUTHENTICATED) fails the run as provider_auth and is exchanged anew on the next run', async () => {
      const key = wire.serviceAccount();
      const { ix } = await setup({ apiKey: key, config: { retries: 0 } });
      assert.equal((await srv.api('POST', '/api/v1/runs', { interaction: ix })).status, 200);
      assert.equal(tokenRequestsFor(key).length, 1);
      const revoked = String(wire.requests.at(-1)!.headers.authorization).replace(/^Bearer /, '');
      wire.issued.delete(revoked);
      const refused = await srv.api('POST', '/api/v1/runs', { interaction: ix });
      assert.equal(refused.body.error, 'provider_auth');
      assert.match(refused.body.message, /HTTP 401: Request had invalid authentication credentials/);
      const again = await srv.api('POST', '/api/v1/runs', { interaction: ix });
      assert.equal(again.status, 200, JSON.stringify(again.body));
      assert.equal(tokenRequestsFor(key).length, 2);
      assert.notEqual(wire.requests.at(-1)!.headers.authorization, `Bearer ${revoked}`);
    });

    it("a key whose signature Google cannot verify fails the run as provider_auth with Google's message", async () => {
      const good = JSON.parse(wire.serviceAccount());
      const forged = wire.serviceAccount({ email: good.client_email, register: false });
      const { ix } = await setup({ apiKey: forged });
      const r = await srv.api('POST', '/api/v1/runs', { interaction: ix });
      assert.equal(r.status, 502);
      assert.equal(r.body.error, 'provider_auth');
      assert.match(r.body.message, /invalid_grant: Invalid JWT Signature\./);
      assert.ok(r.body.message.includes(good.client_email), r.body.message);
      const stored = await srv.api('GET', `/api/v1/runs/${r.body.id}`);
      assert.equal(stored.body.status, 'failed');
      assert.equal(stored.body.error.code, 'provider_auth');
      assert.equal(wire.requests.at(-1)!.kind, 'token', 'no model call without a token');

      const notJson = await setup({ apiKey: 'AIzaSyNotAServiceAccount' });
      const r2 = await srv.api('POST', '/api/v1/runs', { interaction: notJson.ix });
      assert.equal(r2.body.error, 'provider_auth');
      assert.match(r2.body.message, /service account key/);
      const userCreds = await setup({
        apiKey: JSON.stringify({ type: 'authorized_user', client_id: 'x', refresh_token: 'y' }),
      });
      const r3 = await srv.api('POST', '/api/v1/runs', { interaction: userCreds.ix });
      assert.equal(r3.body.error, 'provider_auth');
      assert.match(r3.body.message, /"type":"service_account".*a key of type "authorized_user"/);
    });

    it('retries a 429 RESOURCE_EXHAUSTED after its retry-after; with retries 0 the run fails as provider_rate_limited', async () => {
      const { ix } = await setup({});
      const message =
        'Resource exhausted. Please try again later. Please refer to https://cloud.google.com/vertex-ai/generative-ai/docs/error-code-429 for more details.';
      wire.options.fail = { status: 429, message, headers: { 'retry-after': '1' }, times: 1 };
      const t0 = Date.now();
      const r = await srv.api('POST', '/api/v1/runs', { interaction: ix });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.ok(Date.now() - t0 >= 900, 'waited for retry-after');
      assert.equal(r.body.attempts.length, 2);
      assert.equal(r.body.attempts[0].error.code, 'provider_rate_limited');
      assert.match(r.body.attempts[0].error.message, /Resource exhausted/);
      assert.equal(r.body.attempts[1].status, 'completed');

      const noRetry = await setup({ config: { retries: 0 } });
      wire.options.fail = { status: 429, message, headers: { 'retry-after': '1' }, times: 1 };
      const failed = await srv.api('POST', '/api/v1/runs', { interaction: noRetry.ix });
      wire.options.fail = undefined;
      assert.equal(failed.body.error, 'provider_rate_limited');
      assert.match(failed.body.message, /Vertex AI at http:\/\/127\.0\.0\.1:\d+ answered HTTP 429: Resource exhausted/);
    });

    it("400 INVALID_ARGUMENT → provider_bad_request, 403 PERMISSION_DENIED → provider_auth, with Google's messages", async () => {
      const { ix } = await setup({ config: { retries: 0 } });
      wire.options.fail = {
        status: 400,
        message:
          'Unable to submit request because it has a topK value of 500 but the supported range is from 1 (inclusive) to 41 (exclusive).',
        times: 1,
      };
      const bad = await srv.api('POST', '/api/v1/runs', { interaction: ix });
      assert.equal(bad.status, 502);
      assert.equal(bad.body.error, 'provider_bad_request');
      assert.match(bad.body.message, /answered HTTP 400: Unable to submit request because it has a topK value of 500/);

      // A project the account may not use: Vertex's own 403.
      const other = await setup({ config: { retries: 0, project: 'someone-elses-project' } });
      const denied = await srv.api('POST', '/api/v1/runs', { interaction: other.ix });
      assert.equal(denied.body.error, 'provider_auth');
      assert.match(
        denied.body.message,
        /HTTP 403: Permission 'aiplatform\.endpoints\.predict' denied on resource '\/\/aiplatform\.googleapis\.com\/projects\/someone-elses-project\/locations\/us-central1\/publishers\/google\/models\/gemini-2\.5-flash'/,
      );

      // Unknown model: 404 NOT_FOUND.
      wire.options.models = ['gemini-2.5-flash'];
      try {
        const missing = await srv.api('POST', '/api/v1/runs', {
          interaction: ix,
          config: { model: 'gemini-0.9-imaginary' },
        });
        assert.equal(missing.body.error, 'provider_bad_request');
        assert.match(
          missing.body.message,
          /Publisher Model `projects\/orrery-test\/locations\/us-central1\/publishers\/google\/models\/gemini-0\.9-imaginary` was not found/,
        );
      } finally {
        wire.options.models = undefined;
      }
    });

    it('a blocked prompt is a clear provider_bad_request; MAX_TOKENS and SAFETY map to length and content_filter', async () => {
      const { ix } = await setup({ config: { retries: 0 } });
      wire.options.blockPrompt = {
        blockReason: 'PROHIBITED_CONTENT',
        blockReasonMessage: 'The prompt was blocked due to prohibited content.',
      };
      try {
        const blocked = await srv.api('POST', '/api/v1/runs', { interaction: ix });
        assert.equal(blocked.status, 502);
        assert.equal(blocked.body.error, 'provider_bad_request');
        assert.match(
          blocked.body.message,
          /Vertex AI at .* blocked the prompt \(PROHIBITED_CONTENT\): The prompt was blocked due to prohibited content\./,
        );
        const chunks: string[] = [];
        const streamed = await srv.client().interactions.execute(ix, {}, (c: string) => chunks.push(c));
        const final = await srv.client().runs.retrieve(streamed.id);
        assert.equal(final.status, 'failed');
        assert.equal((final as any).error.code, 'provider_bad_request');
        assert.match((final as any).error.message, /blocked the prompt \(PROHIBITED_CONTENT\)/);
        assert.deepEqual(chunks, []);
      } finally {
        wire.options.blockPrompt = undefined;
      }
      wire.options.finishReason = 'MAX_TOKENS';
      const long = await srv.api('POST', '/api/v1/runs', { interaction: ix });
      assert.equal(long.body.finish_reason, 'length');
      wire.options.finishReason = 'SAFETY';
      const unsafe = await srv.api('POST', '/api/v1/runs', { interaction: ix });
      assert.equal(unsafe.body.finish_reason, 'content_filter');
      wire.options.finishReason = 'MALFORMED_FUNCTION_CALL';
      const other = await srv.api('POST', '/api/v1/runs', { interaction: ix });
      assert.equal(other.body.finish_reason, 'malformed_function_call');
      wire.options.finishReason = undefined;
    });

    it('Claude on Vertex: rawPredict and streamRawPredict with anthropic_version vertex-2023-10-16 and the model in the URL', async () => {
      const { ix } = await setup({ default_model: 'claude-sonnet-4@20250514', config: { region: 'us-east5' } });
      wire.options.text = 'Bonjour from Claude on Vertex';
      wire.options.claudeUsage = { input_tokens: 12, output_tokens: 5 };
      try {
        const r = await srv.api('POST', '/api/v1/runs', {
          interaction: ix,
          config: { model_options: { temperature: 0.3, max_tokens: 100, top_k: 5 } },
        });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.deepEqual(r.body.result, [{ type: 'text', value: 'Bonjour from Claude on Vertex' }]);
        assert.equal(r.body.finish_reason, 'stop');
        assert.deepEqual(r.body.token_use, { prompt: 12, result: 5, total: 17 });
        const call = wire.requests.at(-1)!;
        assert.equal(
          call.path,
          '/v1/projects/orrery-test/locations/us-east5/publishers/anthropic/models/claude-sonnet-4@20250514:rawPredict',
        );
        assert.ok(wire.issued.has(String(call.headers.authorization).replace(/^Bearer /, '')));
        assert.equal(call.headers['x-api-key'], undefined);
        assert.equal(call.body.anthropic_version, 'vertex-2023-10-16');
        assert.equal(call.body.model, undefined);
        assert.equal(call.body.system, 'You are terse.');
        assert.deepEqual(call.body.messages, [
          { role: 'user', content: 'Say hello\n\nin French' },
          { role: 'assistant', content: 'Bonjour' },
          { role: 'user', content: 'Again' },
        ]);
        assert.equal(call.body.max_tokens, 100);
        assert.equal(call.body.temperature, 0.3);
        assert.equal(call.body.top_k, 5);

        const run = await srv.client().interactions.execute(ix, {} as any);
        assert.equal(run.result.text(), 'Bonjour from Claude on Vertex');

        const chunks: string[] = [];
        const started = await srv.client().interactions.execute(ix, {}, (c: string) => chunks.push(c));
        assert.ok(chunks.length > 1, `several chunks, got ${chunks.length}`);
        assert.equal(chunks.join(''), 'Bonjour from Claude on Vertex');
        const s = wire.requests.at(-1)!;
        assert.equal(
          s.path,
          '/v1/projects/orrery-test/locations/us-east5/publishers/anthropic/models/claude-sonnet-4@20250514:streamRawPredict',
        );
        assert.equal(s.body.anthropic_version, 'vertex-2023-10-16');
        assert.equal(s.body.stream, true);
        assert.equal(s.body.model, undefined);
        const final = await srv.client().runs.retrieve(started.id);
        assert.equal(final.status, 'completed');
        assert.equal(final.finish_reason, 'stop');
        assert.deepEqual(final.token_use, { prompt: 12, result: 5, total: 17 });
      } finally {
        wire.options.text = 'Bonjour from Gemini';
        wire.options.claudeUsage = undefined;
      }
    });

    it('model ids may name their location and publisher; region global; a ya29 access token as the key', async () => {
      const { ix } = await setup({ config: { region: 'global' } });
      const g = await srv.api('POST', '/api/v1/runs', { interaction: ix });
      assert.equal(g.status, 200, JSON.stringify(g.body));
      assert.equal(
        wire.requests.at(-1)!.path,
        '/v1/projects/orrery-test/locations/global/publishers/google/models/gemini-2.5-flash:generateContent',
      );
      const p = await srv.api('POST', '/api/v1/runs', {
        interaction: ix,
        config: { model: 'locations/europe-west1/publishers/anthropic/models/claude-3-5-haiku@20241022' },
      });
      assert.equal(p.status, 200, JSON.stringify(p.body));
      assert.equal(
        wire.requests.at(-1)!.path,
        '/v1/projects/orrery-test/locations/europe-west1/publishers/anthropic/models/claude-3-5-haiku@20241022:rawPredict',
      );
      const other = await srv.api('POST', '/api/v1/runs', {
        interaction: ix,
        config: { model: 'publishers/meta/models/llama-4' },
      });
      assert.equal(other.body.error, 'provider_bad_request');
      assert.match(other.body.message, /publisher "meta"/);

      const issued = [...wire.issued][0];
      const direct = await setup({ apiKey: issued, config: { project: 'orrery-test' } });
      const before = wire.requests.filter((q) => q.kind === 'token').length;
      const d = await srv.api('POST', '/api/v1/runs', { interaction: direct.ix });
      assert.equal(d.status, 200, JSON.stringify(d.body));
      assert.equal(wire.requests.at(-1)!.headers.authorization, `Bearer ${issued}`);
      assert.equal(wire.requests.filter((q) => q.kind === 'token').length, before, 'no exchange for an access token');
    });

    it('GET /environments/:id/models answers the documented Gemini and Claude list', async () => {
      const { env } = await setup({});
      const r = await srv.api('GET', `/api/v1/environments/${env}/models`);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const ids = r.body.map((m: { id: string }) => m.id);
      assert.ok(ids.includes('gemini-2.5-pro'));
      assert.ok(ids.includes('gemini-2.5-flash'));
      assert.ok(ids.some((id: string) => id.startsWith('claude-sonnet-4')));
      for (const m of r.body) assert.equal(typeof m.name, 'string');
      const providers = await srv.api('GET', '/api/v1/providers');
      assert.equal(providers.status, 200);
      const vertex = (providers.body.providers ?? providers.body).find((p: { id: string }) => p.id === 'vertexai');
      assert.ok(vertex, JSON.stringify(providers.body).slice(0, 300));
      assert.equal(vertex.requires_api_key, true);
    });
  });
}
