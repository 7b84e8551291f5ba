/**
 * Issue 16, the result cache from an interaction's cache_policy: a hit records a run with
 * `cached: true`, `cached_from`, zero provider tokens and no cost; the key covers the environment,
 * model, options, rendered prompt and the `varies_on` fields of the data; entries expire with ttl;
 * cache_and_refresh runs again with its probability. Through HTTP and the official client, on
 * both databases, against a loopback OpenAI wire server that counts what reaches it.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { startOpenAIWireServer, type WireServer } from '../support/openai-wire-server.ts';

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: the result cache`, () => {
    let srv: TestServer;
    let wire: WireServer;
    let env: string;
    let n = 0;
    let answer = 0;

    before(async () => {
      srv = await startTestServer(dialect);
      // Every provider call answers differently, so a served answer is visibly a cached one.
      wire = await startOpenAIWireServer({
        apiKey: null,
        text: () => `answer ${++answer}`,
        usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
      });
      env = (
        await srv.api('POST', '/api/v1/environments', {
          name: 'wire',
          provider: 'openai_compatible',
          endpoint_url: wire.url,
          default_model: 'gpt-4o-mini',
        })
      ).body.id;
    });
    after(async () => {
      await srv.close();
      await wire.close();
    });

    const interaction = async (cache_policy: unknown) => {
      const ix = await srv.api('POST', '/api/v1/interactions', {
        name: `cached ${++n}`,
        environment: env,
        cache_policy,
        prompts: [
          { type: 'template', template: { role: 'user', content_type: 'handlebars', content: 'Summarise {{text}}' } },
        ],
      });
      assert.equal(ix.status, 200, JSON.stringify(ix.body));
      return ix.body.id as string;
    };
    const run = (ix: string, data: Record<string, unknown>, config: Record<string, unknown> = {}) =>
      srv.api('POST', '/api/v1/runs', { interaction: ix, data, config });

    it('refuses a malformed policy, keeps a good one, and publishes it with the version', async () => {
      const bad = await srv.api('POST', '/api/v1/interactions', {
        name: 'bad policy',
        environment: env,
        cache_policy: { type: 'sometimes' },
      });
      assert.equal(bad.status, 400);
      assert.match(bad.body.message, /cache_policy/);
      const odds = await srv.api('POST', '/api/v1/interactions', {
        name: 'bad odds',
        environment: env,
        cache_policy: { type: 'cache_and_refresh', refresh_probability: 2 },
      });
      assert.equal(odds.status, 400);
      const policy = { type: 'cache', ttl: 600, varies_on: ['user'], refresh_probability: 0 };
      const ix = await interaction(policy);
      assert.deepEqual((await srv.api('GET', `/api/v1/interactions/${ix}`)).body.cache_policy, policy);
      const published = await srv.api('POST', `/api/v1/interactions/${ix}/publish`, {});
      assert.deepEqual(published.body.cache_policy, policy);
      const viaClient = await srv.client().interactions.retrieve(ix);
      assert.deepEqual((viaClient as any).cache_policy, policy);
    });

    it('answers the same request from the cache: cached, the first run named, no tokens, no cost, no provider call', async () => {
      const ix = await interaction({ type: 'cache', ttl: 600, varies_on: [], refresh_probability: 0 });
      const from = wire.requests.length;
      const first = await run(ix, { text: 'the report' });
      assert.equal(first.status, 200, JSON.stringify(first.body));
      assert.equal(first.body.cached, undefined);
      const second = await run(ix, { text: 'the report' });
      assert.equal(second.status, 200);
      assert.equal(wire.requests.length - from, 1, 'one provider call for two runs');
      assert.equal(second.body.cached, true);
      assert.equal(second.body.cached_from, first.body.id);
      assert.notEqual(second.body.id, first.body.id);
      assert.deepEqual(second.body.result, first.body.result);
      assert.deepEqual(second.body.token_use, { prompt: 0, result: 0, total: 0 });
      assert.equal(second.body.cost.total, 0);
      assert.equal(second.body.cost.price_table, 'result cache');
      const viaClient = await srv.client().runs.retrieve(second.body.id);
      assert.equal((viaClient as any).cached, true);
      // Searchable: the hit is a run of its own, with the original's id.
      const listed = await srv.api('GET', `/api/v1/runs?interaction=${ix}`);
      const items = Array.isArray(listed.body) ? listed.body : (listed.body.runs ?? listed.body.results);
      assert.ok(
        items.some((r: any) => r.id === second.body.id && r.cached === true),
        'the cached run is listed as cached',
      );
    });

    it('misses when the prompt, the options, the model or a varies_on field differ', async () => {
      const ix = await interaction({ type: 'cache', ttl: 600, varies_on: ['user'], refresh_probability: 0 });
      const base = await run(ix, { text: 'a', user: 'ada' });
      const calls = () => wire.requests.length;
      let before = calls();
      assert.equal((await run(ix, { text: 'a', user: 'ada' })).body.cached, true);
      assert.equal(calls(), before);
      for (const [data, config] of [
        [{ text: 'b', user: 'ada' }, {}],
        [{ text: 'a', user: 'bob' }, {}],
        [{ text: 'a', user: 'ada' }, { temperature: 0.1 }],
        [{ text: 'a', user: 'ada' }, { model: 'gpt-4o' }],
      ] as const) {
        before = calls();
        const r = await run(ix, data, config);
        assert.equal(r.status, 200);
        assert.equal(r.body.cached, undefined, JSON.stringify({ data, config }));
        assert.equal(calls(), before + 1);
      }
      // A data field that is neither in the prompt nor in varies_on does not split the cache.
      const other = await run(ix, { text: 'a', user: 'ada', noise: 42 });
      assert.equal(other.body.cached_from, base.body.id);
    });

    it('no_cache never serves; ttl expires; cache_and_refresh runs again with its probability', async () => {
      const never = await interaction({ type: 'no_cache', ttl: 600, varies_on: [], refresh_probability: 0 });
      await run(never, { text: 'x' });
      assert.equal((await run(never, { text: 'x' })).body.cached, undefined);
      const brief = await interaction({ type: 'cache', ttl: 1, varies_on: [], refresh_probability: 0 });
      await run(brief, { text: 'x' });
      assert.equal((await run(brief, { text: 'x' })).body.cached, true);
      await new Promise((done) => setTimeout(done, 1100));
      assert.equal((await run(brief, { text: 'x' })).body.cached, undefined, 'expired');
      const always = await interaction({ type: 'cache_and_refresh', ttl: 600, varies_on: [], refresh_probability: 1 });
      const a = await run(always, { text: 'x' });
      const b = await run(always, { text: 'x' });
      assert.equal(b.body.cached, undefined);
      assert.notDeepEqual(b.body.result, a.body.result, 'run again, with a fresh answer');
      const seldom = await interaction({ type: 'cache_and_refresh', ttl: 600, varies_on: [], refresh_probability: 0 });
      // (Another text: the key is the request, not the interaction, so 'x' would hit the answer above.)
      const c = await run(seldom, { text: 'y' });
      assert.equal(c.body.cached, undefined);
      assert.equal((await run(seldom, { text: 'y' })).body.cached_from, c.body.id);
    });

    it('streams a cached answer to the official client, and never caches a failure', async () => {
      const ix = await interaction({ type: 'cache', ttl: 600, varies_on: [], refresh_probability: 0 });
      const first = await run(ix, { text: 'streamed' });
      const chunks: string[] = [];
      const client = srv.client();
      const started = await client.interactions.execute(ix, { data: { text: 'streamed' } }, (c: string) =>
        chunks.push(c),
      );
      assert.equal(chunks.join(''), first.body.result[0].value);
      const final = await client.runs.retrieve(started.id);
      assert.equal((final as any).cached, true);
      assert.equal((final as any).cached_from, first.body.id);
      wire.options.fail = { status: 400, message: 'no such thing', times: 1 };
      const failed = await run(ix, { text: 'fails once' });
      assert.equal(failed.status, 502);
      const retried = await run(ix, { text: 'fails once' });
      assert.equal(retried.status, 200);
      assert.equal(retried.body.cached, undefined, 'the failure was not kept');
    });

    it('serves an answer that asks for tools with its calls, for the same tools only; without its run it is a miss', async () => {
      const tools = (
        await srv.api('POST', '/api/v1/environments', {
          name: `tools ${++n}`,
          provider: 'test',
          default_model: 'tools',
        })
      ).body.id;
      const ix = (
        await srv.api('POST', '/api/v1/interactions', {
          name: `cached tools ${++n}`,
          environment: tools,
          cache_policy: { type: 'cache', ttl: 600 },
          prompts: [
            { type: 'template', template: { role: 'user', content_type: 'text', content: 'Weather in Rome?' } },
          ],
        })
      ).body.id;
      const weather = {
        name: 'get_weather',
        description: 'The weather in a city',
        input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      };
      const ask = (tool_definitions: unknown[]) =>
        srv.api('POST', '/api/v1/runs', { interaction: ix, tool_definitions });
      const first = await ask([weather]);
      assert.equal(first.status, 200, JSON.stringify(first.body));
      assert.equal(first.body.finish_reason, 'tool_use');
      assert.equal(first.body.tool_use.length, 1);
      const second = await ask([weather]);
      assert.equal(second.body.cached, true);
      assert.equal(second.body.cached_from, first.body.id);
      assert.equal(second.body.finish_reason, 'tool_use');
      assert.deepEqual(second.body.tool_use, first.body.tool_use);
      assert.deepEqual((await srv.api('GET', `/api/v1/runs/${second.body.id}`)).body.tool_use, first.body.tool_use);
      const other = await ask([{ ...weather, name: 'get_forecast' }]);
      assert.equal(other.body.cached, undefined, 'other tools, another key');
      assert.equal((await srv.api('DELETE', `/api/v1/runs/${first.body.id}`)).status, 200);
      const after = await ask([weather]);
      assert.equal(after.status, 200, JSON.stringify(after.body));
      assert.equal(after.body.cached, undefined, 'the calls went with the run that answered');
      assert.equal(after.body.tool_use.length, 1);
    });
  });
}
