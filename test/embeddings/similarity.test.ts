import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { processed, secondProject, upload } from '../objects/helpers.ts';
import { HashedNgramsEmbedder } from '../../src/embeddings/hashed-ngrams.ts';
import { CORPUS, keysOf, seedCorpus, waitForEmbeddings } from './helpers.ts';

const topicOf = (key: string) => CORPUS.find((d) => d.key === key)!.topic;

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: similarity search of objects (built-in embedder)`, () => {
    let srv: TestServer;
    let ids: Record<string, string>;
    let keys: (items: Array<{ id?: string }>) => (string | undefined)[];

    before(async () => {
      srv = await startTestServer(dialect);
      ids = await seedCorpus(srv);
      keys = keysOf(ids);
    });
    after(() => srv.close());

    it('similarTo answers the near-duplicate first, then its topic group, with scores, without the object itself', async () => {
      for (const [k, dup] of [
        ['bread1', 'bread1dup'],
        ['markets1', 'markets1dup'],
        ['space1', 'space1dup'],
      ]) {
        const r = await srv.api('GET', `/api/v1/objects?similarTo=${ids[k]}&embeddingType=text&limit=3`);
        assert.equal(r.status, 200, JSON.stringify(r.body));
        const got = keys(r.body) as string[];
        assert.equal(got[0], dup, `${k}: ${got}`);
        assert.ok(!got.includes(k), 'the object itself is excluded');
        assert.deepEqual(got.map(topicOf), [topicOf(k), topicOf(k), topicOf(k)], `${k}: ${got}`);
        const scores = r.body.map((o: any) => o.score);
        assert.ok(
          scores.every((s: number) => typeof s === 'number' && s > 0 && s <= 1.000001),
          `scores ${scores}`,
        );
        assert.deepEqual(
          scores,
          [...scores].sort((a: number, b: number) => b - a),
          'best first',
        );
        assert.ok(scores[0] > 0.9, `a near-duplicate scores close to 1: ${scores[0]}`);
        assert.deepEqual(r.body[0].parent, undefined);
        assert.equal(r.body[0].root, undefined, 'list items have no root');
      }
    });

    it('embeddingType defaults to text; paging with offset continues the same order', async () => {
      const all = (await srv.api('GET', `/api/v1/objects?similarTo=${ids.bread2}&limit=11`)).body;
      assert.equal(all.length, CORPUS.length - 1);
      const page2 = (await srv.api('GET', `/api/v1/objects?similarTo=${ids.bread2}&limit=3&offset=3`)).body;
      assert.deepEqual(keys(page2), keys(all.slice(3, 6)));
    });

    it('the official client: objects.list with similarTo, and objects.search with a vector', async () => {
      const client = srv.client();
      const list = await client.objects.list({
        query: { similarTo: ids.markets2, embeddingType: 'text' } as any,
        limit: 3,
      });
      assert.deepEqual(
        keys(list).map((k) => topicOf(k!)),
        ['markets', 'markets', 'markets'],
      );
      const found = await client.objects.search({
        query: { vector: { objectId: ids.space2, config: { text: true } } },
        limit: 3,
      });
      assert.deepEqual(
        keys(found.results).map((k) => topicOf(k!)),
        ['space', 'space', 'space'],
      );
      assert.ok(typeof found.facets.total === 'number');
      const byText = await client.objects.search({
        query: { vector: { text: 'feed the sourdough starter, knead the dough' } },
        limit: 4,
      });
      assert.deepEqual(
        keys(byText.results).map((k) => topicOf(k!)),
        ['bread', 'bread', 'bread', 'bread'],
      );
    });

    it('a vector of values: the nearest object first; a wrong number of dimensions is a 400', async () => {
      const values = Array.from(new HashedNgramsEmbedder().embedNow(CORPUS.find((d) => d.key === 'markets3')!.text));
      const r = await srv.api('POST', '/api/v1/objects/search', {
        query: { vector: { values, type: 'text' } },
        limit: 1,
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.deepEqual(keys(r.body.results), ['markets3']);
      assert.ok(r.body.results[0].score > 0.999);
      const bad = await srv.api('POST', '/api/v1/objects/search', {
        query: { vector: { values: values.slice(0, 100) } },
      });
      assert.equal(bad.status, 400);
      assert.equal(bad.body.error, 'dimension_mismatch');
      assert.match(bad.body.message, /100 dimensions.*384/);
      const notNumbers = await srv.api('POST', '/api/v1/objects/search', { query: { vector: { values: ['a'] } } });
      assert.equal(notNumbers.status, 400);
    });

    it("unknown objects are a 404 (similarTo, vector.objectId, another project's object); bad types are a 400", async () => {
      assert.equal((await srv.api('GET', '/api/v1/objects?similarTo=does-not-exist')).status, 404);
      const r = await srv.api('POST', '/api/v1/objects/search', { query: { vector: { objectId: 'nope' } } });
      assert.equal(r.status, 404);
      assert.equal(r.body.error, 'not_found');
      const other = await secondProject(srv);
      assert.equal((await srv.api('GET', `/api/v1/objects?similarTo=${ids.bread1}`, undefined, other.key)).status, 404);
      assert.equal((await srv.api('GET', `/api/v1/objects?similarTo=${ids.bread1}&embeddingType=colour`)).status, 400);
      assert.equal(
        (await srv.api('GET', `/api/v1/objects?similarTo=${ids.bread1}&embeddingType=image`)).status,
        400,
        'the built-in model embeds no images',
      );
      assert.equal(
        (await srv.api('GET', '/api/v1/objects?embeddingType=text')).status,
        400,
        'embeddingType without similarTo',
      );
      assert.equal(
        (await srv.api('POST', '/api/v1/objects/search', { query: { vector: { objectId: ids.bread1, text: 'x' } } }))
          .status,
        400,
      );
      assert.equal(
        (
          await srv.api('POST', '/api/v1/objects/search', {
            query: { vector: { objectId: ids.bread1 }, score_aggregation: 'max' },
          })
        ).status,
        400,
      );
      assert.equal(
        (
          await srv.api('POST', '/api/v1/objects/search', {
            query: { vector: { objectId: ids.bread1 }, weights: { text: -1 } },
          })
        ).status,
        400,
      );
    });

    it('filters apply before the top k is cut: the only matches are far down the similarity order, and still answered', async () => {
      // From a bread document, the /finance objects are the least similar; with limit 2 and
      // post-filtering of the top 2 only, nothing would be left.
      const r = await srv.api('GET', `/api/v1/objects?similarTo=${ids.bread1}&location=/finance&limit=2`);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.length, 2);
      assert.ok(keys(r.body).every((k) => CORPUS.find((d) => d.key === k)!.location === '/finance'));
      const s = await srv.api('POST', '/api/v1/objects/search', {
        query: { vector: { objectId: ids.space1 }, location: '/archive', match: { 'properties.level': 'advanced' } },
        limit: 5,
      });
      assert.equal(s.status, 200, JSON.stringify(s.body));
      assert.deepEqual(new Set(keys(s.body.results)), new Set(['space3', 'markets3', 'bread3']));
      assert.equal(keys(s.body.results)[0], 'space3', 'the same topic ranks first among the filtered');
      assert.equal(s.body.facets.total, 3, 'total counts the objects matching the filters');
      const none = await srv.api('GET', `/api/v1/objects?similarTo=${ids.bread1}&location=/nowhere`);
      assert.deepEqual(none.body, []);
      // Similarity orders the results: a sort is refused by name, not ignored.
      const sorted = await srv.api('POST', '/api/v1/objects/search', {
        query: { vector: { objectId: ids.space1 } },
        sort: [{ field: 'name', order: 'asc' }],
      });
      assert.equal(sorted.status, 400, JSON.stringify(sorted.body));
      assert.match(sorted.body.message, /sort does not apply to a similarity search/);
    });

    it('vector + full text: both lists fused (rrf by default, rsf), weighted, with facets', async () => {
      const body = (extra: Record<string, unknown>) => ({
        query: { vector: { text: 'giant planet moons orbit' }, full_text: 'bond', ...extra },
        limit: 12,
        facets: [{ name: 'location', field: 'location' }],
      });
      const rrf = await srv.api('POST', '/api/v1/objects/search', body({}));
      assert.equal(rrf.status, 200, JSON.stringify(rrf.body));
      const got = keys(rrf.body.results) as string[];
      // Markets documents are in both lists (they hold "bond", and every object is somewhere in the
      // vector list), so they come first; then the best vector matches (space); bread last.
      assert.deepEqual(
        got.map(topicOf),
        [
          'markets',
          'markets',
          'markets',
          'markets',
          'space',
          'space',
          'space',
          'space',
          'bread',
          'bread',
          'bread',
          'bread',
        ],
        got.join(),
      );
      const scores = rrf.body.results.map((o: any) => o.score);
      assert.deepEqual(
        scores,
        [...scores].sort((a: number, b: number) => b - a),
      );
      assert.ok(scores[0] < 0.05, 'rrf scores are 1/(60 + rank) sums');
      assert.ok(Array.isArray(rrf.body.facets.location));
      assert.equal(rrf.body.facets.total, CORPUS.length);
      // Weighting full text away leaves the vector order; weighting the vector away, the text order.
      const vectorOnly = await srv.api('POST', '/api/v1/objects/search', body({ weights: { full_text: 0 } }));
      assert.deepEqual((keys(vectorOnly.body.results) as string[]).slice(0, 4).map(topicOf), [
        'space',
        'space',
        'space',
        'space',
      ]);
      const textOnly = await srv.api('POST', '/api/v1/objects/search', body({ weights: { text: 0 } }));
      assert.ok((keys(textOnly.body.results) as string[]).every((k) => topicOf(k) === 'markets'));
      const rsf = await srv.api('POST', '/api/v1/objects/search', body({ score_aggregation: 'rsf' }));
      assert.equal(rsf.status, 200);
      const rsfScores = rsf.body.results.map((o: any) => o.score);
      assert.ok(rsfScores[0] <= 1 && rsfScores[0] >= 0.5, `rsf scores are scaled to [0, 1]: ${rsfScores}`);
      assert.deepEqual(
        new Set(keys(rsf.body.results)),
        new Set(keys(rrf.body.results)),
        'the same union, ordered differently',
      );
    });

    it('properties embeddings: similarTo by properties groups objects with the same properties', async () => {
      await waitForEmbeddings(srv, CORPUS.length, 'properties');
      const r = await srv.api('GET', `/api/v1/objects?similarTo=${ids.bread1}&embeddingType=properties&limit=1`);
      assert.equal(r.status, 200);
      assert.deepEqual(keys(r.body), ['bread1dup'], 'identical properties {subject: baking, level: intro}');
      const both = await srv.api('POST', '/api/v1/objects/search', {
        query: { vector: { objectId: ids.markets1, config: { text: true, properties: true } } },
        limit: 1,
      });
      assert.deepEqual(keys(both.body.results), ['markets1dup']);
    });

    it('a changed text is embedded again; a deleted object leaves the results', async () => {
      const extra = await srv.api('POST', '/api/v1/objects', {
        name: 'late',
        text: 'Neptune is a giant planet of the solar system; its moon Triton orbits the planet.',
      });
      await waitForEmbeddings(srv, CORPUS.length + 1);
      const before = await srv.api('GET', `/api/v1/objects?similarTo=${extra.body.id}&limit=1`);
      assert.equal(topicOf(keys(before.body)[0]!), 'space');
      await srv.api('PUT', `/api/v1/objects/${extra.body.id}`, {
        text: 'Sourdough bread: feed the starter, knead the dough, bake the loaf.',
      });
      const until = Date.now() + 10_000;
      let first: string | undefined;
      while (Date.now() < until) {
        first = keys((await srv.api('GET', `/api/v1/objects?similarTo=${extra.body.id}&limit=1`)).body)[0];
        if (first && topicOf(first) === 'bread') break;
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.equal(topicOf(first!), 'bread');
      const fromBread = await srv.api('GET', `/api/v1/objects?similarTo=${ids.bread1dup}&limit=2`);
      assert.ok(fromBread.body.some((o: any) => o.id === extra.body.id));
      assert.equal((await srv.api('DELETE', `/api/v1/objects/${extra.body.id}`)).status, 200);
      const after = await srv.api('GET', `/api/v1/objects?similarTo=${ids.bread1dup}&limit=20`);
      assert.ok(!after.body.some((o: any) => o.id === extra.body.id));
    });

    it("a file's extracted text is embedded by content processing (its embeddings step) before the object is ready", async () => {
      const up = await upload(
        srv,
        'loaf.txt',
        'Sourdough loaf notes: feed the starter, knead the dough with flour and water, bake the bread hot.',
        { type: 'text/plain' },
      );
      const created = await srv.api('POST', '/api/v1/objects', {
        name: 'File without words in its name',
        content: { source: up.id, type: 'text/plain', name: 'loaf.txt' },
      });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      assert.equal((await processed(srv, created.body.id, { timeoutMs: 20_000 })).status, 'ready');
      const r = await srv.api('GET', `/api/v1/objects?similarTo=${created.body.id}&limit=3`);
      assert.deepEqual((keys(r.body) as string[]).map(topicOf), ['bread', 'bread', 'bread']);
      await srv.api('DELETE', `/api/v1/objects/${created.body.id}`);
    });

    it("the status of the project's embeddings names the built-in model", async () => {
      const s = await srv.client().store.embeddings.status('text' as any);
      assert.equal((s as any).model, 'orrery-hashed-ngrams-384');
      assert.equal((s as any).dimensions, 384);
      assert.ok(s.objectsWithEmbeddings! >= CORPUS.length);
      assert.equal(s.vectorIndex.status, 'READY');
    });
  });

  describe(`${dialect}: similarity through the HNSW index and the widening filter path`, () => {
    let srv: TestServer;
    let ids: Record<string, string>;
    let keys: (items: Array<{ id?: string }>) => (string | undefined)[];

    before(async () => {
      // A threshold of 4: the partition gets an HNSW graph (built in a worker), and any filter
      // matching more than 4 objects takes the widen-and-post-filter path.
      srv = await startTestServer(dialect, { vectorExactThreshold: 4 });
      ids = await seedCorpus(srv);
      keys = keysOf(ids);
      const until = Date.now() + 30_000;
      while ((await srv.api('GET', '/api/v1/embeddings/text/status')).body.vectorIndex.type !== 'usearch-hnsw') {
        if (Date.now() > until) throw new Error('the HNSW graph was not built');
        // A query loads the partition, which starts the build.
        await srv.api('GET', `/api/v1/objects?similarTo=${ids.bread1}&limit=1`);
        await new Promise((r) => setTimeout(r, 100));
      }
    });
    after(() => srv.close());

    it('answers the same neighbours from the graph', async () => {
      const r = await srv.api('GET', `/api/v1/objects?similarTo=${ids.markets1}&limit=3`);
      assert.deepEqual(keys(r.body), ['markets1dup', 'markets3', 'markets2']);
    });

    it('a broad filter (more matches than the exact limit) still answers the full filtered top k', async () => {
      // 9 objects are not in /archive: more than 4, so the graph is asked for more and more neighbours.
      const r = await srv.api('POST', '/api/v1/objects/search', {
        query: { vector: { objectId: ids.bread1 }, match: { location: { $ne: '/archive' } } },
        limit: 8,
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const got = keys(r.body.results) as string[];
      assert.equal(got.length, 8);
      assert.ok(got.every((k) => CORPUS.find((d) => d.key === k)!.location !== '/archive'));
      assert.deepEqual(got.slice(0, 2), ['bread1dup', 'bread2']);
      // A narrow one (3 matches) is scored exactly.
      const narrow = await srv.api('GET', `/api/v1/objects?similarTo=${ids.bread1}&location=/archive`);
      assert.equal(keys(narrow.body)[0], 'bread3');
      assert.deepEqual(new Set(keys(narrow.body)), new Set(['bread3', 'markets3', 'space3']));
    });

    it('new objects join the graph as they are embedded', async () => {
      const extra = await srv.api('POST', '/api/v1/objects', {
        name: 'x',
        text: 'Stock markets fell as bond yields rose; investors sold shares of banks and the index closed lower today.',
      });
      await waitForEmbeddings(srv, CORPUS.length + 1);
      const r = await srv.api('GET', `/api/v1/objects?similarTo=${ids.markets1}&limit=2`);
      assert.ok(
        r.body.some((o: any) => o.id === extra.body.id),
        JSON.stringify(keys(r.body)),
      );
    });
  });
}
