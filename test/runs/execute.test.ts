import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, startTestServer, seedEcho, type TestServer } from '../support/server.ts';
import { startOpenAIWireServer } from '../support/openai-wire-server.ts';
import { startAnthropicWireServer } from '../support/anthropic-wire-server.ts';

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: executing runs`, () => {
    let srv: TestServer;
    let seeded: Awaited<ReturnType<typeof seedEcho>>;
    before(async () => {
      srv = await startTestServer(dialect);
      seeded = await seedEcho(srv);
    });
    after(() => srv.close());

    it('executes a blocking run and records every field of the run', async () => {
      const r = await srv.api(
        'POST',
        '/api/v1/runs',
        {
          interaction: seeded.interaction.id,
          data: { text: 'hello world' },
          tags: 'a,b',
          config: { max_tokens: 50 },
        },
        srv.adminKey,
        { 'user-agent': 'orrery-test' },
      );
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const run = r.body;
      assert.equal(run.status, 'completed');
      assert.deepEqual(run.result, [{ type: 'text', value: 'Say: hello world' }]);
      assert.deepEqual(run.parameters, { text: 'hello world' });
      assert.equal(run.interaction, seeded.interaction.id, 'POST answers the interaction id');
      assert.equal(run.account, srv.orrery.bootstrap.account.id);
      assert.equal(run.project, srv.orrery.bootstrap.project.id);
      assert.equal(run.modelId, 'echo');
      assert.equal(run.model, 'echo');
      assert.equal(run.ttl, 0);
      assert.deepEqual(run.tags, ['a', 'b']);
      assert.equal(run.config.temperature, 0.7);
      assert.equal(run.config.max_tokens, 50);
      assert.equal(run.config.environment, seeded.env.id);
      assert.equal(run.finish_reason, 'stop');
      assert.ok(run.token_use.prompt > 0 && run.token_use.result > 0);
      assert.equal(run.token_use.total, run.token_use.prompt + run.token_use.result);
      assert.equal(typeof run.execution_time, 'number');
      assert.deepEqual(run.prompt, [{ role: 'user', content: 'Say: hello world' }]);
      assert.equal(run.source.type, 'api');
      assert.equal(run.source.principal_type, 'apikey');
      assert.ok(run.source.principal_id);
      assert.match(run.source.client_ip, /127\.0\.0\.1/);
      assert.ok(Date.parse(run.created_at) <= Date.parse(run.updated_at));

      const got = await srv.api('GET', `/api/v1/runs/${run.id}`);
      assert.equal(got.status, 200);
      assert.equal(got.body.interaction.id, seeded.interaction.id);
      assert.equal(got.body.interaction.name, 'Echo');
      assert.equal(got.body.interaction.prompts[0].template.role, 'user');
      assert.equal(got.body.environment.id, seeded.env.id);
      assert.equal(got.body.environment.name, 'Test env');
      assert.deepEqual(got.body.result, run.result);
    });

    it('accepts options as config.model_options, which win', async () => {
      const r = await srv.api('POST', '/api/v1/runs', {
        interaction: seeded.interaction.id,
        data: { text: 'x' },
        config: { temperature: 0.1, model_options: { temperature: 0.3, max_tokens: 9 } },
        tags: ['p,q', 'q'],
      });
      assert.equal(r.body.config.temperature, 0.3);
      assert.equal(r.body.config.max_tokens, 9);
      assert.deepEqual(r.body.tags, ['p', 'q']);
    });

    it('executes a blocking and a streamed run through the official client', async () => {
      const client = srv.client();
      const blocking = await client.interactions.execute(seeded.interaction.id, {
        data: { text: 'from the client' },
      } as any);
      assert.equal(blocking.status, 'completed');
      assert.equal((blocking.result as any).text(), 'Say: from the client');

      const chunks: string[] = [];
      const started = await client.interactions.execute(
        seeded.interaction.id,
        { data: { text: 'one two three four five' } } as any,
        (c: any) => chunks.push(c),
      );
      assert.ok(['created', 'processing'].includes(started.status));
      assert.ok(chunks.length >= 2, `several chunks, got ${chunks.length}`);
      assert.equal(chunks.join(''), 'Say: one two three four five');
      const final = await client.runs.retrieve(started.id);
      assert.equal(final.status, 'completed');
      assert.deepEqual(final.result, [{ type: 'text', value: chunks.join('') }]);
    });

    it('answers the result as JSON with result_schema, parsed and validated', async () => {
      const schema = {
        type: 'object',
        required: ['title', 'score'],
        properties: { title: { type: 'string' }, score: { type: 'integer', minimum: 1, maximum: 5 } },
      };
      const r = await srv.api('POST', '/api/v1/runs', {
        interaction: seeded.interaction.id,
        data: { text: 'x' },
        config: { model: 'json' },
        result_schema: schema,
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.result.length, 1);
      assert.equal(r.body.result[0].type, 'json');
      assert.equal(typeof r.body.result[0].value.title, 'string');
      assert.ok(r.body.result[0].value.score >= 1 && r.body.result[0].value.score <= 5);
      // The echo model cannot answer JSON: the run fails as invalid_result, and stays retrievable.
      const bad = await srv.api('POST', '/api/v1/runs', {
        interaction: seeded.interaction.id,
        data: { text: 'not json' },
        result_schema: schema,
      });
      assert.equal(bad.status, 502);
      assert.equal(bad.body.error, 'invalid_result');
      assert.ok(bad.body.id);
      const stored = await srv.api('GET', `/api/v1/runs/${bad.body.id}`);
      assert.equal(stored.body.status, 'failed');
      assert.equal(stored.body.error.code, 'invalid_result');
    });

    it('records a provider failure as a failed run and answers 502 with the run id', async () => {
      const r = await srv.api('POST', '/api/v1/runs', {
        interaction: seeded.interaction.id,
        data: { text: 'x' },
        config: { model: 'error' },
      });
      assert.equal(r.status, 502);
      assert.equal(r.body.error, 'provider_error');
      assert.equal(r.body.status, 502);
      assert.match(r.body.message, /failed/);
      const stored = await srv.api('GET', `/api/v1/runs/${r.body.id}`);
      assert.equal(stored.body.status, 'failed');
      assert.equal(stored.body.error.code, 'provider_error');
      assert.match(stored.body.error.message, /error model/);
    });

    it('fails cleanly when the provider is unreachable', async () => {
      const env = await srv.api('POST', '/api/v1/environments', {
        name: 'down',
        provider: 'openai_compatible',
        endpoint_url: 'http://127.0.0.1:1/v1',
        default_model: 'm',
      });
      const r = await srv.api('POST', '/api/v1/runs', {
        interaction: seeded.interaction.id,
        data: { text: 'x' },
        config: { environment: env.body.id },
      });
      assert.equal(r.status, 502);
      assert.equal(r.body.error, 'provider_unreachable');
      const stored = await srv.api('GET', `/api/v1/runs/${r.body.id}`);
      assert.equal(stored.body.status, 'failed');
    });

    it('refuses bad run requests with a 400 or 404 that says what to fix', async () => {
      const cases: Array<[unknown, number, RegExp]> = [
        [{}, 400, /interaction/],
        [{ interaction: 42 }, 400, /interaction/],
        [{ interaction: 'no-such-interaction' }, 404, /no-such-interaction/],
        [
          { interaction: seeded.interaction.id, data: { text: 'x' }, config: { environment: 'nope' } },
          404,
          /environment/,
        ],
        [
          { interaction: seeded.interaction.id, data: { text: 'x' }, config: { model: 'nonexistent' } },
          502,
          /nonexistent/,
        ],
        [{ interaction: seeded.interaction.id, data: { text: 'x' }, config: { temperature: 7 } }, 400, /temperature/],
        [{ interaction: seeded.interaction.id, data: { text: 'x' }, config: { max_tokens: -1 } }, 400, /max_tokens/],
        [{ interaction: seeded.interaction.id, data: { text: 'x' }, parent: 'no-such-run' }, 404, /no-such-run/],
        [{ interaction: seeded.interaction.id, data: { text: 'x' }, tags: [1, 2] }, 400, /tags/],
      ];
      for (const [body, status, message] of cases) {
        const r = await srv.api('POST', '/api/v1/runs', body);
        assert.equal(r.status, status, `${JSON.stringify(body)} → ${JSON.stringify(r.body)}`);
        assert.match(r.body.message, message, JSON.stringify(body));
        assert.equal(typeof r.body.error, 'string');
      }
      // Handlebars is not strict (as Vertesia's): missing data renders empty and the run completes.
      const missing = await srv.api('POST', '/api/v1/runs', { interaction: seeded.interaction.id, data: {} });
      assert.equal(missing.status, 200);
      assert.deepEqual(missing.body.result, [{ type: 'text', value: 'Say: ' }]);
      const malformed = await srv.api('POST', '/api/v1/runs', '{"interaction": ', srv.adminKey);
      assert.equal(malformed.status, 400);
      assert.match(malformed.body.message, /JSON/);
    });

    it('validates data against the interaction input schema, naming the bad field', async () => {
      const ix = await srv.api('POST', '/api/v1/interactions', {
        name: 'Typed',
        environment: seeded.env.id,
        interaction_schema: {
          type: 'object',
          required: ['customer'],
          properties: { customer: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } } },
        },
        prompts: [
          {
            type: 'template',
            template: { role: 'user', content: 'return `Hi ${customer.name}`', content_type: 'jst' },
          },
        ],
      });
      assert.equal(ix.status, 200, JSON.stringify(ix.body));
      const bad = await srv.api('POST', '/api/v1/runs', { interaction: ix.body.id, data: { customer: { name: 5 } } });
      assert.equal(bad.status, 400);
      assert.match(bad.body.message, /data\.customer\.name must be string/);
      const missing = await srv.api('POST', '/api/v1/runs', { interaction: ix.body.id, data: {} });
      assert.equal(missing.status, 400);
      assert.match(missing.body.message, /customer/);
      const ok = await srv.api('POST', '/api/v1/runs', {
        interaction: ix.body.id,
        data: { customer: { name: 'Ada' } },
      });
      assert.equal(ok.body.result[0].value, 'Hi Ada');
    });

    it('records child runs with parent', async () => {
      const parent = await srv.api('POST', '/api/v1/runs', { interaction: seeded.interaction.id, data: { text: 'p' } });
      const child = await srv.api('POST', '/api/v1/runs', {
        interaction: seeded.interaction.id,
        data: { text: 'c' },
        parent: parent.body.id,
      });
      assert.equal(child.body.parent, parent.body.id);
      const children = await srv.api('GET', `/api/v1/runs?parent=${parent.body.id}`);
      assert.deepEqual(
        children.body.map((r: any) => r.id),
        [child.body.id],
      );
    });

    it('executes against OpenAI and Anthropic wire servers', async () => {
      const openai = await startOpenAIWireServer({
        apiKey: 'sk-upstream',
        text: 'from openai',
        usage: { prompt_tokens: 7, completion_tokens: 2 },
      } as any);
      const anthropic = await startAnthropicWireServer({
        apiKey: 'ak-upstream',
        text: 'from claude',
        usage: { input_tokens: 5, output_tokens: 3 },
      } as any);
      try {
        const oe = await srv.api('POST', '/api/v1/environments', {
          name: 'oai',
          provider: 'openai_compatible',
          endpoint_url: openai.url,
          default_model: 'gpt-x',
          apiKey: 'sk-upstream',
        });
        const ae = await srv.api('POST', '/api/v1/environments', {
          name: 'ant',
          provider: 'anthropic',
          endpoint_url: anthropic.url,
          default_model: 'claude-x',
          apiKey: 'ak-upstream',
        });
        const o = await srv.api('POST', '/api/v1/runs', {
          interaction: seeded.interaction.id,
          data: { text: 'q' },
          config: { environment: oe.body.id },
        });
        assert.equal(o.status, 200, JSON.stringify(o.body));
        assert.equal(o.body.result[0].value, 'from openai');
        assert.deepEqual(o.body.token_use, { prompt: 7, result: 2, total: 9 });
        const sent = openai.requests.at(-1) as any;
        assert.equal(sent.body.model, 'gpt-x');
        assert.equal(sent.body.temperature, 0.7);
        assert.deepEqual(sent.body.messages, [{ role: 'user', content: 'Say: q' }]);
        const a = await srv.api('POST', '/api/v1/runs', {
          interaction: seeded.interaction.id,
          data: { text: 'q' },
          config: { environment: ae.body.id },
        });
        assert.equal(a.status, 200, JSON.stringify(a.body));
        assert.equal(a.body.result[0].value, 'from claude');
        assert.equal(a.body.token_use.total, 8);
        const client = srv.client();
        const chunks: string[] = [];
        const streamed = await client.interactions.execute(
          seeded.interaction.id,
          { data: { text: 'q' }, config: { environment: ae.body.id } } as any,
          (c: any) => chunks.push(c),
        );
        assert.equal(chunks.join(''), 'from claude');
        assert.equal((await client.runs.retrieve(streamed.id)).status, 'completed');
        // A wrong upstream key is the provider's refusal, recorded on the run.
        await srv.api('PUT', `/api/v1/environments/${oe.body.id}`, { apiKey: 'sk-wrong' });
        const denied = await srv.api('POST', '/api/v1/runs', {
          interaction: seeded.interaction.id,
          data: { text: 'q' },
          config: { environment: oe.body.id },
        });
        assert.equal(denied.status, 502);
        assert.equal(denied.body.error, 'provider_auth');
      } finally {
        await openai.close();
        await anthropic.close();
      }
    });
  });
}
