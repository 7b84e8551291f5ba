/**
 * Online evaluation (src/experiments/rules.ts) through HTTP on both databases: a rule on an
 * interaction scores its new production runs in the background, oldest first, at most
 * max_per_minute per minute (beyond, they are not scored), never an experiment's or a judge's
 * runs; a rule on a run query scores the share its sample picks; CRUD, bad input refused by name,
 * roles, and another project's rules out of reach.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, seedEcho, startTestServer, type TestServer } from '../support/server.ts';
import { picked } from '../../src/experiments/rules.ts';
import { evaluator } from './support.ts';

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: online evaluation rules`, () => {
    let srv: TestServer;
    let says: string;
    let short: string;
    let interaction: string;
    before(async () => {
      srv = await startTestServer(dialect);
      interaction = (await seedEcho(srv, { name: 'Online' })).interaction.id;
      says = await evaluator(srv, { name: 'says', type: 'contains', config: { value: 'Say' } });
      short = await evaluator(srv, { name: 'short', type: 'code', config: { body: 'return output.length < 100;' } });
    });
    after(() => srv.close());

    const run = async (text: string, tags: string[] = []) => {
      const r = await srv.api('POST', '/api/v1/runs', { interaction, data: { text }, tags });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body.id as string;
    };
    /** Polls the rule until `done` holds (a generous cap: a tick is every 2 s). */
    const untilRule = async (id: string, done: (r: any) => boolean) => {
      let seen: unknown;
      for (let i = 0; i < 1200; i++) {
        const r = await srv.api('GET', `/api/v1/evaluation-rules/${id}`);
        assert.equal(r.status, 200, JSON.stringify(r.body));
        if (done(r.body)) return r.body;
        seen = r.body;
        await new Promise((res) => setTimeout(res, 100));
      }
      throw new Error(`rule ${id} never got there: ${JSON.stringify(seen)}`);
    };

    it("scores an interaction's new production runs, oldest first, within max_per_minute", async () => {
      const before = await run('before the rule');
      const created = await srv.api('POST', '/api/v1/evaluation-rules', {
        name: 'online says',
        interaction: 'Online',
        evaluators: [says],
        max_per_minute: 3,
        enabled: false,
      });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      assert.equal(created.body.sample_rate, 1);
      const runs: string[] = [];
      for (let i = 0; i < 5; i++) runs.push(await run(`production ${i}`));
      const notProduction = [await run('an experiment', ['experiment']), await run('a judge', ['evaluator'])];
      const other = (await seedEcho(srv, { name: 'Elsewhere' })).interaction.id;
      const elsewhere = await srv.api('POST', '/api/v1/runs', { interaction: other, data: { text: 'x' } });
      // Enabled once every run is there: one tick reads them all, in one minute.
      const enabled = await srv.api('PUT', `/api/v1/evaluation-rules/${created.body.id}`, { enabled: true });
      assert.equal(enabled.status, 200, JSON.stringify(enabled.body));
      // The cursor passes the newest production run: the two beyond the bound were looked at, not scored.
      const last = (await srv.api('GET', `/api/v1/runs/${runs[4]}`)).body.updated_at;
      const done = await untilRule(created.body.id, (r) => r.scored === 3 && r.cursor >= last);
      assert.equal(done.last_error, undefined);
      const scoreOf = async (id: string) => (await srv.api('GET', `/api/v1/runs/${id}`)).body.scores?.says;
      for (const id of runs.slice(0, 3)) assert.equal((await scoreOf(id))?.value, 1, id);
      for (const id of [...runs.slice(3), ...notProduction, before, elsewhere.body.id])
        assert.equal(await scoreOf(id), undefined, id);
      const s = (await srv.api('GET', `/api/v1/runs/${runs[0]}`)).body.scores.says;
      assert.equal(s.source, 'evaluator');
      assert.equal(s.evaluator, says);
      // Paused: no tick; deleted: gone.
      const paused = await srv.api('PUT', `/api/v1/evaluation-rules/${created.body.id}`, { enabled: false });
      assert.equal(paused.body.enabled, false);
      assert.equal((await srv.api('DELETE', `/api/v1/evaluation-rules/${created.body.id}`)).status, 200);
      assert.equal((await srv.api('GET', `/api/v1/evaluation-rules/${created.body.id}`)).status, 404);
    });

    it('scores the share of a run query its sample picks', async () => {
      const created = await srv.api('POST', '/api/v1/evaluation-rules', {
        name: 'sampled short',
        query: 'tags:sampled',
        evaluators: [short],
        sample_rate: 0.5,
        enabled: false,
      });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      const runs: string[] = [];
      for (let i = 0; i < 20; i++) runs.push(await run(`sampled ${i}`, ['sampled']));
      const expected = runs.filter((id) => picked(created.body.id, id, 0.5));
      assert.ok(expected.length > 0 && expected.length < 20, `the sample picked ${expected.length} of 20`);
      await srv.api('PUT', `/api/v1/evaluation-rules/${created.body.id}`, { enabled: true });
      const last = (await srv.api('GET', `/api/v1/runs/${runs[19]}`)).body.updated_at;
      const done = await untilRule(created.body.id, (r) => r.cursor >= last && r.scored >= expected.length);
      assert.equal(done.scored, expected.length);
      for (const id of runs) {
        const scores = (await srv.api('GET', `/api/v1/runs/${id}`)).body.scores ?? {};
        assert.equal(scores.short?.value, expected.includes(id) ? true : undefined, id);
      }
      const list = await srv.api('GET', '/api/v1/evaluation-rules');
      assert.ok(list.body.some((r: { id: string }) => r.id === created.body.id));
    });

    it("pauses at the project's daily cost quota with the limiter's message, and resumes once raised", async () => {
      // USD 1 per prompt token and 2 per answer token: a run of "Say: q" costs 2 + 4 = 6.
      const { interaction: priced } = await seedEcho(srv, {
        name: 'Priced online',
        config: { prices: { echo: { input: 1_000_000, output: 2_000_000 } } },
      });
      const rule = await srv.api('POST', '/api/v1/evaluation-rules', {
        name: 'quota bound',
        interaction: 'Priced online',
        evaluators: [says],
        enabled: false,
      });
      assert.equal(rule.status, 200, JSON.stringify(rule.body));
      // The quota first (a cost counts against the limits there are when its run ends), then a run over it.
      const project = (await srv.api('GET', '/api/v1/projects')).body[0].id;
      assert.equal((await srv.api('PUT', `/api/v1/projects/${project}`, { limits: { cost_per_day: 1 } })).status, 200);
      let r: { status: number; body: any };
      try {
        r = await srv.api('POST', '/api/v1/runs', { interaction: priced.id, data: { text: 'q' } });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.equal(r.body.cost.total, 6);
        await srv.api('PUT', `/api/v1/evaluation-rules/${rule.body.id}`, { enabled: true });
        const paused = await untilRule(rule.body.id, (x) => x.last_error !== undefined);
        assert.match(paused.last_error, /scoring paused: .*USD 1 of run cost per day/);
        assert.equal(paused.scored, 0);
        assert.equal((await srv.api('GET', `/api/v1/runs/${r.body.id}`)).body.scores?.says, undefined);
      } finally {
        assert.equal((await srv.api('PUT', `/api/v1/projects/${project}`, { limits: null })).status, 200);
      }
      const resumed = await untilRule(rule.body.id, (x) => x.scored === 1);
      assert.equal(resumed.scored, 1);
      assert.equal((await srv.api('GET', `/api/v1/runs/${r!.body.id}`)).body.scores.says.value, 1);
      await srv.api('DELETE', `/api/v1/evaluation-rules/${rule.body.id}`);
    });

    it('refuses bad rules by name, and keeps to roles and projects', async () => {
      const refusals: Array<[Record<string, unknown>, number, RegExp]> = [
        [{ name: 'r', evaluators: [says] }, 400, /interaction .* and\/or query/],
        [{ name: 'r', interaction: 'nope', evaluators: [says] }, 400, /interaction "nope" names no interaction/],
        [{ name: 'r', query: 'status:(', evaluators: [says] }, 400, /./],
        [{ name: 'r', interaction: 'Online', evaluators: ['nope'] }, 400, /evaluators\[0\] "nope"/],
        [{ name: 'r', interaction: 'Online', evaluators: [] }, 400, /evaluators/],
        [{ name: 'r', interaction: 'Online', evaluators: [says], sample_rate: 0 }, 400, /sample_rate/],
        [{ name: 'r', interaction: 'Online', evaluators: [says], max_per_minute: 601 }, 400, /max_per_minute/],
        [{ name: 'r', interaction: 'Online', evaluators: [says], every: 1 }, 400, /every/],
      ];
      for (const [body, status, message] of refusals) {
        const r = await srv.api('POST', '/api/v1/evaluation-rules', body);
        assert.equal(r.status, status, `${JSON.stringify(body)} → ${JSON.stringify(r.body)}`);
        assert.match(r.body.message, message, JSON.stringify(r.body));
      }
      const ok = await srv.api('POST', '/api/v1/evaluation-rules', {
        name: 'twice',
        interaction: 'Online',
        evaluators: [says],
        enabled: false,
      });
      assert.equal(ok.status, 200);
      const dup = await srv.api('POST', '/api/v1/evaluation-rules', {
        name: 'twice',
        interaction: 'Online',
        evaluators: [says],
      });
      assert.equal(dup.status, 409);
      assert.equal((await srv.api('PUT', `/api/v1/evaluation-rules/${ok.body.id}`, {})).status, 400);

      const reader = (await srv.api('POST', '/api/v1/apikeys', { name: 'rules reader', role: 'reader' })).body.value;
      assert.equal((await srv.api('GET', `/api/v1/evaluation-rules/${ok.body.id}`, undefined, reader)).status, 200);
      const refused = await srv.api(
        'POST',
        '/api/v1/evaluation-rules',
        { name: 'x', query: 'tags:a', evaluators: [says] },
        reader,
      );
      assert.equal(refused.status, 403);
      const project = await srv.api('POST', '/api/v1/projects', { name: `Other rules ${dialect}` });
      const other = (await srv.api('POST', '/api/v1/apikeys', { name: 'other', project: project.body.id })).body.value;
      assert.equal((await srv.api('GET', `/api/v1/evaluation-rules/${ok.body.id}`, undefined, other)).status, 404);
      assert.equal((await srv.api('DELETE', `/api/v1/evaluation-rules/${ok.body.id}`, undefined, other)).status, 404);
      assert.deepEqual((await srv.api('GET', '/api/v1/evaluation-rules', undefined, other)).body, []);
      // My evaluator is not theirs.
      const theirs = await srv.api(
        'POST',
        '/api/v1/evaluation-rules',
        { name: 'x', query: 'tags:a', evaluators: [says] },
        other,
      );
      assert.equal(theirs.status, 400);
    });
  });
}
