import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, seedEcho, startTestServer, type TestServer } from '../support/server.ts';
import { startOpenAIWireServer, wireEmbedding, type WireServer } from '../support/openai-wire-server.ts';
import { waitForEmbeddings } from './helpers.ts';

const MODEL = 'text-embedding-3-small';
const close = (a: number[], b: number[]) => a.length === b.length && a.every((x, i) => Math.abs(x - b[i]) < 1e-6);

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: an OpenAI-compatible embedding provider (local server speaking the wire)`, () => {
    let srv: TestServer;
    let wire: WireServer;
    let project: string;
    let envId: string;
    const ids: Record<string, string> = {};

    before(async () => {
      srv = await startTestServer(dialect);
      wire = await startOpenAIWireServer({ models: [MODEL, 'gpt-4o-mini'] });
      project = srv.orrery.bootstrap.project.id;
      for (const [k, text] of Object.entries({
        a: 'identical text about tides',
        b: 'identical text about tides',
        c: 'something else entirely',
      })) {
        ids[k] = (await srv.api('POST', '/api/v1/objects', { name: k, text })).body.id;
      }
      await waitForEmbeddings(srv, 3);
      envId = (
        await srv.api('POST', '/api/v1/environments', {
          name: 'Embeddings',
          provider: 'openai_compatible',
          endpoint_url: wire.url,
          apiKey: 'sk-test',
        })
      ).body.id;
    });
    after(async () => {
      await srv.close();
      await wire.close();
    });

    it('PUT /projects/:id {embeddings} checks the environment with one call and records model and dimensions', async () => {
      const r = await srv.api('PUT', `/api/v1/projects/${project}`, {
        embeddings: { environment: envId, model: MODEL },
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.deepEqual(r.body.settings.embeddings, { environment: envId, model: MODEL, dimensions: 1536, runs: true });
      const probe = wire.requests.find((q) => q.path === '/v1/embeddings')!;
      assert.equal(probe.body.model, MODEL);
      assert.equal(probe.headers.authorization, 'Bearer sk-test');
      assert.equal((await srv.api('GET', `/api/v1/projects/${project}`)).body.settings.embeddings.model, MODEL);
    });

    it('changing the model re-embeds the existing objects in the background', async () => {
      const status = await waitForEmbeddings(srv, 3, 'text', undefined, MODEL);
      assert.equal(status.dimensions, 1536);
      assert.ok(status.embeddingsModels.includes(MODEL));
      const rows = await srv.orrery.database.db
        .selectFrom('vectors')
        .select(['owner_id', 'model', 'dimensions'])
        .where('owner_kind', '=', 'object')
        .where('type', '=', 'text')
        .execute();
      assert.equal(rows.length, 3);
      assert.ok(rows.every((r) => r.model === MODEL && Number(r.dimensions) === 1536));
      // The wire server's vectors are hashes of the text: identical texts are the only close pair.
      const similar = await srv.api('GET', `/api/v1/objects?similarTo=${ids.a}&limit=1`);
      assert.equal(similar.status, 200);
      assert.equal(similar.body[0].id, ids.b);
      assert.ok(similar.body[0].score > 0.9999);
    });

    it('vector queries use the provider: text is embedded by it, values must have its dimensions', async () => {
      const byText = await srv.api('POST', '/api/v1/objects/search', {
        query: { vector: { text: 'something else entirely' } },
        limit: 1,
      });
      assert.equal(byText.status, 200, JSON.stringify(byText.body));
      assert.equal(byText.body.results[0].id, ids.c);
      const values = wireEmbedding('identical text about tides', 1536);
      const byValues = await srv.api('POST', '/api/v1/objects/search', { query: { vector: { values } }, limit: 2 });
      assert.deepEqual(new Set(byValues.body.results.map((o: any) => o.id)), new Set([ids.a, ids.b]));
      const mismatch = await srv.api('POST', '/api/v1/objects/search', {
        query: { vector: { values: values.slice(0, 384) } },
      });
      assert.equal(mismatch.status, 400);
      assert.equal(mismatch.body.error, 'dimension_mismatch');
    });

    it("runs get the provider's vectors of their prompt and result", async () => {
      const { interaction } = await seedEcho(srv, { name: 'Echo for embeddings' });
      const r = await srv.api('POST', '/api/v1/runs', { interaction: interaction.id, data: { text: 'high tide' } });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.input_embedding.length, 1536);
      assert.ok(close(r.body.input_embedding, wireEmbedding('Say: high tide', 1536)));
      assert.ok(close(r.body.result_embedding, wireEmbedding(r.body.result[0].value, 1536)));
    });

    it('provider failures: refused configuration is a 400, an unreachable server a 502, a failing search a 502', async () => {
      const put = (embeddings: unknown) => srv.api('PUT', `/api/v1/projects/${project}`, { embeddings });
      const unknownModel = await put({ environment: envId, model: 'no-such-model' });
      assert.equal(unknownModel.status, 400, JSON.stringify(unknownModel.body));
      assert.match(unknownModel.body.message, /does not exist/);
      const badKeyEnv = (
        await srv.api('POST', '/api/v1/environments', {
          name: 'Bad key',
          provider: 'openai_compatible',
          endpoint_url: wire.url,
          apiKey: 'sk-wrong',
        })
      ).body.id;
      const badKey = await put({ environment: badKeyEnv, model: MODEL });
      assert.equal(badKey.status, 400);
      assert.equal(badKey.body.error, 'provider_auth');
      const downEnv = (
        await srv.api('POST', '/api/v1/environments', {
          name: 'Down',
          provider: 'openai_compatible',
          endpoint_url: 'http://127.0.0.1:9/v1',
        })
      ).body.id;
      const down = await put({ environment: downEnv, model: MODEL });
      assert.equal(down.status, 502);
      assert.equal(down.body.error, 'provider_unreachable');
      // The refused changes left the working settings alone.
      assert.equal((await srv.api('GET', `/api/v1/projects/${project}`)).body.settings.embeddings.environment, envId);
      wire.options.fail = { status: 500, message: 'upstream exploded' };
      try {
        const failing = await srv.api('POST', '/api/v1/objects/search', { query: { vector: { text: 'tides' } } });
        assert.equal(failing.status, 502, JSON.stringify(failing.body));
        assert.match(failing.body.message, /upstream exploded/);
      } finally {
        wire.options.fail = undefined;
      }
    });

    it('embeddings: null goes back to the built-in embedder (and re-embeds)', async () => {
      const r = await srv.api('PUT', `/api/v1/projects/${project}`, { embeddings: null });
      assert.equal(r.status, 200);
      assert.equal(r.body.settings.embeddings.model, 'orrery-hashed-ngrams-384');
      assert.equal(r.body.settings.embeddings.environment, null);
      await waitForEmbeddings(srv, 3, 'text', undefined, 'orrery-hashed-ngrams-384');
      const similar = await srv.api('GET', `/api/v1/objects?similarTo=${ids.a}&limit=1`);
      assert.equal(similar.body[0].id, ids.b);
    });
  });
}
