import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { startOpenAIWireServer, type WireServer } from '../support/openai-wire-server.ts';

/** What a `chat` segment and a `tool` message put in the prompt, as the provider receives it. */
for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: chat segments and tool messages in the prompt`, () => {
    let srv: TestServer;
    let wire: WireServer;
    let env: string;
    before(async () => {
      srv = await startTestServer(dialect);
      wire = await startOpenAIWireServer({ text: 'ok' });
      const e = await srv.api('POST', '/api/v1/environments', {
        name: 'wire',
        provider: 'openai',
        endpoint_url: wire.url,
        apiKey: 'sk-test',
        default_model: 'gpt-4o-mini',
      });
      assert.equal(e.status, 200, JSON.stringify(e.body));
      env = e.body.id;
    });
    after(async () => {
      await srv.close();
      await wire.close();
    });

    const interaction = async (prompts: unknown[]) => {
      const ix = await srv.api('POST', '/api/v1/interactions', {
        name: `chat-${Math.random().toString(36).slice(2)}`,
        status: 'draft',
        environment: env,
        prompts,
      });
      assert.equal(ix.status, 200, JSON.stringify(ix.body));
      return ix.body.id as string;
    };
    const system = { type: 'template', template: { role: 'system', content: 'Be brief.', content_type: 'text' } };
    const user = { type: 'template', template: { role: 'user', content: 'Now: {{q}}', content_type: 'handlebars' } };

    it('places data.chat at the chat segment, between the rendered templates', async () => {
      const id = await interaction([system, { type: 'chat' }, user]);
      wire.requests.length = 0;
      const r = await srv.api('POST', '/api/v1/runs', {
        interaction: id,
        data: {
          q: 'and Rome?',
          chat: [
            { role: 'user', content: 'Weather in Paris?' },
            { role: 'assistant', content: 'Sunny.' },
          ],
        },
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.deepEqual(wire.requests[0].body.messages, [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: 'Sunny.' },
        { role: 'user', content: 'Now: and Rome?' },
      ]);
    });

    it("reads the key a segment's configuration.chatKey names; no history yet places nothing", async () => {
      const id = await interaction([system, { type: 'chat', configuration: { chatKey: 'history' } }, user]);
      wire.requests.length = 0;
      const r = await srv.api('POST', '/api/v1/runs', {
        interaction: id,
        data: { q: 'x', chat: [{ role: 'user', content: 'ignored' }], history: [{ role: 'user', content: 'kept' }] },
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.deepEqual(
        wire.requests[0].body.messages.map((m: any) => m.content),
        ['Be brief.', 'kept', 'Now: x'],
      );
      const first = await srv.api('POST', '/api/v1/runs', { interaction: id, data: { q: 'first' } });
      assert.equal(first.status, 200, JSON.stringify(first.body));
      assert.deepEqual(
        wire.requests[1].body.messages.map((m: any) => m.content),
        ['Be brief.', 'Now: first'],
      );
    });

    it('a history that is not a list of messages is a 400 that names the key', async () => {
      const id = await interaction([{ type: 'chat' }, user]);
      const notList = await srv.api('POST', '/api/v1/runs', { interaction: id, data: { q: 'x', chat: 'hello' } });
      assert.equal(notList.status, 400);
      assert.match(notList.body.message, /data\.chat must be a list of \{role, content\} messages/);
      const badRole = await srv.api('POST', '/api/v1/runs', {
        interaction: id,
        data: { q: 'x', chat: [{ role: 'robot', content: 'x' }] },
      });
      assert.equal(badRole.status, 400);
      assert.match(badRole.body.message, /data\.chat\[0\]\.role "robot" is not one of/);
      const noId = await srv.api('POST', '/api/v1/runs', {
        interaction: id,
        data: { q: 'x', chat: [{ role: 'tool', content: 'result' }] },
      });
      assert.equal(noId.status, 400);
      assert.match(noId.body.message, /data\.chat\[0\] has the tool role but no tool_use_id/);
    });

    it('a tool template without configuration.tool_use_id is a 400, not a user message', async () => {
      const id = await interaction([
        user,
        { type: 'template', template: { role: 'tool', content: 'result', content_type: 'text' } },
      ]);
      wire.requests.length = 0;
      const r = await srv.api('POST', '/api/v1/runs', { interaction: id, data: { q: 'x' } });
      assert.equal(r.status, 400);
      assert.match(r.body.message, /prompts\[1\] \(a tool template\) has the tool role but no tool_use_id/);
      assert.equal(wire.requests.length, 0, 'nothing reached the provider');
    });
  });
}
