/**
 * Issue 16, run cost: every run carries `cost {input, output, cache_read, cache_write, reasoning,
 * total, currency, price_table}` from the vendored LiteLLM table (src/pricing/prices.json) or the
 * environment's `config.prices` (USD per million tokens); unknown models cost null. Cached and
 * reasoning tokens are priced apart. `cost.total` is a number field of run search (Lucene ranges,
 * with filters, facets). Through HTTP and the official client, on both databases, against the
 * loopback OpenAI wire server; plus unit tests of the provider/model key mapping and arithmetic.
 * Expectations are computed from the vendored JSON, read here on its own, not from cost.ts.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, Migrator, PostgresDialect, SqliteDialect } from 'kysely';
import {
  TEST_DIALECTS,
  createPgDatabase,
  seedEcho,
  startTestServer,
  testPgPool,
  type TestServer,
} from '../support/server.ts';
import { startOpenAIWireServer, type WireServer } from '../support/openai-wire-server.ts';
import { costOf, priceUsage } from '../../src/pricing/cost.ts';
import { OrreryMigrations } from '../../src/db/migrations.ts';
import { postgresDialect, sqliteDialect, type OrreryDialect } from '../../src/db/dialect.ts';
import type { Database } from '../../src/db/schema.ts';
import { parseLucene } from '../../src/query/lucene/index.ts';
import { compileRunQuery } from '../../src/runs/lucene-sql/index.ts';
import { encodeRun } from '../../src/runs/store.ts';
import { findRuns, whereOf } from '../../src/runs/search-store.ts';
import { generateRuns, rng } from './search-fixtures.ts';

interface Entry {
  litellm_provider: string;
  input_cost_per_token: number;
  output_cost_per_token: number;
  cache_read_input_token_cost?: number;
  cache_creation_input_token_cost?: number;
  output_cost_per_reasoning_token?: number;
}
const TABLE = JSON.parse(readFileSync(new URL('../../src/pricing/prices.json', import.meta.url), 'utf8')) as {
  header: { source: string; date: string; licence: string };
  models: Record<string, Entry>;
};
const LITELLM = `litellm ${TABLE.header.date}`;
const entry = (key: string): Entry => {
  const e = TABLE.models[key];
  assert.ok(e, `the vendored table prices ${key}`);
  return e;
};
const r9 = (usd: number) => Math.round(usd * 1e9) / 1e9;

/** The expected cost of OpenAI-style usage (prompt and result include the cached / reasoning parts). */
function expected(
  p: { input: number; output: number; cache_read?: number; cache_write?: number; reasoning?: number },
  u: { prompt: number; result: number; cache_read?: number; cache_write?: number; reasoning?: number },
  price_table: string,
) {
  const cr = u.cache_read ?? 0;
  const cw = u.cache_write ?? 0;
  const rs = u.reasoning ?? 0;
  const parts = {
    input: r9((u.prompt - cr - cw) * p.input),
    output: r9((u.result - rs) * p.output),
    cache_read: r9(cr * (p.cache_read ?? p.input)),
    cache_write: r9(cw * (p.cache_write ?? p.input)),
    reasoning: r9(rs * (p.reasoning ?? p.output)),
  };
  return {
    ...parts,
    total: r9(parts.input + parts.output + parts.cache_read + parts.cache_write + parts.reasoning),
    currency: 'USD',
    price_table,
  };
}
const tablePrices = (e: Entry) => ({
  input: e.input_cost_per_token,
  output: e.output_cost_per_token,
  cache_read: e.cache_read_input_token_cost,
  cache_write: e.cache_creation_input_token_cost,
  reasoning: e.output_cost_per_reasoning_token,
});

