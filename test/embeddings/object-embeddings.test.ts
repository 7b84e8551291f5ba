/**
 * An object's `embeddings` field is the truth about its vectors: `select=+embeddings` reads the
 * vectors table (computed or caller-set), and a caller sets vectors with `embeddings` in a create
 * or update payload or `PUT /objects/:id/embeddings/:type`, which are then searched.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { processed, secondProject, upload } from '../objects/helpers.ts';
import { HashedNgramsEmbedder } from '../../src/embeddings/hashed-ngrams.ts';
import { upsertVectors } from '../../src/embeddings/store.ts';
import { sourceStamp } from '../../src/embeddings/sources.ts';
import { CORPUS, keysOf, seedCorpus, sleep, waitForEmbeddings } from './helpers.ts';

const MODEL = 'orrery-hashed-ngrams-384';
const embedder = new HashedNgramsEmbedder();
const vectorOf = (text: string) => Array.from(embedder.embedNow(text));
const textOf = (key: string) => CORPUS.find((d) => d.key === key)!.text;
const topicOf = (key: string) => CORPUS.find((d) => d.key === key)?.topic;

const cosine = (a: number[], b: number[]) => {
  let ab = 0;
  let aa = 0;
  let bb = 0;
  for (let i = 0; i < a.length; i++) {
    ab += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  return ab / Math.sqrt(aa * bb);
};
const norm = (a: number[]) => Math.sqrt(a.reduce((s, x) => s + x * x, 0));

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: the embeddings field of objects`, () => {
    let srv: TestServer;
    let ids: Record<string, string>;
    let keys: (items: Array<{ id?: string }>) => (string | undefined)[];
    /** Waits until no embedding or content work is queued or running. */
    const idle = () => waitForEmbeddings(srv, 0);
    const embeddingsOf = async (id: string) => {
      const r = await srv.api('GET', `/api/v1/objects/${id}?select=${encodeURIComponent('+embeddings')}`);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body.embeddings;
    };
    /** Polls until the object has a vector of this type: proof that its embed job ran. */
    const vectorAppears = async (id: string, type: string) => {
      const until = Date.now() + 10_000;
      for (;;) {
        const e = await embeddingsOf(id);
        if (e[type]) return e;
        if (Date.now() > until) throw new Error(`no ${type} vector: ${JSON.stringify(Object.keys(e))}`);
        await sleep(50);
      }
    };

    before(async () => {
      srv = await startTestServer(dialect);
      ids = await seedCorpus(srv);
      keys = keysOf(ids);
      await waitForEmbeddings(srv, CORPUS.length, 'properties');
    });
    after(() => srv.close());

    it("+embeddings answers the computed vectors (model, values of the model's dimensions, etag); hidden by default", async () => {
      const plain = await srv.api('GET', `/api/v1/objects/${ids.bread1}`);
      assert.equal(plain.body.embeddings, undefined, 'hidden unless selected');
      const e = await embeddingsOf(ids.bread1);
      assert.deepEqual(Object.keys(e), ['text', 'properties']);
      assert.equal(e.text.model, MODEL);
      assert.equal(e.text.values.length, 384);
      assert.ok(e.text.values.every((x: unknown) => typeof x === 'number'));
      assert.ok(cosine(e.text.values, vectorOf(textOf('bread1'))) > 0.99999, "the vector of the object's text");
      assert.ok(Math.abs(norm(e.text.values) - 1) < 1e-5, 'normalised');
      assert.equal(typeof e.text.etag, 'string');
      assert.ok(e.text.etag.length > 10);
      assert.equal(e.properties.model, MODEL);
      assert.equal(e.properties.values.length, 384);
      // Projections: only the field, or a path inside it.
      const only = (await srv.api('GET', `/api/v1/objects/${ids.bread1}?select=embeddings`)).body;
      assert.deepEqual(Object.keys(only).sort(), ['embeddings', 'id']);
      const model = (await srv.api('GET', `/api/v1/objects/${ids.bread1}?select=embeddings.text.model`)).body;
      assert.deepEqual(model, { id: ids.bread1, embeddings: { text: { model: MODEL } } });
      const dropped = (
        await srv.api('GET', `/api/v1/objects/${ids.bread1}?select=${encodeURIComponent('+embeddings -embeddings')}`)
      ).body;
      assert.equal(dropped.embeddings, undefined);
    });

    it("a file's text vector appears once content processing made the object ready", async () => {
      const words = 'Orbit notes: the giant planet Jupiter and its moons Io and Europa orbit in the solar system.';
      const up = await upload(srv, 'orbits.txt', words, { type: 'text/plain' });
      const created = await srv.api('POST', '/api/v1/objects', {
        name: 'orbits file',
        content: { source: up.id, type: 'text/plain', name: 'orbits.txt' },
      });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      assert.equal((await processed(srv, created.body.id, { timeoutMs: 20_000 })).status, 'ready');
      const e = await embeddingsOf(created.body.id);
      assert.equal(e.text.model, MODEL);
      assert.equal(e.text.values.length, 384);
      const text = (await srv.api('GET', `/api/v1/objects/${created.body.id}/text`)).body.text;
      assert.ok(cosine(e.text.values, vectorOf(text)) > 0.99999, 'the vector of the extracted text, not of the name');
      await srv.api('DELETE', `/api/v1/objects/${created.body.id}`);
    });

    it('lists, find, search and similarity results carry embeddings only when selected', async () => {
      const sel = encodeURIComponent('+embeddings');
      const list = await srv.api('GET', `/api/v1/objects?select=${sel}&limit=5`);
      assert.equal(list.status, 200);
      assert.equal(list.body.length, 5);
      for (const o of list.body) assert.equal(o.embeddings.text.values.length, 384, o.name);
      assert.ok((await srv.api('GET', '/api/v1/objects?limit=5')).body.every((o: any) => o.embeddings === undefined));
      const found = await srv.api('POST', '/api/v1/objects/find', {
        query: { name: 'space2' },
        select: 'name embeddings',
      });
      assert.equal(found.status, 200, JSON.stringify(found.body));
      assert.deepEqual(Object.keys(found.body[0]).sort(), ['embeddings', 'id', 'name']);
      assert.ok(cosine(found.body[0].embeddings.text.values, vectorOf(textOf('space2'))) > 0.99999);
      const searched = await srv.api('POST', '/api/v1/objects/search', {
        query: { location: '/finance' },
        select: '+embeddings',
        limit: 10,
      });
      assert.equal(searched.body.results.length, 3);
      for (const o of searched.body.results) assert.ok(o.embeddings.text && o.embeddings.properties);
      const similar = await srv.api('GET', `/api/v1/objects?similarTo=${ids.markets1}&limit=2&select=${sel}`);
      assert.equal(similar.body.length, 2);
      for (const o of similar.body) assert.equal(o.embeddings.text.model, MODEL);
    });

    it("PUT /objects/:id/embeddings/text stores the caller's vector: answered, searched, kept by the automatic embedder until the text changes", async () => {
      const created = await srv.api('POST', '/api/v1/objects', {
        name: 'caller vector',
        text: 'A note about sourdough bread, flour, water and the loaf.',
      });
      const id = created.body.id;
      await idle();
      // The caller says this object is about markets (scaled: stored normalised).
      const values = vectorOf(textOf('markets1')).map((x) => x * 3);
      const put = await srv.api('PUT', `/api/v1/objects/${id}/embeddings/text`, { values, etag: 'caller-etag-1' });
      assert.equal(put.status, 200, JSON.stringify(put.body));
      assert.deepEqual(Object.keys(put.body), ['text']);
      assert.equal(put.body.text.model, MODEL, "the project's model by default");
      assert.equal(put.body.text.etag, 'caller-etag-1');
      assert.ok(Math.abs(norm(put.body.text.values) - 1) < 1e-5, 'stored normalised');
      assert.ok(cosine(put.body.text.values, values) > 0.99999);
      assert.deepEqual(await embeddingsOf(id), { ...(await embeddingsOf(id)), text: put.body.text });

      // Searched: as the query of similarTo, and found by a vector near it.
      const similar = await srv.api('GET', `/api/v1/objects?similarTo=${id}&limit=3`);
      assert.deepEqual((keys(similar.body) as string[]).map(topicOf), ['markets', 'markets', 'markets']);
      const byValues = await srv.api('POST', '/api/v1/objects/search', {
        query: { vector: { values: vectorOf(textOf('markets1')), type: 'text' } },
        limit: 3,
      });
      assert.ok(
        byValues.body.results.some((o: any) => o.id === id),
        JSON.stringify(keys(byValues.body.results)),
      );
      const byText = await srv.api('POST', '/api/v1/objects/search', {
        query: { vector: { text: 'sourdough bread flour water loaf' } },
        limit: 6,
      });
      assert.ok(!byText.body.results.some((o: any) => o.id === id), 'its own words no longer describe it');

      // An update that queues the embed job without changing the text's source (name and
      // description, when there is text): the job embeds the new properties and keeps the text vector.
      assert.equal(
        (
          await srv.api('PUT', `/api/v1/objects/${id}`, {
            name: 'caller vector, renamed',
            description: 'same text',
            properties: { subject: 'notes' },
          })
        ).status,
        200,
      );
      const kept = await vectorAppears(id, 'properties');
      assert.equal(kept.text.etag, 'caller-etag-1');
      assert.deepEqual(kept.text.values, put.body.text.values);

      // A new text is a new source: the automatic embedder replaces the caller's vector.
      const newText = 'Telescopes follow the giant planet Saturn and its moon Titan.';
      assert.equal((await srv.api('PUT', `/api/v1/objects/${id}`, { text: newText })).status, 200);
      const until = Date.now() + 10_000;
      let e = await embeddingsOf(id);
      while (e.text.etag === 'caller-etag-1' && Date.now() < until) {
        await sleep(50);
        e = await embeddingsOf(id);
      }
      assert.notEqual(e.text.etag, 'caller-etag-1');
      assert.ok(cosine(e.text.values, vectorOf(newText)) > 0.99999);
      await srv.api('DELETE', `/api/v1/objects/${id}`);
    });

    it('embeddings in a create or update payload are stored, searched and answered; null gives the vector back to Orrery', async () => {
      const values = vectorOf(textOf('space2'));
      const created = await srv.api('POST', '/api/v1/objects', {
        name: 'payload vector',
        text: 'Stock markets and bond yields.',
        properties: { subject: 'stocks' },
        embeddings: { text: { model: MODEL, values, etag: 'from-create' } },
      });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      const id = created.body.id;
      assert.equal(created.body.embeddings, undefined, 'the write answers the record without hidden fields');
      const e = await vectorAppears(id, 'properties');
      assert.equal(e.text.etag, 'from-create');
      assert.ok(cosine(e.text.values, values) > 0.99999, 'not replaced by the embedding of its text');
      const found = await srv.api('POST', '/api/v1/objects/search', {
        query: { vector: { values, type: 'text' } },
        limit: 2,
      });
      assert.deepEqual(new Set(found.body.results.map((o: any) => o.id)), new Set([id, ids.space2]));

      // Update: a properties vector, with properties gone (an empty source: kept as well).
      const props = vectorOf('subject: baking\nlevel: intro');
      const updated = await srv.api('PUT', `/api/v1/objects/${id}`, {
        properties: null,
        embeddings: { properties: { values: props } },
      });
      assert.equal(updated.status, 200, JSON.stringify(updated.body));
      await idle();
      const both = await embeddingsOf(id);
      assert.ok(cosine(both.properties.values, props) > 0.99999);
      assert.equal(both.text.etag, 'from-create');
      const byProps = await srv.api('GET', `/api/v1/objects?similarTo=${id}&embeddingType=properties&limit=2`);
      assert.deepEqual(new Set(keys(byProps.body)), new Set(['bread1', 'bread1dup']));

      // null: forget the caller's text vector; Orrery embeds the text again.
      assert.equal((await srv.api('PUT', `/api/v1/objects/${id}`, { embeddings: { text: null } })).status, 200);
      const reset = await vectorAppears(id, 'text');
      assert.notEqual(reset.text.etag, 'from-create');
      assert.ok(cosine(reset.text.values, vectorOf('Stock markets and bond yields.')) > 0.99999);
      assert.ok(reset.properties, 'other types untouched');
      // embeddings: null forgets every type; properties has no source, so it is not computed again.
      assert.equal((await srv.api('PUT', `/api/v1/objects/${id}`, { embeddings: null })).status, 200);
      const cleared = await vectorAppears(id, 'text');
      await idle();
      assert.deepEqual(Object.keys(cleared), ['text']);
      await srv.api('DELETE', `/api/v1/objects/${id}`);
    });

    it('bad vectors are a 400 with the error shape, and nothing is written; unknown objects are a 404', async () => {
      const id = ids.bread2;
      const values = vectorOf('anything at all');
      const put = (body: unknown, type = 'text', obj = id, token?: string) =>
        srv.api('PUT', `/api/v1/objects/${obj}/embeddings/${type}`, body, token);
      const short = await put({ values: values.slice(0, 100) });
      assert.equal(short.status, 400);
      assert.equal(short.body.error, 'dimension_mismatch');
      assert.match(short.body.message, /100 dimensions.*384/);
      assert.deepEqual(short.body.details, { expected: 384, got: 100, model: MODEL });
      const colour = await put({ values }, 'colour');
      assert.equal(colour.status, 400);
      assert.match(colour.body.message, /text, image, properties/);
      const image = await put({ values }, 'image');
      assert.equal(image.status, 400);
      assert.match(image.body.message, /does not embed images/);
      for (const body of [
        { values: ['a', 'b'] },
        { values: [] },
        { values: 'x' },
        {},
        { values: new Array(384).fill(0) },
        { values, etag: 5 },
      ]) {
        const r = await put(body);
        assert.equal(r.status, 400, JSON.stringify(body).slice(0, 80));
        assert.equal(typeof r.body.message, 'string');
        assert.equal(r.body.status, 400);
      }
      const model = await put({ model: 'text-embedding-3-small', values });
      assert.equal(model.status, 400);
      assert.equal(model.body.error, 'model_mismatch');
      assert.match(model.body.message, new RegExp(MODEL));
      assert.equal((await put({ values }, 'text', 'no-such-object')).status, 404);
      assert.equal((await put({ values }, 'text', 'no-such-object')).body.error, 'not_found');
      const other = await secondProject(srv);
      assert.equal((await put({ values }, 'text', id, other.key)).status, 404, "another project's object");
      assert.equal(
        (await srv.api('GET', `/api/v1/objects/${id}?select=%2Bembeddings`, undefined, other.key)).status,
        404,
      );

      // In payloads: the create is refused whole, the update too.
      const before = await srv.api('POST', '/api/v1/objects/count', { query: {} });
      for (const embeddings of [
        { text: { values: values.slice(1) } },
        { colour: { values } },
        { image: { values } },
        { text: { values: [1, 'a'] } },
        'text',
      ]) {
        const r = await srv.api('POST', '/api/v1/objects', { name: 'refused', text: 'x', embeddings });
        assert.equal(r.status, 400, JSON.stringify(embeddings).slice(0, 60));
      }
      assert.deepEqual((await srv.api('POST', '/api/v1/objects/count', { query: {} })).body, before.body);
      const unchanged = await srv.api('PUT', `/api/v1/objects/${id}`, {
        name: 'renamed?',
        embeddings: { text: { values: values.slice(1) } },
      });
      assert.equal(unchanged.status, 400);
      assert.equal(unchanged.body.error, 'dimension_mismatch');
      assert.equal((await srv.api('GET', `/api/v1/objects/${id}`)).body.name, 'bread2');
      assert.ok(
        cosine((await embeddingsOf(id)).text.values, vectorOf(textOf('bread2'))) > 0.99999,
        'the stored vector is untouched',
      );
      assert.equal(
        (await srv.api('PUT', '/api/v1/objects/no-such-object', { embeddings: { text: { values } } })).status,
        404,
      );
      // The vectors are not a JSON document to query.
      assert.equal(
        (await srv.api('POST', '/api/v1/objects/find', { query: { 'embeddings.text.model': MODEL } })).status,
        400,
      );
    });

    it('the automatic embedder does not replace a vector the caller set for the same source, even when their writes race', async () => {
      const created = await srv.api('POST', '/api/v1/objects', { name: 'race', text: 'Investors and bond yields.' });
      const id = created.body.id;
      await vectorAppears(id, 'text');
      const values = vectorOf(textOf('bread3'));
      assert.equal(
        (await srv.api('PUT', `/api/v1/objects/${id}/embeddings/text`, { values, etag: 'mine' })).status,
        200,
      );
      // The object's own embed work ends first: a job still queued would heal the stale row below.
      await idle();
      const scope = { account: srv.orrery.bootstrap.account.id, project: srv.orrery.bootstrap.project.id };
      const stamp = sourceStamp({ name: 'race', text: 'Investors and bond yields.' }, 'text');
      const computed = {
        ownerKind: 'object' as const,
        ownerId: id,
        type: 'text' as const,
        model: MODEL,
        etag: stamp,
        vector: Float32Array.from(vectorOf('Investors and bond yields.')),
      };
      // What a job that read the stamps before the caller's write would write after it.
      const written = await upsertVectors(srv.orrery.database.db, scope, [computed], { keepSameSource: true });
      assert.deepEqual(written, [], "same model and source: the caller's row stays");
      assert.equal((await embeddingsOf(id)).text.etag, 'mine');
      // A computation for another source does replace it.
      const other = await upsertVectors(srv.orrery.database.db, scope, [{ ...computed, etag: 'another-source' }], {
        keepSameSource: true,
      });
      assert.equal(other.length, 1);
      assert.equal((await embeddingsOf(id)).text.etag, 'another-source');
      await srv.api('DELETE', `/api/v1/objects/${id}`);
    });

    it('the official client: objects.retrieve(id, "+embeddings") and objects.setEmbedding', async () => {
      const client = srv.client();
      const obj = await client.objects.create({
        name: 'client vector',
        text: 'Rye bread dough and a sourdough starter.',
      } as any);
      // The embed job is queued after the create answers: wait for its vector, not for an idle queue.
      await vectorAppears(obj.id, 'text');
      const got = await client.objects.retrieve(obj.id, '+embeddings');
      assert.equal(got.embeddings.text!.model, MODEL);
      assert.equal(got.embeddings.text!.values.length, 384);
      const values = vectorOf(textOf('space1'));
      const set = await client.objects.setEmbedding(obj.id, 'text' as any, {
        model: MODEL,
        values,
        etag: 'client-etag',
      });
      assert.equal((set as any).text.etag, 'client-etag');
      const again = await client.objects.retrieve(obj.id, '+embeddings');
      assert.equal(again.embeddings.text!.etag, 'client-etag');
      assert.ok(cosine(again.embeddings.text!.values, values) > 0.99999);
      const near = await client.objects.search({
        query: { vector: { values, config: { text: true } } } as any,
        limit: 3,
      });
      assert.ok(near.results.some((o) => o.id === obj.id));
      await assert.rejects(
        client.objects.setEmbedding(obj.id, 'text' as any, { model: MODEL, values: values.slice(3) }),
        (err: any) => err.status === 400,
      );
      await client.objects.delete(obj.id);
    });
  });
}
