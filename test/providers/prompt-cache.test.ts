import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { startOpenAIWireServer, type WireServer } from '../support/openai-wire-server.ts';
import { startAnthropicWireServer, type AnthropicWireServer } from '../support/anthropic-wire-server.ts';

/** USD per million tokens, as an environment's config.prices takes them (Anthropic's and OpenAI's list prices). */
const SONNET = { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 };
const GPT4O = { input: 2.5, output: 10, cache_read: 1.25 };

/** Usage as each provider's prompt-caching page shows it. */
const CLAUDE_WRITE = {
  input_tokens: 21,
  cache_creation_input_tokens: 188086,
  cache_read_input_tokens: 0,
  output_tokens: 393,
};
const CLAUDE_READ = {
  input_tokens: 21,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 188086,
  output_tokens: 393,
};
const OPENAI_CACHED = {
  prompt_tokens: 2006,
  completion_tokens: 300,
  total_tokens: 2306,
  prompt_tokens_details: { cached_tokens: 1920 },
};

const TOOL = { name: 'lookup', description: 'Looks a word up', input_schema: { type: 'object', properties: {} } };
const cents = (usd: number) => Math.round(usd * 100) / 100;

/**
 * Provider prompt caching requested through Vertesia's execution payload, with the official
 * client: Claude's breakpoints placed where llumiverse places them, OpenAI's prompt_cache_key,
 * `required` failing a run that cached nothing, and the cost of recorded usage to the cent.
 */
