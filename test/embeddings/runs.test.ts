import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, seedEcho, startTestServer, type TestServer } from '../support/server.ts';
import { openStream } from '../support/sse.ts';
import { HashedNgramsEmbedder } from '../../src/embeddings/hashed-ngrams.ts';

const embedder = new HashedNgramsEmbedder();
const norm = (v: number[]) => Math.hypot(...v);
const close = (a: number[], b: ArrayLike<number>) =>
  a.length === b.length && a.every((x, i) => Math.abs(x - b[i]) < 1e-6);

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: input_embedding and result_embedding of runs`, () => {
    let srv: TestServer;
    let interaction: string;
    let project: string;

    const storedVectors = async (runId: string) => {
      const rows = await srv.orrery.database.db
        .selectFrom('vectors')
        .select(['type', 'model', 'dimensions'])
        .where('owner_kind', '=', 'run')
        .where('owner_id', '=', runId)
        .orderBy('type')
        .execute();
      return rows.map((r) => ({ ...r, dimensions: Number(r.dimensions) }));
    };

    before(async () => {
      srv = await startTestServer(dialect);
      interaction = (await seedEcho(srv)).interaction.id;
      project = srv.orrery.bootstrap.project.id;
    });
    after(() => srv.close());

    it('a blocking run answers the vectors of its prompt and result (built-in embedder, on by default), without storing them', async () => {
      const r = await srv.api('POST', '/api/v1/runs', {
        interaction,
        data: { text: 'the orbits of the outer planets' },
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const run = r.body;
      assert.equal(run.input_embedding.length, 384);
      assert.equal(run.result_embedding.length, 384);
      assert.ok(Math.abs(norm(run.input_embedding) - 1) < 1e-5);
      // The prompt is "Say: {{text}}"; the echo model answers the prompt's text back.
      assert.ok(close(run.input_embedding, embedder.embedNow('Say: the orbits of the outer planets')));
      assert.ok(close(run.result_embedding, embedder.embedNow(run.result[0].value)));
      // Answered, not stored: nothing reads them back (nor re-embeds runs when the model changes).
      assert.deepEqual(await storedVectors(run.id), []);
      // Only the creation answers them (the interface: "present in the response of a run creation").
      const again = await srv.api('GET', `/api/v1/runs/${run.id}`);
      assert.equal(again.body.input_embedding, undefined);
    });

    it('the official client receives them from execute', async () => {
      const run: any = await srv.client().interactions.execute(interaction, { data: { text: 'moons of Jupiter' } });
      assert.equal(run.input_embedding.length, 384);
      assert.equal(run.result_embedding.length, 384);
    });

    it('a streamed run has them on its final run (the close event), not on the created one', async () => {
      const created = await srv.api('POST', '/api/v1/runs', {
        interaction,
        data: { text: 'streamed words here' },
        stream: true,
      });
      assert.equal(created.status, 200);
      assert.equal(created.body.input_embedding, undefined);
      const s = await openStream(`${srv.url}/api/v1/runs/${created.body.id}/stream?access_token=${srv.adminKey}`);
      const events = await s.all();
      const closing = events.find((e) => e.event === 'close');
      assert.ok(closing, JSON.stringify(events));
      const final = JSON.parse(closing!.data);
      assert.equal(final.status, 'completed');
      assert.ok(close(final.input_embedding, embedder.embedNow('Say: streamed words here')));
      assert.equal(final.result_embedding.length, 384);
      assert.equal((await storedVectors(created.body.id)).length, 0);
    });

    it('the project setting runs: false turns them off, and true back on', async () => {
      const off = await srv.api('PUT', `/api/v1/projects/${project}`, { embeddings: { runs: false } });
      assert.equal(off.status, 200, JSON.stringify(off.body));
      assert.equal(off.body.settings.embeddings.runs, false);
      assert.equal(off.body.settings.embeddings.model, 'orrery-hashed-ngrams-384');
      const r = await srv.api('POST', '/api/v1/runs', { interaction, data: { text: 'no vectors please' } });
      assert.equal(r.status, 200);
      assert.equal(r.body.input_embedding, undefined);
      assert.equal(r.body.result_embedding, undefined);
      assert.deepEqual(await storedVectors(r.body.id), []);
      const on = await srv.api('PUT', `/api/v1/projects/${project}`, { embeddings: { runs: true } });
      assert.equal(on.body.settings.embeddings.runs, true);
      const r2 = await srv.api('POST', '/api/v1/runs', { interaction, data: { text: 'vectors again' } });
      assert.equal(r2.body.input_embedding.length, 384);
    });

    it('a failed run answers no vectors', async () => {
      const r = await srv.api('POST', '/api/v1/runs', { interaction, data: { text: 'x' }, config: { model: 'error' } });
      assert.notEqual(r.status, 200);
      assert.equal(r.body.input_embedding, undefined);
    });

    it('bad settings are refused with a clear 400 (or 404 for an unknown environment)', async () => {
      const bad = async (embeddings: unknown, status = 400) => {
        const r = await srv.api('PUT', `/api/v1/projects/${project}`, { embeddings });
        assert.equal(r.status, status, JSON.stringify(r.body));
        return r.body;
      };
      await bad({ runs: 'yes' });
      await bad({ colour: 'blue' });
      await bad({ model: 'text-embedding-3-small' });
      await bad({ environment: 'no-such-env', model: 'm' }, 404);
      const env = await srv.api('POST', '/api/v1/environments', {
        name: 'Chat only',
        provider: 'test',
        default_model: 'echo',
      });
      const msg = await bad({ environment: env.body.id, model: 'echo' });
      assert.match(msg.message, /no embeddings endpoint/);
      await bad({ environment: env.body.id });
    });
  });
}
