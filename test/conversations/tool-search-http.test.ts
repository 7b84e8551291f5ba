import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import {
  startBedrockWireServer,
  TEST_ACCESS_KEY_ID,
  TEST_SECRET,
  type BedrockWireServer,
} from '../support/bedrock-wire-server.ts';

const tool = (name: string) => ({
  name,
  description: `The ${name} tool`,
  input_schema: { type: 'object', properties: { q: { type: 'string' } } },
});
const TOOLS = [tool('get_weather'), tool('lookup_order'), tool('search_web')];

/** The tool names the user message asks for, in order (a name may come twice): one toolUse block each. */
const asked = (body: any): string[] => {
  const text = String(body.messages?.[0]?.content?.[0]?.text ?? '');
  return text.split(/\s+/).filter((w) => TOOLS.some((t) => t.name === w));
};

/**
 * Run search on the names of the tools a run called (`tool_use[].tool_name`): Lucene terms,
 * globs, negations and `_exists_`, string facets in both request shapes, POST /runs/find and the
 * filter options, through the official client, over runs that went through Bedrock Converse.
 */
for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: runs are searched and faceted by the tools they called`, () => {
    let srv: TestServer;
    let bedrock: BedrockWireServer;
    /** Run ids by what they asked for. */
    const runs: Record<string, string> = {};

    before(async () => {
      srv = await startTestServer(dialect);
      bedrock = await startBedrockWireServer({
        usage: { inputTokens: 30, outputTokens: 7, totalTokens: 37 },
        text: (body) => (asked(body).length ? '' : 'No tool needed.'),
        toolUse: (body) => {
          const names = asked(body);
          return names.length
            ? names.map((name, i) => ({ toolUseId: `tooluse_${i}`, name, input: { q: 'x' } }))
            : undefined;
        },
      });
      const env = await srv.api('POST', '/api/v1/environments', {
        name: 'bedrock',
        provider: 'bedrock',
        endpoint_url: bedrock.url,
        apiKey: `${TEST_ACCESS_KEY_ID}:${TEST_SECRET}`,
        default_model: 'us.anthropic.claude-sonnet-4-20250514-v1:0',
      });
      assert.equal(env.status, 200, JSON.stringify(env.body));
      const ix = await srv.api('POST', '/api/v1/interactions', {
        name: 'tool-search',
        status: 'draft',
        environment: env.body.id,
        prompts: [{ type: 'template', template: { role: 'user', content: '{{ask}}', content_type: 'handlebars' } }],
      });
      assert.equal(ix.status, 200, JSON.stringify(ix.body));
      const client = srv.client();
      for (const ask of [
        'get_weather',
        'get_weather lookup_order',
        'lookup_order lookup_order',
        'nothing to call',
        'get_weather',
      ]) {
        const run = (await client.interactions.execute(ix.body.id, {
          data: { ask },
          tool_definitions: TOOLS,
        } as any)) as any;
        assert.equal(run.status, 'completed', JSON.stringify(run.error));
        assert.equal(run.tool_use?.length ?? 0, asked({ messages: [{ content: [{ text: ask }] }] }).length);
        runs[`${ask}#${Object.keys(runs).length}`] = run.id;
      }
    });
    after(async () => {
      await srv?.close();
      await bedrock?.close();
    });

    /** The ids of the runs whose ask matches, sorted. */
    const where = (test: (ask: string) => boolean) =>
      Object.entries(runs)
        .filter(([k]) => test(k.split('#')[0]))
        .map(([, id]) => id)
        .sort();
    const sortedIds = (xs: { id: string }[]) => xs.map((x) => x.id).sort();

    it('finds runs by a tool name with Lucene: terms, globs, NOT and _exists_ (client.runs.search)', async () => {
      const client = srv.client();
      const search = async (query: string) => sortedIds(await client.runs.search({ query: { query }, limit: 100 }));
      assert.deepEqual(
        await search('tool_use.tool_name:get_weather'),
        where((a) => a.includes('get_weather')),
      );
      assert.deepEqual(
        await search('tool_use.tool_name:look*'),
        where((a) => a.includes('lookup_order')),
      );
      assert.deepEqual(await search('tool_use.tool_name:Get_Weather'), [], 'names are case-sensitive');
      assert.deepEqual(await search('tool_use.tool_name:search_web'), [], 'a tool offered but not called');
      assert.deepEqual(
        await search('NOT tool_use.tool_name:get_weather'),
        where((a) => !a.includes('get_weather')),
      );
      assert.deepEqual(
        await search('_exists_:tool_use.tool_name'),
        where((a) => a !== 'nothing to call'),
      );
      assert.deepEqual(
        await search('tool_use.tool_name:get_weather AND tool_use.tool_name:lookup_order'),
        where((a) => a === 'get_weather lookup_order'),
      );
      assert.deepEqual(
        await search('tool_use.tool_name:[a TO h]'),
        where((a) => a.includes('get_weather')),
        'a range compares names by code point',
      );
      // The same query in the interface's own body, and the field as the default path.
      const res = await srv.api('POST', '/api/v1/runs/search', {
        query: 'lookup_order',
        defaultQueryPath: 'tool_use.tool_name',
        limit: 100,
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(
        sortedIds(res.body),
        where((a) => a.includes('lookup_order')),
      );
    });

    it('counts runs per tool name in facets (a run calling a tool twice counts once)', async () => {
      const want = [
        { _id: 'get_weather', count: 3 },
        { _id: 'lookup_order', count: 2 },
      ];
      const res = await srv.api('POST', '/api/v1/runs/search', {
        facets: { tools: { type: 'string', path: 'tool_use.tool_name' } },
        onlyMeta: true,
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(res.body, { count: { total: 5 }, facet: { tools: { buckets: want } } });
      const narrowed = await srv.api('POST', '/api/v1/runs/search', {
        query: 'tool_use.tool_name:lookup_order',
        facets: { tools: { type: 'string', path: 'tool_use.tool_name', numBuckets: 1 } },
        onlyMeta: true,
      });
      assert.deepEqual(narrowed.body.facet.tools.buckets, [{ _id: 'lookup_order', count: 2 }]);

      const client = srv.client();
      // The client's types name five facets; any name and any facetable field is accepted.
      const facets = (await client.runs.computeFacets({
        facets: [
          { name: 'tools', field: 'tool_use.tool_name' },
          { name: 'reasons', field: 'finish_reason' },
        ] as never,
      })) as any;
      assert.equal(facets.total, 5);
      assert.deepEqual(
        facets.tools.map(({ _id, count }: any) => ({ _id, count })),
        want,
        'no null bucket: a run without tool calls is in no bucket',
      );
      assert.deepEqual(
        facets.reasons.map(({ _id, count }: any) => ({ _id, count })),
        [
          { _id: 'tool_use', count: 4 },
          { _id: 'stop', count: 1 },
        ],
      );
      const options = await srv.api('GET', '/api/v1/runs/filter-options/tool_use.tool_name');
      assert.equal(options.status, 200, JSON.stringify(options.body));
      assert.deepEqual(options.body, [
        { id: 'get_weather', name: 'get_weather', count: 3 },
        { id: 'lookup_order', name: 'lookup_order', count: 2 },
      ]);
    });

    it('finds runs by a tool name with POST /runs/find (client.runs.find)', async () => {
      const client = srv.client();
      const found = await client.runs.find({ query: { 'tool_use.tool_name': 'lookup_order' } });
      assert.deepEqual(
        sortedIds(found as { id: string }[]),
        where((a) => a.includes('lookup_order')),
      );
      const either = await client.runs.find({
        query: { 'tool_use.tool_name': { $in: ['get_weather', 'lookup_order'] } },
      });
      assert.deepEqual(
        sortedIds(either as { id: string }[]),
        where((a) => a !== 'nothing to call'),
      );
    });

    it('refuses what it cannot do with tool names by name, as a 400', async () => {
      const number = await srv.api('POST', '/api/v1/runs/search', {
        facets: { t: { type: 'number', path: 'tool_use.tool_name', boundaries: [0, 1] } },
      });
      assert.equal(number.status, 400);
      assert.match(number.body.message, /facets\.t: a number facet needs a number field .*not tool_use\.tool_name/);
      const unknown = await srv.api('POST', '/api/v1/runs/search', { query: 'tool_use.name:get_weather' });
      assert.equal(unknown.status, 400);
      assert.match(unknown.body.message, /tool_use\.name/);
      assert.match(unknown.body.message, /tool_use\.tool_name/, 'the message lists the searchable fields');
      const facet = await srv.api('POST', '/api/v1/runs/facets', { facets: [{ name: 't', field: 'tool_use.id' }] });
      assert.equal(facet.status, 400);
      assert.match(facet.body.message, /facetable fields: .*tool_use\.tool_name/);
    });
  });
}
