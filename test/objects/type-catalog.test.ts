/**
 * The official client's `types.find` and `types.catalog` (list, listStoredTypes, resolve): the
 * project's stored object types only, never another project's.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { secondProject } from './helpers.ts';

const status = (code: number) => (err: any) => err?.status === code;

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: types.find and the type catalog`, () => {
    let srv: TestServer;
    let other: { id: string; key: string };
    const ids: Record<string, string> = {};
    before(async () => {
      srv = await startTestServer(dialect);
      other = await secondProject(srv);
      const client = srv.client();
      for (const t of [
        {
          name: 'Invoice',
          tags: ['finance', 'doc'],
          object_schema: { type: 'object', properties: { total: { type: 'number' } } },
          table_layout: [{ field: 'properties.total', name: 'Total' }],
        },
        { name: 'Contract', tags: ['legal', 'doc'], description: 'A signed agreement' },
        { name: 'Receipt', tags: ['finance'], status: 'draft' },
      ])
        ids[t.name] = (await client.types.create(t as any)).id;
      await srv.client(other.key).types.create({ name: 'Invoice', tags: ['finance', 'secret'] } as any);
    });
    after(() => srv.close());

    it('finds types with a Mongo-style query, in name order, with select, limit and offset', async () => {
      const client = srv.client();
      const byName = await client.types.find({ query: { name: 'Invoice' } });
      assert.equal(byName.length, 1);
      assert.equal(byName[0].id, ids.Invoice);
      assert.deepEqual(byName[0].tags, ['finance', 'doc']);
      assert.deepEqual((byName[0] as any).table_layout, [{ field: 'properties.total', name: 'Total' }]);
      assert.deepEqual(
        (await client.types.find({ query: { tags: 'finance' } })).map((t) => t.name),
        ['Invoice', 'Receipt'],
      );
      assert.deepEqual(
        (await client.types.find({ query: { tags: { $in: ['legal', 'nothing'] } } })).map((t) => t.name),
        ['Contract'],
      );
      assert.deepEqual(
        (await client.types.find({ query: { status: 'draft' } })).map((t) => t.name),
        ['Receipt'],
      );
      assert.deepEqual(
        (await client.types.find({ query: {} })).map((t) => t.name),
        ['Contract', 'Invoice', 'Receipt'],
      );
      assert.deepEqual(
        (await client.types.find({ query: {}, limit: 1, offset: 1 })).map((t) => t.name),
        ['Invoice'],
      );
      const narrow = await client.types.find({ query: { name: 'Contract' }, select: 'name' });
      assert.deepEqual(narrow, [{ id: ids.Contract, name: 'Contract' }]);
      // The other project's Invoice (tagged secret) is never found here.
      assert.deepEqual(await client.types.find({ query: { tags: 'secret' } }), []);
      assert.equal((await srv.client(other.key).types.find({ query: {} })).length, 1);
    });

    it('refuses bad find requests with a 400 that says what to fix', async () => {
      for (const body of [
        { query: { nope: 1 } },
        { query: { name: { $bogus: 1 } } },
        { query: [] },
        { query: 'name' },
        { query: {}, limit: -1 },
        { query: {}, offset: 1e9 },
      ]) {
        const r = await srv.api('POST', '/api/v1/types/find', body);
        assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.status} ${JSON.stringify(r.body)}`);
        assert.equal(typeof r.body.message, 'string');
      }
      const unknown = await srv.api('POST', '/api/v1/types/find', { query: { nope: 1 } });
      assert.match(unknown.body.message, /nope/);
    });

    it('lists the catalog (all, by tag, with layout and schema on request) and resolves by id or name; another project is a 404', async () => {
      const client = srv.client();
      const all = await client.types.catalog.list();
      assert.deepEqual(
        all.map((t) => t.name),
        ['Contract', 'Invoice', 'Receipt'],
      );
      assert.equal((all.find((t) => t.name === 'Invoice') as any).table_layout, undefined);
      const full = await client.types.catalog.list({ tag: 'finance', layout: true, schema: true });
      assert.deepEqual(
        full.map((t) => t.name),
        ['Invoice', 'Receipt'],
      );
      assert.deepEqual((full[0] as any).object_schema, { type: 'object', properties: { total: { type: 'number' } } });
      assert.deepEqual((full[0] as any).table_layout, [{ field: 'properties.total', name: 'Total' }]);
      assert.deepEqual(
        (await client.types.catalog.list({ limit: 2, offset: 2 })).map((t) => t.name),
        ['Receipt'],
      );
      assert.deepEqual(
        (await client.types.catalog.listStoredTypes({ tag: 'legal' })).map((t) => t.name),
        ['Contract'],
      );
      const byId = await client.types.catalog.resolve(ids.Contract);
      assert.equal(byId.name, 'Contract');
      assert.equal(byId.description, 'A signed agreement');
      const byName = await client.types.catalog.resolve('Invoice');
      assert.equal(byName.id, ids.Invoice);
      assert.deepEqual((byName as any).table_layout, [{ field: 'properties.total', name: 'Total' }]);
      assert.equal((await client.types.catalog.resolve({ id: ids.Receipt, name: 'Receipt' } as any)).name, 'Receipt');
      await assert.rejects(client.types.catalog.resolve('Nothing'), status(404));
      const theirs = await srv.client(other.key).types.catalog.resolve('Invoice');
      assert.notEqual(theirs.id, ids.Invoice);
      await assert.rejects(client.types.catalog.resolve(theirs.id), status(404));
      await assert.rejects(srv.client(other.key).types.catalog.resolve(ids.Contract), status(404));
      assert.equal((await srv.api('GET', '/api/v1/types/catalog?limit=x')).status, 400);
      assert.equal((await srv.api('GET', '/api/v1/types/catalog?layout=maybe')).status, 400);
    });
  });
}