for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: prompt caching asked of the provider`, () => {
    let srv: TestServer;
    let claude: AnthropicWireServer;
    let openai: WireServer;
    const ix: Record<string, string> = {};

    before(async () => {
      srv = await startTestServer(dialect);
      claude = await startAnthropicWireServer();
      openai = await startOpenAIWireServer();
      const system = await srv.api('POST', '/api/v1/prompts', {
        name: 'rules',
        role: 'system',
        content: 'You define words.',
        content_type: 'text',
      });
      const user = await srv.api('POST', '/api/v1/prompts', {
        name: 'ask',
        role: 'user',
        content: 'Define {{word}}',
        content_type: 'handlebars',
      });
      assert.equal(system.status, 200, JSON.stringify(system.body));
      for (const [name, env] of [
        [
          'claude',
          {
            provider: 'anthropic',
            endpoint_url: claude.url,
            apiKey: 'sk-ant-test',
            default_model: 'claude-sonnet-4-5',
            config: { prices: { 'claude-sonnet-4-5': SONNET } },
          },
        ],
        [
          'oa',
          {
            provider: 'openai',
            endpoint_url: openai.url,
            apiKey: 'sk-test',
            default_model: 'gpt-4o',
            config: { prices: { 'gpt-4o': GPT4O } },
          },
        ],
      ] as const) {
        const e = await srv.api('POST', '/api/v1/environments', { name, ...env });
        assert.equal(e.status, 200, JSON.stringify(e.body));
        const i = await srv.api('POST', '/api/v1/interactions', {
          name: `Define-${name}`,
          status: 'draft',
          environment: e.body.id,
          prompts: [
            { type: 'template', template: system.body.id },
            { type: 'template', template: user.body.id },
          ],
        });
        assert.equal(i.status, 200, JSON.stringify(i.body));
        ix[name] = i.body.id;
      }
    });

    after(async () => {
      await srv.close();
      await claude.close();
      await openai.close();
    });

    it('Claude: cache_enabled with cache_ttl places breakpoints at the end of the system prompt and of the tools; the write priced to the cent', async () => {
      claude.options = { text: 'A store.', usage: CLAUDE_WRITE };
      const run = await srv.client().interactions.execute(ix.claude, {
        data: { word: 'cache' },
        tool_definitions: [TOOL, { ...TOOL, name: 'lookup2' }],
        config: { model_options: { cache_enabled: true, cache_ttl: '1h' } },
      } as any);
      assert.equal(run.status, 'completed', JSON.stringify(run.error));
      const sent = claude.requests.at(-1)!.body;
      assert.deepEqual(sent.system, [
        { type: 'text', text: 'You define words.', cache_control: { type: 'ephemeral', ttl: '1h' } },
      ]);
      assert.equal(sent.tools[0].cache_control, undefined);
      assert.deepEqual(sent.tools[1].cache_control, { type: 'ephemeral', ttl: '1h' });
      assert.equal(JSON.stringify(sent.messages).includes('cache_control'), false);
      // 21 × $3 + 188,086 × $3.75 + 393 × $15 per million = $0.7112805
      const cost = (run as any).cost;
      assert.equal(cost.cache_write, 0.7053225);
      assert.equal(cost.total, 0.7112805);
      assert.equal(cents(cost.total), 0.71);
    });

    it('prompt_cache_mode auto places 5-minute breakpoints; required fails a run that cached nothing and passes one that read the cache; off places none', async () => {
      claude.options = { text: 'A store.', usage: CLAUDE_READ };
      const auto = await srv.client().interactions.execute(ix.claude, {
        data: { word: 'auto' },
        config: { prompt_cache_mode: 'required' },
      } as any);
      assert.equal(auto.status, 'completed', JSON.stringify(auto.error));
      assert.deepEqual(claude.requests.at(-1)!.body.system, [
        { type: 'text', text: 'You define words.', cache_control: { type: 'ephemeral' } },
      ]);
      // 21 × $3 + 188,086 × $0.30 + 393 × $15 per million = $0.0623838
      assert.equal((auto as any).cost.total, 0.0623838);
      assert.equal(cents((auto as any).cost.total), 0.06);

      claude.options = { text: 'A store.', usage: { input_tokens: 30, output_tokens: 3 } };
      const missed = await srv.api('POST', '/api/v1/runs', {
        interaction: ix.claude,
        data: { word: 'short' },
        config: { prompt_cache_mode: 'required' },
      });
      assert.equal(missed.status, 502, JSON.stringify(missed.body));
      assert.match(JSON.stringify(missed.body), /prompt_cache_missed|prompt_cache_mode is \\"required\\"/);
      const failed = await srv.api('GET', `/api/v1/runs?limit=1`);
      const last = await srv.api('GET', `/api/v1/runs/${failed.body[0].id}`);
      assert.equal(last.body.status, 'failed');
      assert.equal(last.body.error.code, 'prompt_cache_missed');
      assert.match(last.body.error.message, /prompt_cache_mode is "required"/);

      const off = await srv.api('POST', '/api/v1/runs', {
        interaction: ix.claude,
        data: { word: 'off' },
        config: { prompt_cache_mode: 'off' },
      });
      assert.equal(off.body.status, 'completed');
      assert.equal(claude.requests.at(-1)!.body.system, 'You define words.');
    });

    it("OpenAI: config.prompt_cache_key is sent as OpenAI's prompt_cache_key; the cached tokens priced to the cent", async () => {
      openai.options = { text: 'A store.', usage: OPENAI_CACHED };
      const run = await srv.client().interactions.execute(ix.oa, {
        data: { word: 'cache' },
        config: { prompt_cache_key: 'tenant-42' },
      } as any);
      assert.equal(run.status, 'completed', JSON.stringify(run.error));
      const sent = openai.requests.at(-1)!.body;
      assert.equal(sent.prompt_cache_key, 'tenant-42');
      assert.equal(JSON.stringify(sent).includes('cache_control'), false);
      // 86 × $2.50 + 1,920 × $1.25 + 300 × $10 per million = $0.005615
      assert.equal((run as any).cost.total, 0.005615);
      assert.equal(cents((run as any).cost.total), 0.01);
      assert.equal((run as any).config.prompt_cache_key, 'tenant-42');
    });

    it('each option a provider has no notion of, and each bad value, is a 400 naming it before any provider call', async () => {
      const before = claude.requests.length + openai.requests.length;
      const cases: Array<[string, Record<string, unknown>, RegExp]> = [
        [
          'oa',
          { model_options: { cache_enabled: true } },
          /^model_options\.cache_enabled places Claude cache breakpoints/,
        ],
        [
          'oa',
          { prompt_cache_mode: 'required' },
          /^config\.prompt_cache_mode "required" needs a provider that reports cache writes/,
        ],
        ['claude', { prompt_cache_key: 'k' }, /^config\.prompt_cache_key is OpenAI's prompt_cache_key/],
        ['claude', { prompt_cache_mode: 'always' }, /^config\.prompt_cache_mode must be auto, off or required/],
        ['claude', { model_options: { cache_ttl: '2h' } }, /^model_options\.cache_ttl must be "5m" or "1h"/],
        ['claude', { model_options: { cache_enabled: 'yes' } }, /^model_options\.cache_enabled must be true or false/],
        [
          'claude',
          { prompt_cache_mode: 'off', model_options: { cache_enabled: true } },
          /contradicts config\.prompt_cache_mode "off"/,
        ],
        [
          'oa',
          { prompt_cache_key: 'k'.repeat(257) },
          /^config\.prompt_cache_key must be a string of 1 to 256 characters/,
        ],
      ];
      for (const [name, config, message] of cases) {
        const res = await srv.api('POST', '/api/v1/runs', { interaction: ix[name], data: { word: 'x' }, config });
        assert.equal(res.status, 400, `${JSON.stringify(config)}: ${JSON.stringify(res.body)}`);
        assert.match(res.body.message, message);
      }
      assert.equal(claude.requests.length + openai.requests.length, before);
    });
  });
}
