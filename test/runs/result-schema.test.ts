/**
 * Issue 16, result schemas enforced: an answer that is almost JSON is mended (jsonrepair); one that
 * still does not parse or validate is asked again once, quoting the validator's words, unless it
 * stopped on length; what still fails is `invalid_result` with the raw text kept. Through HTTP and
 * the official client, on both databases, with the test provider and a loopback OpenAI wire server.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { startOpenAIWireServer, type WireServer } from '../support/openai-wire-server.ts';

const SCHEMA = {
  type: 'object',
  required: ['title', 'score'],
  properties: { title: { type: 'string' }, score: { type: 'integer', minimum: 1, maximum: 5 } },
};
const REASK = /Your answer cannot be used/;

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: result schemas are enforced, mended and asked again once`, () => {
    let srv: TestServer;
    let wire: WireServer;
    let echoIx: string;
    let wireIx: string;
    /** What the wire server answers to the first ask, and to the re-ask. */
    let answers = { first: '', again: '' };

    before(async () => {
      srv = await startTestServer(dialect);
      wire = await startOpenAIWireServer({
        apiKey: null,
        text: (body) => (REASK.test(JSON.stringify(body)) ? answers.again : answers.first),
        usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
      });
      const template = { role: 'user', content_type: 'handlebars', content: '{{{text}}}' };
      const echoEnv = await srv.api('POST', '/api/v1/environments', {
        name: 'offline',
        provider: 'test',
        default_model: 'echo',
      });
      const ix1 = await srv.api('POST', '/api/v1/interactions', {
        name: 'echo json',
        environment: echoEnv.body.id,
        result_schema: SCHEMA,
        prompts: [{ type: 'template', template }],
      });
      echoIx = ix1.body.id;
      const wireEnv = await srv.api('POST', '/api/v1/environments', {
        name: 'wire',
        provider: 'openai_compatible',
        endpoint_url: wire.url,
        default_model: 'm',
      });
      const ix2 = await srv.api('POST', '/api/v1/interactions', {
        name: 'wire json',
        environment: wireEnv.body.id,
        result_schema: SCHEMA,
        prompts: [{ type: 'template', template }],
      });
      wireIx = ix2.body.id;
    });
    after(async () => {
      await srv.close();
      await wire.close();
    });

    it('mends an answer that is almost JSON (a fence, single quotes, a trailing comma) without asking again', async () => {
      const text = "```json\n{'title': 'Dune', score: 5,}\n```";
      const r = await srv.api('POST', '/api/v1/runs', { interaction: echoIx, data: { text } });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.deepEqual(r.body.result, [{ type: 'json', value: { title: 'Dune', score: 5 } }]);
      assert.equal(r.body.attempts, undefined, 'one call, no re-ask');
      const cut = await srv.client().interactions.execute(echoIx, { data: { text: '{"title": "Dune", "score": 4' } });
      assert.deepEqual(cut.result, [{ type: 'json', value: { title: 'Dune', score: 4 } }]);
    });

    it("asks again once with the validator's words, and keeps the corrected answer and both calls' tokens", async () => {
      answers = { first: '{"title": "Dune", "score": "five"}', again: '{"title": "Dune", "score": 5}' };
      const from = wire.requests.length;
      const r = await srv.api('POST', '/api/v1/runs', { interaction: wireIx, data: { text: 'rate Dune' } });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.deepEqual(r.body.result, [{ type: 'json', value: { title: 'Dune', score: 5 } }]);
      assert.equal(wire.requests.length - from, 2);
      const reask = wire.requests[from + 1].body.messages;
      assert.deepEqual(reask.slice(0, 2), [
        { role: 'user', content: 'rate Dune' },
        { role: 'assistant', content: answers.first },
      ]);
      assert.match(reask[2].content, /does not match result_schema/);
      assert.match(reask[2].content, /score/);
      assert.match(reask[2].content, /integer/);
      assert.deepEqual(
        r.body.attempts.map((a: any) => [a.status, a.repair ?? false]),
        [
          ['completed', false],
          ['completed', true],
        ],
      );
      assert.deepEqual(r.body.token_use, { prompt: 20, result: 10, total: 30 });
    });

    it('fails as invalid_result with the raw text kept when the re-ask fails too, through HTTP and the official client', async () => {
      answers = { first: 'I think Dune deserves five stars.', again: 'Sorry, five.' };
      const from = wire.requests.length;
      const r = await srv.api('POST', '/api/v1/runs', { interaction: wireIx, data: { text: 'rate Dune' } });
      assert.equal(r.status, 502);
      assert.equal(r.body.error, 'invalid_result');
      assert.match(
        r.body.message,
        /not JSON: Sorry, five\. \(asked again once after: the model's answer is not JSON: I think Dune/,
      );
      assert.equal(wire.requests.length - from, 2);
      const stored = await srv.api('GET', `/api/v1/runs/${r.body.id}`);
      assert.equal(stored.body.status, 'failed');
      assert.equal(stored.body.error.code, 'invalid_result');
      assert.deepEqual(stored.body.result, [{ type: 'text', value: 'Sorry, five.' }]);
      assert.deepEqual(
        stored.body.attempts.map((a: any) => [a.status, a.repair ?? false, a.error?.code]),
        [
          ['completed', false, undefined],
          ['failed', true, 'invalid_result'],
        ],
      );
      await assert.rejects(
        srv.client().interactions.execute(wireIx, { data: { text: 'rate Dune' } }),
        (err: any) => err.status === 502 && /invalid_result|not JSON/.test(err.message),
      );
    });

    it('does not ask again when the answer stopped on max_tokens', async () => {
      answers = { first: '{"title": "Du', again: '{"title": "Dune", "score": 5}' };
      wire.options.finishReason = 'length';
      try {
        const from = wire.requests.length;
        const r = await srv.api('POST', '/api/v1/runs', { interaction: wireIx, data: { text: 'rate Dune' } });
        // jsonrepair closes the cut-off string, so the answer parses; the schema still refuses it.
        assert.equal(r.body.error, 'invalid_result');
        assert.match(r.body.message, /stopped on max_tokens, so it was not asked again/);
        assert.equal(wire.requests.length - from, 1);
      } finally {
        wire.options.finishReason = undefined;
      }
    });

    it('streams the raw answer, then ends with the corrected JSON value', async () => {
      answers = { first: '{"title": "Dune", "score": 9}', again: '{"title": "Dune", "score": 5}' };
      const chunks: string[] = [];
      const client = srv.client();
      const started = await client.interactions.execute(wireIx, { data: { text: 'rate Dune' } }, (c: string) =>
        chunks.push(c),
      );
      assert.equal(chunks.join(''), answers.first);
      const final = await client.runs.retrieve(started.id);
      assert.equal(final.status, 'completed');
      assert.deepEqual(final.result, [{ type: 'json', value: { title: 'Dune', score: 5 } }]);
    });
  });
}
