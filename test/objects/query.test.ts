import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { secondProject } from './helpers.ts';

const status = (code: number) => (err: any) => {
  assert.equal(err.status, code, `expected ${code}, got ${err.status}: ${err.message}`);
  return true;
};

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: listing, find, count and search of objects`, () => {
    let srv: TestServer;
    let ids: Record<string, string>;
    let typeId: string;
    let folderId: string;
    let t0: string;
    let tMid: string;

    before(async () => {
      srv = await startTestServer(dialect);
      const api = (body: unknown) =>
        srv.api('POST', '/api/v1/objects', body).then((r) => {
          if (r.status !== 200) throw new Error(JSON.stringify(r.body));
          return r.body;
        });
      typeId = (await srv.api('POST', '/api/v1/types', { name: 'Report' })).body.id;
      t0 = new Date().toISOString();
      const folder = await api({ name: 'Folder', location: '/' });
      folderId = folder.id;
      ids = { folder: folder.id };
      ids.red = (
        await api({
          name: 'Red apple report',
          type: typeId,
          parent: folder.id,
          location: '/fruit',
          tags: ['fruit', 'red'],
          properties: { color: 'red', weight: 150, origin: { country: 'FR' }, sizes: [1, 2, 3] },
        })
      ).id;
      await new Promise((r) => setTimeout(r, 15));
      tMid = new Date().toISOString();
      ids.green = (
        await api({
          name: 'Green apple',
          type: typeId,
          parent: folder.id,
          location: '/fruit',
          tags: ['fruit'],
          properties: { color: 'green', weight: 120, origin: { country: 'IT' } },
          description: 'crisp and sour',
        })
      ).id;
      ids.banana = (
        await api({
          name: 'Banana',
          location: '/fruit',
          tags: ['fruit', 'yellow'],
          properties: { color: 'yellow', weight: 200 },
          text: 'potassium rich',
        })
      ).id;
      ids.car = (
        await api({
          name: 'Red car',
          location: '/vehicles',
          properties: { color: 'red', wheels: 4 },
          metadata: { type: 'document', page_count: 3 },
        })
      ).id;
      await srv.api('PUT', `/api/v1/objects/${ids.car}`, { status: 'archived' });
      const other = await secondProject(srv);
      await srv.api(
        'POST',
        '/api/v1/objects',
        { name: 'Red apple elsewhere', location: '/fruit', properties: { color: 'red' } },
        other.key,
      );
    });
    after(() => srv.close());

    const names = (items: any[]) => items.map((o) => o.name);

    it('lists newest updated first, with parent as {id, name}, a score of 1 and no root', async () => {
      const list = await srv.client().objects.list();
      assert.deepEqual(names(list), ['Red car', 'Banana', 'Green apple', 'Red apple report', 'Folder']);
      const red = list.find((o) => o.id === ids.red) as any;
      assert.deepEqual(red.parent, { id: folderId, name: 'Folder' });
      assert.equal(red.score, 1);
      assert.equal(red.root, undefined);
      assert.deepEqual(red.revision, { root: ids.red, head: true });
      assert.deepEqual(red.type, { id: typeId, name: 'Report', ref_type: 'stored' });
      assert.equal(red.text, undefined);
    });

    it('filters the list by every parameter of the interface and the client', async () => {
      const q = async (query: string) => names((await srv.api('GET', `/api/v1/objects?${query}`)).body);
      assert.deepEqual(await q('location=/fruit'), ['Banana', 'Green apple', 'Red apple report']);
      assert.deepEqual(await q('location=/'), ['Folder']);
      assert.deepEqual(
        await q('location=fruit/'),
        ['Banana', 'Green apple', 'Red apple report'],
        'normalised like stored locations',
      );
      assert.deepEqual(await q('status=archived'), ['Red car']);
      assert.deepEqual(await q('status=archived&status=created&location=/vehicles'), ['Red car']);
      assert.deepEqual(await q(`type=${typeId}`), ['Green apple', 'Red apple report']);
      assert.deepEqual(await q('type=Report'), ['Green apple', 'Red apple report'], 'a type name works too');
      assert.deepEqual(await q(`types=${typeId},nothing`), ['Green apple', 'Red apple report']);
      assert.deepEqual(await q(`parent=${folderId}`), ['Green apple', 'Red apple report']);
      assert.deepEqual(await q('name=APPLE'), ['Green apple', 'Red apple report'], 'name: case-insensitive part');
      assert.deepEqual(await q('name=100%25'), [], 'LIKE wildcards are literal');
      assert.deepEqual(await q(`ids=${ids.car}&ids=${ids.banana}`), ['Red car', 'Banana']);
      assert.deepEqual(await q(`id=${ids.car},${ids.folder}`), ['Red car', 'Folder']);
      assert.deepEqual(await q(`createdFrom=${encodeURIComponent(tMid)}&location=/fruit`), ['Banana', 'Green apple']);
      assert.deepEqual(await q(`createdTo=${encodeURIComponent(tMid)}&createdFrom=${encodeURIComponent(t0)}`), [
        'Red apple report',
        'Folder',
      ]);
      assert.deepEqual(await q(`updatedFrom=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`), []);
      assert.deepEqual(await q('limit=2'), ['Red car', 'Banana']);
      assert.deepEqual(await q('limit=2&offset=2'), ['Green apple', 'Red apple report']);
      const projected = (await srv.api('GET', `/api/v1/objects?select=name&location=/vehicles`)).body;
      assert.deepEqual(projected, [{ id: ids.car, name: 'Red car' }]);
      const client = srv.client();
      const viaClient = await client.objects.list({
        limit: 10,
        query: { location: '/fruit', types: [typeId], name: 'red' } as any,
      });
      assert.deepEqual(names(viaClient), ['Red apple report']);
      assert.equal((await srv.api('GET', '/api/v1/objects?status=bogus')).status, 400);
      assert.equal((await srv.api('GET', '/api/v1/objects?createdFrom=yesterday')).status, 400);
      // Similarity search is issue 7's (test/embeddings); here only: an unknown object is a 404.
      assert.equal((await srv.api('GET', '/api/v1/objects?similarTo=no-such-object')).status, 404);
    });

    it('finds with Mongo-style queries on columns and on properties.* and metadata.* paths', async () => {
      const client = srv.client();
      const find = async (query: Record<string, unknown>, more: Record<string, unknown> = {}) =>
        names(await client.objects.find({ query, ...more } as any));
      assert.deepEqual(await find({ 'properties.color': 'red' }), ['Red car', 'Red apple report']);
      assert.deepEqual(await find({ 'properties.weight': { $gt: 120, $lte: 200 } }), ['Banana', 'Red apple report']);
      assert.deepEqual(await find({ 'properties.color': { $in: ['green', 'yellow'] } }), ['Banana', 'Green apple']);
      assert.deepEqual(await find({ 'properties.color': { $nin: ['red'] }, location: '/fruit' }), [
        'Banana',
        'Green apple',
      ]);
      assert.deepEqual(await find({ 'properties.color': { $ne: 'red' }, name: { $regex: '^B' } }), ['Banana']);
      assert.deepEqual(await find({ 'properties.origin.country': 'FR' }), ['Red apple report']);
      assert.deepEqual(await find({ 'properties.wheels': { $exists: true } }), ['Red car']);
      assert.deepEqual(await find({ 'metadata.page_count': 3 }), ['Red car']);
      assert.deepEqual(await find({ tags: 'yellow' }), ['Banana']);
      assert.deepEqual(await find({ tags: { $all: ['fruit', 'red'] } }), ['Red apple report']);
      assert.deepEqual(await find({ 'properties.sizes': { $size: 3 } }), ['Red apple report']);
      assert.deepEqual(await find({ $or: [{ status: 'archived' }, { 'properties.weight': { $lt: 130 } }] }), [
        'Red car',
        'Green apple',
      ]);
      assert.deepEqual(await find({ 'properties.weight': { $not: { $gt: 130 } }, location: '/fruit' }), [
        'Green apple',
      ]);
      assert.deepEqual(await find({ $and: [{ type: typeId }, { parent: folderId }] }), [
        'Green apple',
        'Red apple report',
      ]);
      assert.deepEqual(await find({ name: { $regex: 'apple', $options: 'i' } }, { limit: 1, offset: 1 }), [
        'Red apple report',
      ]);
      assert.deepEqual(
        await client.objects.find({ query: { 'properties.color': 'red' }, select: 'name properties.color' } as any),
        [
          { id: ids.car, name: 'Red car', properties: { color: 'red' } },
          { id: ids.red, name: 'Red apple report', properties: { color: 'red' } },
        ] as any,
      );
      const full = await client.objects.find({ query: { 'content.source': null, text: 'potassium rich' } } as any);
      assert.deepEqual(names(full), ['Banana']);
      assert.equal((full[0] as any).root, ids.banana, 'find answers full records');
      assert.equal((full[0] as any).text, undefined);
      assert.deepEqual(await client.objects.count({ query: { 'properties.color': 'red' } } as any), { count: 2 });
      assert.deepEqual(await client.objects.count({ query: {} } as any), { count: 5 });
      assert.deepEqual(
        await client.objects.count({ query: { location: '/fruit', 'properties.weight': { $gte: 150 } } } as any),
        { count: 2 },
      );
    });

    it('refuses an unknown operator or field with 400', async () => {
      const client = srv.client();
      await assert.rejects(
        client.objects.find({ query: { 'properties.color': { $near: 'red' } } } as any),
        status(400),
      );
      for (const query of [
        { 'properties.x': { $where: 'this.a' } },
        { $expr: { $eq: [1, 1] } },
        { nonsense_field: 1 },
        { 'properties.a': { $gt: {} } },
      ]) {
        const r = await srv.api('POST', '/api/v1/objects/find', { query });
        assert.equal(r.status, 400, JSON.stringify(query));
        assert.equal(r.body.status, 400);
        assert.ok(r.body.message);
        const c = await srv.api('POST', '/api/v1/objects/count', { query });
        assert.equal(c.status, 400, `count ${JSON.stringify(query)}`);
      }
      assert.equal((await srv.api('POST', '/api/v1/objects/find', { query: [1] })).status, 400);
      assert.equal((await srv.api('POST', '/api/v1/objects/find', {})).status, 400, 'query is required');
    });

    it("never finds another project's objects", async () => {
      const all = await srv.api('POST', '/api/v1/objects/find', { query: { name: { $regex: 'elsewhere' } } });
      assert.deepEqual(all.body, []);
      assert.deepEqual(
        (await srv.api('POST', '/api/v1/objects/count', { query: { 'properties.color': 'red' } })).body,
        { count: 2 },
      );
    });

    it('searches with name, full_text, match, status, type and dates; answers {results, facets} with scores', async () => {
      const client = srv.client();
      const res = (await client.objects.search({
        query: { full_text: 'red' },
        facets: [
          { name: 'statuses', field: 'status' },
          { name: 'tags', field: 'tags' },
          { name: 'colors', field: 'properties.color' },
          { name: 'types', field: 'type' },
        ],
      } as any)) as any;
      // The name counts 3 per term, a property value 1.
      assert.deepEqual(
        res.results.map((o: any) => [o.name, o.score]),
        [
          ['Red car', 4],
          ['Red apple report', 4],
        ],
      );
      assert.deepEqual(res.results[1].parent, { id: folderId, name: 'Folder' });
      assert.equal(res.facets.total, 2);
      assert.deepEqual(res.facets.statuses, [
        { _id: 'archived', count: 1 },
        { _id: 'created', count: 1 },
      ]);
      assert.deepEqual(res.facets.tags, [
        { _id: 'fruit', count: 1 },
        { _id: 'red', count: 1 },
      ]);
      assert.deepEqual(res.facets.colors, [{ _id: 'red', count: 2 }]);
      assert.deepEqual(
        res.facets.types,
        [
          { _id: typeId, count: 1, name: 'Report' },
          { _id: null, count: 1 },
        ],
        'ties by value, null last',
      );

      const text = await client.objects.search({ query: { full_text: 'potassium' } } as any);
      assert.deepEqual(names(text.results), ['Banana'], 'full_text matches the extracted text');
      const desc = await client.objects.search({ query: { full_text: 'sour crisp' } } as any);
      assert.deepEqual(names(desc.results), ['Green apple'], 'all terms, in the description');
      const byName = await client.objects.search({ query: { name: 'apple', status: ['created'] } } as any);
      assert.deepEqual(names(byName.results), ['Green apple', 'Red apple report']);
      assert.equal(byName.facets.total, 2);
      const matched = await client.objects.search({
        query: { match: { 'properties.weight': { $gte: 150 } }, type: typeId },
      } as any);
      assert.deepEqual(names(matched.results), ['Red apple report']);
      const sorted = await client.objects.search({
        query: { location: '/fruit' },
        sort: [{ field: 'properties.weight', order: 'asc' }],
      } as any);
      assert.deepEqual(names(sorted.results), ['Green apple', 'Red apple report', 'Banana']);
      const byNameAsc = await client.objects.search({
        query: {},
        sort: [{ field: 'name', order: 'asc' }],
        limit: 2,
        offset: 1,
      } as any);
      assert.deepEqual(names(byNameAsc.results), ['Folder', 'Green apple']);
      assert.equal(byNameAsc.facets.total, 5);
      const dated = await client.objects.search({ query: { createdFrom: tMid, location: '/fruit' } } as any);
      assert.deepEqual(names(dated.results), ['Banana', 'Green apple']);
      const projected = await client.objects.search({ query: { full_text: 'banana' }, select: 'name' } as any);
      assert.deepEqual(projected.results, [{ id: ids.banana, name: 'Banana' }] as any);
      for (const bad of [
        { query: { match: { x: { $bogus: 1 } } } },
        { facets: [{ name: 'total', field: 'status' }] },
        { facets: [{ name: 'p', field: 'properties' }] },
        { sort: [{ field: 'nowhere' }] },
        { query: { vector: { values: [1, 2] } } }, // fewer dimensions than the project's model
      ]) {
        const r = await srv.api('POST', '/api/v1/objects/search', bad);
        assert.equal(r.status, 400, JSON.stringify(bad));
      }
    });
  });
}
