/**
 * Datasets (src/datasets) through HTTP on both databases: create and list, items added and taken
 * out, versions frozen and read back as they were, items copied from runs, the JSON Lines export,
 * the bounds and the roles.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, seedEcho, startTestServer, type TestServer } from '../support/server.ts';

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: datasets`, () => {
    let srv: TestServer;
    let n = 0;
    const create = async (extra: Record<string, unknown> = {}) => {
      const r = await srv.api('POST', '/api/v1/datasets', { name: `set ${++n}`, ...extra });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body as { id: string; version: number; frozen_version: number | null; item_count: number };
    };
    const items = async (id: string, query = '') => {
      const r = await srv.api('GET', `/api/v1/datasets/${id}/items${query}`);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body as { version: number; items: Array<Record<string, any>> };
    };

    before(async () => {
      srv = await startTestServer(dialect);
    });
    after(() => srv.close());

    it('creates, lists, renames and deletes datasets; names are unique in a project', async () => {
      const set = await create({ description: 'questions about orbits' });
      assert.equal(set.version, 1);
      assert.equal(set.frozen_version, null);
      assert.equal(set.item_count, 0);
      const same = await srv.api('POST', '/api/v1/datasets', { name: `set ${n}` });
      assert.equal(same.status, 409, JSON.stringify(same.body));
      const listed = await srv.api('GET', '/api/v1/datasets');
      assert.ok(listed.body.some((d: { id: string }) => d.id === set.id));
      const renamed = await srv.api('PUT', `/api/v1/datasets/${set.id}`, { name: 'renamed set', description: null });
      assert.equal(renamed.status, 200, JSON.stringify(renamed.body));
      assert.equal(renamed.body.name, 'renamed set');
      assert.equal(renamed.body.description, undefined);
      assert.equal((await srv.api('DELETE', `/api/v1/datasets/${set.id}`)).status, 200);
      assert.equal((await srv.api('GET', `/api/v1/datasets/${set.id}`)).status, 404);
      assert.equal((await srv.api('DELETE', `/api/v1/datasets/${set.id}`)).status, 404);
    });

    it('refuses bad input by name, before any work', async () => {
      const unknown = await srv.api('POST', '/api/v1/datasets', { name: 'x', kind: 'golden' });
      assert.equal(unknown.status, 400);
      assert.match(unknown.body.message, /body\.kind is not a field/);
      assert.equal((await srv.api('POST', '/api/v1/datasets', { name: '   ' })).status, 400);
      const set = await create();
      const neither = await srv.api('POST', `/api/v1/datasets/${set.id}/items`, {});
      assert.equal(neither.status, 400);
      assert.match(neither.body.message, /items or from_runs/);
      const empty = await srv.api('POST', `/api/v1/datasets/${set.id}/items`, { items: [] });
      assert.equal(empty.status, 400);
      const many = await srv.api('POST', `/api/v1/datasets/${set.id}/items`, {
        items: Array.from({ length: 1001 }, (_, i) => ({ data: { i } })),
      });
      assert.equal(many.status, 413, JSON.stringify(many.body));
      assert.match(many.body.message, /at most 1000 items per request/);
      const big = await srv.api('POST', `/api/v1/datasets/${set.id}/items`, {
        items: [{ data: { text: 'a' } }, { data: { text: 'x'.repeat(300 * 1024) } }],
      });
      assert.equal(big.status, 413, JSON.stringify(big.body).slice(0, 300));
      assert.match(big.body.message, /items\[1\] is \d+ bytes/);
      const badItem = await srv.api('POST', `/api/v1/datasets/${set.id}/items`, { items: [{ input: {} }] });
      assert.equal(badItem.status, 400);
      assert.equal((await items(set.id)).items.length, 0, 'nothing of a refused request was written');
      assert.equal((await srv.api('GET', `/api/v1/datasets/${set.id}/items?version=2`)).status, 400);
      assert.equal((await srv.api('POST', '/api/v1/datasets/nope/items', { items: [{ data: {} }] })).status, 404);
    });

    it('keeps a frozen version as it was while the next one changes', async () => {
      const set = await create();
      const added = await srv.api('POST', `/api/v1/datasets/${set.id}/items`, {
        items: [
          { data: { q: 'Which planet has rings?' }, expected: 'Saturn', metadata: { topic: 'planets' } },
          { data: { q: 'How many moons has Mars?' }, expected: 2 },
          { data: { q: 'Is Pluto a planet?' } },
        ],
      });
      assert.equal(added.status, 200, JSON.stringify(added.body));
      assert.equal(added.body.version, 1);
      const [rings, moons, pluto] = added.body.ids as string[];
      // Before freezing, a removal simply removes.
      assert.equal((await srv.api('DELETE', `/api/v1/datasets/${set.id}/items/${pluto}`)).status, 200);
      const v1 = await items(set.id);
      assert.deepEqual(
        v1.items.map((x) => [x.id, x.data.q, x.expected]),
        [
          [rings, 'Which planet has rings?', 'Saturn'],
          [moons, 'How many moons has Mars?', 2],
        ],
      );
      assert.deepEqual(v1.items[0].metadata, { topic: 'planets' });

      const frozen = await srv.api('POST', `/api/v1/datasets/${set.id}/versions`);
      assert.equal(frozen.body.frozen_version, 1);
      const more = await srv.api('POST', `/api/v1/datasets/${set.id}/items`, {
        items: [{ data: { q: 'Which is the largest planet?' }, expected: 'Jupiter' }],
      });
      assert.equal(more.body.version, 2, 'a change after freezing makes the next version');
      const removed = await srv.api('DELETE', `/api/v1/datasets/${set.id}/items/${rings}`);
      assert.deepEqual(removed.body, { id: rings, version: 2 });
      assert.equal((await srv.api('DELETE', `/api/v1/datasets/${set.id}/items/${rings}`)).status, 404);

      const now = await items(set.id);
      assert.equal(now.version, 2);
      assert.deepEqual(
        now.items.map((x) => x.data.q),
        ['How many moons has Mars?', 'Which is the largest planet?'],
      );
      const then = await items(set.id, '?version=1');
      assert.deepEqual(
        then.items.map((x) => x.id),
        [rings, moons],
        'version 1 reads as it was frozen',
      );
      const retrieved = await srv.api('GET', `/api/v1/datasets/${set.id}`);
      assert.equal(retrieved.body.version, 2);
      assert.equal(retrieved.body.item_count, 2);
      const page = await items(set.id, '?limit=1&offset=1');
      assert.deepEqual(
        page.items.map((x) => x.data.q),
        ['Which is the largest planet?'],
      );

      const exported = await fetch(`${srv.url}/api/v1/datasets/${set.id}/export?version=1`, {
        headers: { authorization: `Bearer ${srv.adminKey}` },
      });
      assert.equal(exported.status, 200);
      assert.match(exported.headers.get('content-type') ?? '', /application\/x-ndjson/);
      const lines = (await exported.text())
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      assert.deepEqual(lines, [
        { data: { q: 'Which planet has rings?' }, expected: 'Saturn', metadata: { topic: 'planets' } },
        { data: { q: 'How many moons has Mars?' }, expected: 2 },
      ]);
    });

    it('copies completed runs found by a run search, with their answers as expected', async () => {
      const { interaction } = await seedEcho(srv, { name: `Echo for datasets ${dialect}` });
      const ids: string[] = [];
      for (const text of ['first', 'second', 'third']) {
        const r = await srv.api('POST', '/api/v1/runs', { interaction: interaction.id, data: { text } });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        ids.push(r.body.id);
      }
      const set = await create();
      const copied = await srv.api('POST', `/api/v1/datasets/${set.id}/items`, {
        from_runs: { filters: { interaction: interaction.id }, limit: 2 },
      });
      assert.equal(copied.status, 200, JSON.stringify(copied.body));
      assert.equal(copied.body.ids.length, 2);
      assert.deepEqual(copied.body.skipped, []);
      const got = (await items(set.id)).items;
      assert.deepEqual(new Set(got.map((x) => x.source_run)), new Set(ids.slice(1)), 'the newest two runs');
      for (const item of got) {
        const run = await srv.api('GET', `/api/v1/runs/${item.source_run}`);
        assert.deepEqual(item.data, run.body.parameters);
        assert.equal(item.expected, run.body.result[0].value);
        assert.equal(item.metadata.run_id, item.source_run);
      }
      const tooMany = await srv.api('POST', `/api/v1/datasets/${set.id}/items`, {
        from_runs: { query: 'status:completed', limit: 501 },
      });
      assert.equal(tooMany.status, 400);
    });

    it('gives reading to every role that reads, and changes to developers and admins', async () => {
      const keyOf = async (role: string) => {
        const r = await srv.api('POST', '/api/v1/apikeys', { name: `${role} datasets ${n++}`, role });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        return r.body.value as string;
      };
      const set = await create();
      const reader = await keyOf('reader');
      assert.equal((await srv.api('GET', `/api/v1/datasets/${set.id}/items`, undefined, reader)).status, 200);
      const refused = await srv.api('POST', `/api/v1/datasets/${set.id}/items`, { items: [{ data: {} }] }, reader);
      assert.equal(refused.status, 403);
      assert.match(refused.body.message, /dataset:write/);
      const executor = await keyOf('executor');
      assert.equal((await srv.api('GET', '/api/v1/datasets', undefined, executor)).status, 403);
      const developer = await keyOf('developer');
      const made = await srv.api('POST', '/api/v1/datasets', { name: `by a developer ${n}` }, developer);
      assert.equal(made.status, 200, JSON.stringify(made.body));
    });
  });
}
