/**
 * GET /runs, POST /runs/search and POST /runs/facets through HTTP and the official client, on
 * runs made by POST /runs (the service's own write path: a run's fields are indexed with its row,
 * its words when it ends). Every filter, both request shapes, the answer shapes, paging,
 * and every refusal.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { TEST_DIALECTS, seedEcho, startTestServer, type TestServer } from '../support/server.ts';
import { openStream } from '../support/sse.ts';
import { byRecency, generateRuns, rng, storeRuns } from './search-fixtures.ts';

interface Ref {
  id: string;
  status: string;
  created_at: string;
  updated_at: string;
  tags: string[];
  parent?: string;
  modelId: string;
  interaction: { id: string };
  environment: { id: string } | null;
}

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: listing and searching runs over HTTP`, () => {
    let srv: TestServer;
    let a: Awaited<ReturnType<typeof seedEcho>>;
    let b: Awaited<ReturnType<typeof seedEcho>>;
    const made: Ref[] = [];
    let parent: Ref;

    const run = async (ix: typeof a, text: string, extra: Record<string, unknown> = {}) => {
      const r = await srv.api('POST', '/api/v1/runs', {
        interaction: ix.interaction.id,
        data: { text, customer: { id: `c-${made.length % 3}` } },
        ...extra,
      });
      const id = r.status === 200 ? r.body.id : r.body.id;
      assert.ok(id, JSON.stringify(r.body));
      const got = await srv.api('GET', `/api/v1/runs/${id}`);
      made.push({ ...got.body, environment: got.body.environment && { id: got.body.environment.id } });
      return got.body;
    };
    const list = async (query: string): Promise<Ref[]> => {
      const r = await srv.api('GET', `/api/v1/runs${query}`);
      assert.equal(r.status, 200, `${query} → ${JSON.stringify(r.body)}`);
      return r.body;
    };
    const ids = (xs: { id: string }[]) => xs.map((x) => x.id);
    const newestFirst = (xs: Ref[]) => ids([...xs].sort(byRecency));
    const where = (test: (r: Ref) => boolean) => newestFirst(made.filter(test));

    before(async () => {
      srv = await startTestServer(dialect);
      a = await seedEcho(srv, { name: 'Alpha echo' });
      b = await seedEcho(srv, { name: 'Beta echo' });
      parent = await run(a, 'the parent run about quarterly reports', { tags: ['root', 'q1'] });
      await run(a, 'hello world from alpha', { tags: 'red,blue', parent: parent.id });
      await run(b, 'hello there from beta', { tags: ['blue'] });
      await run(b, 'a failing run', { tags: ['red'], config: { model: 'error' } });
      await run(a, 'child number two', { parent: parent.id, tags: ['green'] });
      await run(b, 'streamed but never read', { stream: true, tags: ['waiting'] });
      for (let i = 0; i < 6; i++) await run(i % 2 ? a : b, `filler run ${i} café`, { tags: i % 3 ? ['filler'] : [] });
    });
    after(() => srv?.close());

    it('lists newest updated_at first (ties by id), as run references of the project', async () => {
      const all = await list('');
      assert.deepEqual(
        ids(all),
        where(() => true),
      );
      const first = all[0] as unknown as Record<string, unknown>;
      assert.equal(first.result, undefined, 'no result in a reference');
      assert.equal(first.parameters, undefined);
      assert.deepEqual(Object.keys(first.account as object).sort(), ['id', 'name']);
      assert.deepEqual(Object.keys(first.project as object).sort(), ['id', 'name']);
      assert.ok((first.interaction as { name: string }).name);
    });

    it('filters GET /runs by interaction, model, environment, status and tag (comma lists and repeated keys)', async () => {
      const cases: [string, (r: Ref) => boolean][] = [
        [`?interaction=${a.interaction.id}`, (r) => r.interaction.id === a.interaction.id],
        [`?interaction=${a.interaction.id},${b.interaction.id}`, () => true],
        [`?interaction=${a.interaction.id}&interaction=nope`, (r) => r.interaction.id === a.interaction.id],
        ['?model=error', (r) => r.modelId === 'error'],
        ['?model=echo,error', () => true],
        [`?environment=${b.env.id}`, (r) => r.environment?.id === b.env.id],
        [`?environment=${a.env.id}&environment=${b.env.id}`, () => true],
        ['?status=failed', (r) => r.status === 'failed'],
        ['?status=created,failed', (r) => r.status === 'created' || r.status === 'failed'],
        ['?tag=red', (r) => r.tags.includes('red')],
        ['?tag=red,green', (r) => r.tags.includes('red') || r.tags.includes('green')],
        ['?tag=red&tag=waiting', (r) => r.tags.includes('red') || r.tags.includes('waiting')],
        [
          `?tag=blue&interaction=${b.interaction.id}`,
          (r) => r.tags.includes('blue') && r.interaction.id === b.interaction.id,
        ],
        [`?parent=${parent.id}`, (r) => r.parent === parent.id],
        ['?parent=false', (r) => r.parent === undefined],
        ['?is_root=true', (r) => r.parent === undefined],
        ['?workflow_run_ids=w1', () => false],
      ];
      for (const [query, test] of cases) assert.deepEqual(ids(await list(query)), where(test), query);
      const bad = await srv.api('GET', '/api/v1/runs?status=done');
      assert.equal(bad.status, 400);
      assert.match(bad.body.message, /status must be one of created, processing, completed, failed/);
      assert.equal((await srv.api('GET', '/api/v1/runs?anchorDate=yesterday')).status, 400);
    });

    it('splits the runs at anchorDate with nothing lost or counted twice (after: >=, before: <)', async () => {
      const all = await list('');
      for (const anchor of [
        all[3].updated_at,
        all[0].updated_at,
        all[all.length - 1].updated_at,
        '2000-01-01',
        '2100-01-01T00:00:00Z',
      ]) {
        const after = await list(`?anchorDate=${encodeURIComponent(anchor)}`);
        const explicit = await list(`?anchorDate=${encodeURIComponent(anchor)}&anchorDateDirection=after`);
        const before = await list(`?anchorDate=${encodeURIComponent(anchor)}&anchorDateDirection=before`);
        assert.deepEqual(ids(explicit), ids(after));
        assert.deepEqual([...ids(after), ...ids(before)], ids(all), anchor);
        assert.ok(after.every((r) => Date.parse(r.updated_at) >= Date.parse(anchor)));
        assert.ok(before.every((r) => Date.parse(r.updated_at) < Date.parse(anchor)));
      }
    });

    it('walks the pages and returns every run once, and clamps limit to 1,000', async () => {
      const all = await list('');
      for (const size of [1, 2, 5]) {
        const seen: string[] = [];
        for (let offset = 0; offset < all.length + size; offset += size)
          seen.push(...ids(await list(`?limit=${size}&offset=${offset}`)));
        assert.deepEqual(seen, ids(all), `page size ${size}`);
      }
      assert.equal((await list('?limit=0')).length, 0);
      assert.equal((await list('?limit=5000')).length, all.length);
    });

    it('lists through the official client (repeated keys, parent, is_root)', async () => {
      const client = srv.client();
      const got = await client.runs.list({
        limit: 100,
        offset: 0,
        filters: { status: ['completed'] as never, tag: ['red', 'blue'] },
      });
      assert.deepEqual(
        ids(got),
        where((r) => r.status === 'completed' && (r.tags.includes('red') || r.tags.includes('blue'))),
      );
      assert.deepEqual(
        ids(await client.runs.list({ filters: { parent: parent.id } })),
        where((r) => r.parent === parent.id),
      );
      assert.deepEqual(
        ids(await client.runs.list({ filters: { is_root: true, interaction: [a.interaction.id] } })),
        where((r) => r.parent === undefined && r.interaction.id === a.interaction.id),
      );
      assert.deepEqual(ids(await client.runs.list({ limit: 2, offset: 1 })), where(() => true).slice(1, 3));
    });

    it('finds a run by the words of its prompt, data and result once it ended; a run not ended by its other fields', async () => {
      const search = async (query: string) => {
        const r = await srv.api('POST', '/api/v1/runs/search', { query });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        return ids(r.body);
      };
      assert.deepEqual(await search('"quarterly reports"'), [parent.id]);
      assert.deepEqual(await search('result:"say the parent"'), [parent.id]);
      assert.deepEqual(
        await search('prompt:alpha AND hello'),
        where((r) => r.id === made[1].id),
      );
      assert.deepEqual(
        await search('parameters.customer.id:c-1 AND NOT filler'),
        where((r, i = made.indexOf(r)) => i % 3 === 1 && i < 6),
      );
      // A streamed run not streamed yet: found by its fields and parameter words, not by its text.
      const streamed = made.find((r) => r.status === 'created')!;
      assert.deepEqual(await search('result:never'), []);
      assert.deepEqual(await search('streamed'), [], 'the text of a run that has not ended is not indexed yet');
      assert.deepEqual(await search('prompt:streamed'), []);
      assert.deepEqual(await search('parameters.text:streamed'), [streamed.id]);
      assert.deepEqual(await search('parameters.text:stream*'), [streamed.id]);
      assert.deepEqual(await search('parameters.text:"never read" AND status:created'), [streamed.id]);
      assert.deepEqual(await search('tags:waiting AND NOT streamed'), [streamed.id]);
      const events = await (
        await openStream(`${srv.url}/api/v1/runs/${streamed.id}/stream?access_token=${srv.adminKey}`)
      ).all();
      assert.ok(events.some((e) => e.event === 'close'));
      let found: string[] = [];
      for (let i = 0; i < 50 && !found.length; i++) {
        found = await search('result:"never read"');
        if (!found.length) await new Promise((r) => setTimeout(r, 20));
      }
      assert.deepEqual(found, [streamed.id]);
      // Ended: its prompt and data words are indexed too, and its parameters still found.
      assert.deepEqual(await search('streamed'), [streamed.id]);
      assert.deepEqual(await search('prompt:streamed'), [streamed.id]);
      assert.deepEqual(await search('parameters.text:streamed'), [streamed.id]);
      assert.deepEqual(await search('tags:waiting AND NOT streamed'), []);
      const refreshed = await srv.api('GET', `/api/v1/runs/${streamed.id}`);
      made[made.indexOf(streamed)] = {
        ...streamed,
        status: refreshed.body.status,
        updated_at: refreshed.body.updated_at,
      };
    });

    it("searches in the interface's shape with every filter key (environemnt as spelled there)", async () => {
      const post = async (body: Record<string, unknown>) => {
        const r = await srv.api('POST', '/api/v1/runs/search', body);
        assert.equal(r.status, 200, `${JSON.stringify(body)} → ${JSON.stringify(r.body)}`);
        return r.body;
      };
      const cases: [Record<string, unknown>, (r: Ref) => boolean][] = [
        [{ interaction: a.interaction.id }, (r) => r.interaction.id === a.interaction.id],
        [{ environemnt: b.env.id }, (r) => r.environment?.id === b.env.id],
        [{ environment: b.env.id }, (r) => r.environment?.id === b.env.id],
        [{ parent: parent.id }, (r) => r.parent === parent.id],
        [{ parent: false }, (r) => r.parent === undefined],
        [{ status: 'failed' }, (r) => r.status === 'failed'],
        [{ tags: ['red', 'blue'] }, (r) => r.tags.includes('red') && r.tags.includes('blue')],
        [{ tags: ['filler'] }, (r) => r.tags.includes('filler')],
        [{ modelId: 'error' }, (r) => r.modelId === 'error'],
        [{ updated_at: { gte: made[4].updated_at } }, (r) => r.updated_at >= made[4].updated_at],
        [
          { updated_at: { gt: made[2].updated_at, lte: made[6].updated_at } },
          (r) => r.updated_at > made[2].updated_at && r.updated_at <= made[6].updated_at,
        ],
        [{ updated_at: { lt: made[3].updated_at } }, (r) => r.updated_at < made[3].updated_at],
      ];
      for (const [filters, test] of cases)
        assert.deepEqual(ids(await post({ filters })), where(test), JSON.stringify(filters));
      assert.deepEqual(ids(await post({ query: 'hello', filters: { interaction: b.interaction.id } })), [made[2].id]);
      assert.deepEqual(
        ids(await post({ query: 'Alpha*', defaultQueryPath: 'interaction' })),
        where((r) => r.interaction.id === a.interaction.id),
      );
      assert.deepEqual(
        ids(await post({ query: 'red', defaultQueryPath: 'tags', limit: 1, offset: 1 })),
        where((r) => r.tags.includes('red')).slice(1, 2),
      );
    });

    it("searches in the official client's shape, and through client.runs.search", async () => {
      const client = srv.client();
      const got = await client.runs.search({
        query: { query: 'hello OR café', tags: ['filler'], exclude_tags: ['red'] },
        limit: 100,
      });
      assert.ok(Array.isArray(got));
      assert.deepEqual(
        ids(got),
        where((r, i = made.indexOf(r)) => i >= 6 && r.tags.includes('filler')),
      );
      assert.deepEqual(
        ids(
          await client.runs.search({
            query: { status: 'failed' as never, model: 'error', interaction: b.interaction.id, environment: b.env.id },
          }),
        ),
        where((r) => r.status === 'failed'),
      );
      assert.deepEqual(ids(await client.runs.search({ query: { parent: [parent.id], query: 'two' } })), [made[4].id]);
      assert.deepEqual(
        ids(await client.runs.search({ query: { is_root: true, default_query_path: 'tags', query: 'blue' } })),
        [made[2].id],
      );
      const start = made[3].created_at;
      assert.deepEqual(
        ids(await client.runs.search({ query: { start } })),
        where((r) => r.created_at >= start),
      );
      assert.deepEqual(
        ids(await client.runs.search({ query: { run_ids: [made[0].id, made[5].id] } })),
        where((r) => r.id === made[0].id || r.id === made[5].id),
      );
      assert.deepEqual(ids(await client.runs.search({ query: { workflow_run_ids: ['w'] } })), []);
      // Facets given as the client's array are ignored by /runs/search: the answer stays an array.
      const withFacets = await srv.api('POST', '/api/v1/runs/search', {
        query: { query: 'hello' },
        facets: [{ name: 'statuses', field: 'status' }],
      });
      assert.deepEqual(
        ids(withFacets.body),
        where((r) => r.id === made[1].id || r.id === made[2].id),
      );
      const interfaceArray = await srv.api('POST', '/api/v1/runs/search', {
        query: 'hello',
        facets: [{ name: 'statuses', field: 'status' }],
        onlyMeta: true,
      });
      assert.ok(Array.isArray(interfaceArray.body));
    });

    it('answers {count, facet} with onlyMeta, {results, count, facet} without', async () => {
      const facets = {
        statuses: { type: 'string', path: 'status' },
        models: { path: 'modelId', numBuckets: 1 },
        tags: { type: 'string', path: 'tags', numBuckets: 3 },
        took: { type: 'number', path: 'execution_time', boundaries: [0, 1_000_000], default: 'none' },
        when: { type: 'date', path: 'updated_at', boundaries: ['2000-01-01', '2100-01-01'] },
        interactions: { path: 'interaction' },
        envs: { path: 'environment' },
        reasons: { path: 'finish_reason' },
      };
      const meta = await srv.api('POST', '/api/v1/runs/search', {
        query: 'NOT status:created',
        facets,
        onlyMeta: true,
      });
      assert.equal(meta.status, 200, JSON.stringify(meta.body));
      const matched = made.filter((r) => r.status !== 'created');
      assert.deepEqual(Object.keys(meta.body).sort(), ['count', 'facet']);
      assert.deepEqual(meta.body.count, { total: matched.length });
      const count = (test: (r: Ref) => boolean) => matched.filter(test).length;
      const statuses = [...new Set(matched.map((r) => r.status))]
        .map((s) => ({ _id: s, count: count((r) => r.status === s) }))
        .sort((x, y) => y.count - x.count || (x._id < y._id ? -1 : 1));
      assert.deepEqual(meta.body.facet.statuses.buckets, statuses);
      assert.deepEqual(meta.body.facet.models.buckets, [{ _id: 'echo', count: count((r) => r.modelId === 'echo') }]);
      assert.deepEqual(
        meta.body.facet.tags.buckets.map((x: { _id: string }) => x._id),
        ['filler', 'blue', 'red'],
      );
      assert.deepEqual(meta.body.facet.took.buckets, [
        { _id: 0, count: matched.length },
        { _id: 'none', count: 0 },
      ]);
      assert.deepEqual(meta.body.facet.when.buckets, [{ _id: '2000-01-01', count: matched.length }]);
      assert.equal(meta.body.facet.interactions.buckets.length, 2);
      assert.deepEqual(meta.body.facet.reasons.buckets, [
        { _id: 'stop', count: count((r) => r.status === 'completed') },
      ]);

      const full = await srv.api('POST', '/api/v1/runs/search', {
        query: 'NOT status:created',
        facets: { statuses: facets.statuses },
        limit: 2,
      });
      assert.deepEqual(Object.keys(full.body).sort(), ['count', 'facet', 'results']);
      assert.deepEqual(ids(full.body.results), newestFirst(matched).slice(0, 2));
      assert.deepEqual(full.body.facet.statuses.buckets, statuses);
      const empty = await srv.api('POST', '/api/v1/runs/search', { query: 'nosuchword', facets: {}, onlyMeta: true });
      assert.deepEqual(empty.body, { count: { total: 0 }, facet: {} });
    });

    it("answers POST /runs/facets in the client's shape, through client.runs.computeFacets too", async () => {
      const client = srv.client();
      const res = await client.runs.computeFacets({
        facets: [
          { name: 'statuses', field: 'status' },
          { name: 'interactions', field: 'interaction' },
          { name: 'models', field: 'modelId' },
          { name: 'environments', field: 'environment' },
          { name: 'finish_reason', field: 'finish_reason' },
        ],
        query: { query: 'NOT failing' } as never,
      });
      const matched = made.filter((r) => r.status !== 'failed');
      assert.equal(res.total, matched.length);
      assert.deepEqual(
        res.statuses,
        [...new Set(matched.map((r) => r.status))]
          .map((s) => ({ _id: s, count: matched.filter((r) => r.status === s).length }))
          .sort((x, y) => y.count - x.count || (x._id < y._id ? -1 : 1)),
      );
      assert.deepEqual(res.interactions!.map((x) => x.name).sort(), ['Alpha echo', 'Beta echo']);
      const reasons = (await client.runs.computeFacets({ facets: [{ name: 'finish_reason', field: 'finish_reason' }] }))
        .finish_reason!;
      assert.deepEqual(
        reasons.find((x) => x._id === null),
        { _id: null, count: made.filter((r) => r.status === 'failed').length },
        'runs without a finish reason are the null bucket',
      );
      // More than the client's five facets is accepted; any facetable field may be asked for.
      const six = await srv.api('POST', '/api/v1/runs/facets', {
        facets: ['status', 'tags', 'modelId', 'environment', 'interaction', 'finish_reason', 'updated_at'].map(
          (field, i) => ({ name: `f${i}`, field }),
        ),
      });
      assert.equal(six.status, 200, JSON.stringify(six.body));
      assert.equal(six.body.total, made.length);
      assert.deepEqual(
        six.body.f1.find((x: { _id: string }) => x._id === 'red'),
        { _id: 'red', count: 2 },
      );
    });

    it('refuses bad queries, filters and facets with a 400 that says what to fix', async () => {
      const cases: [string, Record<string, unknown>, string, RegExp][] = [
        ['/runs/search', { query: 'status:(completed' }, 'invalid_query', /position 7/],
        ['/runs/search', { query: 'hello AND' }, 'invalid_query', /position/],
        ['/runs/search', { query: { query: '"open' } }, 'invalid_query', /position/],
        [
          '/runs/search',
          { query: 'colour:red' },
          'unknown_field',
          /Unknown field "colour".*Searchable fields: id, status, modelId.*parameters\.<path>/,
        ],
        ['/runs/search', { query: 'x', defaultQueryPath: 'colour' }, 'unknown_field', /colour/],
        ['/runs/search', { query: 42 }, 'bad_request', /query/],
        [
          '/runs/search',
          { filters: { color: 'red' } },
          'bad_request',
          /unknown filter "color"; filters are interaction, environemnt/,
        ],
        ['/runs/search', { filters: { status: 'done' } }, 'bad_request', /status must be one of/],
        [
          '/runs/search',
          { filters: { updated_at: { gte: 'soon' } } },
          'bad_request',
          /filters\.updated_at\.gte must be an ISO 8601/,
        ],
        ['/runs/search', { filters: { updated_at: { after: '2024' } } }, 'bad_request', /lt, lte, gt and gte/],
        [
          '/runs/search',
          { facets: { f: { path: 'colour' } } },
          'bad_request',
          /facetable fields: modelId, status, tags, updated_at, execution_time/,
        ],
        [
          '/runs/search',
          { facets: { f: { type: 'number', path: 'execution_time', boundaries: [5] } } },
          'bad_request',
          /at least two/,
        ],
        [
          '/runs/search',
          { facets: { f: { type: 'number', path: 'execution_time', boundaries: [5, 1] } } },
          'bad_request',
          /strictly ascending/,
        ],
        [
          '/runs/search',
          { facets: { f: { type: 'number', path: 'execution_time', boundaries: [1, 1] } } },
          'bad_request',
          /strictly ascending/,
        ],
        [
          '/runs/search',
          { facets: { f: { type: 'number', path: 'execution_time', boundaries: [1, 'x'] } } },
          'bad_request',
          /finite number/,
        ],
        [
          '/runs/search',
          { facets: { f: { type: 'date', path: 'updated_at', boundaries: ['2024-01-01', 'soon'] } } },
          'bad_request',
          /ISO 8601/,
        ],
        [
          '/runs/search',
          { facets: { f: { type: 'date', path: 'updated_at', boundaries: ['2025', '2024'] } } },
          'bad_request',
          /ascending/,
        ],
        [
          '/runs/search',
          { facets: { f: { type: 'number', path: 'status', boundaries: [1, 2] } } },
          'bad_request',
          /number facet needs a number field/,
        ],
        [
          '/runs/search',
          { facets: { f: { type: 'string', path: 'status', numBuckets: 0 } } },
          'bad_request',
          /numBuckets/,
        ],
        [
          '/runs/search',
          { facets: { f: { type: 'histogram', path: 'status' } } },
          'bad_request',
          /type must be string, number or date/,
        ],
        ['/runs/facets', { facets: [{ name: 'total', field: 'status' }] }, 'bad_request', /reserved/],
        ['/runs/facets', { facets: [{ name: 'x', field: 'colour' }] }, 'bad_request', /facetable fields/],
        [
          '/runs/facets',
          {
            facets: [
              { name: 'x', field: 'status' },
              { name: 'x', field: 'tags' },
            ],
          },
          'bad_request',
          /twice/,
        ],
        [
          '/runs/facets',
          { facets: [{ name: 'x', field: 'status' }], query: { query: 'a:(' } },
          'invalid_query',
          /position/,
        ],
        [
          '/runs/facets',
          { facets: Array.from({ length: 26 }, (_, i) => ({ name: `f${i}`, field: 'status' })) },
          'bad_request',
          /at most 25/,
        ],
      ];
      for (const [path, body, code, message] of cases) {
        const r = await srv.api('POST', `/api/v1${path}`, body);
        assert.equal(r.status, 400, `${JSON.stringify(body)} → ${r.status} ${JSON.stringify(r.body)}`);
        assert.equal(r.body.error, code, JSON.stringify(r.body));
        assert.match(r.body.message, message, JSON.stringify(body));
      }
      const syntax = await srv.api('POST', '/api/v1/runs/search', { query: 'status:(completed' });
      assert.deepEqual(
        { position: syntax.body.details.position, line: syntax.body.details.line, column: syntax.body.details.column },
        { position: 7, line: 1, column: 8 },
      );
      const unknown = await srv.api('POST', '/api/v1/runs/search', { query: 'hello AND colour:red' });
      assert.equal(unknown.body.details.field, 'colour');
      assert.equal(unknown.body.details.position, 10);
      assert.ok(unknown.body.details.searchable.includes('parameters.<path>'));
    });

    it("never shows another project's runs", async () => {
      const proj = await srv.api('POST', '/api/v1/projects', { name: 'Elsewhere' });
      const { account } = srv.orrery.bootstrap;
      const r = rng(7);
      const { db, dialect: d } = srv.orrery.database;
      await storeRuns(
        db,
        d,
        r,
        generateRuns(r, 150, { account, project: { id: proj.body.id, name: 'Elsewhere' } }).map((x) => ({
          ...x,
          row: { ...x.row, status: 'completed' },
        })),
      );
      assert.deepEqual(
        ids(await list('?limit=1000')),
        where(() => true),
      );
      const key = await srv.api('POST', '/api/v1/apikeys', { name: 'elsewhere', project: proj.body.id });
      const theirs = await srv.api('GET', '/api/v1/runs', undefined, key.body.value);
      assert.equal(theirs.body.length, 100, 'limit defaults to 100');
      const search = await srv.api(
        'POST',
        '/api/v1/runs/search',
        { query: '*', facets: {}, onlyMeta: true },
        key.body.value,
      );
      assert.deepEqual(search.body.count, { total: 150 });
      const mine = await srv.api('POST', '/api/v1/runs/facets', { facets: [{ name: 's', field: 'status' }] });
      assert.equal(mine.body.total, made.length);
    });
  });
}
