/**
 * Issue 18, point 5: usage analytics through HTTP and the official client (`client.analytics`,
 * `client.store.cost`), on both databases.
 *
 * Two kinds of runs in the caller's project: runs executed now on the offline `test` provider
 * (environment A prices `echo` in its config, environment B does not, so its runs cost null),
 * whose tokens and costs are read back from the runs themselves; and runs stored directly with
 * known times in March 2025 (environment "env-x", models gpt-4o and claude), for buckets. Another
 * project holds runs at the same times and executed ones: they must never be counted.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, seedEcho, startTestServer, type TestServer } from '../support/server.ts';
import { insertRuns } from '../../src/runs/search-index.ts';
import { encodeRun } from '../../src/runs/store.ts';
import { newId } from '../../src/db/ids.ts';
import type { RunDoc, RunRow } from '../../src/runs/model.ts';

const PRICES = { echo: { input: 2, output: 10 } }; // USD per million tokens
const r9 = (usd: number) => Math.round(usd * 1e9) / 1e9;

/** March 2025: the stored runs (2025-03-10 is a Monday). */
const STORED = [
  {
    at: '2025-03-10T05:10:00.000Z',
    model: 'gpt-4o',
    prompt: 100,
    result: 10,
    cost: 0.5,
    status: 'completed',
    ms: 1000,
  },
  { at: '2025-03-10T05:50:00.000Z', model: 'gpt-4o', prompt: 200, result: 20, cost: 0.25, status: 'failed', ms: 2000 },
  {
    at: '2025-03-10T07:00:00.000Z',
    model: 'claude',
    prompt: 300,
    result: 30,
    cost: null,
    status: 'completed',
    ms: 3000,
  },
  {
    at: '2025-03-11T23:59:59.999Z',
    model: 'gpt-4o',
    prompt: 400,
    result: 40,
    cost: 0.125,
    status: 'completed',
    ms: 4000,
  },
  { at: '2025-03-12T00:00:00.000Z', model: 'claude', prompt: 500, result: 50, cost: 1, status: 'completed', ms: 5000 },
] as const;

