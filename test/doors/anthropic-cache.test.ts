import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { startOpenAIWireServer, type WireServer } from '../support/openai-wire-server.ts';
import { startAnthropicWireServer, type AnthropicWireServer } from '../support/anthropic-wire-server.ts';

const TOOL = {
  name: 'lookup',
  description: 'Looks a word up',
  input_schema: { type: 'object' as const, properties: { word: { type: 'string' } } },
};
const LONG = 'You are a careful assistant. '.repeat(40);
const runIdOf = (messageId: string) => messageId.replace(/^msg_/, '');

/**
 * cache_control through the Anthropic door, with the official SDK: forwarded on system, tool and
 * content blocks to Claude (the wire server checks them as Anthropic does), the cache usage
 * relayed; a provider without such caching gets none of it and the answer says so in a header.
 */
for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: prompt-cache breakpoints through the Anthropic door`, () => {
    let srv: TestServer;
    let claude: AnthropicWireServer;
    let openai: WireServer;
    let sdk: Anthropic;

    before(async () => {
      srv = await startTestServer(dialect);
      claude = await startAnthropicWireServer();
      openai = await startOpenAIWireServer();
      for (const env of [
        { name: 'claude', provider: 'anthropic', endpoint_url: claude.url, apiKey: 'sk-ant-test' },
        { name: 'oa', provider: 'openai', endpoint_url: openai.url, apiKey: 'sk-test' },
      ]) {
        const e = await srv.api('POST', '/api/v1/environments', env);
        assert.equal(e.status, 200, JSON.stringify(e.body));
      }
      sdk = new Anthropic({ baseURL: srv.url, apiKey: srv.adminKey, maxRetries: 0 });
    });

    after(async () => {
      await srv.close();
      await claude.close();
      await openai.close();
    });

    const request = (model: string): Anthropic.MessageCreateParamsNonStreaming => ({
      model,
      max_tokens: 64,
      system: [
        { type: 'text', text: LONG, cache_control: { type: 'ephemeral' } },
        { type: 'text', text: 'Answer briefly.' },
      ],
      tools: [{ ...TOOL, cache_control: { type: 'ephemeral', ttl: '1h' } }],
      messages: [
        {
          role: 'user',
          content: [{ type: 'text', text: 'Define cache.', cache_control: { type: 'ephemeral', ttl: '5m' } }],
        },
      ],
    });

    it('Claude: system, tool and message breakpoints forwarded as sent; the cache write and read relayed, blocking and streamed, and kept on the run', async () => {
      claude.options = {
        text: 'A store.',
        usage: { input_tokens: 12, output_tokens: 3, cache_creation_input_tokens: 1500, cache_read_input_tokens: 0 },
      };
      const { data: first, response } = await sdk.messages.create(request('claude/claude-sonnet-4-5')).withResponse();
      assert.equal(response.headers.get('x-orrery-prompt-cache'), 'forwarded');
      const sent = claude.requests.at(-1)!.body;
      assert.deepEqual(sent.system, [
        { type: 'text', text: LONG, cache_control: { type: 'ephemeral' } },
        { type: 'text', text: 'Answer briefly.' },
      ]);
      assert.deepEqual(sent.tools[0].cache_control, { type: 'ephemeral', ttl: '1h' });
      assert.deepEqual(sent.messages[0].content, [
        { type: 'text', text: 'Define cache.', cache_control: { type: 'ephemeral', ttl: '5m' } },
      ]);
      assert.deepEqual(first.usage, {
        input_tokens: 12,
        output_tokens: 3,
        cache_creation_input_tokens: 1500,
        cache_read_input_tokens: 0,
      });
      const run = await srv.api('GET', `/api/v1/runs/${runIdOf(first.id)}`);
      assert.deepEqual(run.body.token_use, { prompt: 1512, result: 3, total: 1515, cache_read: 0, cache_write: 1500 });

      claude.options = {
        text: 'A store.',
        usage: { input_tokens: 12, output_tokens: 3, cache_creation_input_tokens: 0, cache_read_input_tokens: 1500 },
      };
      const stream = sdk.messages.stream(request('claude/claude-sonnet-4-5'));
      const final = await stream.finalMessage();
      assert.equal(final.usage.cache_read_input_tokens, 1500);
      assert.equal(final.usage.cache_creation_input_tokens, 0);
      assert.equal(final.usage.input_tokens, 12);
    });

    it("a top-level cache_control marks the request's last block, as Anthropic's automatic caching does", async () => {
      claude.options = { text: 'Yes.' };
      await sdk.messages.create({
        model: 'claude/claude-sonnet-4-5',
        max_tokens: 16,
        cache_control: { type: 'ephemeral' },
        messages: [
          { role: 'user', content: 'First.' },
          { role: 'assistant', content: 'Noted.' },
          { role: 'user', content: 'Second.' },
        ],
      } as Anthropic.MessageCreateParamsNonStreaming);
      const turns = claude.requests.at(-1)!.body.messages;
      assert.equal(turns[0].content, 'First.');
      assert.deepEqual(turns[2].content, [{ type: 'text', text: 'Second.', cache_control: { type: 'ephemeral' } }]);
    });

    it('OpenAI behind the door: no cache_control reaches it, the answer says not_applied', async () => {
      openai.options = { text: 'A store.' };
      const { response } = await sdk.messages.create(request('oa/gpt-4o-mini')).withResponse();
      assert.equal(response.headers.get('x-orrery-prompt-cache'), 'not_applied');
      const body = openai.requests.at(-1)!.body;
      assert.doesNotMatch(JSON.stringify(body), /cache_control/);
      assert.equal(body.messages[0].role, 'system');
      // Without a breakpoint the header is absent.
      const plain = await sdk.messages
        .create({ model: 'oa/gpt-4o-mini', max_tokens: 8, messages: [{ role: 'user', content: 'Hi' }] })
        .withResponse();
      assert.equal(plain.response.headers.get('x-orrery-prompt-cache'), null);
    });

    it('bad cache_control: each a 400 naming the field, before any provider call', async () => {
      const calls = claude.requests.length;
      const base = { model: 'claude/claude-sonnet-4-5', max_tokens: 16 };
      const text = (cache: unknown) => ({ type: 'text', text: 'x', cache_control: cache });
      const cases: Array<[Record<string, unknown>, RegExp]> = [
        [
          { ...base, messages: [{ role: 'user', content: [1, 2, 3, 4, 5].map(() => text({ type: 'ephemeral' })) }] },
          /^cache_control: 5 blocks have cache_control; at most 4/,
        ],
        [
          { ...base, messages: [{ role: 'user', content: [text({ type: 'ephemeral', ttl: '2h' })] }] },
          /^messages\.0\.content\.0\.cache_control\.ttl: Input should be '5m' or '1h'/,
        ],
        [
          { ...base, messages: [{ role: 'user', content: [text({ type: 'persistent' })] }] },
          /^messages\.0\.content\.0\.cache_control: expected \{type: "ephemeral"/,
        ],
        [
          {
            ...base,
            system: [{ type: 'text', text: 's', cache_control: { type: 'ephemeral', scope: 'org' } }],
            messages: [{ role: 'user', content: 'x' }],
          },
          /^system\.0\.cache_control\.scope: Extra inputs/,
        ],
        [
          { ...base, tools: [{ ...TOOL, cache_control: 'yes' }], messages: [{ role: 'user', content: 'x' }] },
          /^tools\.0\.cache_control: expected/,
        ],
        [
          {
            ...base,
            messages: [
              { role: 'user', content: 'x' },
              {
                role: 'assistant',
                content: [{ type: 'thinking', thinking: 't', signature: 's', cache_control: { type: 'ephemeral' } }],
              },
              { role: 'user', content: 'y' },
            ],
          },
          /^messages\.1\.content\.0\.cache_control: thinking blocks cannot be cached/,
        ],
        [
          { ...base, cache_control: { type: 'ephemeral', ttl: 5 }, messages: [{ role: 'user', content: 'x' }] },
          /^cache_control\.ttl/,
        ],
      ];
      for (const [body, message] of cases) {
        const res = await fetch(`${srv.url}/v1/messages`, {
          method: 'POST',
          headers: { 'x-api-key': srv.adminKey, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
          body: JSON.stringify(body),
        });
        const answer = (await res.json()) as any;
        assert.equal(res.status, 400, JSON.stringify(answer));
        assert.equal(answer.error.type, 'invalid_request_error');
        assert.match(answer.error.message, message);
      }
      assert.equal(claude.requests.length, calls, 'no bad request reached Claude');
    });
  });
}
