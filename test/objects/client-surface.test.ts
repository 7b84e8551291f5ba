/** The rest of the client's objects API: computeFacets, bulk delete/update/create (POST /operations). */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { secondProject, upload } from './helpers.ts';

const status = (code: number) => (err: any) => {
  assert.equal(err.status, code, `expected ${code}, got ${err.status}: ${err.message}`);
  return true;
};

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: the client's computeFacets and bulk operations`, () => {
    let srv: TestServer;
    let other: { id: string; key: string };
    let otherId: string;
    const post = (body: unknown) =>
      srv.api('POST', '/api/v1/objects', body).then((r) => {
        if (r.status !== 200) throw new Error(JSON.stringify(r.body));
        return r.body;
      });

    before(async () => {
      srv = await startTestServer(dialect);
      other = await secondProject(srv);
      otherId = (
        await srv.api(
          'POST',
          '/api/v1/objects',
          { name: 'Elsewhere', location: '/facets', tags: ['a'], properties: { color: 'red' } },
          other.key,
        )
      ).body.id;
    });
    after(() => srv.close());

    it('computeFacets counts the matching objects per facet, with total', async () => {
      await post({ name: 'F1', location: '/facets', tags: ['a', 'b'], properties: { color: 'red' } });
      await post({ name: 'F2', location: '/facets', tags: ['a'], properties: { color: 'red' } });
      await post({ name: 'F3', location: '/facets', tags: [], properties: { color: 'blue' } });
      await post({ name: 'Not here', location: '/elsewhere', tags: ['a'], properties: { color: 'red' } });
      const client = srv.client();
      const r: any = await client.objects.computeFacets({
        facets: [
          { name: 'colors', field: 'properties.color' },
          { name: 'tags', field: 'tags' },
          { name: 'where', field: 'location' },
        ],
        query: { location: '/facets' },
      } as any);
      assert.equal(r.total, 3, 'the other project and the other location are not counted');
      assert.deepEqual(r.colors, [
        { _id: 'red', count: 2 },
        { _id: 'blue', count: 1 },
      ]);
      assert.deepEqual(r.tags, [
        { _id: 'a', count: 2 },
        { _id: 'b', count: 1 },
      ]);
      assert.deepEqual(r.where, [{ _id: '/facets', count: 3 }]);
      assert.equal(r.results, undefined, 'facets only, no results');
      const all: any = await client.objects.computeFacets({
        facets: [{ name: 'colors', field: 'properties.color' }],
      } as any);
      assert.equal(all.total, 4);
      assert.deepEqual(all.colors, [
        { _id: 'red', count: 3 },
        { _id: 'blue', count: 1 },
      ]);
      const named: any = await client.objects.computeFacets({
        facets: [{ name: 'n', field: 'name' }],
        query: { name: 'f', location: '/facets' },
      } as any);
      assert.equal(named.total, 3);
      // A facet named like a prototype key is a data key of the answer, nothing more.
      const proto = await srv.api('POST', '/api/v1/objects/facets', {
        facets: [{ name: '__proto__', field: 'properties.color' }],
      });
      assert.equal(proto.status, 200, JSON.stringify(proto.body));
      assert.ok(Object.hasOwn(proto.body, '__proto__'), JSON.stringify(proto.body));
      assert.deepEqual(proto.body['__proto__'], [
        { _id: 'red', count: 3 },
        { _id: 'blue', count: 1 },
      ]);
    });

    it('computeFacets refuses bad input with a 400 that says what to fix', async () => {
      const client = srv.client();
      await assert.rejects(client.objects.computeFacets({ facets: [] } as any), status(400));
      await assert.rejects(client.objects.computeFacets({} as any), status(400));
      await assert.rejects(
        client.objects.computeFacets({ facets: [{ name: 'total', field: 'status' }] } as any),
        (err: any) => status(400)(err) && /reserved/.test(err.message),
      );
      await assert.rejects(
        client.objects.computeFacets({ facets: [{ name: 'x', field: 'nope' }] } as any),
        (err: any) => status(400)(err) && /nope/.test(err.message),
      );
      await assert.rejects(
        client.objects.computeFacets({
          facets: Array.from({ length: 11 }, (_, i) => ({ name: `f${i}`, field: 'status' })),
        } as any),
        status(400),
      );
      const raw = await srv.api('POST', '/api/v1/objects/facets', {
        facets: [{ name: 'x', field: 'status' }],
        query: { vector: { text: 'x' } },
      });
      assert.equal(raw.status, 400);
      assert.match(raw.body.message, /vector/);
    });

    it('objects.delete([ids]) deletes in bulk and lists the ids it could not delete', async () => {
      const client = srv.client();
      const a = await post({ name: 'Bulk A', location: '/bulk-delete' });
      const b = await post({ name: 'Bulk B', location: '/bulk-delete' });
      const child = await post({ name: 'Child of A', location: '/bulk-delete', parent: a.id });
      const r: any = await client.objects.delete([a.id, b.id, 'nothing-here', otherId]);
      assert.deepEqual(r, { operation: 'delete', status: 'completed', deleted: 2, failed: ['nothing-here', otherId] });
      assert.equal((await srv.api('GET', `/api/v1/objects/${a.id}`)).status, 404);
      assert.equal((await srv.api('GET', `/api/v1/objects/${b.id}`)).status, 404);
      assert.equal(
        ((await client.objects.retrieve(child.id)) as any).parent ?? null,
        null,
        'children are detached, not deleted',
      );
      assert.equal(
        (await srv.api('GET', `/api/v1/objects/${otherId}`, undefined, other.key)).status,
        200,
        "another project's object is untouched",
      );
      const none: any = await client.objects.delete(['nothing-here']);
      assert.deepEqual(none, { operation: 'delete', status: 'failed', deleted: 0, failed: ['nothing-here'] });
    });

    it('bulkUpdate writes the valid payloads in one transaction and names the others', async () => {
      const client = srv.client();
      const a = await post({ name: 'Up A', location: '/bulk-update', properties: { n: 1 }, description: 'kept' });
      const b = await post({ name: 'Up B', location: '/bulk-update', properties: { n: 2 } });
      const r: any = await client.objects.bulkUpdate({
        [a.id]: { properties: { n: 10 }, tags: ['x'] },
        [b.id]: { name: 'Up B renamed' },
        'nothing-here': { name: 'ghost' },
        [otherId]: { name: 'stolen' },
      });
      assert.equal(r.operation, 'update');
      assert.equal(r.status, 'completed');
      assert.equal(r.updated, 2);
      assert.deepEqual([...r.failed].sort(), ['nothing-here', otherId].sort());
      const ra: any = await client.objects.retrieve(a.id);
      assert.deepEqual(ra.properties, { n: 10 });
      assert.deepEqual(ra.tags, ['x']);
      assert.equal(ra.description, 'kept', 'only the given fields change');
      assert.equal(((await client.objects.retrieve(b.id)) as any).name, 'Up B renamed');
      assert.equal((await srv.api('GET', `/api/v1/objects/${otherId}`, undefined, other.key)).body.name, 'Elsewhere');

      // With options the client wraps the map in {updates, ...options}.
      const wrapped: any = await client.objects.bulkUpdate({ [a.id]: { name: 'Up A wrapped' } }, {
        idempotency_key: 'k1',
      } as any);
      assert.deepEqual(wrapped, { operation: 'update', status: 'completed', updated: 1, failed: [] });
      assert.equal(((await client.objects.retrieve(a.id)) as any).name, 'Up A wrapped');

      // An invalid payload is left out; the valid ones are still written.
      const mixed: any = await client.objects.bulkUpdate({ [a.id]: { name: '' }, [b.id]: { status: 'bogus' } as any });
      assert.deepEqual(mixed, { operation: 'update', status: 'failed', updated: 0, failed: [a.id, b.id] });
      assert.equal(
        ((await client.objects.retrieve(a.id)) as any).name,
        'Up A wrapped',
        'a refused payload writes nothing',
      );
    });

    it('bulkCreate creates every valid object, with a result per object', async () => {
      const client = srv.client();
      const r: any = await client.objects.bulkCreate([
        { name: 'Made 1', location: '/bulk-create', external_id: 'e1', properties: { i: 1 } },
        { location: '/bulk-create', external_id: 'e2' } as any,
        { name: 'Made 3', location: '/bulk-create', type: 'no-such-type' } as any,
        { name: 'Made 4', location: '/bulk-create', tags: ['t'] },
      ]);
      assert.equal(r.operation, 'create');
      assert.equal(r.status, 'completed');
      assert.equal(r.created, 2);
      assert.deepEqual(
        r.objects.map((o: any) => [o.index, o.external_id]),
        [
          [0, 'e1'],
          [3, undefined],
        ],
      );
      assert.deepEqual(
        r.failed.map((f: any) => [f.index, f.external_id]),
        [
          [1, 'e2'],
          [2, undefined],
        ],
      );
      assert.match(r.failed[0].error, /name/);
      assert.match(r.failed[1].error, /no-such-type/);
      const made: any = await client.objects.retrieve(r.objects[0].id);
      assert.equal(made.name, 'Made 1');
      assert.deepEqual(made.properties, { i: 1 });
      assert.deepEqual(made.revision, { root: made.id, head: true });
      const listed = (await srv.api('GET', '/api/v1/objects?location=/bulk-create')).body;
      assert.deepEqual(listed.map((o: any) => o.name).sort(), ['Made 1', 'Made 4']);
      assert.deepEqual(
        (await srv.api('GET', '/api/v1/objects?location=/bulk-create', undefined, other.key)).body,
        [],
        'nothing in the other project',
      );
      const bad: any = await client.objects.bulkCreate([{ id: 'x', name: 'With id' } as any]);
      assert.equal(bad.status, 'failed');
      assert.match(bad.failed[0].error, /id/);
    });

    it('bulkCreate and bulkUpdate adopt uploads like single writes; objects of a batch naming one upload share it', async () => {
      const client = srv.client();
      const up = await upload(srv, 'shared.txt', 'shared bytes', { type: 'text/plain' });
      const r: any = await client.objects.bulkCreate([
        { name: 'With file 1', location: '/bulk-content', content: { source: up.id } },
        { name: 'With file 2', location: '/bulk-content', content: { source: up.id } },
      ] as any);
      assert.equal(r.created, 2, JSON.stringify(r));
      const [one, two]: any[] = await Promise.all(r.objects.map((o: any) => client.objects.retrieve(o.id)));
      assert.notEqual(one.content.source, up.id, "the upload became the object's own");
      assert.equal(one.content.source, two.content.source);
      assert.equal(one.content.etag, up.etag);
      const up2 = await upload(srv, 'other.txt', 'other bytes', { type: 'text/plain' });
      const u: any = await client.objects.bulkUpdate({ [one.id]: { content: { source: up2.id } } } as any);
      assert.equal(u.updated, 1);
      const after: any = await client.objects.retrieve(one.id);
      assert.equal(after.content.etag, up2.etag);
      const src = await srv.api('GET', `/api/v1/objects/${two.id}/content-source`);
      assert.equal(src.body.etag, up.etag, 'the other object keeps the shared file');
      const gone: any = await client.objects.bulkCreate([
        { name: 'Bad file', content: { source: 'local://nope/x' } },
      ] as any);
      assert.equal(gone.status, 'failed');
      assert.match(gone.failed[0].error, /content.source/);
    });

    it('POST /operations refuses what it cannot do with a 400 that says what to fix', async () => {
      const op = (body: unknown) => srv.api('POST', '/api/v1/operations', body);
      const cases: [unknown, RegExp][] = [
        [{ name: 'start_workflow', ids: [], params: {} }, /not supported/],
        [{ name: 'create', ids: [], params: {} }, /params.objects/],
        [{ name: 'create', ids: [], params: { objects: [], collection_id: 'c' } }, /collection/],
        [{ name: 'create', ids: [], params: { objects: Array.from({ length: 1001 }, () => ({ name: 'x' })) } }, /1000/],
        [{ name: 'delete', ids: Array.from({ length: 1001 }, (_, i) => `id${i}`), params: {} }, /1000/],
        [
          {
            name: 'update',
            ids: [],
            params: Object.fromEntries(Array.from({ length: 1001 }, (_, i) => [`id${i}`, { name: 'x' }])),
          },
          /1000/,
        ],
        [{ name: 'delete' }, /ids/],
      ];
      for (const [body, message] of cases) {
        const r = await op(body);
        assert.equal(r.status, 400, JSON.stringify(r.body));
        assert.equal(r.body.error, 'bad_request');
        assert.match(r.body.message, message);
      }
      const empty = await op({ name: 'create', ids: [], params: { objects: [] } });
      assert.deepEqual(empty.body, { operation: 'create', status: 'completed', created: 0, objects: [], failed: [] });
    });
  });
}