describe('costOf: the price table, key mapping and arithmetic (unit)', () => {
  const usage = { prompt: 1000, result: 400, total: 1400 };

  it('the vendored table is dated, sourced, licensed and small', () => {
    assert.match(TABLE.header.date, /^\d{4}-\d{2}-\d{2}$/);
    assert.match(TABLE.header.source, /BerriAI\/litellm/);
    assert.match(TABLE.header.licence, /MIT/);
    assert.ok(
      readFileSync(new URL('../../src/pricing/LICENSE-litellm', import.meta.url), 'utf8').includes(
        'Copyright (c) 2023 Berri AI',
      ),
    );
    assert.ok(Object.keys(TABLE.models).length > 100);
    assert.ok(readFileSync(new URL('../../src/pricing/prices.json', import.meta.url)).length < 400_000);
  });

  it('maps each provider id to LiteLLM keys: bare, prefixed, Bedrock geo profiles and ARNs, Vertex paths and versions, Azure', () => {
    const cases: [string, string, string][] = [
      ['openai', 'gpt-4o-mini', 'gpt-4o-mini'],
      ['anthropic', 'claude-sonnet-4-5', 'claude-sonnet-4-5'],
      ['bedrock', 'anthropic.claude-sonnet-4-5-20250929-v1:0', 'anthropic.claude-sonnet-4-5-20250929-v1:0'],
      // A geography's own price when the table has one…
      ['bedrock', 'us.anthropic.claude-sonnet-4-5-20250929-v1:0', 'us.anthropic.claude-sonnet-4-5-20250929-v1:0'],
      // …and an inference-profile ARN ends with the model id.
      [
        'bedrock',
        'arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-5-20250929-v1:0',
        'us.anthropic.claude-sonnet-4-5-20250929-v1:0',
      ],
      ['vertexai', 'gemini-2.5-pro', 'gemini-2.5-pro'],
      ['vertexai', 'publishers/google/models/gemini-2.5-flash', 'gemini-2.5-flash'],
      [
        'vertexai',
        'locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929',
        'vertex_ai/claude-sonnet-4-5@20250929',
      ],
      ['vertexai', 'claude-sonnet-4-5', 'vertex_ai/claude-sonnet-4-5'],
      ['groq', 'llama-3.3-70b-versatile', 'groq/llama-3.3-70b-versatile'],
      ['groq', 'groq/llama-3.3-70b-versatile', 'groq/llama-3.3-70b-versatile'],
      ['togetherai', 'meta-llama/Llama-3.3-70B-Instruct-Turbo', 'together_ai/meta-llama/Llama-3.3-70B-Instruct-Turbo'],
      ['mistralai', 'mistral-large-latest', 'mistral/mistral-large-latest'],
      ['xai', 'grok-3', 'xai/grok-3'],
      ['watsonx', 'ibm/granite-3-8b-instruct', 'watsonx/ibm/granite-3-8b-instruct'],
      // Azure: the Azure entry for a deployment named as a model…
      ['azure_openai', 'gpt-4o-mini', 'azure/gpt-4o-mini'],
    ];
    for (const [provider, model, key] of cases) {
      assert.deepEqual(
        costOf({ provider, model, usage }),
        expected(tablePrices(entry(key)), usage, LITELLM),
        `${provider} ${model} → ${key}`,
      );
    }
    // The table's Azure and OpenAI prices differ for gpt-4o-mini, so the mapping above is not a coincidence.
    assert.notEqual(entry('azure/gpt-4o-mini').input_cost_per_token, entry('gpt-4o-mini').input_cost_per_token);
    // The geo-less Bedrock price differs from the US profile's.
    assert.notEqual(
      entry('anthropic.claude-sonnet-4-5-20250929-v1:0').input_cost_per_token,
      entry('us.anthropic.claude-sonnet-4-5-20250929-v1:0').input_cost_per_token,
    );
  });

  it('unknown: a deployment name that is no model, a self-hosted server, the test provider, no usage', () => {
    assert.equal(costOf({ provider: 'azure_openai', model: 'prod-deployment-7', usage }), null);
    assert.equal(costOf({ provider: 'openai_compatible', model: 'gpt-4o-mini', usage }), null);
    assert.equal(costOf({ provider: 'huggingface_ie', model: 'tgi', usage }), null);
    assert.equal(costOf({ provider: 'test', model: 'echo', usage }), null);
    assert.equal(costOf({ provider: 'openai', model: 'gpt-unknown-9', usage }), null);
    assert.equal(
      costOf({ provider: 'groq', model: 'gpt-4o-mini', usage }),
      null,
      'an OpenAI key does not price a Groq model',
    );
    assert.equal(costOf({ provider: 'openai', model: 'gpt-4o-mini', usage: undefined }), null);
    assert.equal(costOf({ provider: undefined, model: 'gpt-4o-mini', usage }), null);
  });

  it('cached and reasoning tokens priced apart, never twice; exact arithmetic in USD per million', () => {
    const prices = { 'my-model': { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75, reasoning: 20 } };
    const u = { prompt: 1234, result: 567, total: 1801, cache_read: 200, cache_write: 34, reasoning: 67 };
    assert.deepEqual(costOf({ provider: 'test', model: 'my-model', usage: u, prices }), {
      input: 0.003,
      output: 0.0075,
      cache_read: 0.00006,
      cache_write: 0.0001275,
      reasoning: 0.00134,
      total: 0.0120275,
      currency: 'USD',
      price_table: 'environment',
    });
    // Without their own prices, cache tokens cost input and reasoning tokens output.
    const plain = costOf({ provider: 'test', model: 'p', usage: u, prices: { p: { input: 1, output: 2 } } })!;
    assert.equal(plain.total, r9((1234 * 1 + 567 * 2) / 1e6));
    // Reasoning never exceeds the output it is part of; negative or absent counts are zero.
    assert.deepEqual(
      priceUsage({ prompt: 10, result: 5, reasoning: 50 }, { input: 1e-6, output: 2e-6, reasoning: 4e-6 }, 'x'),
      {
        input: 0.00001,
        output: 0,
        cache_read: 0,
        cache_write: 0,
        reasoning: 0.00002,
        total: 0.00003,
        currency: 'USD',
        price_table: 'x',
      },
    );
    assert.equal(priceUsage({ prompt: -5 }, { input: 1, output: 1 }, 'x').total, 0);
    // Rounded to 1e-9 USD.
    assert.equal(
      costOf({
        provider: 'test',
        model: 'p',
        usage: { prompt: 1, result: 0 },
        prices: { p: { input: 0.0001234, output: 0 } },
      })!.total,
      0,
    );
    assert.equal(
      costOf({
        provider: 'test',
        model: 'p',
        usage: { prompt: 7, result: 0 },
        prices: { p: { input: 0.15, output: 0 } },
      })!.total,
      0.00000105,
    );
  });

  it('config.prices wins over the table, and malformed entries are ignored', () => {
    const own = costOf({
      provider: 'openai',
      model: 'gpt-4o-mini',
      usage,
      prices: { 'gpt-4o-mini': { input: 1, output: 1 } },
    })!;
    assert.equal(own.price_table, 'environment');
    assert.equal(own.total, r9(1400 / 1e6));
    for (const bad of [
      { 'gpt-4o-mini': { input: 'free' } },
      { 'gpt-4o-mini': { input: -1, output: 1 } },
      { 'gpt-4o-mini': 3 },
      'nope',
      null,
    ]) {
      assert.equal(
        costOf({ provider: 'openai', model: 'gpt-4o-mini', usage, prices: bad })!.price_table,
        LITELLM,
        JSON.stringify(bad),
      );
    }
  });
});

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: run cost`, () => {
    let srv: TestServer;
    let wire: WireServer;
    let n = 0;

    before(async () => {
      srv = await startTestServer(dialect);
      wire = await startOpenAIWireServer({
        text: 'Priced answer from the wire',
        usage: { prompt_tokens: 1000, completion_tokens: 500, total_tokens: 1500 },
      });
    });
    after(async () => {
      await srv?.close();
      await wire?.close();
    });

    const setup = async (provider: string, env: Record<string, unknown>) => {
      const e = await srv.api('POST', '/api/v1/environments', {
        name: `${provider} ${++n}`,
        provider,
        endpoint_url: wire.url,
        apiKey: 'sk-test',
        ...env,
      });
      assert.equal(e.status, 200, JSON.stringify(e.body));
      const ix = await srv.api('POST', '/api/v1/interactions', {
        name: `cost ix ${n}`,
        status: 'draft',
        environment: e.body.id,
        prompts: [
          { type: 'template', template: { role: 'user', content_type: 'text', content: 'What does this cost?' } },
        ],
      });
      assert.equal(ix.status, 200, JSON.stringify(ix.body));
      return { env: e.body.id as string, ix: ix.body.id as string };
    };
    const run = async (ix: string, extra: Record<string, unknown> = {}) => {
      const r = await srv.api('POST', '/api/v1/runs', { interaction: ix, ...extra });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body;
    };

    it('openai gpt-4o-mini: the table price × tokens, on the answer, GET, the official client and list items', async () => {
      wire.options.usage = { prompt_tokens: 1000, completion_tokens: 500, total_tokens: 1500 };
      const { ix } = await setup('openai', { default_model: 'gpt-4o-mini' });
      const want = expected(tablePrices(entry('gpt-4o-mini')), { prompt: 1000, result: 500 }, LITELLM);
      assert.ok(want.total > 0);
      const answered = await run(ix);
      assert.equal(answered.status, 'completed');
      assert.deepEqual(answered.cost, want);
      assert.deepEqual((await srv.api('GET', `/api/v1/runs/${answered.id}`)).body.cost, want);
      const viaClient = await srv.client().runs.retrieve(answered.id);
      assert.deepEqual((viaClient as any).cost, want);
      const listed = await srv.api('GET', `/api/v1/runs?interaction=${ix}`);
      assert.equal(listed.status, 200);
      assert.deepEqual(listed.body.find((x: any) => x.id === answered.id).cost, want, 'run references carry cost');
    });

    it('cached and reasoning tokens priced apart (blocking and streamed), not counted twice', async () => {
      wire.options.usage = {
        prompt_tokens: 2000,
        completion_tokens: 800,
        total_tokens: 2800,
        prompt_tokens_details: { cached_tokens: 1200 },
        completion_tokens_details: { reasoning_tokens: 300 },
      };
      try {
        const { ix } = await setup('openai', { default_model: 'o3-mini' });
        const e = entry('o3-mini');
        assert.ok(
          e.cache_read_input_token_cost !== undefined && e.cache_read_input_token_cost < e.input_cost_per_token,
        );
        const want = expected(tablePrices(e), { prompt: 2000, result: 800, cache_read: 1200, reasoning: 300 }, LITELLM);
        assert.equal(want.input, r9(800 * e.input_cost_per_token));
        assert.equal(want.cache_read, r9(1200 * e.cache_read_input_token_cost));
        assert.equal(want.output, r9(500 * e.output_cost_per_token));
        assert.equal(want.reasoning, r9(300 * (e.output_cost_per_reasoning_token ?? e.output_cost_per_token)));
        const blocking = await run(ix);
        assert.deepEqual(blocking.cost, want);
        // The cached part of the prompt is in token_use too (the Anthropic door answers it as usage).
        assert.deepEqual(blocking.token_use, {
          prompt: 2000,
          result: 800,
          total: 2800,
          cache_read: 1200,
          cache_write: 0,
        });
        const chunks: string[] = [];
        const streamed = await srv.client().interactions.execute(ix, {}, (c: string) => chunks.push(c));
        assert.ok(chunks.length > 1);
        const final = await srv.client().runs.retrieve(streamed.id);
        assert.equal(final.status, 'completed');
        assert.deepEqual((final as any).cost, want);
      } finally {
        wire.options.usage = { prompt_tokens: 1000, completion_tokens: 500, total_tokens: 1500 };
      }
    });

    it('groq and azure_openai environments are priced by their own LiteLLM entries', async () => {
      const groq = await setup('groq', { default_model: 'llama-3.3-70b-versatile' });
      assert.deepEqual(
        (await run(groq.ix)).cost,
        expected(tablePrices(entry('groq/llama-3.3-70b-versatile')), { prompt: 1000, result: 500 }, LITELLM),
      );
      const azure = await setup('azure_openai', { endpoint_url: wire.origin, default_model: 'gpt-4o-mini' });
      assert.deepEqual(
        (await run(azure.ix)).cost,
        expected(tablePrices(entry('azure/gpt-4o-mini')), { prompt: 1000, result: 500 }, LITELLM),
      );
      const deployment = await setup('azure_openai', { endpoint_url: wire.origin, default_model: 'prod-deployment-7' });
      assert.equal((await run(deployment.ix)).cost, null, 'a deployment name the table does not know');
    });

    it('an unknown model costs null; config.prices prices it (and overrides the table)', async () => {
      const unknown = await setup('openai', { default_model: 'my-private-model' });
      const r = await run(unknown.ix);
      assert.equal(r.status, 'completed');
      assert.equal(r.cost, null);
      assert.equal(((await srv.client().runs.retrieve(r.id)) as any).cost, null);
      const priced = await setup('openai', {
        default_model: 'my-private-model',
        config: { prices: { 'my-private-model': { input: 2, output: 8 }, 'gpt-4o-mini': { input: 100, output: 100 } } },
      });
      assert.deepEqual((await run(priced.ix)).cost, {
        input: 0.002,
        output: 0.004,
        cache_read: 0,
        cache_write: 0,
        reasoning: 0,
        total: 0.006,
        currency: 'USD',
        price_table: 'environment',
      });
      const overridden = await run(priced.ix, { config: { model: 'gpt-4o-mini' } });
      assert.deepEqual(overridden.cost, {
        input: 0.1,
        output: 0.05,
        cache_read: 0,
        cache_write: 0,
        reasoning: 0,
        total: 0.15,
        currency: 'USD',
        price_table: 'environment',
      });
    });

    it('the test provider: unpriced (null) unless config.prices gives its model a price', async () => {
      const free = await seedEcho(srv, { name: 'Echo unpriced' });
      const r = await run(free.interaction.id, { data: { text: 'one two three' } });
      assert.equal(r.status, 'completed');
      assert.equal(r.cost, null);
      const paid = await seedEcho(srv, { name: 'Echo priced', config: { prices: { echo: { input: 3, output: 15 } } } });
      const p = await run(paid.interaction.id, { data: { text: 'one two three' } });
      const { prompt, result } = p.token_use;
      assert.ok(prompt > 0 && result > 0);
      assert.deepEqual(p.cost, expected({ input: 3e-6, output: 15e-6 }, { prompt, result }, 'environment'));
      assert.equal(p.cost.total, r9(prompt * 3e-6 + result * 15e-6));
    });

    it('search: cost.total in Lucene ranges and comparisons, with filters, in facets; the official client', async () => {
      const tag = `cost-search-${dialect}`;
      const { interaction } = await seedEcho(srv, {
        name: 'Echo search',
        config: { prices: { echo: { input: 1000, output: 1000 } } },
      });
      const unpricedEcho = await seedEcho(srv, { name: 'Echo search unpriced' });
      const texts = [
        'one',
        'one two three four five',
        'one two three four five six seven eight nine ten eleven twelve',
      ];
      const priced: { id: string; total: number }[] = [];
      for (const text of texts) {
        const r = await run(interaction.id, { data: { text }, tags: [tag] });
        priced.push({ id: r.id, total: r.cost.total });
      }
      const none = await run(unpricedEcho.interaction.id, { data: { text: 'one' }, tags: [tag] });
      assert.equal(none.cost, null);
      const [a, b, c] = priced;
      assert.ok(a.total < b.total && b.total < c.total, JSON.stringify(priced));

      const search = async (body: Record<string, unknown>) => {
        const res = await srv.api('POST', '/api/v1/runs/search', body);
        assert.equal(res.status, 200, JSON.stringify(res.body));
        return res.body;
      };
      const ids = async (query: string, filters?: Record<string, unknown>) =>
        ((await search({ query: `tags:${tag} AND (${query})`, ...(filters ? { filters } : {}) })) as any[])
          .map((x) => x.id)
          .sort();
      const sorted = (...xs: { id: string }[]) => xs.map((x) => x.id).sort();

      assert.deepEqual(await ids(`cost.total:[${a.total} TO ${b.total}]`), sorted(a, b));
      assert.deepEqual(await ids(`cost.total:{${a.total} TO ${c.total}}`), sorted(b));
      assert.deepEqual(await ids(`cost.total:>${b.total}`), sorted(c));
      assert.deepEqual(await ids(`cost.total:<=${b.total}`), sorted(a, b));
      assert.deepEqual(await ids(`cost.total:${a.total}`), sorted(a));
      assert.deepEqual(await ids('cost.total:[* TO *]'), sorted(a, b, c), 'an unpriced run has no cost.total');
      assert.deepEqual(await ids('NOT _exists_:cost.total'), sorted(none));
      assert.deepEqual(
        await ids('cost.total:>0', { status: 'completed', interaction: interaction.id }),
        sorted(a, b, c),
      );
      assert.deepEqual(await ids('cost.total:>0', { status: 'failed' }), []);
      // Results are run references with cost.
      const refs = (await search({ query: `tags:${tag} AND cost.total:${c.total}` })) as any[];
      assert.equal(refs[0].cost.total, c.total);
      assert.equal(refs[0].cost.price_table, 'environment');

      // A number facet over cost.total: buckets by boundaries, the unpriced run in the default bucket.
      const faceted = await search({
        query: `tags:${tag}`,
        facets: {
          cost: { type: 'number', path: 'cost.total', boundaries: [0, b.total, c.total + 1], default: 'unknown' },
        },
        onlyMeta: true,
      });
      assert.deepEqual(faceted, {
        count: { total: 4 },
        facet: {
          cost: {
            buckets: [
              { _id: 0, count: 1 },
              { _id: b.total, count: 2 },
              { _id: 'unknown', count: 1 },
            ],
          },
        },
      });
      // The type defaults to the field's (number).
      const bare = await search({
        query: `tags:${tag}`,
        facets: { cost: { path: 'cost.total', boundaries: [0, 1e9] } },
        onlyMeta: true,
      });
      assert.deepEqual(bare.facet.cost.buckets, [{ _id: 0, count: 3 }]);

      // The official client: search (a bare array of run references) and facets by value.
      const client = srv.client();
      const found = await client.runs.search({ query: { query: `tags:${tag} AND cost.total:>=${b.total}` } } as any);
      assert.deepEqual((found as any[]).map((x) => x.id).sort(), sorted(b, c));
      const facets = (await client.runs.computeFacets({
        facets: [{ name: 'cost', field: 'cost.total' }],
        query: { query: `tags:${tag}` },
      } as any)) as any;
      assert.equal(facets.total, 4);
      assert.equal(facets.cost.length, 4, JSON.stringify(facets.cost));
      assert.deepEqual(
        facets.cost.map((x: any) => x.count),
        [1, 1, 1, 1],
      );
      assert.ok(
        facets.cost.some((x: any) => x._id === null),
        'the unpriced run is the null bucket',
      );

      // A bad facet on a string field names cost.total among the number fields.
      const bad = await srv.api('POST', '/api/v1/runs/search', {
        facets: { f: { type: 'number', path: 'status', boundaries: [1, 2] } },
      });
      assert.equal(bad.status, 400);
      assert.match(bad.body.message, /execution_time, cost\.total/);
    });
  });
}

const SCOPE = { account: { id: 'acc', name: 'Account' }, project: { id: 'prj', name: 'Project' } };

async function openDb(
  dialect: 'sqlite' | 'postgres',
): Promise<{ db: Kysely<Database>; d: OrreryDialect; close: () => Promise<void> }> {
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'orrery-cost-'));
    const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: new SQLite(join(dir, 'o.db')) }) });
    return {
      db,
      d: sqliteDialect,
      close: async () => {
        await db.destroy();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const pgdb = await createPgDatabase();
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: testPgPool(pgdb.url, 2) }) });
  return {
    db,
    d: postgresDialect,
    close: async () => {
      await db.destroy();
      await pgdb.drop();
    },
  };
}

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: migration 0009 fills cost_total from the runs already stored`, () => {
    let close: (() => Promise<void>) | undefined;
    after(() => close?.());

    it('a stored doc.cost.total becomes the column; others stay NULL; cost.total ranges find them', async () => {
      const opened = await openDb(dialect);
      close = opened.close;
      const { db, d } = opened;
      const migrator = new Migrator({ db, provider: new OrreryMigrations(d.name) });
      const before = await migrator.migrateTo('0008_jst_function_bodies');
      assert.equal(before.error, undefined, String(before.error));
      const runs = generateRuns(rng(7), 60, SCOPE);
      const totals = new Map<string, number>();
      runs.forEach(({ row }, i) => {
        if (i % 3 === 2) return;
        const total = i % 3 === 0 ? r9(i * 0.000123) : i; // fractions and whole numbers
        totals.set(row.id, total);
        (row.doc as Record<string, unknown>).cost = {
          input: total,
          output: 0,
          cache_read: 0,
          cache_write: 0,
          reasoning: 0,
          total,
          currency: 'USD',
          price_table: 'environment',
        };
      });
      await db.transaction().execute(async (trx) => {
        // Rows as the store wrote them before 0009 (SQLite: each with its own search_rowid).
        for (const [i, { row }] of runs.entries()) {
          await trx
            .insertInto('runs')
            .values({ ...encodeRun(d, row), ...(d.name === 'sqlite' ? { search_rowid: i + 1 } : {}) } as never)
            .execute();
        }
      });
      const latest = await migrator.migrateToLatest();
      assert.equal(latest.error, undefined, String(latest.error));
      const stored = await db.selectFrom('runs').select(['id', 'cost_total']).execute();
      assert.equal(stored.length, runs.length);
      for (const x of stored)
        assert.equal(x.cost_total === null ? null : Number(x.cost_total), totals.get(x.id) ?? null, x.id);

      const search = async (q: string) => {
        const where = whereOf(
          d,
          { account: SCOPE.account.id, project: SCOPE.project.id },
          {},
          compileRunQuery(parseLucene(q), { dialect: d.name }),
        );
        return (await findRuns(db, d, where, 1000, 0)).map((x) => x.id).sort();
      };
      const ids = (test: (t: number) => boolean) =>
        [...totals]
          .filter(([, t]) => test(t))
          .map(([id]) => id)
          .sort();
      assert.deepEqual(
        await search('cost.total:[0.001 TO 10]'),
        ids((t) => t >= 0.001 && t <= 10),
      );
      assert.deepEqual(
        await search('cost.total:>20'),
        ids((t) => t > 20),
      );
      assert.deepEqual(
        await search('_exists_:cost.total'),
        ids(() => true),
      );
      assert.ok(ids((t) => t >= 0.001 && t <= 10).length > 3 && ids((t) => t > 20).length > 3);
    });
  });
}
