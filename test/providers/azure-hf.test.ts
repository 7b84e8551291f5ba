/**
 * Issue 15, the providers that speak OpenAI's Chat Completions under other URLs and headers:
 * Azure OpenAI (deployment URLs with api-version, or the v1 API; `api-key` or an Entra bearer
 * token), Azure AI Foundry (the model inference API) and Hugging Face Inference Endpoints. Each
 * against a local server on loopback that speaks that wire: blocking, streaming with usage, an
 * error body, a 429 with retry-after; through HTTP and the official client.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { ONE_DIALECT, startTestServer, type TestServer } from '../support/server.ts';
import { startOpenAIWireServer, type WireServer } from '../support/openai-wire-server.ts';

const ENTRA = 'eyJhbGciOiJSUzI1NiJ9.eyJhdWQiOiJodHRwczovL2NvZ25pdGl2ZXNlcnZpY2VzLmF6dXJlLmNvbSJ9.c2ln';

// One database (ONE_DIALECT): the wire protocol does not depend on the storage.
for (const dialect of ONE_DIALECT) {
  describe(`${dialect}: Azure OpenAI, Azure AI Foundry and Hugging Face endpoints`, () => {
    let srv: TestServer;
    let wire: WireServer;
    let n = 0;

    before(async () => {
      srv = await startTestServer(dialect);
      wire = await startOpenAIWireServer({
        apiKey: 'azure-key-1',
        text: 'Bonjour from Azure',
        usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 },
      });
    });
    after(async () => {
      await srv.close();
      await wire.close();
    });

    const setup = async (provider: string, env: Record<string, unknown>) => {
      const e = await srv.api('POST', '/api/v1/environments', {
        name: `${provider} ${++n}`,
        provider,
        endpoint_url: wire.origin,
        ...env,
      });
      assert.equal(e.status, 200, JSON.stringify(e.body));
      const ix = await srv.api('POST', '/api/v1/interactions', {
        name: `ix ${n}`,
        status: 'draft',
        environment: e.body.id,
        prompts: [
          { type: 'template', template: { role: 'user', content_type: 'text', content: 'Say hello in French' } },
        ],
      });
      return { env: e.body.id as string, ix: ix.body.id as string };
    };

    it('azure_openai: deployment URL with api-version, api-key header, model options, usage; blocking and streamed', async () => {
      const { ix } = await setup('azure_openai', {
        apiKey: 'azure-key-1',
        default_model: 'gpt-4o-prod',
        config: { api_version: '2024-10-21' },
      });
      const from = wire.requests.length;
      const run = await srv.client().interactions.execute(ix, {
        config: { model_options: { temperature: 0.2, max_tokens: 64, top_p: 0.9, stop: ['\n\n'] } },
      } as any);
      assert.equal(run.result.text(), 'Bonjour from Azure');
      assert.deepEqual(run.token_use, { prompt: 7, result: 3, total: 10 });
      const sent = wire.requests[from];
      assert.equal(sent.path, '/openai/deployments/gpt-4o-prod/chat/completions');
      assert.deepEqual(sent.query, { 'api-version': '2024-10-21' });
      assert.equal(sent.headers['api-key'], 'azure-key-1');
      assert.equal(sent.headers.authorization, undefined);
      assert.equal(sent.body.model, undefined, 'the deployment in the URL names the model');
      assert.equal(sent.body.max_completion_tokens, 64);
      assert.equal(sent.body.temperature, 0.2);
      assert.equal(sent.body.top_p, 0.9);
      assert.deepEqual(sent.body.stop, ['\n\n']);
      const chunks: string[] = [];
      const streamed = await srv.client().interactions.execute(ix, {}, (c: string) => chunks.push(c));
      assert.equal(chunks.join(''), 'Bonjour from Azure');
      assert.ok(chunks.length > 1);
      assert.equal(wire.requests.at(-1)!.body.stream, true);
      assert.deepEqual(wire.requests.at(-1)!.body.stream_options, { include_usage: true });
      const final = await srv.client().runs.retrieve(streamed.id);
      assert.equal(final.status, 'completed');
      assert.equal(final.token_use?.total, 10);
    });

    it('azure_openai: config.deployment, the v1 API, and an Entra ID token as a bearer', async () => {
      const dep = await setup('azure_openai', {
        apiKey: 'azure-key-1',
        default_model: 'gpt-4o',
        config: { deployment: 'my-deployment' },
      });
      await srv.api('POST', '/api/v1/runs', { interaction: dep.ix });
      assert.equal(wire.requests.at(-1)!.path, '/openai/deployments/my-deployment/chat/completions');
      assert.equal(wire.requests.at(-1)!.query['api-version'], '2024-10-21');
      const v1 = await setup('azure_openai', {
        apiKey: 'azure-key-1',
        default_model: 'gpt-4o',
        config: { api_version: 'v1' },
      });
      await srv.api('POST', '/api/v1/runs', { interaction: v1.ix });
      assert.equal(wire.requests.at(-1)!.path, '/openai/v1/chat/completions');
      assert.equal(wire.requests.at(-1)!.body.model, 'gpt-4o');
      wire.options.apiKey = ENTRA;
      const entra = await setup('azure_openai', { apiKey: ENTRA, default_model: 'gpt-4o' });
      const r = await srv.api('POST', '/api/v1/runs', { interaction: entra.ix });
      wire.options.apiKey = 'azure-key-1';
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(wire.requests.at(-1)!.headers.authorization, `Bearer ${ENTRA}`);
      assert.equal(wire.requests.at(-1)!.headers['api-key'], undefined);
    });

    it('azure_foundry: the model inference API with the model in the body', async () => {
      const { ix } = await setup('azure_foundry', { apiKey: 'azure-key-1', default_model: 'Phi-4' });
      const r = await srv.api('POST', '/api/v1/runs', { interaction: ix, config: { max_tokens: 20 } });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const sent = wire.requests.at(-1)!;
      assert.equal(sent.path, '/models/chat/completions');
      assert.equal(sent.query['api-version'], '2024-05-01-preview');
      assert.equal(sent.body.model, 'Phi-4');
      assert.equal(sent.body.max_tokens, 20);
    });

    it('huggingface_ie: the OpenAI-compatible Messages API with a bearer token', async () => {
      wire.options.apiKey = 'hf_token';
      try {
        const { ix } = await setup('huggingface_ie', { apiKey: 'hf_token', default_model: 'tgi' });
        const r = await srv.api('POST', '/api/v1/runs', { interaction: ix });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.equal(wire.requests.at(-1)!.path, '/v1/chat/completions');
        assert.equal(wire.requests.at(-1)!.headers.authorization, 'Bearer hf_token');
      } finally {
        wire.options.apiKey = 'azure-key-1';
      }
    });

    it("translates errors with the provider's message, and retries a 429 after its retry-after", async () => {
      const bad = await setup('azure_openai', { apiKey: 'wrong-key', default_model: 'gpt-4o', config: { retries: 0 } });
      const auth = await srv.api('POST', '/api/v1/runs', { interaction: bad.ix });
      assert.equal(auth.status, 502);
      assert.equal(auth.body.error, 'provider_auth');
      assert.match(auth.body.message, /Azure OpenAI at http:\/\/127\.0\.0\.1:\d+ answered HTTP 401: Access denied/);
      const ok = await setup('azure_foundry', { apiKey: 'azure-key-1', default_model: 'Phi-4' });
      wire.options.fail = {
        status: 429,
        message: 'Requests to the ChatCompletions_Create Operation have exceeded rate limit',
        headers: { 'retry-after-ms': '120' },
        times: 1,
      };
      const limited = await srv.api('POST', '/api/v1/runs', { interaction: ok.ix });
      wire.options.fail = undefined;
      assert.equal(limited.status, 200, JSON.stringify(limited.body));
      assert.equal(limited.body.attempts[0].error.code, 'provider_rate_limited');
      assert.match(limited.body.attempts[0].error.message, /exceeded rate limit/);
      wire.options.fail = { status: 400, message: "Unsupported value: 'temperature'", code: 'unsupported_value' };
      const refused = await srv.api('POST', '/api/v1/runs', { interaction: ok.ix });
      wire.options.fail = undefined;
      assert.equal(refused.body.error, 'provider_bad_request');
      assert.match(refused.body.message, /Unsupported value/);
      const noEndpoint = await srv.api('POST', '/api/v1/environments', {
        name: 'no endpoint',
        provider: 'azure_openai',
        apiKey: 'k',
        default_model: 'x',
      });
      const ixNo = await srv.api('POST', '/api/v1/interactions', {
        name: `none ${++n}`,
        environment: noEndpoint.body.id,
        prompts: [{ type: 'template', template: { role: 'user', content_type: 'text', content: 'hi' } }],
      });
      const missing = await srv.api('POST', '/api/v1/runs', { interaction: ixNo.body.id });
      assert.equal(missing.body.error, 'provider_bad_request');
      assert.match(missing.body.message, /needs the resource's endpoint URL/);
    });
  });
}
