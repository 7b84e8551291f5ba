/**
 * `do_validate: false` keeps the model's answer when it does not match result_schema (recorded as
 * `result_validation` on the run, no re-ask), and `result_schema: { $uri: "store:<typeId>" }`
 * (Vertesia's SchemaRefSchema) is the object type's schema, on an interaction when saved and on a
 * run when created; a type the project does not have is a 400 naming it before any provider call.
 * Through the official client against a loopback OpenAI wire server that records each request.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { startOpenAIWireServer, type WireServer } from '../support/openai-wire-server.ts';
import { secondProject } from '../objects/helpers.ts';

const SCHEMA = {
  type: 'object',
  required: ['title', 'score'],
  properties: { title: { type: 'string' }, score: { type: 'integer' } },
};

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: do_validate: false and result_schema references to object types`, () => {
    let srv: TestServer;
    let wire: WireServer;
    let env: string;
    let answer = '';
    let typeId: string;
    const template = { role: 'user', content_type: 'handlebars', content: '{{text}}' };

    before(async () => {
      srv = await startTestServer(dialect);
      wire = await startOpenAIWireServer({
        apiKey: null,
        text: () => answer,
        usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
      });
      env = (
        await srv.api('POST', '/api/v1/environments', {
          name: 'wire',
          provider: 'openai_compatible',
          endpoint_url: wire.url,
          default_model: 'm',
          config: { retries: 0 },
        })
      ).body.id;
      typeId = (await srv.client().types.create({ name: 'Review', object_schema: SCHEMA } as any)).id;
    });
    after(async () => {
      await srv.close();
      await wire.close();
    });

    const interaction = async (extra: Record<string, unknown> = {}) => {
      const r = await srv.api('POST', '/api/v1/interactions', {
        name: `ix ${Math.random().toString(36).slice(2, 8)}`,
        environment: env,
        prompts: [{ type: 'template', template }],
        ...extra,
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body;
    };

    it('do_validate: false returns an answer that fails result_schema, recorded as such, without asking again', async () => {
      const ix = await interaction({ result_schema: SCHEMA });
      answer = '{"title": "Dune", "score": "five"}';
      const from = wire.requests.length;
      const client = srv.client();
      const run = await client.interactions.execute(ix.id, { data: { text: 'rate' }, do_validate: false } as any);
      assert.equal(run.status, 'completed');
      assert.deepEqual(run.result, [{ type: 'json', value: { title: 'Dune', score: 'five' } }]);
      assert.equal(wire.requests.length - from, 1, 'one call: no re-ask');
      const stored = (await srv.api('GET', `/api/v1/runs/${run.id}`)).body;
      assert.equal(stored.result_validation.valid, false);
      assert.match(stored.result_validation.message, /does not match result_schema.*score/);
      assert.equal(stored.config.do_validate, false);

      // In config too; an answer that is no JSON at all is kept as its text.
      answer = 'I would rather not rate it';
      const inConfig = await client.interactions.execute(ix.id, {
        data: { text: 'rate' },
        config: { do_validate: false },
      } as any);
      assert.equal(inConfig.status, 'completed');
      assert.deepEqual(inConfig.result, [{ type: 'text', value: 'I would rather not rate it' }]);
      const kept = (await srv.api('GET', `/api/v1/runs/${inConfig.id}`)).body;
      assert.match(kept.result_validation.message, /is not JSON/);
    });

    it("do_validate: false on POST /execute/async (the official client's executeAsync) keeps the answer, recorded as not matching", async () => {
      const ix = await interaction({ result_schema: SCHEMA });
      answer = '{"title": "Dune", "score": "six"}';
      const from = wire.requests.length;
      const client = srv.client();
      const { runId } = await client.interactions.executeAsync({
        type: 'interaction',
        interaction: ix.name,
        data: { text: 'rate' },
        do_validate: false,
      });
      let run = await client.runs.retrieve(runId);
      while (run.status !== 'completed' && run.status !== 'failed') {
        await sleep(50);
        run = await client.runs.retrieve(runId);
      }
      assert.equal(run.status, 'completed', JSON.stringify(run.error));
      assert.deepEqual(run.result, [{ type: 'json', value: { title: 'Dune', score: 'six' } }]);
      assert.equal(wire.requests.length - from, 1, 'one call: no re-ask');
      const stored = (await srv.api('GET', `/api/v1/runs/${runId}`)).body;
      assert.equal(stored.result_validation.valid, false);
      assert.match(stored.result_validation.message, /does not match result_schema.*score/);
      assert.equal(stored.config.do_validate, false);

      // Without it, the same answer fails the async run.
      const strict = await client.interactions.executeAsync({
        type: 'interaction',
        interaction: ix.name,
        data: { text: 'rate' },
      });
      let failed = await client.runs.retrieve(strict.runId);
      while (failed.status !== 'completed' && failed.status !== 'failed') {
        await sleep(50);
        failed = await client.runs.retrieve(strict.runId);
      }
      assert.equal(failed.status, 'failed');
      assert.equal(failed.error?.code, 'invalid_result');
    });

    it('do_validate: false with an answer that matches records nothing; without it, the same answer fails', async () => {
      const ix = await interaction({ result_schema: SCHEMA });
      answer = '{"title": "Dune", "score": 5}';
      const ok = await srv.api('POST', '/api/v1/runs', { interaction: ix.id, data: { text: 'x' }, do_validate: false });
      assert.equal(ok.status, 200, JSON.stringify(ok.body));
      assert.equal(ok.body.result_validation, undefined);
      assert.deepEqual(ok.body.result, [{ type: 'json', value: { title: 'Dune', score: 5 } }]);
      answer = '{"title": "Dune"}';
      const failed = await srv.api('POST', '/api/v1/runs', { interaction: ix.id, data: { text: 'x' } });
      assert.equal(failed.status, 502);
      assert.equal(failed.body.error, 'invalid_result');
    });

    it("result_schema {$uri: store:<typeId>} on an interaction is stored as the type's schema and sent", async () => {
      const ix = await interaction({ result_schema: { $uri: `store:${typeId}` } });
      assert.deepEqual(ix.result_schema, SCHEMA);
      const read = await srv.client().interactions.retrieve(ix.id);
      assert.deepEqual(read.result_schema, SCHEMA);
      answer = '{"title": "Dune", "score": 4}';
      const from = wire.requests.length;
      const run = await srv.client().interactions.execute(ix.id, { data: { text: 'x' } });
      assert.deepEqual(run.result, [{ type: 'json', value: { title: 'Dune', score: 4 } }]);
      const sent = JSON.stringify(wire.requests[from].body);
      assert.ok(sent.includes('"required":["title","score"]'), `the type's schema is sent: ${sent}`);
    });

    it("result_schema {$uri} on a run resolves to the type's schema, in the run and its request", async () => {
      const ix = await interaction();
      answer = '{"title": "Dune", "score": 3}';
      const from = wire.requests.length;
      const run = await srv.client().interactions.execute(ix.id, {
        data: { text: 'x' },
        result_schema: { $uri: `store:${typeId}` },
      } as any);
      assert.equal(run.status, 'completed');
      assert.deepEqual(run.result, [{ type: 'json', value: { title: 'Dune', score: 3 } }]);
      assert.deepEqual((await srv.api('GET', `/api/v1/runs/${run.id}`)).body.result_schema, SCHEMA);
      assert.ok(JSON.stringify(wire.requests[from].body).includes('"required":["title","score"]'));
      const byName = await srv.api('POST', '/api/v1/execute', {
        interaction: `${ix.endpoint}@draft`,
        data: { text: 'x' },
        result_schema: { $uri: `store:${typeId}` },
      });
      assert.equal(byName.status, 200, JSON.stringify(byName.body));
      assert.deepEqual(byName.body.result_schema, SCHEMA);
    });

    it('an unknown, other-project or schemaless type, or a malformed reference, is a 400 naming it before any call', async () => {
      const ix = await interaction();
      const other = await secondProject(srv);
      const theirs = await srv.api('POST', '/api/v1/types', { name: 'Theirs', object_schema: SCHEMA }, other.key);
      assert.equal(theirs.status, 200, JSON.stringify(theirs.body));
      const bare = (await srv.client().types.create({ name: 'Bare' } as any)).id;
      const runs = (await srv.api('GET', '/api/v1/runs?limit=1000')).body.length;
      const from = wire.requests.length;
      const cases: Array<[unknown, RegExp]> = [
        [{ $uri: 'store:nope' }, /result_schema\.\$uri names object type nope, which this project does not have/],
        [{ $uri: `store:${theirs.body.id}` }, new RegExp(`names object type ${theirs.body.id}, which this project`)],
        [{ $uri: `store:${bare}` }, new RegExp(`names object type ${bare}, which has no object_schema`)],
        [{ $uri: 'https://example.com/s.json' }, /result_schema\.\$uri must be "store:<object type id>"/],
        [{ $uri: `store:${typeId}`, type: 'object' }, /takes \$uri alone/],
      ];
      for (const [schema, message] of cases) {
        const r = await srv.api('POST', '/api/v1/runs', {
          interaction: ix.id,
          data: { text: 'x' },
          result_schema: schema,
        });
        assert.equal(r.status, 400, JSON.stringify(r.body));
        assert.match(r.body.message, message);
      }
      const saved = await srv.api('POST', '/api/v1/interactions', {
        name: 'refs nothing',
        prompts: [{ type: 'template', template }],
        result_schema: { $uri: 'store:nope' },
      });
      assert.equal(saved.status, 400);
      assert.match(saved.body.message, /result_schema\.\$uri names object type nope/);
      const patched = await srv.api('PUT', `/api/v1/interactions/${ix.id}`, {
        result_schema: { $uri: `store:${theirs.body.id}` },
      });
      assert.equal(patched.status, 400);
      assert.match(patched.body.message, /which this project does not have/);
      assert.equal(wire.requests.length, from, 'no provider call');
      assert.equal((await srv.api('GET', '/api/v1/runs?limit=1000')).body.length, runs, 'no run stored');
    });
  });
}
