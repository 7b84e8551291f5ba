/**
 * Issue 15, model lists: GET /environments/:id/models asks the provider's API where it has a list
 * (`GET {base}/models` on the Chat Completions family, the v1 API on Azure OpenAI), keeps an
 * environment's enabled_models first, falls back to its default model where the provider cannot
 * list (Azure deployments), and answers a provider's refusal as a 502 with its message.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { ONE_DIALECT, startTestServer, type TestServer } from '../support/server.ts';
import { startOpenAIWireServer, type WireServer } from '../support/openai-wire-server.ts';

// One database (ONE_DIALECT): the wire protocol does not depend on the storage.
for (const dialect of ONE_DIALECT) {
  describe(`${dialect}: model lists from the provider`, () => {
    let srv: TestServer;
    let wire: WireServer;
    let n = 0;

    before(async () => {
      srv = await startTestServer(dialect);
      wire = await startOpenAIWireServer({ apiKey: 'sk-list', models: ['llama3.1:8b', 'qwen2.5:7b', 'mistral-nemo'] });
    });
    after(async () => {
      await srv.close();
      await wire.close();
    });

    const env = async (body: Record<string, unknown>) => {
      const e = await srv.api('POST', '/api/v1/environments', { name: `models ${++n}`, ...body });
      assert.equal(e.status, 200, JSON.stringify(e.body));
      return e.body.id as string;
    };

    it('lists what the server lists, sorted, with the key it was given, through HTTP and the official client', async () => {
      const id = await env({ provider: 'openai_compatible', endpoint_url: wire.url, apiKey: 'sk-list' });
      const from = wire.requests.length;
      const r = await srv.api('GET', `/api/v1/environments/${id}/models`);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.deepEqual(r.body, [
        { id: 'llama3.1:8b', name: 'llama3.1:8b' },
        { id: 'mistral-nemo', name: 'mistral-nemo' },
        { id: 'qwen2.5:7b', name: 'qwen2.5:7b' },
      ]);
      const sent = wire.requests[from];
      assert.equal(sent.method, 'GET');
      assert.equal(sent.path, '/v1/models');
      assert.equal(sent.headers.authorization, 'Bearer sk-list');
      const viaClient = await srv.client().environments.listModels(id);
      assert.deepEqual(
        viaClient.map((m: any) => m.id),
        ['llama3.1:8b', 'mistral-nemo', 'qwen2.5:7b'],
      );
    });

    it('keeps enabled_models first, and asks nothing of the provider then', async () => {
      const id = await env({
        provider: 'openai_compatible',
        endpoint_url: wire.url,
        apiKey: 'sk-list',
        enabled_models: ['only-this'],
      });
      const from = wire.requests.length;
      const r = await srv.api('GET', `/api/v1/environments/${id}/models`);
      assert.deepEqual(
        r.body.map((m: any) => m.id),
        ['only-this'],
      );
      assert.equal(wire.requests.length, from);
    });

    it("answers the provider's refusal as a 502 with its message, never a 500", async () => {
      const id = await env({ provider: 'openai_compatible', endpoint_url: wire.url, apiKey: 'sk-wrong' });
      const r = await srv.api('GET', `/api/v1/environments/${id}/models`);
      assert.equal(r.status, 502);
      assert.equal(r.body.error, 'provider_auth');
      assert.match(
        r.body.message,
        /could not list the models of environment "models \d+": OpenAI-compatible server at http:\/\/127\.0\.0\.1:\d+\/v1 answered HTTP 401: Incorrect API key/,
      );
      const gone = await env({ provider: 'openai_compatible', endpoint_url: 'http://127.0.0.1:9/v1' });
      const down = await srv.api('GET', `/api/v1/environments/${gone}/models`);
      assert.equal(down.status, 502);
      assert.equal(down.body.error, 'provider_unreachable');
    });

    it("Azure OpenAI lists on the v1 API; on deployment URLs the environment's default model stands", async () => {
      wire.options.apiKey = 'azure-key';
      try {
        const v1 = await env({
          provider: 'azure_openai',
          endpoint_url: wire.origin,
          apiKey: 'azure-key',
          config: { api_version: 'v1' },
        });
        const from = wire.requests.length;
        const listed = await srv.api('GET', `/api/v1/environments/${v1}/models`);
        assert.equal(listed.status, 200, JSON.stringify(listed.body));
        assert.equal(listed.body.length, 3);
        assert.equal(wire.requests[from].path, '/openai/v1/models');
        assert.equal(wire.requests[from].headers['api-key'], 'azure-key');
        const dated = await env({
          provider: 'azure_openai',
          endpoint_url: wire.origin,
          apiKey: 'azure-key',
          default_model: 'my-gpt4o-deployment',
        });
        const before = wire.requests.length;
        const fallback = await srv.api('GET', `/api/v1/environments/${dated}/models`);
        assert.deepEqual(fallback.body, [{ id: 'my-gpt4o-deployment', name: 'my-gpt4o-deployment' }]);
        assert.equal(wire.requests.length, before, 'no request for a list the dated API does not have');
      } finally {
        wire.options.apiKey = 'sk-list';
      }
    });
  });
}
