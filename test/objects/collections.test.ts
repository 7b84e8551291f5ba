/**
 * `store.collections` of the official client (issue 24): every method through the client against
 * a real server, and the bad paths over HTTP.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { secondProject } from './helpers.ts';
import { waitForEmbeddings } from '../embeddings/helpers.ts';

const status = (code: number, pattern?: RegExp) => (err: any) => {
  assert.equal(err.status, code, `expected ${code}, got ${err.status}: ${err.message}`);
  if (pattern) assert.match(err.message, pattern);
  return true;
};

const ids = (items: Array<{ id: string }>) => items.map((i) => i.id).sort();

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: store.collections`, () => {
    let srv: TestServer;
    let other: { id: string; key: string };
    let otherObject: string;
    const obj = async (body: Record<string, unknown>, key?: string) => {
      const r = await srv.api('POST', '/api/v1/objects', body, key);
      if (r.status !== 200) throw new Error(JSON.stringify(r.body));
      return r.body.id as string;
    };

    before(async () => {
      srv = await startTestServer(dialect);
      other = await secondProject(srv);
      otherObject = await obj({ name: 'Elsewhere', properties: { color: 'red' } }, other.key);
    });
    after(() => srv.close());

    it('create, retrieve, search, update and delete a static collection', async () => {
      const c = srv.client().store.collections;
      const type = await srv.api('POST', '/api/v1/types', { name: 'Invoice' });
      assert.equal(type.status, 200, JSON.stringify(type.body));
      const created: any = await c.create({
        name: 'Invoices 2026',
        dynamic: false,
        description: 'All of them',
        tags: ['finance', 'finance', 'q4'],
        type: 'Invoice',
        properties: { year: 2026 },
        table_layout: [{ field: 'name', name: 'Name' }],
      } as any);
      assert.equal(created.name, 'Invoices 2026');
      assert.equal(created.dynamic, false);
      assert.equal(created.status, 'active');
      assert.equal(created.skip_head_sync, false);
      assert.deepEqual(created.tags, ['finance', 'q4']);
      assert.deepEqual(created.type, { id: type.body.id, name: 'Invoice', ref_type: 'stored' });
      assert.deepEqual(created.properties, { year: 2026 });
      assert.deepEqual(created.parents, []);
      assert.deepEqual(created.table_layout, [{ field: 'name', name: 'Name' }]);
      assert.match(created.created_by, /^apikey:/);
      assert.equal(created.query, undefined, 'a static collection has no query');

      const got: any = await c.retrieve(created.id);
      assert.deepEqual(got, created);

      const updated: any = await c.update(created.id, {
        name: 'Invoices',
        status: 'archived',
        description: null,
        properties: { year: 2025 },
      } as any);
      assert.equal(updated.id, created.id);
      assert.equal(updated.name, 'Invoices');
      assert.equal(updated.status, 'archived');
      assert.equal(updated.description, undefined);
      assert.deepEqual(updated.tags, ['finance', 'q4'], 'fields not given are kept');
      assert.deepEqual(updated.properties, { year: 2025 });
      assert.ok(updated.updated_at >= created.updated_at);

      const second: any = await c.create({ name: 'Contracts', dynamic: false });
      const all = await c.search({});
      assert.deepEqual(ids(all), [created.id, second.id].sort());
      assert.equal(all[0].id, second.id, 'newest updated_at first');
      assert.deepEqual(ids(await c.search({ name: 'voice' })), [created.id], 'name matches a part, any case');
      assert.deepEqual(ids(await c.search({ status: 'archived' } as any)), [created.id]);
      assert.deepEqual(ids(await c.search({ type: 'Invoice' })), [created.id], 'type by name');
      assert.deepEqual(ids(await c.search({ types: [type.body.id] })), [created.id], 'type by id');
      assert.deepEqual(ids(await c.search({ match: { 'properties.year': { $gte: 2025 } } } as any)), [created.id]);
      assert.deepEqual(ids(await c.search({ dynamic: true })), []);
      assert.equal((await c.search({ limit: 1 })).length, 1);
      assert.deepEqual(ids(await c.search({ limit: 1, offset: 1 })), [created.id]);

      const removed: any = await c.delete(second.id);
      assert.deepEqual(removed, { id: second.id, count: 1 });
      await assert.rejects(c.retrieve(second.id), status(404));
      await c.delete(created.id);
      assert.deepEqual(await c.search({}), []);
    });

    it('members: add, list, search, facets, remove; deleted objects leave the collection', async () => {
      const c = srv.client().store.collections;
      const a = await obj({ name: 'Alpha report', properties: { color: 'red' }, tags: ['x'] });
      const b = await obj({ name: 'Beta report', properties: { color: 'blue' } });
      const d = await obj({ name: 'Delta memo', properties: { color: 'red' } });
      const outside = await obj({ name: 'Outside report', properties: { color: 'red' } });
      const col: any = await c.create({ name: 'Reports', dynamic: false });

      assert.deepEqual(await c.addMembers(col.id, [a, b, a]), { id: col.id });
      assert.deepEqual(await c.addMembers(col.id, [d, b]), { id: col.id }, 'adding a member again changes nothing');
      const members = await c.listMembers(col.id, {});
      assert.deepEqual(ids(members), [a, b, d].sort());
      assert.equal(members[0].id, d, 'newest updated_at first');
      assert.equal((members[0] as any).score, 1);
      assert.deepEqual(ids(await c.listMembers(col.id, { limit: 2 })), [b, d].sort());
      assert.deepEqual(ids(await c.listMembers(col.id, { limit: 2, offset: 2 })), [a]);
      assert.deepEqual(ids(await c.listMembers(col.id, { status: 'created' as any })), [a, b, d].sort());
      assert.deepEqual(await c.listMembers(col.id, { status: 'ready' as any }), []);

      const found: any = await c.searchMembers(col.id, {
        query: { full_text: 'report' },
        facets: [{ name: 'color', field: 'properties.color' }],
      } as any);
      assert.deepEqual(ids(found.results), [a, b].sort(), 'the object outside the collection is not found');
      assert.equal(found.facets.total, 2);
      assert.deepEqual(found.facets.color, [
        { _id: 'blue', count: 1 },
        { _id: 'red', count: 1 },
      ]);
      const matched: any = await c.searchMembers(col.id, { query: { match: { 'properties.color': 'red' } } } as any);
      assert.deepEqual(ids(matched.results), [a, d].sort());

      const facets: any = await c.computeFacets(col.id, {
        facets: [{ name: 'color', field: 'properties.color' }],
      } as any);
      assert.equal(facets.total, 3, 'counts the members only');
      assert.deepEqual(facets.color, [
        { _id: 'red', count: 2 },
        { _id: 'blue', count: 1 },
      ]);

      assert.deepEqual(
        await c.deleteMembers(col.id, [b, outside]),
        { id: col.id },
        'removing a non-member is not an error',
      );
      assert.deepEqual(ids(await c.listMembers(col.id, {})), [a, d].sort());

      const del = await srv.api('DELETE', `/api/v1/objects/${a}`);
      assert.equal(del.status, 200);
      assert.deepEqual(ids(await c.listMembers(col.id, {})), [d]);
      const rows = await srv.orrery.database.db
        .selectFrom('collection_members')
        .select('object_id')
        .where('collection_id', '=', col.id)
        .execute();
      assert.deepEqual(
        rows.map((r) => r.object_id),
        [d],
        'the member row went with its object',
      );
      assert.equal(
        ((await c.computeFacets(col.id, { facets: [{ name: 's', field: 'status' }] } as any)) as any).total,
        1,
      );
      // The objects themselves are untouched by removing members or deleting the collection.
      await c.delete(col.id);
      assert.equal((await srv.api('GET', `/api/v1/objects/${d}`)).status, 200);
      assert.equal((await srv.api('GET', `/api/v1/objects/${b}`)).status, 200);
    });

    it('members follow their revisions (skip_head_sync false, the default) or stay pinned (true)', async () => {
      const c = srv.client().store.collections;
      const first = await obj({ name: 'Policy', properties: { v: 1 } });
      const synced: any = await c.create({ name: 'Synced', dynamic: false });
      const pinned: any = await c.create({ name: 'Pinned', dynamic: false, skip_head_sync: true });
      assert.equal(pinned.skip_head_sync, true);
      await c.addMembers(synced.id, [first]);
      await c.addMembers(pinned.id, [first]);
      const head: any = await srv
        .client()
        .objects.update(first, { properties: { v: 2 } } as any, { createRevision: true, revisionLabel: 'v2' });
      assert.notEqual(head.id, first, 'a revision is a new object');
      assert.deepEqual(ids(await c.listMembers(synced.id, {})), [head.id], "the head of the member's history");
      assert.deepEqual(ids(await c.listMembers(pinned.id, {})), [first], 'the very revision added');
      const searched: any = await c.searchMembers(synced.id, { query: { match: { 'properties.v': 2 } } } as any);
      assert.deepEqual(ids(searched.results), [head.id]);
      await c.deleteMembers(synced.id, [head.id]);
      assert.deepEqual(await c.listMembers(synced.id, {}), [], "removed by the head's id");
      await c.deleteMembers(pinned.id, [head.id]);
      assert.deepEqual(ids(await c.listMembers(pinned.id, {})), [first], 'pinned: only the exact id removes it');
      await c.deleteMembers(pinned.id, [first]);
      assert.deepEqual(await c.listMembers(pinned.id, {}), []);
      await c.delete(synced.id);
      await c.delete(pinned.id);
    });

    it('similarity search inside a collection finds members only', async () => {
      const c = srv.client().store.collections;
      const pie = await obj({ name: 'apple pie recipe', text: 'apple pie recipe, apple pie recipe' });
      const tart = await obj({ name: 'apple tart recipe', text: 'apple tart recipe, apple tart recipe' });
      const car = await obj({ name: 'car engine manual', text: 'car engine manual, car engine manual' });
      const col: any = await c.create({ name: 'Some texts', dynamic: false });
      await c.addMembers(col.id, [tart, car]);
      // Vectors are computed by queued jobs: search once none is left, or a slow job leaves an object out.
      await waitForEmbeddings(srv, 3);
      const r: any = await c.searchMembers(col.id, { query: { vector: { text: 'apple recipe' } }, limit: 10 } as any);
      assert.deepEqual(
        ids(r.results),
        [tart, car].sort(),
        'the most similar object outside the collection is not found',
      );
      assert.equal(r.results[0].id, tart, 'most similar first');
      assert.ok(r.results[0].score > r.results[1].score);
      assert.equal(r.facets.total, 2);
      assert.ok(!ids(r.results).includes(pie));
      await c.delete(col.id);
    });

    it('dynamic collections: members are the objects matching the query, and follow the objects', async () => {
      const c = srv.client().store.collections;
      const red = await obj({ name: 'Red one', properties: { color: 'red', shade: 3 } });
      const blue = await obj({ name: 'Blue one', properties: { color: 'blue', shade: 1 } });
      const col: any = await c.create({ name: 'Red things', dynamic: true, query: { 'properties.color': 'red' } });
      assert.equal(col.dynamic, true);
      assert.deepEqual(col.query, { 'properties.color': 'red' });
      assert.ok(ids(await c.listMembers(col.id, {})).includes(red));
      assert.ok(!ids(await c.listMembers(col.id, {})).includes(blue));
      assert.ok(
        !ids(await c.listMembers(col.id, { limit: 1000 })).includes(otherObject),
        "never another project's objects",
      );

      // The blue object turns red: it is a member now; the red one turns green: it is not.
      await srv.client().objects.update(blue, { properties: { color: 'red', shade: 1 } } as any);
      await srv.client().objects.update(red, { properties: { color: 'green', shade: 3 } } as any);
      const now = ids(await c.listMembers(col.id, { limit: 1000 }));
      assert.ok(now.includes(blue), 'the object that became red is a member');
      assert.ok(!now.includes(red), 'the object that is no longer red is not');
      const searched: any = await c.searchMembers(col.id, { query: { name: 'one' } } as any);
      assert.deepEqual(ids(searched.results), [blue]);

      await assert.rejects(c.addMembers(col.id, [red]), status(400, /dynamic/));
      await assert.rejects(c.deleteMembers(col.id, [blue]), status(400, /dynamic/));

      // A new query changes the members at once.
      const changed: any = await c.update(col.id, { query: { 'properties.shade': { $gte: 3 } } });
      assert.deepEqual(changed.query, { 'properties.shade': { $gte: 3 } });
      assert.deepEqual(ids(await c.listMembers(col.id, { limit: 1000 })), [red]);
      assert.deepEqual(ids(await c.search({ dynamic: true })), [col.id]);

      // Turning it static: no members until some are added; and back again uses the query.
      const asStatic: any = await c.update(col.id, { dynamic: false });
      assert.equal(asStatic.dynamic, false);
      assert.equal(asStatic.query, undefined);
      assert.deepEqual(await c.listMembers(col.id, {}), []);
      await c.addMembers(col.id, [blue]);
      assert.deepEqual(ids(await c.listMembers(col.id, {})), [blue]);
      await c.update(col.id, { dynamic: true, query: { 'properties.color': 'green' } });
      assert.deepEqual(
        ids(await c.listMembers(col.id, { limit: 1000 })),
        [red],
        'explicit members are dropped when it turns dynamic',
      );
      await c.update(col.id, { dynamic: false });
      assert.deepEqual(await c.listMembers(col.id, {}), [], 'the old rows did not come back');
      await c.delete(col.id);
    });

    it('objects.getCollections answers the static and dynamic collections that list an object', async () => {
      const c = srv.client().store.collections;
      const o = await obj({ name: 'Member everywhere', properties: { tier: 'gold' } });
      const plain = await obj({ name: 'Member nowhere', properties: { tier: 'tin' } });
      const stat: any = await c.create({ name: 'Static holder', dynamic: false });
      const pinned: any = await c.create({ name: 'Pinned holder', dynamic: false, skip_head_sync: true });
      const dyn: any = await c.create({ name: 'Gold things', dynamic: true, query: { 'properties.tier': 'gold' } });
      const other: any = await c.create({ name: 'Unrelated', dynamic: true, query: { 'properties.tier': 'silver' } });
      await c.addMembers(stat.id, [o]);
      await c.addMembers(pinned.id, [o]);
      const holders = async (id: string) =>
        ((await srv.client().objects.getCollections(id)) as any[]).map((x) => x.id).sort();
      assert.deepEqual(await holders(o), [stat.id, pinned.id, dyn.id].sort());
      assert.deepEqual(await holders(plain), []);
      assert.ok(!(await holders(o)).includes(other.id));
      // After a revision the head is listed by the synced and dynamic collections; the pinned one keeps the old revision.
      const head: any = await srv
        .client()
        .objects.update(o, { description: 'revised' } as any, { createRevision: true });
      assert.deepEqual(await holders(head.id), [stat.id, dyn.id].sort());
      assert.deepEqual(await holders(o), [pinned.id]);
      const missing = await srv.api('GET', '/api/v1/objects/no-such-object/collections');
      assert.equal(missing.status, 404);
      for (const id of [stat.id, pinned.id, dyn.id, other.id]) await c.delete(id);
    });

    it('children: nest, list, un-nest, no loops; facets over collections', async () => {
      const c = srv.client().store.collections;
      const top: any = await c.create({ name: 'Top', dynamic: false });
      const mid: any = await c.create({ name: 'Mid', dynamic: false, parent: top.id });
      const leaf: any = await c.create({ name: 'Leaf', dynamic: true, query: {} });
      assert.deepEqual(mid.parents, [top.id]);
      assert.deepEqual(await c.addChildren(mid.id, [leaf.id]), { count: 1 });
      assert.deepEqual(await c.addChildren(mid.id, [leaf.id]), { count: 0 }, 'already there');
      assert.deepEqual(await c.addChildren(top.id, [leaf.id]), { count: 1 }, 'a collection may have several parents');
      assert.deepEqual(((await c.retrieve(leaf.id)) as any).parents.sort(), [top.id, mid.id].sort());
      assert.deepEqual(ids(await c.searchChildren(top.id)), [mid.id, leaf.id].sort());
      assert.deepEqual(ids(await c.searchChildren(top.id, { dynamic: true })), [leaf.id]);
      assert.deepEqual(ids(await c.searchChildren(mid.id)), [leaf.id]);
      assert.deepEqual(ids(await c.search({ parent: null })), [top.id], 'top level only');
      assert.deepEqual(ids(await c.search({ parent: mid.id })), [leaf.id]);

      await assert.rejects(c.addChildren(leaf.id, [top.id]), status(400, /above/));
      await assert.rejects(c.addChildren(mid.id, [mid.id]), status(400, /itself/));
      await assert.rejects(c.update(top.id, { parent: leaf.id }), status(400, /above/));

      const facets: any = await c.computeListFacets({
        facets: [
          { name: 'kind', field: 'dynamic' },
          { name: 'status', field: 'status' },
        ],
      });
      assert.equal(facets.total, 3);
      assert.deepEqual(facets.kind, [
        { _id: false, count: 2 },
        { _id: true, count: 1 },
      ]);
      assert.deepEqual(facets.status, [{ _id: 'active', count: 3 }]);
      const under: any = await c.computeListFacets({
        facets: [{ name: 'kind', field: 'dynamic' }],
        query: { parent: top.id },
      });
      assert.equal(under.total, 2);

      assert.deepEqual(await c.deleteChildren(top.id, [leaf.id, mid.id]), { count: 2 });
      assert.deepEqual(await c.searchChildren(top.id), []);
      // Moving with update: parent replaces the parents.
      const moved: any = await c.update(leaf.id, { parent: top.id });
      assert.deepEqual(moved.parents, [top.id]);
      const unparented: any = await c.update(leaf.id, { parent: null });
      assert.deepEqual(unparented.parents, []);
      // Deleting a parent leaves its children, without that parent.
      await c.addChildren(top.id, [mid.id]);
      await c.delete(top.id);
      assert.deepEqual(((await c.retrieve(mid.id)) as any).parents, []);
      await c.delete(mid.id);
      await c.delete(leaf.id);
    });

    it('deleting a project deletes its collections, members and nesting', async () => {
      const doomed = await secondProject(srv);
      const c = srv.client(doomed.key).store.collections;
      const o = await obj({ name: 'Doomed object' }, doomed.key);
      const parent: any = await c.create({ name: 'Doomed', dynamic: false });
      const child: any = await c.create({ name: 'Doomed child', dynamic: true, query: {}, parent: parent.id });
      await c.addMembers(parent.id, [o]);
      assert.deepEqual(ids(await c.searchChildren(parent.id)), [child.id]);
      const r = await srv.api('DELETE', `/api/v1/projects/${doomed.id}`);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const db = srv.orrery.database.db;
      for (const table of ['collections', 'collection_members', 'collection_parents'] as const) {
        const left = await db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('project_id', '=', doomed.id)
          .executeTakeFirstOrThrow();
        assert.equal(Number(left.n), 0, `${table} of the deleted project`);
      }
    });

    it('permissions and property propagation are refused with 501 and a reason', async () => {
      const c = srv.client().store.collections;
      const col: any = await c.create({
        name: 'Shared',
        dynamic: false,
        shared_properties: ['year'],
        properties: { year: 1 },
      });
      assert.deepEqual(col.shared_properties, ['year']);
      await assert.rejects(c.updatePermissions(col.id, { 'content:read': ['user:1'] }), status(501, /access control/));
      await assert.rejects(c.propagatePermissions(col.id), status(501, /access control/));
      await assert.rejects(c.propagateSharedProperties(col.id), status(501, /shared_properties/));
      await c.delete(col.id);
    });

    it('bad input is a 4xx that says what to fix', async () => {
      const col = (await srv.api('POST', '/api/v1/collections', { name: 'Checks', dynamic: false })).body;
      const a = await obj({ name: 'Check' });
      // Unknown ids, here and in another project.
      for (const [method, path, body] of [
        ['GET', '/api/v1/collections/nope', undefined],
        ['PUT', '/api/v1/collections/nope', { name: 'x' }],
        ['DELETE', '/api/v1/collections/nope', undefined],
        ['GET', '/api/v1/collections/nope/members', undefined],
        ['POST', '/api/v1/collections/nope/members', { action: 'add', members: [a] }],
        ['POST', '/api/v1/collections/nope/search', {}],
        ['POST', '/api/v1/collections/nope/facets', { facets: [{ name: 's', field: 'status' }] }],
        ['POST', '/api/v1/collections/nope/children', { action: 'add', children: [col.id] }],
        ['POST', '/api/v1/collections/nope/children/search', {}],
      ] as const) {
        const r = await srv.api(method, path, body);
        assert.equal(r.status, 404, `${method} ${path}: ${JSON.stringify(r.body)}`);
        assert.equal(r.body.error, 'not_found');
        assert.match(r.body.message, /collection "nope"/);
      }
      const theirs = await srv.api('GET', `/api/v1/collections/${col.id}`, undefined, other.key);
      assert.equal(theirs.status, 404, 'another project does not see the collection');
      const foreign = await srv.api('POST', `/api/v1/collections/${col.id}/members`, {
        action: 'add',
        members: [a, otherObject, 'missing'],
      });
      assert.equal(foreign.status, 404);
      assert.match(foreign.body.message, /2 of the ids are not objects of this project/);
      assert.deepEqual(
        (await srv.api('GET', `/api/v1/collections/${col.id}/members`)).body,
        [],
        'all or nothing: the valid id was not added',
      );
      const badChild = await srv.api('POST', `/api/v1/collections/${col.id}/children`, {
        action: 'add',
        children: ['missing'],
      });
      assert.equal(badChild.status, 404);
      assert.equal(
        (await srv.api('POST', '/api/v1/collections', { name: 'x', dynamic: false, parent: 'missing' })).status,
        404,
      );
      assert.equal(
        (await srv.api('POST', '/api/v1/collections', { name: 'x', dynamic: false, type: 'NoSuchType' })).status,
        404,
      );

      // Too many ids: refused before any work.
      const many = Array.from({ length: 1001 }, (_, i) => `id${i}`);
      for (const [path, body] of [
        [`/api/v1/collections/${col.id}/members`, { action: 'add', members: many }],
        [`/api/v1/collections/${col.id}/members`, { action: 'delete', members: many }],
        [`/api/v1/collections/${col.id}/children`, { action: 'add', children: many }],
      ] as const) {
        const r = await srv.api('POST', path, body);
        assert.equal(r.status, 400, JSON.stringify(r.body));
        assert.match(r.body.message, /at most 1000 .* per call, got 1001: send them in batches/);
      }

      // Wrong types and shapes.
      for (const [method, path, body] of [
        ['POST', '/api/v1/collections', { name: 42, dynamic: false }],
        ['POST', '/api/v1/collections', { name: 'x' }],
        ['POST', '/api/v1/collections', { name: '', dynamic: false }],
        ['POST', '/api/v1/collections', { name: '   ', dynamic: false }],
        ['POST', '/api/v1/collections', { name: 'x', dynamic: 'yes' }],
        ['POST', '/api/v1/collections', { name: 'x', dynamic: false, status: 'gone' }],
        ['POST', '/api/v1/collections', { name: 'x', dynamic: false, query: { 'properties.a': 1 } }],
        ['POST', '/api/v1/collections', { name: 'x', dynamic: true, query: { $where: 'x' } }],
        ['POST', '/api/v1/collections', { name: 'x', dynamic: true, query: { nosuchfield: 1 } }],
        ['POST', '/api/v1/collections', { name: 'x', dynamic: true, query: [1] }],
        ['POST', '/api/v1/collections', { name: 'x', dynamic: false, table_layout: [{ nope: 1 }] }],
        ['PUT', `/api/v1/collections/${col.id}`, { dynamic: 1 }],
        ['PUT', `/api/v1/collections/${col.id}`, { query: { 'properties.a': 1 } }],
        ['POST', `/api/v1/collections/${col.id}/members`, { action: 'add', members: 'abc' }],
        ['POST', `/api/v1/collections/${col.id}/members`, { action: 'move', members: [a] }],
        ['POST', `/api/v1/collections/${col.id}/members`, { action: 'add', members: [] }],
        ['POST', `/api/v1/collections/${col.id}/members`, { action: 'add', members: [7] }],
        ['POST', `/api/v1/collections/${col.id}/children`, { action: 'add' }],
        ['POST', '/api/v1/collections/search', { limit: -1 }],
        ['POST', '/api/v1/collections/search', { offset: 10_000_000 }],
        ['POST', '/api/v1/collections/search', { match: { $where: 'x' } }],
        ['POST', '/api/v1/collections/search', { status: 'gone' }],
        ['POST', '/api/v1/collections/facets', { facets: [] }],
        ['POST', '/api/v1/collections/facets', { facets: [{ name: 'n', field: 'name' }] }],
        ['POST', '/api/v1/collections/facets', { facets: [{ name: 'total', field: 'status' }] }],
        ['POST', `/api/v1/collections/${col.id}/facets`, { facets: [] }],
        ['POST', `/api/v1/collections/${col.id}/search`, { query: { status: 'gone' } }],
        ['POST', `/api/v1/collections/${col.id}/search`, { query: { match: { $nope: 1 } } }],
        ['GET', `/api/v1/collections/${col.id}/members?limit=abc`, undefined],
        ['GET', `/api/v1/collections/${col.id}/members?status=gone`, undefined],
        ['POST', '/api/v1/collections', '{"name": "x", "dynamic": fal'],
      ] as const) {
        const r = await srv.api(method, path, body);
        assert.equal(r.status, 400, `${method} ${path} ${JSON.stringify(body)}: ${r.status} ${JSON.stringify(r.body)}`);
        assert.equal(typeof r.body.message, 'string');
        assert.equal(r.body.status, 400);
      }

      // Allowed types: a static collection refuses objects of other types.
      const t = await srv.api('POST', '/api/v1/types', { name: 'Memo' });
      const memo = await obj({ name: 'A memo', type: t.body.id });
      const typed = await srv.api('POST', '/api/v1/collections', {
        name: 'Memos',
        dynamic: false,
        allowed_types: ['Memo'],
      });
      assert.equal(typed.status, 200, JSON.stringify(typed.body));
      const refused = await srv.api('POST', `/api/v1/collections/${typed.body.id}/members`, {
        action: 'add',
        members: [memo, a],
      });
      assert.equal(refused.status, 400);
      assert.match(refused.body.message, /accepts only objects of the types "Memo"/);
      const ok = await srv.api('POST', `/api/v1/collections/${typed.body.id}/members`, {
        action: 'add',
        members: [memo],
      });
      assert.equal(ok.status, 200, JSON.stringify(ok.body));

      // Page sizes are clamped to 1,000.
      const clamped = await srv.api('GET', `/api/v1/collections/${col.id}/members?limit=5000`);
      assert.equal(clamped.status, 200);
    });
  });
}
