import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { secondProject } from './helpers.ts';

const status = (code: number) => (err: any) => {
  assert.equal(err.status, code, `expected ${code}, got ${err.status}: ${err.message}`);
  return true;
};

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: object types`, () => {
    let srv: TestServer;
    before(async () => {
      srv = await startTestServer(dialect);
    });
    after(() => srv.close());

    it('creates, retrieves, lists, updates and deletes types through the official client', async () => {
      const client = srv.client();
      const layout = [
        { field: 'properties.title', name: 'Title' },
        { field: 'status', name: 'Status', default: 'created' },
      ];
      const schema = { type: 'object', properties: { title: { type: 'string' } } };
      const t = await client.types.create({
        name: 'Article',
        description: 'news',
        tags: ['web'],
        table_layout: layout,
        object_schema: schema,
        is_chunkable: true,
      } as any);
      assert.equal(t.name, 'Article');
      assert.equal(t.edit_revision, 1);
      assert.deepEqual(t.table_layout, layout);
      assert.deepEqual(t.object_schema, schema);
      assert.equal(t.is_chunkable, true);
      assert.match(t.created_by, /^apikey:/);
      assert.deepEqual(await client.types.retrieve(t.id), t);
      assert.deepEqual(await client.types.getTypeByName('Article'), t);

      const listed = await client.types.list();
      const item = listed.find((x) => x.id === t.id)!;
      assert.equal(item.table_layout, undefined, 'layout only when asked');
      assert.equal(item.object_schema, undefined);
      const withLayout = await client.types.list({}, { layout: true, schema: true });
      assert.deepEqual(withLayout.find((x) => x.id === t.id)!.table_layout, layout);

      const updated = await client.types.update(t.id, {
        description: 'news articles',
        expected_edit_revision: 1,
      } as any);
      assert.equal(updated.description, 'news articles');
      assert.equal(updated.edit_revision, 2);
      assert.deepEqual(updated.table_layout, layout, 'untouched fields stay');
      await assert.rejects(
        client.types.update(t.id, { description: 'stale', expected_edit_revision: 1 } as any),
        status(409),
      );
      const cleared = await client.types.update(t.id, { table_layout: null } as any);
      assert.equal(cleared.table_layout, undefined);

      assert.deepEqual(await client.types.delete(t.id), { id: t.id });
      await assert.rejects(client.types.retrieve(t.id), status(404));
    });

    it('refuses duplicates, bad layouts, unknown ids and deleting a type in use', async () => {
      const first = await srv.api('POST', '/api/v1/types', { name: 'Unique' });
      assert.equal(first.status, 200);
      const dup = await srv.api('POST', '/api/v1/types', { name: 'Unique' });
      assert.equal(dup.status, 409);
      assert.equal(dup.body.error, 'conflict');
      const other = await srv.api('POST', '/api/v1/types', { name: 'Other' });
      assert.equal(
        (await srv.api('PUT', `/api/v1/types/${other.body.id}`, { name: 'Unique' })).status,
        409,
        'rename onto a taken name',
      );
      assert.equal((await srv.api('POST', '/api/v1/types', {})).status, 400);
      assert.equal((await srv.api('POST', '/api/v1/types', { name: 'L', table_layout: [{ field: 'x' }] })).status, 400);
      assert.equal((await srv.api('GET', '/api/v1/types/nope')).status, 404);
      assert.equal((await srv.api('PUT', '/api/v1/types/nope', { name: 'x' })).status, 404);
      assert.equal((await srv.api('DELETE', '/api/v1/types/nope')).status, 404);
      const obj = await srv.api('POST', '/api/v1/objects', { name: 'typed', type: first.body.id });
      const used = await srv.api('DELETE', `/api/v1/types/${first.body.id}`);
      assert.equal(used.status, 409);
      assert.match(used.body.message, /1 object/);
      await srv.api('PUT', `/api/v1/objects/${obj.body.id}`, { type: null });
      assert.equal((await srv.api('DELETE', `/api/v1/types/${first.body.id}`)).status, 200);
    });

    it("keeps types per project: another project's type is a 404, and its name is free", async () => {
      const mine = await srv.api('POST', '/api/v1/types', { name: 'Shared name' });
      const other = await secondProject(srv);
      assert.equal((await srv.api('GET', `/api/v1/types/${mine.body.id}`, undefined, other.key)).status, 404);
      assert.equal((await srv.api('DELETE', `/api/v1/types/${mine.body.id}`, undefined, other.key)).status, 404);
      assert.equal(
        (await srv.api('POST', '/api/v1/objects', { name: 'x', type: mine.body.id }, other.key)).status,
        404,
      );
      assert.equal((await srv.api('POST', '/api/v1/types', { name: 'Shared name' }, other.key)).status, 200);
      assert.equal((await srv.api('GET', '/api/v1/types', undefined, other.key)).body.length, 1);
    });
  });
}
