/**
 * Experiments (src/experiments) through HTTP on both databases: two published versions of an
 * interaction over a dataset, every item as an ordinary run tagged with the experiment, scored by
 * every evaluator, with exact figures on the `test` provider; an evaluator that throws records
 * its error and the experiment goes on; the dataset frozen at the version used; a deleted
 * version, bad bodies and bounds refused by name before any work; cancel, re-run, compare; roles
 * and another project's experiments out of reach.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { dataset, evaluator, twoVersions, until } from './support.ts';

const ITEMS = [
  { data: { text: 'red apple' }, expected: 'Say: red apple' },
  { data: { text: 'green pear tree' }, expected: 'Say: green pear tree' },
  { data: { text: 'blue' }, expected: 'something else' },
];

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: experiments`, () => {
    let srv: TestServer;
    let versions: Awaited<ReturnType<typeof twoVersions>>;
    let ds: string;
    let exact: string;
    let length: string;
    let thrower: string;
    const name = `Experimented ${dialect}`;
    /** After a cancel: polls until the run being made (if any) has ended. */
    const untilSettled = async (id: string) => {
      for (let i = 0; i < 2400; i++) {
        const r = await srv.api('GET', `/api/v1/experiments/${id}`);
        if (r.body.progress.done === r.body.progress.total) return r.body;
        await new Promise((res) => setTimeout(res, 50));
      }
      throw new Error(`experiment ${id} kept a run going after its cancel`);
    };
    const start = async (body: Record<string, unknown>, token?: string) =>
      srv.api('POST', '/api/v1/experiments', body, token);

    before(async () => {
      srv = await startTestServer(dialect);
      versions = await twoVersions(srv, name);
      ds = await dataset(srv, `fruits ${dialect}`, ITEMS);
      exact = await evaluator(srv, { name: 'exact', type: 'exact_match' });
      length = await evaluator(srv, { name: 'length', type: 'code', config: { body: 'return output.length;' } });
      thrower = await evaluator(srv, {
        name: 'picky',
        type: 'code',
        config: { body: 'if (input.text === "blue") throw new Error("no blue"); return true;' },
      });
    });
    after(() => srv.close());

    it('runs every item through every variant, scored by every evaluator, with exact figures', async () => {
      const r = await start({
        name: 'v1 against v2',
        dataset: ds,
        variants: [
          { name: 'v1', interaction: `${name}@1` },
          { name: 'v2', interaction: versions.v2 },
        ],
        evaluators: [exact, length, thrower],
        concurrency: 2,
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.ok(['queued', 'running'].includes(r.body.status));
      assert.deepEqual(r.body.dataset, { id: ds, version: 1 });
      assert.equal(r.body.progress.total, 6);
      const done = await until(srv, r.body.id, ['completed', 'failed']);
      assert.equal(done.status, 'completed', JSON.stringify(done));
      // The item "blue" fails under both variants (its evaluator threw); the experiment went on.
      assert.deepEqual(done.progress, { done: 6, total: 6, completed: 4, failed: 2, canceled: 0 });
      const [v1, v2] = done.variants;
      assert.equal(v1.name, 'v1');
      assert.deepEqual(v1.runs, { completed: 3, failed: 0 });
      assert.deepEqual(v1.scores.exact, {
        mean: 0.666666667,
        min: 0,
        max: 1,
        count: 3,
        errors: 0,
        pass_rate: 0.666666667,
        distribution: { '0': 1, '1': 2 },
      });
      // "Say: red apple" 14, "Say: green pear tree" 20, "Say: blue" 9 characters.
      assert.deepEqual(v1.scores.length, {
        mean: 14.333333333,
        min: 9,
        max: 20,
        count: 3,
        errors: 0,
        pass_rate: 1,
        distribution: { '9': 1, '14': 1, '20': 1 },
      });
      assert.deepEqual(v1.scores.picky, {
        mean: 1,
        min: 1,
        max: 1,
        count: 2,
        errors: 1,
        pass_rate: 1,
        distribution: { true: 2 },
      });
      assert.deepEqual(v2.scores.exact.distribution, { '0': 3 });
      assert.equal(v2.scores.exact.mean, 0);
      assert.equal(v2.scores.exact.pass_rate, 0);
      // "Answer: …" is three characters longer than "Say: …".
      assert.equal(v2.scores.length.mean, 17.333333333);
      // Words as tokens: the prompts (2 + 3 + 1 words of text, one of Say:/Answer: each) and the same answers.
      assert.deepEqual(v1.token_use, { prompt: 9, result: 9, total: 18 });
      assert.equal(v1.tokens, 18);
      assert.deepEqual(v2.token_use, { prompt: 9, result: 9, total: 18 });
      assert.equal(v1.cost, 0);
      assert.ok(v1.latency.p50 !== null && v1.latency.p50 <= v1.latency.p95, JSON.stringify(v1.latency));

      const items = await srv.api('GET', `/api/v1/experiments/${r.body.id}/items`);
      assert.equal(items.status, 200, JSON.stringify(items.body));
      assert.deepEqual(
        items.body.map((i: { data: unknown }) => i.data),
        ITEMS.map((i) => i.data),
      );
      const blue = items.body[2];
      assert.equal(blue.runs.v1.status, 'failed');
      assert.match(blue.runs.v1.scores.picky.error, /no blue/);
      assert.equal(blue.runs.v1.scores.exact.value, 0);
      const run = await srv.api('GET', `/api/v1/runs/${items.body[0].runs.v2.run}`);
      assert.equal(run.body.result[0].value, 'Answer: red apple');
      assert.ok(run.body.tags.includes(`experiment:${r.body.id}`), JSON.stringify(run.body.tags));
      assert.ok(run.body.tags.includes('variant:v2'));
      // Scores appear on the runs like any other, under the evaluator's name.
      assert.equal(run.body.scores.length.value, 17);
      assert.equal(run.body.scores.exact.value, 0);
      assert.equal(run.body.scores.exact.source, 'evaluator');
      // The runs are ordinary runs: found by their tag.
      const tagged = await srv.api('GET', `/api/v1/runs?tag=experiment:${r.body.id}&limit=100`);
      assert.equal(tagged.body.length, 6);
      // The page bound.
      const page = await srv.api('GET', `/api/v1/experiments/${r.body.id}/items?limit=1&offset=1`);
      assert.deepEqual(
        page.body.map((i: { item: string }) => i.item),
        [items.body[1].item],
      );
      // The list has no figures, but the progress.
      const list = await srv.api('GET', `/api/v1/experiments?dataset=${ds}`);
      const listed = list.body.find((e: { id: string }) => e.id === r.body.id);
      assert.equal(listed.progress.done, 6);
      assert.equal(listed.variants[0].scores, undefined);
    });

    it('freezes the dataset at the version it used', async () => {
      const fresh = await dataset(srv, `frozen ${dialect}`, [{ data: { text: 'one' }, expected: 'Say: one' }]);
      const r = await start({
        dataset: fresh,
        variants: [{ name: 'a', interaction: versions.v1 }],
        evaluators: [exact],
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const d = await srv.api('GET', `/api/v1/datasets/${fresh}`);
      assert.equal(d.body.frozen_version, 1);
      const added = await srv.api('POST', `/api/v1/datasets/${fresh}/items`, { items: [{ data: { text: 'two' } }] });
      assert.equal(added.body.version, 2);
      const done = await until(srv, r.body.id, ['completed']);
      assert.equal(done.progress.total, 1);
      // Version 1 reads as it was; a new experiment over version 1 runs its one item.
      const again = await start({
        dataset: fresh,
        dataset_version: 1,
        variants: [{ name: 'a', interaction: versions.v1 }],
      });
      assert.equal(again.status, 200, JSON.stringify(again.body));
      assert.deepEqual(again.body.dataset, { id: fresh, version: 1 });
      assert.equal(again.body.progress.total, 1);
      await until(srv, again.body.id, ['completed']);
      const latest = await start({ dataset: fresh, variants: [{ name: 'a', interaction: versions.v1 }] });
      assert.equal(latest.body.progress.total, 2);
      await until(srv, latest.body.id, ['completed']);
    });

    it('refuses a deleted interaction version, bad bodies and bounds by name before any work', async () => {
      const v3 = await srv.api('POST', `/api/v1/interactions/${versions.draft}/publish`, {});
      assert.equal(v3.status, 200);
      assert.equal((await srv.api('DELETE', `/api/v1/interactions/${v3.body.id}`)).status, 200);
      const before = (await srv.api('GET', '/api/v1/experiments?limit=1000')).body.length;
      const refusals: Array<[Record<string, unknown>, number, RegExp]> = [
        [
          { dataset: ds, variants: [{ name: 'gone', interaction: `${name}@3` }] },
          400,
          /variants\[0\]\.interaction .*deleted/,
        ],
        [{ dataset: ds, variants: [{ name: 'gone', interaction: v3.body.id }] }, 400, /names no interaction version/],
        [{ dataset: ds, variants: [] }, 400, /variants/],
        [
          {
            dataset: ds,
            variants: [
              { name: 'a', interaction: versions.v1 },
              { name: 'a', interaction: versions.v2 },
            ],
          },
          400,
          /used twice/,
        ],
        [
          { dataset: 'nope', variants: [{ name: 'a', interaction: versions.v1 }] },
          400,
          /dataset "nope" names no dataset/,
        ],
        [
          { dataset: ds, variants: [{ name: 'a', interaction: versions.v1 }], evaluators: ['nope'] },
          400,
          /evaluators\[0\]/,
        ],
        [
          { dataset: ds, variants: [{ name: 'a', interaction: versions.v1 }], evaluators: [exact, exact] },
          400,
          /twice/,
        ],
        [{ dataset: ds, variants: [{ name: 'a', interaction: versions.v1 }], concurrency: 17 }, 400, /concurrency/],
        [{ dataset: ds, variants: [{ name: 'a', interaction: versions.v1 }], repetitions: 0 }, 400, /repetitions/],
        [
          { dataset: ds, variants: [{ name: 'a', interaction: versions.v1, config: { temperature: 1 } }] },
          400,
          /temperature/,
        ],
        [
          { dataset: ds, variants: [{ name: 'a', interaction: versions.v1, config: { environment: 'nope' } }] },
          400,
          /config\.environment "nope"/,
        ],
        [
          { dataset: ds, variants: [{ name: 'a', interaction: versions.v1 }], dataset_version: 9 },
          400,
          /dataset_version/,
        ],
        [{ dataset: ds, variants: [{ name: 'a', interaction: versions.v1 }], extra: 1 }, 400, /extra/],
      ];
      for (const [body, status, message] of refusals) {
        const r = await start(body);
        assert.equal(r.status, status, `${JSON.stringify(body)} → ${JSON.stringify(r.body)}`);
        assert.equal(r.body.status, status);
        assert.match(r.body.message, message, JSON.stringify(body));
      }
      const empty = await dataset(srv, `empty ${dialect}`, [{ data: { text: 'x' } }]);
      const items = await srv.api('GET', `/api/v1/datasets/${empty}/items`);
      await srv.api('DELETE', `/api/v1/datasets/${empty}/items/${items.body.items[0].id}`);
      const none = await start({ dataset: empty, variants: [{ name: 'a', interaction: versions.v1 }] });
      assert.equal(none.status, 400);
      assert.match(none.body.message, /no items/);
      // items × variants × repetitions over the bound: 3 items × 10 variants × 10 repetitions is 300, under it;
      // the bound itself is checked with the figures in limits.md (20,000 runs).
      const many = await start({
        dataset: ds,
        variants: Array.from({ length: 11 }, (_, i) => ({ name: `v${i}`, interaction: versions.v1 })),
      });
      assert.equal(many.status, 400);
      assert.equal((await srv.api('GET', '/api/v1/experiments?limit=1000')).body.length, before);
    });

    it('cancels, re-runs a failed item, compares two experiments, and deletes an ended one', async () => {
      const slow = await srv.api('POST', '/api/v1/environments', {
        name: 'Slow env',
        provider: 'test',
        default_model: 'echo',
        config: { chunk_delay_ms: 100 },
      });
      const words = Array.from({ length: 20 }, (_, i) => ({ data: { text: `w${i} `.repeat(10) } }));
      const big = await dataset(srv, `slow ${dialect}`, words);
      const r = await start({
        dataset: big,
        variants: [{ name: 'slow', interaction: versions.v1, config: { environment: slow.body.id } }],
        concurrency: 1,
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const canceled = await srv.api('POST', `/api/v1/experiments/${r.body.id}/cancel`);
      assert.equal(canceled.status, 200, JSON.stringify(canceled.body));
      assert.equal(canceled.body.status, 'canceled');
      // At most one run was being made (concurrency 1): every other one is canceled, never made.
      assert.ok(canceled.body.progress.canceled >= 18, JSON.stringify(canceled.body.progress));
      const settled = await untilSettled(r.body.id);
      const made = await srv.api('GET', `/api/v1/runs?tag=experiment:${r.body.id}&limit=100`);
      assert.equal(made.body.length, settled.progress.completed + settled.progress.failed);
      assert.equal(settled.progress.canceled + made.body.length, 20);
      const again = await srv.api('POST', `/api/v1/experiments/${r.body.id}/cancel`);
      assert.equal(again.status, 409);
      assert.match(again.body.message, /already ended/);
      // A canceled experiment is not re-run.
      const items = await srv.api('GET', `/api/v1/experiments/${r.body.id}/items?limit=1`);
      const rerunCanceled = await srv.api('POST', `/api/v1/experiments/${r.body.id}/items/${items.body[0].item}/rerun`);
      assert.equal(rerunCanceled.status, 409);

      // Re-running the failed item of an experiment whose evaluator threw: it throws again (same item).
      const first = await start({
        dataset: ds,
        variants: [{ name: 'v1', interaction: versions.v1 }],
        evaluators: [thrower],
      });
      const ended = await until(srv, first.body.id, ['completed']);
      assert.equal(ended.progress.failed, 1);
      const its = await srv.api('GET', `/api/v1/experiments/${first.body.id}/items`);
      const okItem = its.body[0].item;
      const blueItem = its.body[2].item;
      const refused = await srv.api('POST', `/api/v1/experiments/${first.body.id}/items/${okItem}/rerun`);
      assert.equal(refused.status, 409);
      assert.match(refused.body.message, /no failed run/);
      assert.equal((await srv.api('POST', `/api/v1/experiments/${first.body.id}/items/nope/rerun`)).status, 404);
      const oldRun = its.body[2].runs.v1.run;
      const rerun = await srv.api('POST', `/api/v1/experiments/${first.body.id}/items/${blueItem}/rerun`);
      assert.equal(rerun.status, 200, JSON.stringify(rerun.body));
      const reran = await until(srv, first.body.id, ['completed']);
      assert.equal(reran.progress.failed, 1);
      const after = await srv.api('GET', `/api/v1/experiments/${first.body.id}/items`);
      assert.notEqual(after.body[2].runs.v1.run, oldRun);

      // Compare: the first experiment's v1 against one scoring the same with exact_match too.
      const second = await start({
        dataset: ds,
        variants: [{ name: 'v1', interaction: versions.v2 }],
        evaluators: [thrower],
      });
      await until(srv, second.body.id, ['completed']);
      const cmp = await srv.api('GET', `/api/v1/experiments/${first.body.id}/compare?with=${second.body.id}`);
      assert.equal(cmp.status, 200, JSON.stringify(cmp.body));
      assert.equal(cmp.body.same_dataset, true);
      assert.deepEqual(cmp.body.deltas.v1.scores.picky, { mean: 0, pass_rate: 0 });
      // "Answer:" and "Say:" are one word each: the same tokens.
      assert.equal(cmp.body.deltas.v1.tokens, 0);
      assert.equal(
        (await srv.api('GET', `/api/v1/experiments/${first.body.id}/compare?with=${first.body.id}`)).status,
        400,
      );
      assert.equal((await srv.api('GET', `/api/v1/experiments/${first.body.id}/compare?with=nope`)).status, 404);
      assert.equal((await srv.api('GET', `/api/v1/experiments/${first.body.id}/compare`)).status, 400);

      assert.equal((await srv.api('DELETE', `/api/v1/experiments/${first.body.id}`)).status, 200);
      assert.equal((await srv.api('GET', `/api/v1/experiments/${first.body.id}`)).status, 404);
      // Its runs stay.
      assert.equal((await srv.api('GET', `/api/v1/runs/${oldRun}`)).status, 200);
    });

    it("keeps another project's experiments out of reach, and gives reading to readers only", async () => {
      const mine = (await srv.api('GET', '/api/v1/experiments')).body[0].id;
      const project = await srv.api('POST', '/api/v1/projects', { name: `Other experiments ${dialect}` });
      const key = await srv.api('POST', '/api/v1/apikeys', { name: 'other', project: project.body.id });
      const other = key.body.value as string;
      assert.equal((await srv.api('GET', `/api/v1/experiments/${mine}`, undefined, other)).status, 404);
      assert.equal((await srv.api('GET', `/api/v1/experiments/${mine}/items`, undefined, other)).status, 404);
      assert.equal((await srv.api('POST', `/api/v1/experiments/${mine}/cancel`, undefined, other)).status, 404);
      assert.deepEqual((await srv.api('GET', '/api/v1/experiments', undefined, other)).body, []);
      // My dataset and versions do not exist in their project.
      const theirs = await start({ dataset: ds, variants: [{ name: 'a', interaction: versions.v1 }] }, other);
      assert.equal(theirs.status, 400);

      const keys: Record<string, string> = {};
      for (const role of ['reader', 'executor', 'developer'])
        keys[role] = (await srv.api('POST', '/api/v1/apikeys', { name: `${role} experiments`, role })).body.value;
      assert.equal((await srv.api('GET', `/api/v1/experiments/${mine}`, undefined, keys.reader)).status, 200);
      const body = { dataset: ds, variants: [{ name: 'a', interaction: versions.v1 }] };
      const byReader = await start(body, keys.reader);
      assert.equal(byReader.status, 403);
      assert.match(byReader.body.message, /experiment:write/);
      assert.equal((await start(body, keys.executor)).status, 403);
      const byDeveloper = await start(body, keys.developer);
      assert.equal(byDeveloper.status, 200, JSON.stringify(byDeveloper.body));
      await until(srv, byDeveloper.body.id, ['completed']);
    });
  });
}
