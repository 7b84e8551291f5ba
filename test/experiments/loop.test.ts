/**
 * The evaluation loop end to end (issue 57, "Done when"), on both databases: production runs are
 * scored, a dataset is made from a run search on those scores, and an experiment compares two
 * published versions with a judge and a code evaluator; its figures are exactly what the `test`
 * provider makes them (the echo model answers its prompt; words count as tokens; the environment's
 * prices give the cost).
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { evaluator, twoVersions, until } from './support.ts';

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: the evaluation loop`, () => {
    let srv: TestServer;
    before(async () => {
      srv = await startTestServer(dialect);
    });
    after(() => srv.close());

    it('scores runs, makes a dataset from a run search, and compares two published versions', async () => {
      const name = `Loop ${dialect}`;
      await twoVersions(srv, name);
      // Production: four runs of version 1, two of them liked.
      const texts = ['north wind', 'south sea islands', 'east', 'west coast'];
      const runs: string[] = [];
      for (const text of texts) {
        const r = await srv.api('POST', '/api/v1/execute', { interaction: `${name}@1`, data: { text } });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        runs.push(r.body.id);
      }
      for (const [i, liked] of [true, true, false, false].entries()) {
        const s = await srv.api('POST', `/api/v1/runs/${runs[i]}/scores`, {
          name: 'thumbs',
          value: liked,
          source: 'human',
        });
        assert.equal(s.status, 200, JSON.stringify(s.body));
      }

      // A dataset of the liked ones, their answers as the expected values.
      const ds = await srv.api('POST', '/api/v1/datasets', { name: `liked ${dialect}` });
      const copied = await srv.api('POST', `/api/v1/datasets/${ds.body.id}/items`, {
        from_runs: { query: 'scores.thumbs:true', limit: 10 },
      });
      assert.equal(copied.status, 200, JSON.stringify(copied.body));
      assert.equal(copied.body.ids.length, 2);
      const items = await srv.api('GET', `/api/v1/datasets/${ds.body.id}/items`);
      assert.deepEqual(items.body.items.map((i: { expected: string }) => i.expected).sort(), [
        'Say: north wind',
        'Say: south sea islands',
      ]);

      // A judge (an interaction of the test provider answering {score, reason}) and a code evaluator.
      const env = await srv.api('POST', '/api/v1/environments', {
        name: 'Judge env',
        provider: 'test',
        default_model: 'echo',
      });
      const prompt = await srv.api('POST', '/api/v1/prompts', {
        name: 'judge prompt',
        role: 'user',
        content: '{"score": 0.75, "reason": "read {{output}}"}',
        content_type: 'handlebars',
      });
      const judgeIx = await srv.api('POST', '/api/v1/interactions', {
        name: `Judge ${dialect}`,
        status: 'draft',
        environment: env.body.id,
        prompts: [{ type: 'template', template: prompt.body.id }],
      });
      assert.equal(judgeIx.status, 200, JSON.stringify(judgeIx.body));
      const judge = await evaluator(srv, { name: 'judge', type: 'judge', config: { interaction: `Judge ${dialect}` } });
      const code = await evaluator(srv, {
        name: 'same',
        type: 'code',
        config: { body: 'return { score: output === expected ? 1 : 0, reason: output };' },
      });

      const r = await srv.api('POST', '/api/v1/experiments', {
        name: 'v1 or v2',
        dataset: ds.body.id,
        variants: [
          { name: 'v1', interaction: `${name}@1` },
          { name: 'v2', interaction: `${name}@2` },
        ],
        evaluators: [judge, code],
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const done = await until(srv, r.body.id, ['completed', 'failed']);
      assert.equal(done.status, 'completed', JSON.stringify(done));
      assert.deepEqual(done.progress, { done: 4, total: 4, completed: 4, failed: 0, canceled: 0 });
      const [v1, v2] = done.variants;
      const judged = {
        mean: 0.75,
        min: 0.75,
        max: 0.75,
        count: 2,
        errors: 0,
        pass_rate: 1,
        distribution: { '0.75': 2 },
      };
      assert.deepEqual(v1.scores.judge, judged);
      assert.deepEqual(v2.scores.judge, judged);
      assert.deepEqual(v1.scores.same, {
        mean: 1,
        min: 1,
        max: 1,
        count: 2,
        errors: 0,
        pass_rate: 1,
        distribution: { '1': 2 },
      });
      assert.deepEqual(v2.scores.same, {
        mean: 0,
        min: 0,
        max: 0,
        count: 2,
        errors: 0,
        pass_rate: 0,
        distribution: { '0': 2 },
      });
      // "Say: north wind" (3 words) and "Say: south sea islands" (4), prompt and answer alike.
      assert.deepEqual(v1.token_use, { prompt: 7, result: 7, total: 14 });
      assert.deepEqual(v2.token_use, { prompt: 7, result: 7, total: 14 });
      assert.deepEqual(v1.runs, { completed: 2, failed: 0 });

      // Each item's runs side by side, scored like any run.
      const its = await srv.api('GET', `/api/v1/experiments/${r.body.id}/items`);
      const north = its.body.find((i: { data: { text: string } }) => i.data.text === 'north wind');
      assert.equal(north.runs.v1.scores.same.value, 1);
      assert.equal(north.runs.v2.scores.same.value, 0);
      const v2run = await srv.api('GET', `/api/v1/runs/${north.runs.v2.run}`);
      assert.equal(v2run.body.result[0].value, 'Answer: north wind');
      assert.equal(v2run.body.scores.judge.value, 0.75);
      assert.equal(v2run.body.scores.judge.comment, 'read Answer: north wind');
      // The experiment's runs are searchable by their scores like production ones.
      const low = await srv.api('POST', '/api/v1/runs/search', {
        query: `scores.same:0 AND tags:"experiment:${r.body.id}"`,
      });
      assert.equal(low.status, 200, JSON.stringify(low.body));
      const found = (Array.isArray(low.body) ? low.body : low.body.results) as Array<{ id: string }>;
      assert.equal(found.length, 2, JSON.stringify(low.body));
    });
  });
}
