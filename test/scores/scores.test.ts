/**
 * Scores on runs (src/scores) through HTTP on both databases: given, listed, deleted, answered on
 * the run (latest per name); a name's kind fixed per project; searched, faceted and filtered in
 * run search; exported; averaged in analytics; another project's runs out of reach; the roles.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, seedEcho, startTestServer, type TestServer } from '../support/server.ts';

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: scores on runs`, () => {
    let srv: TestServer;
    let interaction: { id: string };
    const runs: string[] = [];
    const score = async (run: string, body: Record<string, unknown>, token?: string) =>
      srv.api('POST', `/api/v1/runs/${run}/scores`, body, token);
    const search = async (body: Record<string, unknown>) => {
      const r = await srv.api('POST', '/api/v1/runs/search', body);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body;
    };
    const ids = (refs: Array<{ id: string }>) => refs.map((r) => r.id).sort();

    before(async () => {
      srv = await startTestServer(dialect);
      ({ interaction } = await seedEcho(srv, { name: `Scored echo ${dialect}` }));
      for (const text of ['one', 'two', 'three', 'four']) {
        const r = await srv.api('POST', '/api/v1/runs', { interaction: interaction.id, data: { text } });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        runs.push(r.body.id);
      }
    });
    after(() => srv.close());

    it('keeps every score, answers the latest per name on the run, and deletes back to the one before', async () => {
      const [run] = runs;
      const first = await score(run, { name: 'quality', value: 0.4, source: 'human', comment: 'too short' });
      assert.equal(first.status, 200, JSON.stringify(first.body));
      assert.equal(first.body.value, 0.4);
      assert.equal(first.body.source, 'human');
      const second = await score(run, { name: 'quality', value: 0.9 });
      assert.equal(second.body.source, 'api');
      assert.equal((await score(run, { name: 'thumbs', value: true })).status, 200);
      assert.equal((await score(run, { name: 'label', value: 'on-topic' })).status, 200);

      const listed = await srv.api('GET', `/api/v1/runs/${run}/scores`);
      assert.deepEqual(
        listed.body.map((s: { name: string; value: unknown }) => [s.name, s.value]),
        [
          ['quality', 0.4],
          ['quality', 0.9],
          ['thumbs', true],
          ['label', 'on-topic'],
        ],
      );
      const answered = await srv.api('GET', `/api/v1/runs/${run}`);
      assert.equal(answered.status, 200);
      assert.deepEqual(Object.keys(answered.body.scores).sort(), ['label', 'quality', 'thumbs']);
      assert.equal(answered.body.scores.quality.value, 0.9);
      assert.equal(answered.body.scores.quality.id, second.body.id);
      assert.equal(answered.body.scores.thumbs.value, true);
      const stored = await srv.api('GET', `/api/v1/runs/${run}?populate=false`);
      assert.equal(stored.body.scores.label.value, 'on-topic');

      const removed = await srv.api('DELETE', `/api/v1/runs/${run}/scores/${second.body.id}`);
      assert.equal(removed.status, 200, JSON.stringify(removed.body));
      const back = await srv.api('GET', `/api/v1/runs/${run}`);
      assert.equal(back.body.scores.quality.value, 0.4);
      assert.equal(back.body.scores.quality.comment, 'too short');
      assert.equal((await srv.api('DELETE', `/api/v1/runs/${run}/scores/${second.body.id}`)).status, 404);
      // Put back for the searches below.
      assert.equal((await score(run, { name: 'quality', value: 0.9 })).status, 200);
      const unscored = await srv.api('GET', `/api/v1/runs/${runs[3]}`);
      assert.deepEqual(unscored.body.scores, {});
    });

    it('fixes the kind of a name within the project, and refuses bad input by name', async () => {
      const wrong = await score(runs[1], { name: 'quality', value: 'good' });
      assert.equal(wrong.status, 409, JSON.stringify(wrong.body));
      assert.match(wrong.body.message, /score "quality" holds numbers in this project/);
      const wrongBool = await score(runs[1], { name: 'thumbs', value: 1 });
      assert.equal(wrongBool.status, 409);
      assert.match(wrongBool.body.message, /holds booleans/);
      const extra = await score(runs[1], { name: 'quality', value: 1, weight: 2 });
      assert.equal(extra.status, 400);
      assert.match(extra.body.message, /weight/);
      const badName = await score(runs[1], { name: 'has space', value: 1 });
      assert.equal(badName.status, 400);
      assert.match(badName.body.message, /letters, digits/);
      const noEvaluator = await score(runs[1], { name: 'quality', value: 1, source: 'evaluator' });
      assert.equal(noEvaluator.status, 400);
      assert.match(noEvaluator.body.message, /evaluator/);
      const strayEvaluator = await score(runs[1], { name: 'quality', value: 1, evaluator: 'x' });
      assert.equal(strayEvaluator.status, 400);
      const longCategory = await score(runs[1], { name: 'label', value: 'x'.repeat(201) });
      assert.equal(longCategory.status, 400);
      assert.equal((await score('no-such-run', { name: 'quality', value: 1 })).status, 404);
      assert.equal((await srv.api('GET', `/api/v1/runs/no-such-run/scores`)).status, 404);
      const scores = await srv.api('GET', `/api/v1/runs/${runs[1]}/scores`);
      assert.deepEqual(scores.body, [], 'nothing of a refused request was stored');
    });

    it('searches, facets and filters runs by their latest scores', async () => {
      // runs[0]: quality 0.9, thumbs true, label on-topic (from above)
      for (const [run, quality, thumbs] of [
        [runs[1], 0.5, false],
        [runs[2], 0.8, true],
      ] as const) {
        assert.equal((await score(run, { name: 'quality', value: quality })).status, 200);
        assert.equal((await score(run, { name: 'thumbs', value: thumbs })).status, 200);
      }
      const high = await search({ query: 'scores.quality:[0.8 TO *]' });
      assert.deepEqual(ids(high), [runs[0], runs[2]].sort());
      assert.deepEqual(ids(await search({ query: 'scores.quality:>0.5' })), [runs[0], runs[2]].sort());
      assert.deepEqual(ids(await search({ query: 'scores.quality:0.5' })), [runs[1]]);
      assert.deepEqual(ids(await search({ query: 'scores.thumbs:false' })), [runs[1]]);
      assert.deepEqual(ids(await search({ query: 'scores.label:on-*' })), [runs[0]]);
      assert.deepEqual(ids(await search({ query: '_exists_:scores.quality' })), [runs[0], runs[1], runs[2]].sort());
      assert.deepEqual(
        ids(await search({ query: `interaction:${interaction.id} AND NOT scores.thumbs:true` })),
        [runs[1], runs[3]].sort(),
        'a run without the score is matched by NOT',
      );
      // The client's shape goes through the same compiler.
      const client = await srv.client().runs.search({ query: { query: 'scores.thumbs:true' } } as never);
      assert.deepEqual(ids(client as never), [runs[0], runs[2]].sort());

      const faceted = await search({
        query: `interaction:${interaction.id}`,
        facets: {
          thumbs: { path: 'scores.thumbs' },
          quality: { path: 'scores.quality', type: 'number', boundaries: [0, 0.6, 1.01], default: 'none' },
          values: { path: 'scores.quality' },
        },
      });
      assert.equal(faceted.count.total, 4);
      assert.deepEqual(faceted.facet.thumbs.buckets, [
        { _id: true, count: 2 },
        { _id: false, count: 1 },
      ]);
      assert.deepEqual(faceted.facet.quality.buckets, [
        { _id: 0, count: 1 },
        { _id: 0.6, count: 2 },
        { _id: 'none', count: 1 },
      ]);
      assert.deepEqual(faceted.facet.values.buckets.map((b: { _id: unknown }) => b._id).sort(), [0.5, 0.8, 0.9]);
      // The official client's facets route: runs without the score are in no bucket.
      const clientFacets = await srv.api('POST', '/api/v1/runs/facets', {
        facets: [{ name: 'thumbs', field: 'scores.thumbs' }],
        query: { interaction: interaction.id },
      });
      assert.equal(clientFacets.status, 200, JSON.stringify(clientFacets.body));
      assert.deepEqual(clientFacets.body, {
        thumbs: [
          { _id: true, count: 2 },
          { _id: false, count: 1 },
        ],
        total: 4,
      });
      const dateFacet = await srv.api('POST', '/api/v1/runs/search', {
        facets: { q: { path: 'scores.quality', type: 'date', boundaries: ['2024-01-01', '2025-01-01'] } },
      });
      assert.equal(dateFacet.status, 400);

      const listed = await srv.api('GET', `/api/v1/runs?score=${encodeURIComponent('quality:[0.8 TO *]')}`);
      assert.equal(listed.status, 200, JSON.stringify(listed.body));
      assert.deepEqual(ids(listed.body), [runs[0], runs[2]].sort());
      const both = await srv.api(
        'GET',
        `/api/v1/runs?score=${encodeURIComponent('quality:[0.8 TO *]')}&score=thumbs:true&score=label:on-topic`,
      );
      assert.deepEqual(ids(both.body), [runs[0]]);
      const bad = await srv.api('GET', `/api/v1/runs?score=${encodeURIComponent('quality:1 OR status:failed')}`);
      assert.equal(bad.status, 400);
      assert.match(bad.body.message, /one condition per parameter/);
      const noName = await srv.api('GET', `/api/v1/runs?score=0.8`);
      assert.equal(noName.status, 400);
      assert.match(noName.body.message, /<name>:<value>/);
    });

    it('exports the latest scores with each run', async () => {
      const jsonl = await srv.api('GET', `/api/v1/runs/export?query=${encodeURIComponent('scores.quality:*')}`);
      assert.equal(jsonl.status, 200);
      const lines = String(jsonl.body)
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      assert.equal(lines.length, 3);
      const first = lines.find((l) => l.id === runs[0]);
      assert.equal(first.scores.quality.value, 0.9);
      assert.equal(first.scores.label.value, 'on-topic');
      const csv = await srv.api('GET', `/api/v1/runs/export?format=csv&score=thumbs:false`);
      assert.equal(csv.status, 200);
      const [header, row] = String(csv.body).trim().split('\r\n');
      assert.equal(header.split(',').at(-1), 'scores');
      assert.ok(row.includes(runs[1]));
      assert.ok(row.endsWith('"{""quality"":0.5,""thumbs"":false}"'), row);
    });

    it('averages a score per model, interaction version and day', async () => {
      const byModel = await srv.api('GET', '/api/v1/analytics/runs/scores?name=quality&group_by=model');
      assert.equal(byModel.status, 200, JSON.stringify(byModel.body));
      assert.equal(byModel.body.kind, 'number');
      assert.equal(byModel.body.groups.length, 1);
      const g = byModel.body.groups[0];
      assert.equal(g.key, 'echo');
      assert.equal(g.count, 3);
      assert.ok(Math.abs(g.mean - (0.9 + 0.5 + 0.8) / 3) < 1e-9, String(g.mean));
      assert.equal(g.min, 0.5);
      assert.equal(g.max, 0.9);
      const byVersion = await srv.api(
        'GET',
        `/api/v1/analytics/runs/scores?name=thumbs&group_by=interaction_version&interaction=${interaction.id}`,
      );
      assert.equal(byVersion.status, 200, JSON.stringify(byVersion.body));
      assert.equal(byVersion.body.groups.length, 1);
      assert.equal(byVersion.body.groups[0].interaction, interaction.id);
      assert.ok(Math.abs(byVersion.body.groups[0].mean - 2 / 3) < 1e-9);
      const byDay = await srv.api('GET', '/api/v1/analytics/runs/scores?name=quality&group_by=day');
      assert.match(byDay.body.groups[0].key, /^\d{4}-\d{2}-\d{2}$/);
      assert.equal(byDay.body.groups[0].count, 3);
      const category = await srv.api('GET', '/api/v1/analytics/runs/scores?name=label&group_by=day');
      assert.equal(category.status, 400);
      assert.match(category.body.message, /category strings/);
      const none = await srv.api('GET', '/api/v1/analytics/runs/scores?name=never&group_by=day');
      assert.deepEqual(none.body, { name: 'never', kind: null, groups: [] });
      assert.equal((await srv.api('GET', '/api/v1/analytics/runs/scores?name=quality&group_by=week')).status, 400);
    });

    it("never reaches another project's runs, and scoring is its own permission", async () => {
      const project = await srv.api('POST', '/api/v1/projects', { name: `Other scores ${dialect}` });
      const key = await srv.api('POST', '/api/v1/apikeys', { name: 'other', project: project.body.id });
      const other = key.body.value as string;
      const seeded = await seedEcho(srv, { token: other, name: 'Other echo' });
      const theirs = await srv.api(
        'POST',
        '/api/v1/runs',
        { interaction: seeded.interaction.id, data: { text: 'x' } },
        other,
      );
      assert.equal(theirs.status, 200);
      // Their project may use "quality" for categories: kinds are per project.
      assert.equal((await score(theirs.body.id, { name: 'quality', value: 'fine' }, other)).status, 200);
      assert.equal((await score(runs[0], { name: 'quality', value: 1 }, other)).status, 404);
      assert.equal((await srv.api('GET', `/api/v1/runs/${runs[0]}/scores`, undefined, other)).status, 404);
      const mine = await srv.api('GET', `/api/v1/runs/${runs[0]}/scores`);
      assert.equal(
        (await srv.api('DELETE', `/api/v1/runs/${runs[0]}/scores/${mine.body[0].id}`, undefined, other)).status,
        404,
      );
      assert.equal((await score(theirs.body.id, { name: 'quality', value: 0.1 })).status, 404);
      const found = await srv.api('POST', '/api/v1/runs/search', { query: 'scores.quality:*' }, other);
      assert.deepEqual(ids(found.body), [theirs.body.id]);

      const roles: Record<string, string> = {};
      for (const role of ['executor', 'reader', 'developer']) {
        const k = await srv.api('POST', '/api/v1/apikeys', { name: `${role} scorer`, role });
        roles[role] = k.body.value;
      }
      assert.equal((await score(runs[3], { name: 'thumbs', value: true }, roles.executor)).status, 200);
      assert.equal((await score(runs[3], { name: 'thumbs', value: false }, roles.developer)).status, 200);
      const refused = await score(runs[3], { name: 'thumbs', value: true }, roles.reader);
      assert.equal(refused.status, 403);
      assert.match(refused.body.message, /run:score/);
      assert.equal((await srv.api('GET', `/api/v1/runs/${runs[3]}/scores`, undefined, roles.reader)).status, 200);
    });

    it('scores go with their run and with their project', async () => {
      const r = await srv.api('POST', '/api/v1/runs', { interaction: interaction.id, data: { text: 'doomed' } });
      assert.equal((await score(r.body.id, { name: 'quality', value: 0.3 })).status, 200);
      assert.equal((await srv.api('DELETE', `/api/v1/runs/${r.body.id}`)).status, 200);
      assert.equal((await srv.api('GET', `/api/v1/runs/${r.body.id}/scores`)).status, 404);
      const found = await search({ query: 'scores.quality:0.3' });
      assert.deepEqual(found, []);

      const project = await srv.api('POST', '/api/v1/projects', { name: `Deleted scores ${dialect}` });
      const key = await srv.api('POST', '/api/v1/apikeys', { name: 'gone', project: project.body.id });
      const seeded = await seedEcho(srv, { token: key.body.value, name: 'Gone echo' });
      const run = await srv.api(
        'POST',
        '/api/v1/runs',
        { interaction: seeded.interaction.id, data: { text: 'x' } },
        key.body.value,
      );
      assert.equal((await score(run.body.id, { name: 'quality', value: 1 }, key.body.value)).status, 200);
      const ev = await srv.api('POST', '/api/v1/evaluators', { name: 'gone', type: 'exact_match' }, key.body.value);
      assert.equal(ev.status, 200);
      const deleted = await srv.api('DELETE', `/api/v1/projects/${project.body.id}`);
      assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
    });
  });
}
