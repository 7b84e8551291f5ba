import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { startAnthropicWireServer, signatureOf, type AnthropicWireServer } from '../support/anthropic-wire-server.ts';

const WEATHER_TOOL = {
  name: 'get_weather',
  description: 'The weather in a city',
  input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] },
};

const THOUGHT = 'The user wants Rome; I should call the weather tool.';
const runIdOf = (messageId: string) => messageId.replace(/^msg_/, '');
const answered = (body: Record<string, unknown>) => JSON.stringify(body.messages).includes('tool_result');

/**
 * Claude's extended thinking through the Anthropic door, with the official SDK: thinking blocks
 * answered with their signature (and redacted blocks with their data), kept on the run, and sent
 * back unchanged in a tool loop, which the wire server checks as Anthropic does.
 */
for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: Claude thinking through the Anthropic door`, () => {
    let srv: TestServer;
    let wire: AnthropicWireServer;
    let sdk: Anthropic;

    before(async () => {
      srv = await startTestServer(dialect);
      wire = await startAnthropicWireServer();
      const e = await srv.api('POST', '/api/v1/environments', {
        name: 'claude',
        provider: 'anthropic',
        endpoint_url: wire.url,
        apiKey: 'sk-ant-test',
        default_model: 'claude-sonnet-4-5',
      });
      assert.equal(e.status, 200, JSON.stringify(e.body));
      sdk = new Anthropic({ baseURL: srv.url, apiKey: srv.adminKey, maxRetries: 0 });
    });

    after(async () => {
      await srv.close();
      await wire.close();
    });

    const loopWire = () => {
      wire.options = {
        thinking: THOUGHT,
        redactedThinking: 'hidden reasoning',
        toolUse: (body) =>
          answered(body) ? undefined : [{ id: 'toolu_1', name: 'get_weather', input: { city: 'Rome' } }],
        text: (body) => (answered(body) ? 'Warm in Rome.' : 'Let me look.'),
      };
    };

    it('blocking: thinking enabled is sent as Claude takes it; the signed and redacted blocks are answered, kept on the run and go back unchanged in the tool loop', async () => {
      loopWire();
      const first = await sdk.messages.create({
        model: 'claude/claude-sonnet-4-5',
        max_tokens: 4096,
        thinking: { type: 'enabled', budget_tokens: 2048 },
        tools: [WEATHER_TOOL],
        messages: [{ role: 'user', content: 'Weather in Rome?' }],
      });
      const sent = wire.requests.at(-1)!.body;
      assert.deepEqual(sent.thinking, { type: 'enabled', budget_tokens: 2048 });
      assert.equal(sent.max_tokens, 4096);
      assert.equal(sent.temperature, undefined, 'Claude refuses a temperature other than 1 with thinking on');
      assert.equal(first.stop_reason, 'tool_use');
      const redacted = first.content[1] as Anthropic.RedactedThinkingBlock;
      assert.deepEqual(first.content, [
        { type: 'thinking', thinking: THOUGHT, signature: signatureOf(THOUGHT) },
        { type: 'redacted_thinking', data: redacted.data },
        { type: 'text', text: 'Let me look.' },
        { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Rome' } },
      ]);
      assert.match(redacted.data, /^redacted_/);
      const run = await srv.api('GET', `/api/v1/runs/${runIdOf(first.id)}`);
      assert.equal(run.status, 200);
      assert.deepEqual(run.body.thinking, [
        { type: 'thinking', text: THOUGHT, signature: signatureOf(THOUGHT) },
        { type: 'thinking', text: '', redacted: redacted.data },
      ]);
      // The answer's thoughts stay out of the answer text.
      assert.deepEqual(run.body.result, [{ type: 'text', value: 'Let me look.' }]);

      const second = await sdk.messages.create({
        model: 'claude/claude-sonnet-4-5',
        max_tokens: 4096,
        thinking: { type: 'enabled', budget_tokens: 2048 },
        tools: [WEATHER_TOOL],
        messages: [
          { role: 'user', content: 'Weather in Rome?' },
          { role: 'assistant', content: first.content },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '25°C' }] },
        ],
      });
      // The wire refuses a changed signature or a tool turn without its thinking: it answered.
      assert.deepEqual(
        second.content.filter((b) => b.type === 'text'),
        [{ type: 'text', text: 'Warm in Rome.' }],
      );
      const back = wire.requests.at(-1)!.body.messages[1].content;
      assert.deepEqual(back.slice(0, 2), [
        { type: 'thinking', thinking: THOUGHT, signature: signatureOf(THOUGHT) },
        { type: 'redacted_thinking', data: redacted.data },
      ]);
      // The second call continues the first run: its stored answer, thinking included, is the history.
      const next = await srv.api('GET', `/api/v1/runs/${runIdOf(second.id)}`);
      assert.equal(next.body.previous_run, runIdOf(first.id));
    });

    it("streamed: thinking_delta and signature_delta in Anthropic's event sequence, before the text; the SDK's final message goes back unchanged", async () => {
      loopWire();
      const stream = sdk.messages.stream({
        model: 'claude/claude-sonnet-4-5',
        max_tokens: 4096,
        thinking: { type: 'enabled', budget_tokens: 1024 },
        tools: [WEATHER_TOOL],
        messages: [{ role: 'user', content: 'Weather in Rome, streamed?' }],
      });
      const events: string[] = [];
      stream.on('streamEvent', (e) =>
        events.push(
          e.type === 'content_block_delta'
            ? `${e.index}:${e.delta.type}`
            : e.type === 'content_block_start'
              ? `${e.index}:start:${e.content_block.type}`
              : e.type === 'content_block_stop'
                ? `${e.index}:stop`
                : e.type,
        ),
      );
      const final = await stream.finalMessage();
      assert.deepEqual(events, [
        'message_start',
        '0:start:thinking',
        '0:thinking_delta',
        '0:signature_delta',
        '0:stop',
        '1:start:redacted_thinking',
        '1:stop',
        '2:start:text',
        '2:text_delta',
        '2:text_delta',
        '2:text_delta',
        '2:stop',
        '3:start:tool_use',
        '3:input_json_delta',
        '3:stop',
        'message_delta',
        'message_stop',
      ]);
      assert.deepEqual(final.content.slice(0, 1), [
        { type: 'thinking', thinking: THOUGHT, signature: signatureOf(THOUGHT) },
      ]);
      assert.equal(final.content[1].type, 'redacted_thinking');
      const run = await srv.api('GET', `/api/v1/runs/${runIdOf(final.id)}`);
      assert.equal(run.body.thinking.length, 2);
      assert.equal(run.body.thinking[0].signature, signatureOf(THOUGHT));

      const next = sdk.messages.stream({
        model: 'claude/claude-sonnet-4-5',
        max_tokens: 4096,
        thinking: { type: 'enabled', budget_tokens: 1024 },
        tools: [WEATHER_TOOL],
        messages: [
          { role: 'user', content: 'Weather in Rome, streamed?' },
          { role: 'assistant', content: final.content },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '25°C' }] },
        ],
      });
      const answer = await next.finalMessage();
      assert.deepEqual(
        answer.content.filter((b) => b.type === 'text'),
        [{ type: 'text', text: 'Warm in Rome.' }],
      );
      assert.deepEqual(wire.requests.at(-1)!.body.messages[1].content.slice(0, 2), final.content.slice(0, 2));
    });

    it('a tool turn sent back without its thinking, or with a changed signature, is refused by Claude and relayed as its 400', async () => {
      loopWire();
      const history = (content: Anthropic.ContentBlockParam[]): Anthropic.MessageCreateParamsNonStreaming => ({
        model: 'claude/claude-sonnet-4-5',
        max_tokens: 4096,
        thinking: { type: 'enabled', budget_tokens: 1024 },
        tools: [WEATHER_TOOL],
        messages: [
          { role: 'user', content: 'Weather in Rome?' },
          { role: 'assistant', content },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '25°C' }] },
        ],
      });
      const call = { type: 'tool_use' as const, id: 'toolu_1', name: 'get_weather', input: { city: 'Rome' } };
      await assert.rejects(sdk.messages.create(history([call])), (err: any) => {
        assert.ok(err instanceof Anthropic.APIError, String(err));
        assert.match(err.message, /must start with a thinking block/);
        return true;
      });
      await assert.rejects(
        sdk.messages.create(
          history([{ type: 'thinking', thinking: 'Something else.', signature: signatureOf(THOUGHT) }, call]),
        ),
        (err: any) => {
          assert.match(err.message, /Invalid `signature`/);
          return true;
        },
      );
    });

    it('bad thinking input: each a 400 naming the field, before any provider call', async () => {
      const calls = wire.requests.length;
      const base = { model: 'claude/claude-sonnet-4-5', messages: [{ role: 'user', content: 'x' }] };
      const cases: Array<[Record<string, unknown>, RegExp]> = [
        [
          { ...base, max_tokens: 2000, thinking: { type: 'enabled', budget_tokens: 512 } },
          /^thinking\.budget_tokens: an integer of at least 1024/,
        ],
        [{ ...base, max_tokens: 2000, thinking: { type: 'enabled' } }, /^thinking\.budget_tokens/],
        [
          { ...base, max_tokens: 2000, thinking: { type: 'enabled', budget_tokens: 2000 } },
          /^thinking\.budget_tokens: 2000 must be less than max_tokens/,
        ],
        [
          { ...base, max_tokens: 2000, thinking: { type: 'enabled', budget_tokens: 1024, extra: 1 } },
          /^thinking\.extra: Extra inputs/,
        ],
        [{ ...base, max_tokens: 2000, thinking: { type: 'adaptive' } }, /^thinking: not supported/],
        [{ ...base, max_tokens: 2000, thinking: { type: 'sometimes' } }, /^thinking\.type/],
        [{ ...base, max_tokens: 2000, thinking: 'on' }, /^thinking: expected/],
        [
          {
            ...base,
            max_tokens: 2000,
            messages: [
              { role: 'user', content: 'x' },
              { role: 'assistant', content: [{ type: 'redacted_thinking' }] },
              { role: 'user', content: 'y' },
            ],
          },
          /^messages\.1\.content\.0\.data: Field required/,
        ],
        [
          {
            ...base,
            max_tokens: 2000,
            messages: [{ role: 'user', content: [{ type: 'redacted_thinking', data: 'd' }] }],
          },
          /^messages\.0\.content\.0: redacted_thinking blocks go in assistant messages/,
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
        assert.equal(answer.type, 'error');
        assert.equal(answer.error.type, 'invalid_request_error');
        assert.match(answer.error.message, message);
      }
      assert.equal(wire.requests.length, calls, 'no bad request reached Claude');
    });
  });
}
