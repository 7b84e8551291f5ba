/**
 * Evaluators (src/evaluators) through HTTP on both databases: stored and versioned; every type
 * scoring runs of the `test` provider with exact figures; configs refused by name before any
 * work; an evaluator that throws records its error and no score; another project's out of reach.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, seedEcho, startTestServer, type TestServer } from '../support/server.ts';

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: evaluators`, () => {
    let srv: TestServer;
    let run: string;
    const create = async (body: Record<string, unknown>) => {
      const r = await srv.api('POST', '/api/v1/evaluators', body);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body as { id: string; version: number; name: string };
    };
    const evaluate = async (id: string, body: Record<string, unknown>) => {
      const r = await srv.api('POST', `/api/v1/evaluators/${id}/evaluate`, body);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body;
    };

    before(async () => {
      srv = await startTestServer(dialect);
      const { interaction } = await seedEcho(srv, { name: `Evaluated echo ${dialect}` });
      const r = await srv.api('POST', '/api/v1/runs', {
        interaction: interaction.id,
        data: { text: 'Saturn has rings' },
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.result[0].value, 'Say: Saturn has rings');
      run = r.body.id;
    });
    after(() => srv.close());

    it('scores a run with each built-in, exactly', async () => {
      const cases: Array<[Record<string, unknown>, unknown, number]> = [
        [{ type: 'exact_match' }, 'Say: Saturn has rings', 1],
        [{ type: 'exact_match' }, 'Saturn', 0],
        [{ type: 'contains', config: { value: 'saturn', case_sensitive: false } }, undefined, 1],
        [{ type: 'contains', config: { value: 'saturn' } }, undefined, 0],
        [{ type: 'regex', config: { pattern: '^Say: \\w+ has' } }, undefined, 1],
        [{ type: 'regex', config: { pattern: 'moons', flags: 'i' } }, undefined, 0],
        [{ type: 'json_schema_valid', config: { schema: { type: 'object' } } }, undefined, 0],
        [{ type: 'latency_under', config: { ms: 600_000 } }, undefined, 1],
      ];
      let i = 0;
      for (const [spec, expected, score] of cases) {
        const ev = await create({ name: `builtin-${++i}`, ...spec });
        const out = await evaluate(ev.id, { run, ...(expected !== undefined ? { expected } : {}) });
        assert.equal(out.error, undefined, JSON.stringify(out));
        assert.equal(out.score.value, score, `${JSON.stringify(spec)} → ${JSON.stringify(out)}`);
        assert.equal(out.score.source, 'evaluator');
        assert.equal(out.score.evaluator, ev.id);
      }
      const answered = await srv.api('GET', `/api/v1/runs/${run}`);
      assert.equal(answered.body.scores['builtin-1'].value, 1);
      assert.equal(answered.body.scores['builtin-2'].value, 0);
      assert.equal(answered.body.scores['builtin-1'].evaluator !== undefined, true);
    });

    it('runs code in the jst sandbox and a judge interaction, and keeps versions', async () => {
      const code = await create({
        name: 'length',
        type: 'code',
        config: { body: 'return { score: output.length / 100, reason: "length of " + input.text };' },
      });
      const scored = await evaluate(code.id, { run });
      assert.equal(scored.score.value, 0.21);
      assert.equal(scored.reason, 'length of Saturn has rings');
      assert.equal(scored.score.comment, 'length of Saturn has rings');

      const v2 = await srv.api('PUT', `/api/v1/evaluators/${code.id}`, {
        config: { body: 'return output === expected;' },
      });
      assert.equal(v2.status, 200, JSON.stringify(v2.body));
      assert.equal(v2.body.version, 2);
      const v1 = await srv.api('GET', `/api/v1/evaluators/${code.id}?version=1`);
      assert.match(v1.body.config.body, /output.length/);
      assert.equal((await srv.api('GET', `/api/v1/evaluators/${code.id}?version=3`)).status, 400);
      // A boolean under a name that holds numbers: the kind is fixed per name.
      const wrongKind = await srv.api('POST', `/api/v1/evaluators/${code.id}/evaluate`, { run, expected: 'x' });
      assert.equal(wrongKind.status, 409);
      const older = await evaluate(code.id, { run, version: 1 });
      assert.equal(older.version, 1);
      assert.equal(older.score.value, 0.21);

      // The judge: an interaction of the test provider whose answer is {score, reason} as JSON.
      const env = await srv.api('POST', '/api/v1/environments', {
        name: 'Judge env',
        provider: 'test',
        default_model: 'echo',
      });
      const prompt = await srv.api('POST', '/api/v1/prompts', {
        name: 'judge prompt',
        role: 'user',
        content: '{"score": 0.75, "reason": "judged {{output}} against {{expected}}"}',
        content_type: 'handlebars',
      });
      const judgeInteraction = await srv.api('POST', '/api/v1/interactions', {
        name: `Judge ${dialect}`,
        status: 'draft',
        environment: env.body.id,
        prompts: [{ type: 'template', template: prompt.body.id }],
      });
      assert.equal(judgeInteraction.status, 200, JSON.stringify(judgeInteraction.body));
      const judge = await create({ name: 'judge', type: 'judge', config: { interaction: `Judge ${dialect}` } });
      const judged = await evaluate(judge.id, { run, expected: 'rings' });
      assert.equal(judged.score.value, 0.75, JSON.stringify(judged));
      assert.equal(judged.reason, 'judged Say: Saturn has rings against rings');
    });

    it("compares the output with the expected value in the project's embeddings (embedding_similarity)", async () => {
      const ev = await create({ name: 'similar', type: 'embedding_similarity' });
      const same = await evaluate(ev.id, { run, expected: 'Say: Saturn has rings' });
      assert.equal(same.score.value, 1, JSON.stringify(same));
      const near = (await evaluate(ev.id, { run, expected: 'Saturn has rings' })).score.value as number;
      const far = (await evaluate(ev.id, { run, expected: 'quarterly tax filing deadline' })).score.value as number;
      assert.ok(near < 1 && far < near, `near ${near}, far ${far}`);
      const none = await evaluate(ev.id, { run });
      assert.equal(none.score, undefined);
      assert.match(none.error.message, /embedding_similarity needs an expected value/);
    });

    it('records the error of an evaluator that throws, and stores no score', async () => {
      const throws = await create({
        name: 'thrower',
        type: 'code',
        config: { body: 'throw new Error("no verdict");' },
      });
      const out = await evaluate(throws.id, { run });
      assert.equal(out.score, undefined);
      assert.match(out.error.message, /no verdict/);
      const text = await create({ name: 'texty', type: 'code', config: { body: 'return "fine";' } });
      assert.match((await evaluate(text.id, { run })).error.message, /a number, a boolean or \{score, reason\}/);
      const loops = await create({ name: 'loops', type: 'code', config: { body: 'while (true) {}' } });
      assert.match((await evaluate(loops.id, { run })).error.message, /ran longer than 1000 ms/);
      // A pattern runs in the same sandbox as code, under the same CPU bound.
      const nested = await create({ name: 'nested', type: 'regex', config: { pattern: '^(\\w+\\s?)+$' } });
      assert.equal((await evaluate(nested.id, { run })).score.value, 0);
      const noExpected = await create({ name: 'exact', type: 'exact_match' });
      assert.match((await evaluate(noExpected.id, { run })).error.message, /expected/);
      const scores = await srv.api('GET', `/api/v1/runs/${run}/scores`);
      assert.ok(!scores.body.some((s: { name: string }) => ['thrower', 'texty', 'loops', 'exact'].includes(s.name)));
    });

    it('refuses bad configs by name before storing anything', async () => {
      const refusals: Array<[Record<string, unknown>, RegExp]> = [
        [{ type: 'nope' }, /type must be one of/],
        [
          { type: 'embedding_similarity', config: { model: 'x' } },
          /config\.model is not a field of a embedding_similarity evaluator \(it takes none\)/,
        ],
        [{ type: 'exact_match', config: { value: 1 } }, /config.value is not a field of a exact_match evaluator/],
        [{ type: 'contains' }, /needs config.value/],
        [{ type: 'regex', config: { pattern: '(' } }, /config.pattern/],
        [{ type: 'regex', config: { pattern: 'a', flags: 'g' } }, /flags/],
        [{ type: 'code', config: { body: 'return (' } }, /config.body/],
        [{ type: 'judge', config: { interaction: 'Nowhere@1' } }, /names no interaction/],
        [{ type: 'latency_under', config: { ms: -1 } }, /config.ms/],
        [{ type: 'json_schema_valid', config: { schema: { type: 'nonsense' } } }, /config.schema/],
      ];
      for (const [body, message] of refusals) {
        const r = await srv.api('POST', '/api/v1/evaluators', { name: 'refused', ...body });
        assert.equal(r.status, 400, `${JSON.stringify(body)}: ${JSON.stringify(r.body)}`);
        assert.match(r.body.message, message);
      }
      assert.equal(
        (await srv.api('GET', '/api/v1/evaluators')).body.filter((e: { name: string }) => e.name === 'refused').length,
        0,
      );
      const dup = await srv.api('POST', '/api/v1/evaluators', { name: 'length', type: 'exact_match' });
      assert.equal(dup.status, 409);
      const unknownField = await srv.api('POST', '/api/v1/evaluators', { name: 'x', type: 'exact_match', weight: 1 });
      assert.equal(unknownField.status, 400);
      assert.equal((await srv.api('PUT', '/api/v1/evaluators/nope', { config: {} })).status, 404);
      const ev = await create({ name: 'to-delete', type: 'exact_match' });
      assert.equal((await srv.api('POST', `/api/v1/evaluators/${ev.id}/evaluate`, { run: 'nope' })).status, 404);
      assert.equal((await srv.api('DELETE', `/api/v1/evaluators/${ev.id}`)).status, 200);
      assert.equal((await srv.api('GET', `/api/v1/evaluators/${ev.id}`)).status, 404);
    });

    it("never reaches another project's evaluators or runs", async () => {
      const project = await srv.api('POST', '/api/v1/projects', { name: `Other evaluators ${dialect}` });
      const key = await srv.api('POST', '/api/v1/apikeys', { name: 'other', project: project.body.id });
      const other = key.body.value as string;
      const mine = (await srv.api('GET', '/api/v1/evaluators')).body[0];
      assert.equal((await srv.api('GET', `/api/v1/evaluators/${mine.id}`, undefined, other)).status, 404);
      assert.equal((await srv.api('POST', `/api/v1/evaluators/${mine.id}/evaluate`, { run }, other)).status, 404);
      const theirs = await srv.api('POST', '/api/v1/evaluators', { name: 'theirs', type: 'exact_match' }, other);
      assert.equal(theirs.status, 200);
      const onMine = await srv.api(
        'POST',
        `/api/v1/evaluators/${theirs.body.id}/evaluate`,
        { run, expected: 'x' },
        other,
      );
      assert.equal(onMine.status, 404);
      assert.match(onMine.body.message, /run/);
      const reader = await srv.api('POST', '/api/v1/apikeys', { name: 'reader', role: 'reader' });
      assert.equal((await srv.api('GET', '/api/v1/evaluators', undefined, reader.body.value)).status, 200);
      const refused = await srv.api(
        'POST',
        '/api/v1/evaluators',
        { name: 'r', type: 'exact_match' },
        reader.body.value,
      );
      assert.equal(refused.status, 403);
      assert.match(refused.body.message, /evaluator:write/);
    });
  });
}
