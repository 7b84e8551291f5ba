/**
 * Runs in flight (`processing`) are read like any other run, by every read of runs. On SQLite the
 * read indexes leave them out (migration 0023) and each read is two arms (runs/run-arms.ts): the
 * ended runs and those in flight, merged. Two blocking runs on the test provider's `slow` model
 * stay in flight while runs that end are made before, between and after them, so that a page
 * merges both arms at every offset; then the same reads once they have ended.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { TEST_DIALECTS, seedEcho, startTestServer, type TestServer } from '../support/server.ts';
import { byRecency } from './search-fixtures.ts';

interface Ref {
  id: string;
  status: string;
  updated_at: string;
}

/** Long enough for every read below on a slow machine; the runs are awaited at the end. */
const IN_FLIGHT_MS = 10_000;

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: runs in flight in every read of runs`, () => {
    let srv: TestServer;
    let seeded: Awaited<ReturnType<typeof seedEcho>>;
    const slow: Promise<{ status: number; body: any }>[] = [];
    const inFlight: string[] = [];
    const ended: string[] = [];

    const get = async (path: string) => {
      const r = await srv.api('GET', `/api/v1${path}`);
      assert.equal(r.status, 200, `${path} → ${JSON.stringify(r.body)}`);
      return r.body;
    };
    const post = async (path: string, body: unknown) => {
      const r = await srv.api('POST', `/api/v1${path}`, body);
      assert.equal(r.status, 200, `${path} → ${JSON.stringify(r.body)}`);
      return r.body;
    };
    const ids = (xs: { id: string }[]) => xs.map((x) => x.id);
    const endRun = async (text: string) =>
      ended.push((await post('/runs', { interaction: seeded.interaction.id, data: { text } })).id);
    /** Starts a run that stays in flight and waits until it is listed as such. */
    const startSlow = async () => {
      slow.push(
        srv.api('POST', '/api/v1/runs', {
          interaction: seeded.interaction.id,
          data: { text: 'slow' },
          config: { model: `slow:${IN_FLIGHT_MS}` },
        }),
      );
      const deadline = Date.now() + 5_000;
      for (;;) {
        const found: Ref[] = await get('/runs?status=processing');
        const started = found.find((r) => !inFlight.includes(r.id));
        if (started) return void inFlight.push(started.id);
        assert.ok(Date.now() < deadline, 'a run in flight is listed with status=processing within 5 s');
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    /** Every run, newest updated_at first (ties by id), as GET /runs/:id reads each one. */
    const expectedOrder = async () => {
      const runs: Ref[] = await Promise.all([...ended, ...inFlight].map((id) => get(`/runs/${id}`)));
      return ids(runs.sort(byRecency));
    };

    before(async () => {
      srv = await startTestServer(dialect);
      seeded = await seedEcho(srv);
      for (const t of ['one', 'two', 'three']) await endRun(t);
      await startSlow();
      for (const t of ['four', 'five']) await endRun(t);
      await startSlow();
      for (const t of ['six', 'seven']) await endRun(t);
    });
    after(() => srv?.close());

    it('lists them in place, at every page size and offset, and filters them by status', async () => {
      const order = await expectedOrder();
      assert.equal(order.length, 9);
      const [s1, s2] = inFlight;
      assert.deepEqual(
        order.filter((id) => inFlight.includes(id)),
        [s2, s1],
        'both in flight, between runs that ended',
      );
      assert.notEqual(order[0], s2, 'a run that ended is newer than the last one in flight');
      assert.equal((await get(`/runs/${s1}`)).status, 'processing');

      assert.deepEqual(ids(await get('/runs')), order);
      for (const limit of [1, 2, 4]) {
        const paged: string[] = [];
        for (let offset = 0; offset < order.length + limit; offset += limit)
          paged.push(...ids(await get(`/runs?limit=${limit}&offset=${offset}`)));
        assert.deepEqual(paged, order, `pages of ${limit}`);
      }
      assert.deepEqual(ids(await get('/runs?status=processing')), [s2, s1]);
      assert.deepEqual(
        ids(await get('/runs?status=completed')),
        order.filter((id) => !inFlight.includes(id)),
      );
      assert.deepEqual(
        ids(await get(`/runs?interaction=${seeded.interaction.id}&limit=3&offset=2`)),
        order.slice(2, 5),
      );
    });

    it('finds, counts and facets them in search, find, filter options and export', async () => {
      const order = await expectedOrder();
      assert.deepEqual(ids(await post('/runs/search', { query: 'status:processing' })), [inFlight[1], inFlight[0]]);
      assert.deepEqual(ids(await post('/runs/search', { query: 'modelId:slow*', limit: 1, offset: 1 })), [inFlight[0]]);
      const meta = await post('/runs/search', {
        facets: { statuses: { type: 'string', path: 'status' } },
        limit: 3,
        offset: 1,
      });
      assert.equal(meta.count.total, 9);
      assert.deepEqual(meta.facet.statuses.buckets, [
        { _id: 'completed', count: 7 },
        { _id: 'processing', count: 2 },
      ]);
      assert.deepEqual(ids(meta.results), order.slice(1, 4));
      const counted = await post('/runs/search', { query: 'status:processing', facets: {}, onlyMeta: true });
      assert.equal(counted.count.total, 2);
      const facets = await post('/runs/facets', { facets: [{ name: 'status', field: 'status' }] });
      assert.equal(facets.total, 9);

      assert.deepEqual(ids(await post('/runs/find', { query: { status: 'processing' } })), [inFlight[1], inFlight[0]]);
      assert.deepEqual(ids(await post('/runs/find', { query: {}, limit: 4, offset: 1 })), order.slice(1, 5));
      const options: { id: string; count: number }[] = await get('/runs/filter-options/status');
      assert.deepEqual(
        options.map((o) => [o.id, o.count]),
        [
          ['completed', 7],
          ['processing', 2],
        ],
      );

      const res = await fetch(`${srv.url}/api/v1/runs/export`, {
        headers: { authorization: `Bearer ${srv.adminKey}` },
      });
      assert.equal(res.status, 200);
      const exported = (await res.text())
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l));
      assert.deepEqual(ids(exported), order);
    });

    it('counts them in the run analytics, one row per group with the runs of both', async () => {
      const summary = await get('/analytics/runs/summary');
      assert.equal(summary.total, 9);
      assert.deepEqual(summary.byStatus, { created: 0, processing: 2, completed: 7, failed: 0 });
      assert.deepEqual(
        summary.byEnvironment.map((e: { total: number }) => e.total),
        [9],
      );
      // Today's bucket holds the runs of both: one bucket of 9, not one of 7 and one of 2.
      const series: { timestamp: string; count: number }[] = await get('/analytics/runs/time-series');
      assert.equal(new Set(series.map((p) => p.timestamp)).size, series.length);
      assert.deepEqual(
        series.filter((p) => p.count).map((p) => p.count),
        [9],
      );
      const tokens = await get('/analytics/runs/token-usage');
      assert.deepEqual(
        tokens.byEnvironment.map((e: { runs: number }) => e.runs),
        [9],
      );
      const cost = await post('/cost/analytics', { group_by: 'environment', resolution: 'day' });
      assert.equal(cost.summary.total_calls, 9);
    });

    it('reads them once each after they end, as completed', async () => {
      for (const r of await Promise.all(slow)) assert.equal(r.status, 200, JSON.stringify(r.body));
      const order = await expectedOrder();
      assert.deepEqual(order.slice(0, 2).sort(), [...inFlight].sort(), 'the runs that ended last are the newest');
      assert.deepEqual(ids(await get('/runs')), order);
      assert.deepEqual(await get('/runs?status=processing'), []);
      const meta = await post('/runs/search', {
        facets: { statuses: { type: 'string', path: 'status' } },
        onlyMeta: true,
      });
      assert.equal(meta.count.total, 9);
      assert.deepEqual(meta.facet.statuses.buckets, [{ _id: 'completed', count: 9 }]);
      assert.deepEqual((await get('/analytics/runs/summary')).byStatus, {
        created: 0,
        processing: 0,
        completed: 9,
        failed: 0,
      });
    });
  });
}