function storedRow(
  scope: { account: { id: string; name: string }; project: { id: string; name: string } },
  s: (typeof STORED)[number],
  i: number,
): RunRow {
  const doc: RunDoc = {
    result: [{ type: 'text', value: `stored ${i}` }],
    parameters: {},
    prompt: [{ role: 'user', content: 'x' }],
    config: { model: s.model },
    source: { type: 'api', label: 'apikey:t', principal_type: 'apikey', principal_id: 't', client_ip: '127.0.0.1' },
    ttl: 0,
    stream: false,
    interaction: { id: 'ix-stored', name: 'Stored interaction' },
    environment: { id: 'env-x', name: 'Env X', provider: 'openai' },
    account: scope.account,
    project: scope.project,
    created_by: 'apikey:t',
    cost:
      s.cost === null
        ? null
        : {
            input: s.cost,
            output: 0,
            cache_read: 0,
            cache_write: 0,
            reasoning: 0,
            total: s.cost,
            currency: 'USD',
            price_table: 'environment',
          },
  };
  return {
    id: newId(),
    account_id: scope.account.id,
    project_id: scope.project.id,
    interaction_id: 'ix-stored',
    environment_id: 'env-x',
    model_id: s.model,
    status: s.status,
    parent_id: null,
    finish_reason: s.status === 'completed' ? 'stop' : null,
    execution_time: s.ms,
    token_prompt: s.prompt,
    token_result: s.result,
    token_total: s.prompt + s.result,
    tags: [],
    created_at: s.at,
    updated_at: s.at,
    doc,
    executor: null,
  } as RunRow;
}

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: usage analytics`, () => {
    let srv: TestServer;
    let envA: string;
    let envB: string;
    let ixA: string;
    let ixB: string;
    const mine: any[] = [];
    let otherKey: string;
    let otherEnv: string;
    let memberKey: string;

    const get = (path: string, token?: string) => srv.api('GET', `/api/v1${path}`, undefined, token);
    const post = (path: string, body: unknown, token?: string) => srv.api('POST', `/api/v1${path}`, body, token);
    const sum = (runs: any[], f: (r: any) => number) => runs.reduce((n, r) => n + f(r), 0);

    before(async () => {
      srv = await startTestServer(dialect);
      const a = await seedEcho(srv, { name: 'Echo A', config: { prices: PRICES } });
      const b = await seedEcho(srv, { name: 'Echo B' });
      envA = a.env.id;
      envB = b.env.id;
      ixA = a.interaction.id;
      ixB = b.interaction.id;
      for (const [ix, text] of [
        [ixA, 'one two three'],
        [ixA, 'four'],
        [ixA, 'five six seven eight nine'],
        [ixB, 'ten eleven'],
        [ixB, 'twelve'],
      ] as const) {
        const r = await post('/runs', { interaction: ix, data: { text } });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        mine.push(r.body);
      }
      const { db, dialect: d } = srv.orrery.database;
      const { account, project } = srv.orrery.bootstrap;
      await insertRuns(
        db,
        d,
        STORED.map((s, i) => ({ row: storedRow({ account, project }, s, i), tags: [] })),
        (row) => encodeRun(d, row),
      );

      // Another project: executed runs and stored ones at the same times.
      const other = await post('/projects', { name: 'Other' });
      const key = await post('/apikeys', { name: 'other', project: other.body.id });
      otherKey = key.body.value;
      const o = await seedEcho(srv, { token: otherKey, config: { prices: PRICES } });
      otherEnv = o.env.id;
      for (const text of ['a b c d e f g h', 'i j k'])
        assert.equal((await post('/runs', { interaction: o.interaction.id, data: { text } }, otherKey)).status, 200);
      await insertRuns(
        db,
        d,
        STORED.map((s, i) => ({
          row: storedRow({ account, project: { id: other.body.id, name: 'Other' } }, s, i),
          tags: [],
        })),
        (row) => encodeRun(d, row),
      );
      memberKey = (await post('/apikeys', { name: 'member' })).body.value;
    });
    after(() => srv.close());

    it('executed runs carry the tokens and costs the analytics must add up', () => {
      for (const r of mine) {
        assert.equal(r.status, 'completed');
        assert.ok(r.token_use.prompt > 0 && r.token_use.result > 0);
      }
      const a = mine.slice(0, 3);
      // "Say: one two three" → 4 words in, the same 4 echoed.
      assert.deepEqual(
        a.map((r) => r.token_use.prompt),
        [4, 2, 6],
      );
      for (const r of a) assert.equal(r.cost.total, r9(r.token_use.prompt * 2e-6 + r.token_use.result * 10e-6));
      for (const r of mine.slice(3)) assert.equal(r.cost, null, 'environment B has no price for echo');
    });

    it('runs/summary counts by status, environment and interaction (all time; one environment)', async () => {
      const r = await get('/analytics/runs/summary');
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.total, 10);
      assert.deepEqual(r.body.byStatus, { created: 0, processing: 0, completed: 9, failed: 1 });
      const env = Object.fromEntries(r.body.byEnvironment.map((e: any) => [e.id, e]));
      assert.deepEqual(Object.keys(env).sort(), [envA, envB, 'env-x'].sort());
      assert.deepEqual(env['env-x'], {
        id: 'env-x',
        name: 'Env X',
        total: 5,
        byStatus: { created: 0, processing: 0, completed: 4, failed: 1 },
      });
      assert.equal(env[envA].total, 3);
      assert.equal(env[envB].total, 2);
      assert.equal(env[envA].name, 'Test env');
      assert.deepEqual(
        r.body.byEnvironment.map((e: any) => e.total),
        [5, 3, 2],
        'most runs first',
      );
      const ix = Object.fromEntries(r.body.byInteraction.map((e: any) => [e.id, e.total]));
      assert.deepEqual(ix, { [ixA]: 3, [ixB]: 2, 'ix-stored': 5 });
      assert.deepEqual(r.body.queryStats, { total: 1, failed: 0 });

      const onlyA = await srv.client().analytics.runsSummary(undefined, envA);
      assert.equal(onlyA.total, 3);
      assert.deepEqual(
        onlyA.byEnvironment.map((e) => e.id),
        [envA],
      );
      const march = await srv.client().analytics.runsSummary({ start: '2025-03-10', end: '2025-03-11' });
      assert.equal(march.total, 4, 'end as a date includes that day');
      assert.deepEqual(march.byStatus, { created: 0, processing: 0, completed: 3, failed: 1 });
    });

    it('runs/time-series: hourly buckets for up to 72 hours, daily beyond, empty ones included', async () => {
      const hourly = await srv
        .client()
        .analytics.runsTimeSeries({ start: '2025-03-10T00:00:00Z', end: '2025-03-12T00:00:00.000Z' });
      assert.equal(hourly.length, 49);
      const counts = Object.fromEntries(hourly.filter((p) => p.count).map((p) => [String(p.timestamp), p.count]));
      assert.deepEqual(counts, {
        '2025-03-10T05:00:00.000Z': 2,
        '2025-03-10T07:00:00.000Z': 1,
        '2025-03-11T23:00:00.000Z': 1,
        '2025-03-12T00:00:00.000Z': 1,
      });
      assert.equal(String(hourly[0].timestamp), '2025-03-10T00:00:00.000Z');
      assert.equal(String(hourly[48].timestamp), '2025-03-12T00:00:00.000Z');

      const daily = await get('/analytics/runs/time-series?start=2025-03-01&end=2025-03-31');
      assert.equal(daily.status, 200);
      assert.equal(daily.body.length, 31);
      assert.deepEqual(
        daily.body.filter((p: any) => p.count),
        [
          { timestamp: '2025-03-10T00:00:00.000Z', count: 3 },
          { timestamp: '2025-03-11T00:00:00.000Z', count: 1 },
          { timestamp: '2025-03-12T00:00:00.000Z', count: 1 },
        ],
      );

      // Default: the 30 days before now, by day; the runs executed now are in it, the stored ones not.
      const recent = await get('/analytics/runs/time-series');
      assert.equal(recent.body.length, 31);
      assert.equal(
        sum(recent.body, (p) => p.count),
        5,
      );
      const forA = await get(`/analytics/runs/time-series?environment=${envA}`);
      assert.equal(
        sum(forA.body, (p) => p.count),
        3,
      );
    });

    it('runs/token-usage sums the tokens and costs per environment', async () => {
      const r = await srv.client().analytics.runsTokenUsage();
      const by = Object.fromEntries(r.byEnvironment.map((e) => [e.environmentId, e as any]));
      const a = mine.slice(0, 3);
      const b = mine.slice(3);
      assert.equal(
        by[envA].totalPromptTokens,
        sum(a, (x) => x.token_use.prompt),
      );
      assert.equal(
        by[envA].totalResultTokens,
        sum(a, (x) => x.token_use.result),
      );
      assert.equal(
        by[envA].totalTokens,
        sum(a, (x) => x.token_use.total),
      );
      assert.equal(by[envA].runs, 3);
      assert.equal(by[envA].totalCost, r9(sum(a, (x) => x.cost.total)));
      assert.equal(
        by[envB].totalPromptTokens,
        sum(b, (x) => x.token_use.prompt),
      );
      assert.equal(by[envB].totalCost, null, 'no run of B has a known cost');
      assert.equal(by['env-x'].totalPromptTokens, 1500);
      assert.equal(by['env-x'].environmentName, 'Env X');
      assert.equal(by['env-x'].totalCost, 1.875);
      assert.deepEqual(
        r.byEnvironment.map((e) => e.environmentId),
        ['env-x', envA, envB].sort((x, y) => by[y].totalPromptTokens - by[x].totalPromptTokens || (x < y ? -1 : 1)),
      );
      const march = await get('/analytics/runs/token-usage?start=2025-03-11&end=2025-03-11');
      assert.deepEqual(
        march.body.byEnvironment.map((e: any) => [e.environmentId, e.totalPromptTokens, e.runs]),
        [['env-x', 400, 1]],
      );
    });

    it('cost/analytics: sums by model and by bucket (day, week, month), with pricing and coverage', async () => {
      const cost = srv.client().store.cost;
      const r = await cost.getAnalytics({ from: '2025-03-01', to: '2025-03-31', group_by: 'model', resolution: 'day' });
      assert.deepEqual(r.summary, {
        total_cost: 1.875,
        total_input_tokens: 1500,
        total_output_tokens: 150,
        total_calls: 5,
        total_duration_ms: 15000,
      });
      assert.deepEqual(r.query_range, { from: '2025-03-01T00:00:00.000Z', to: '2025-04-01T00:00:00.000Z' });
      assert.equal(r.cached, false);
      const byModel = Object.fromEntries(r.by_dimension.map((x) => [x.dimension, x]));
      assert.deepEqual(
        r.by_dimension.map((x) => x.dimension),
        ['claude', 'gpt-4o'],
        'most costly first',
      );
      assert.equal(byModel['gpt-4o'].cost, 0.875);
      assert.equal(byModel['gpt-4o'].calls, 3);
      assert.equal(byModel['gpt-4o'].input_tokens, 700);
      assert.equal(byModel['gpt-4o'].provider, 'openai');
      assert.equal(byModel.claude.cost, 1);
      assert.equal(byModel.claude.output_tokens, 80);
      assert.equal(byModel['gpt-4o'].periods!.length, 31);
      assert.deepEqual(
        byModel['gpt-4o'].periods!.filter((p) => p.calls).map((p) => [p.timestamp, p.cost, p.calls]),
        [
          ['2025-03-10T00:00:00.000Z', 0.75, 2],
          ['2025-03-11T00:00:00.000Z', 0.125, 1],
        ],
      );
      assert.equal(r.time_series.length, 31);
      assert.deepEqual(
        r.time_series.filter((p) => p.calls).map((p) => [p.timestamp, p.cost, p.calls, p.input_tokens]),
        [
          ['2025-03-10T00:00:00.000Z', 0.75, 3, 600],
          ['2025-03-11T00:00:00.000Z', 0.125, 1, 400],
          ['2025-03-12T00:00:00.000Z', 1, 1, 500],
        ],
      );
      // Prices of the models used, from the vendored table (gpt-4o is in it; "claude" is no model id it knows).
      const gpt = r.pricing.find((x) => x.model === 'gpt-4o')!;
      assert.equal(gpt.source, 'model_pricing_daily');
      assert.equal(gpt.provider, 'openai');
      assert.ok(gpt.input_price_per_m_tokens > 0 && gpt.output_price_per_m_tokens > gpt.input_price_per_m_tokens);
      assert.equal(r.pricing.find((x) => x.model === 'claude')!.source, 'unavailable');
      assert.deepEqual(r.pricing_coverage, {
        priced_calls: 4,
        unpriced_calls: 1,
        assumed_default_calls: 0,
        unpriced: [{ model: 'claude', provider: 'openai', service_tier: 'default', calls: 1 }],
      });

      const weekly = await cost.getAnalytics({
        from: '2025-03-01',
        to: '2025-03-31',
        group_by: 'environment',
        resolution: 'week',
      });
      assert.deepEqual(
        weekly.time_series.map((p) => p.timestamp),
        ['2025-02-24', '2025-03-03', '2025-03-10', '2025-03-17', '2025-03-24', '2025-03-31'].map(
          (d) => `${d}T00:00:00.000Z`,
        ),
      );
      assert.deepEqual(
        weekly.time_series.map((p) => p.calls),
        [0, 0, 5, 0, 0, 0],
      );
      assert.deepEqual(
        weekly.by_dimension.map((x) => [x.dimension, x.label, x.cost]),
        [['env-x', 'Env X', 1.875]],
      );
      const monthly = await cost.getAnalytics({
        from: Date.parse('2025-02-15T00:00:00Z'),
        to: Date.parse('2025-04-15T00:00:00Z'),
        resolution: 'month',
        group_by: 'interaction',
      });
      assert.deepEqual(
        monthly.time_series.map((p) => [p.timestamp, p.calls]),
        [
          ['2025-02-01T00:00:00.000Z', 0],
          ['2025-03-01T00:00:00.000Z', 5],
          ['2025-04-01T00:00:00.000Z', 0],
        ],
      );
      assert.deepEqual(
        monthly.by_dimension.map((x) => [x.dimension, x.label]),
        [['ix-stored', 'Stored interaction']],
      );

      // Hourly by default over a short range; filters by model and environment.
      const hours = await post('/cost/analytics', {
        from: '2025-03-10T05:00:00Z',
        to: '2025-03-10T08:00:00Z',
        model: 'gpt-4o',
      });
      assert.equal(hours.status, 200, JSON.stringify(hours.body));
      assert.deepEqual(
        hours.body.time_series.map((p: any) => p.calls),
        [2, 0, 0, 0],
        'the end instant is inclusive to the millisecond',
      );
      assert.equal(hours.body.summary.total_cost, 0.75);
    });

    it('cost/analytics of the runs executed now: costs from the environment price, by provider and environment', async () => {
      const a = mine.slice(0, 3);
      const byEnv = await post('/cost/analytics', { group_by: 'environment' });
      const x = Object.fromEntries(byEnv.body.by_dimension.map((d: any) => [d.dimension, d]));
      assert.equal(x[envA].cost, r9(sum(a, (r) => r.cost.total)));
      assert.equal(x[envA].calls, 3);
      assert.equal(
        x[envA].input_tokens,
        sum(a, (r) => r.token_use.prompt),
      );
      assert.equal(x[envB].cost, 0);
      assert.equal(byEnv.body.summary.total_calls, 5);
      assert.deepEqual(byEnv.body.pricing_coverage.unpriced, [
        { model: 'echo', provider: 'test', service_tier: 'default', calls: 2 },
      ]);
      const byProvider = await post('/cost/analytics', { group_by: 'provider' });
      assert.deepEqual(
        byProvider.body.by_dimension.map((d: any) => [d.dimension, d.calls]),
        [['test', 5]],
      );
      const onlyA = await post('/cost/analytics', { environment_id: envA });
      assert.equal(onlyA.body.summary.total_calls, 3);
      const byKey = await post('/cost/analytics', { principal_id: `apikey:${mine[0].source.principal_id}` });
      assert.equal(byKey.body.summary.total_calls, 5, 'the runs the admin key started');
      assert.equal((await post('/cost/analytics', { principal_id: 'someone-else' })).body.summary.total_calls, 0);
      assert.equal((await post('/cost/analytics', { service_tier: 'priority' })).body.summary.total_calls, 0);
      assert.equal((await post('/cost/analytics', { service_tier: 'default' })).body.summary.total_calls, 5);
      const provider = await post('/cost/analytics', { provider: 'openai' });
      assert.equal(provider.body.summary.total_calls, 0, 'the runs of the last 30 days are all on the test provider');
    });

    it('cost/analytics/global answers for the account (admin keys only); scope org likewise', async () => {
      const g = await srv.client().store.cost.getGlobalAnalytics({ from: '2025-03-01', to: '2025-03-31' });
      assert.deepEqual(
        g.by_dimension.map((x) => [x.dimension, x.label, x.calls, x.cost]),
        [[srv.orrery.bootstrap.account.id, srv.orrery.bootstrap.account.name, 10, 3.75]],
      );
      const byProject = await post('/cost/analytics/global', {
        from: '2025-03-01',
        to: '2025-03-31',
        group_by: 'project',
      });
      assert.deepEqual(
        byProject.body.by_dimension.map((x: any) => x.calls),
        [5, 5],
      );
      const org = await post('/cost/analytics', { scope: 'org', from: '2025-03-01', to: '2025-03-31' });
      assert.equal(org.body.summary.total_calls, 10);
      for (const key of [memberKey, otherKey]) {
        const denied = await post('/cost/analytics/global', {}, key);
        assert.equal(denied.status, 403);
        assert.equal(denied.body.error, 'forbidden');
        assert.equal((await post('/cost/analytics', { scope: 'org' }, key)).status, 403);
      }
      const elsewhere = await post('/cost/analytics', { project_id: 'someone-elses' }, memberKey);
      assert.equal(elsewhere.status, 403);
    });

    it('cost/model-prices lists the vendored table; run-price prices a run (and compares with include_comparison_pricing)', async () => {
      const cost = srv.client().store.cost;
      const prices = await cost.getModelPrices({ from: '2025-03-01', to: '2025-03-31' });
      assert.ok(prices.prices.length > 500);
      const gpt = prices.prices.find((x) => x.model === 'gpt-4o')!;
      assert.equal(gpt.provider, 'openai');
      assert.equal(gpt.input_list_price_per_m_tokens, gpt.input_effective_price_per_m_tokens);
      assert.deepEqual(prices.effective_range, { from: '2025-03-01T00:00:00.000Z', to: '2025-04-01T00:00:00.000Z' });
      assert.match(prices.list_price_date!, /^\d{4}-\d{2}-\d{2}$/);

      const run = mine[0];
      const price = await cost.getRunPrice({ run_id: run.id });
      assert.equal(price.matched_events, 1);
      assert.equal(price.pricing_source, 'historical');
      assert.deepEqual(price.summary, {
        total_cost: run.cost.total,
        total_input_tokens: run.token_use.prompt,
        total_output_tokens: run.token_use.result,
        total_calls: 1,
        total_duration_ms: run.execution_time,
      });
      assert.deepEqual(
        price.by_model.map((m) => [m.dimension, m.provider, m.cost]),
        [['echo', 'test', run.cost.total]],
      );
      assert.deepEqual(price.pricing, [
        {
          model: 'echo',
          provider: 'test',
          input_price_per_m_tokens: 0,
          output_price_per_m_tokens: 0,
          source: 'unavailable',
        },
      ]);
      const compared = await cost.getRunPriceComparison({ run_id: run.id });
      assert.equal(compared.pricing!.length, prices.prices.length, 'the whole catalog');
      assert.equal(compared.summary.total_cost, run.cost.total);

      const missing = await post('/cost/run-price', { run_id: 'nope' });
      assert.equal(missing.status, 404);
      const noId = await post('/cost/run-price', {});
      assert.equal(noId.status, 400);
      const theirs = await post('/cost/run-price', { run_id: run.id }, otherKey);
      assert.equal(theirs.status, 404, "another project's run is not found");
    });

    it('refuses bad dates, reversed or too long ranges and environments not of the project', async () => {
      const bad = [
        ['/analytics/runs/summary?start=yesterday', /start must be an ISO 8601 date/],
        ['/analytics/runs/summary?start=2025-02-30', /start must be an ISO 8601 date/],
        ['/analytics/runs/time-series?start=2025-03-10&end=2025-03-01', /start must come before end/],
        ['/analytics/runs/token-usage?start=2024-01-01&end=2025-03-01', /spans 426 days; at most 366/],
        ['/analytics/runs/time-series?start=2020-01-01', /at most 366/],
      ] as const;
      for (const [path, message] of bad) {
        const r = await get(path);
        assert.equal(r.status, 400, path);
        assert.equal(r.body.error, 'bad_request');
        assert.match(r.body.message, message, path);
      }
      assert.equal(
        (await get('/analytics/runs/summary?start=2024-03-01&end=2025-02-28')).status,
        200,
        '365 days are fine',
      );
      for (const env of ['nope', otherEnv]) {
        const r = await get(`/analytics/runs/summary?environment=${env}`);
        assert.equal(r.status, 404, env);
        assert.equal(r.body.error, 'not_found');
      }
      const costBad: Array<[unknown, RegExp]> = [
        [{ from: 'soon' }, /from must be an ISO 8601 date/],
        [{ from: '2025-03-10', to: '2025-03-01' }, /from must come before to/],
        [{ from: '2023-01-01', to: '2025-01-01' }, /at most 366/],
        [{ group_by: 'colour' }, /group_by must be one of/],
        [{ group_by: 'service_tier' }, /not tracked by Orrery/],
        [{ resolution: 'minute' }, /resolution must be one of/],
        [{ scope: 'galaxy' }, /scope must be project or org/],
      ];
      for (const [body, message] of costBad) {
        const r = await post('/cost/analytics', body);
        assert.equal(r.status, 400, JSON.stringify(body));
        assert.match(r.body.message, message);
      }
      assert.equal((await post('/cost/analytics', { environment_id: otherEnv })).status, 404);
    });

    it("never counts another project's runs", async () => {
      const theirs = await get('/analytics/runs/summary', otherKey);
      assert.equal(theirs.body.total, 7);
      const usage = await get('/analytics/runs/token-usage', otherKey);
      assert.deepEqual(usage.body.byEnvironment.map((e: any) => e.environmentId).sort(), [otherEnv, 'env-x'].sort());
      const cost = await post('/cost/analytics', { from: '2025-03-01', to: '2025-03-31' }, otherKey);
      assert.equal(cost.body.summary.total_calls, 5);
      assert.equal(cost.body.summary.total_cost, 1.875);
      const mineNow = await get('/analytics/runs/summary');
      assert.equal(mineNow.body.total, 10);
    });
  });
}
