/**
 * Prompt-level input schemas are enforced, as Vertesia merges them: the union of the templates'
 * `inputSchema` properties and required names, closed when a template closes its own. A run whose
 * data misses a required field or carries an extra one under `additionalProperties: false` is a
 * 400 starting with Vertesia's wording, before any run is stored or any provider is called; the
 * official client's `listEndpoints({include_params_schema})` answers the merged schema.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { startOpenAIWireServer, type WireServer } from '../support/openai-wire-server.ts';

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: merged prompt schemas`, () => {
    let srv: TestServer;
    let wire: WireServer;
    let closed: string;
    let open: string;
    let both: string;

    before(async () => {
      srv = await startTestServer(dialect);
      wire = await startOpenAIWireServer({ apiKey: null });
      const env = await srv.api('POST', '/api/v1/environments', {
        name: 'wire',
        provider: 'openai_compatible',
        endpoint_url: wire.url,
        default_model: 'gpt-4o-mini',
      });
      assert.equal(env.status, 200, JSON.stringify(env.body));
      // A stored template with its own schema, and an inline one that closes its schema.
      const stored = await srv.api('POST', '/api/v1/prompts', {
        name: 'Customer',
        role: 'system',
        content_type: 'handlebars',
        content: 'The customer is {{customer}}.',
        inputSchema: { type: 'object', properties: { customer: { type: 'string' } }, required: ['customer'] },
      });
      assert.equal(stored.status, 200, JSON.stringify(stored.body));
      const make = async (name: string, inline: Record<string, unknown>, extra: Record<string, unknown> = {}) => {
        const r = await srv.api('POST', '/api/v1/interactions', {
          name,
          environment: env.body.id,
          tags: ['merged'],
          prompts: [
            { type: 'template', template: stored.body.id },
            { type: 'template', template: { name: 'Ask', role: 'user', content_type: 'handlebars', ...inline } },
          ],
          ...extra,
        });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        return r.body.id as string;
      };
      closed = await make('Closed', {
        content: 'Question: {{question}}',
        inputSchema: {
          type: 'object',
          properties: { question: { type: 'string', maxLength: 50 } },
          required: ['question'],
          additionalProperties: false,
        },
      });
      open = await make('Open', {
        content: 'Question: {{question}}',
        inputSchema: { type: 'object', properties: { question: { type: 'string' } } },
      });
      both = await make(
        'Both',
        {
          content: 'Question: {{question}}',
          inputSchema: { type: 'object', properties: { question: { type: 'string' } } },
        },
        { interaction_schema: { type: 'object', properties: { tone: { type: 'string' } }, required: ['tone'] } },
      );
    });
    after(async () => {
      await srv.close();
      await wire.close();
    });

    const runCount = async () => (await srv.api('GET', '/api/v1/runs?limit=1000')).body.length as number;

    it('refuses data missing a field one template requires, or an extra field a template closed, before anything runs', async () => {
      const runsBefore = await runCount();
      const calls = wire.requests.length;
      const cases: [string, Record<string, unknown>, RegExp][] = [
        [closed, { question: 'why?' }, /data must have property "customer"/],
        [closed, { customer: 'Ada' }, /data must have property "question"/],
        [closed, { customer: 'Ada', question: 'why?', mood: 'sad' }, /data must not have property "mood"/],
        [closed, { customer: 'Ada', question: 'x'.repeat(51) }, /data\.question must NOT have more than 50 characters/],
        [open, { question: 'why?' }, /data must have property "customer"/],
      ];
      for (const [interaction, data, why] of cases) {
        const r = await srv.api('POST', '/api/v1/runs', { interaction, data });
        assert.equal(r.status, 400, JSON.stringify(r.body));
        assert.match(r.body.message, /^Failed to validate merged prompt schema/);
        assert.match(r.body.message, why);
      }
      // The official client's execute sees the same 400.
      await assert.rejects(srv.client().interactions.execute(closed, { data: { question: 'why?' } }), (e: any) => {
        assert.equal(e.status, 400);
        assert.match(e.message, /Failed to validate merged prompt schema/);
        return true;
      });
      assert.equal(wire.requests.length, calls, 'no provider call');
      assert.equal(await runCount(), runsBefore, 'no run stored');
    });

    it('runs data that matches; an open merge takes extra fields; the interaction schema still applies beside it', async () => {
      const ok = await srv.client().interactions.execute(closed, { data: { customer: 'Ada', question: 'why?' } });
      assert.equal(ok.status, 'completed');
      const messages = wire.requests.at(-1)!.body.messages;
      assert.deepEqual(
        messages.map((m: any) => m.content),
        ['The customer is Ada.', 'Question: why?'],
      );
      const extra = await srv.api('POST', '/api/v1/runs', {
        interaction: open,
        data: { customer: 'Ada', question: 'why?', mood: 'sad' },
      });
      assert.equal(extra.body.status, 'completed', JSON.stringify(extra.body));
      const noTone = await srv.api('POST', '/api/v1/runs', {
        interaction: both,
        data: { customer: 'Ada', question: 'q' },
      });
      assert.equal(noTone.status, 400);
      assert.match(
        noTone.body.message,
        /does not match the input schema of interaction "Both": data must have property "tone"/,
      );
      const noCustomer = await srv.api('POST', '/api/v1/runs', { interaction: both, data: { tone: 'dry' } });
      assert.equal(noCustomer.status, 400);
      assert.match(noCustomer.body.message, /^Failed to validate merged prompt schema/);
    });

    it("a media parameter marked in a template's schema reaches the model as an image part", async () => {
      const env = (await srv.api('GET', `/api/v1/interactions/${open}`)).body.environment;
      const r = await srv.api('POST', '/api/v1/interactions', {
        name: 'Photo',
        environment: env,
        prompts: [
          {
            type: 'template',
            template: {
              name: 'Look',
              role: 'user',
              content_type: 'text',
              content: 'What is it?',
              inputSchema: { type: 'object', properties: { photo: { type: 'string', editor: 'media' } } },
            },
          },
        ],
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const png =
        'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
      const done = await srv.api('POST', '/api/v1/runs', { interaction: r.body.id, data: { photo: png } });
      assert.equal(done.body.status, 'completed', JSON.stringify(done.body));
      const content = wire.requests.at(-1)!.body.messages.at(-1).content;
      assert.deepEqual(
        content.map((c: any) => c.type),
        ['text', 'image_url'],
      );
    });

    it('listEndpoints with include_params_schema answers the merged schema, beside the interaction schema', async () => {
      const endpoints = await srv
        .client()
        .interactions.listEndpoints({ tags: ['merged'], include_params_schema: true });
      const by = new Map(endpoints.map((e) => [e.endpoint, e.params_schema]));
      assert.deepEqual(by.get('Closed'), {
        type: 'object',
        properties: { customer: { type: 'string' }, question: { type: 'string', maxLength: 50 } },
        required: ['customer', 'question'],
        additionalProperties: false,
      });
      assert.deepEqual(by.get('Both'), {
        type: 'object',
        properties: { customer: { type: 'string' }, question: { type: 'string' }, tone: { type: 'string' } },
        required: ['customer', 'tone'],
      });
    });
  });
}
