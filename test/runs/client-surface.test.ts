/**
 * The official client's run reads of issue 24: runs.find (POST /runs/find), runs.filterOptions
 * (GET /runs/filter-options/:field) and retrieve / retrievePopulated (GET /runs/:id?populate=),
 * through the client itself, with bad input and another project's runs.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { VertesiaClient } from '@vertesia/client';
import { TEST_DIALECTS, seedEcho, startTestServer, type TestServer } from '../support/server.ts';

const statusOf = async (p: Promise<unknown>): Promise<{ status: number; message: string }> => {
  try {
    await p;
  } catch (err) {
    const e = err as { status?: number; message?: string };
    return { status: e.status ?? 0, message: String(e.message) };
  }
  return { status: 200, message: '' };
};

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: the official client's runs.find, filterOptions and retrieve`, () => {
    let srv: TestServer;
    let client: VertesiaClient;
    let other: VertesiaClient;
    let alpha: Awaited<ReturnType<typeof seedEcho>>;
    let beta: Awaited<ReturnType<typeof seedEcho>>;
    const runs: Array<{ id: string; interaction: string; tags: string[]; status: string; text: string }> = [];
    let otherRun: string;

    const run = async (ix: typeof alpha, text: string, extra: Record<string, unknown> = {}) => {
      const r = await srv.api('POST', '/api/v1/runs', { interaction: ix.interaction.id, data: { text }, ...extra });
      // A failed run answers 502 with the run.
      const body = r.status === 502 ? r.body.run : r.body;
      assert.ok(r.status === 200 || (r.status === 502 && body?.status === 'failed'), JSON.stringify(r.body));
      runs.push({ id: body.id, interaction: ix.interaction.id, tags: body.tags, status: body.status, text });
      return body;
    };

    before(async () => {
      srv = await startTestServer(dialect);
      client = srv.client();
      alpha = await seedEcho(srv, { name: 'Alpha echo' });
      beta = await seedEcho(srv, { name: 'Beta echo' });
      await run(alpha, 'one', { tags: ['red', 'blue'] });
      await run(alpha, 'two', { tags: ['red'] });
      await run(beta, 'three', { tags: ['blue'] });
      await run(beta, 'four fails', { tags: ['red'], config: { model: 'error' } });
      // Another project, with a key of its own and a run of its own.
      const project = await srv.api('POST', '/api/v1/projects', { name: 'Other runs project' });
      const key = await srv.api('POST', '/api/v1/apikeys', { name: 'other', project: project.body.id });
      assert.equal(key.status, 200, JSON.stringify(key.body));
      const seeded = await seedEcho(srv, { token: key.body.value, name: 'Hidden echo' });
      const r = await srv.api(
        'POST',
        '/api/v1/runs',
        { interaction: seeded.interaction.id, data: { text: 'secret' }, tags: ['red'] },
        key.body.value,
      );
      assert.equal(r.status, 200, JSON.stringify(r.body));
      otherRun = r.body.id;
      other = srv.client(key.body.value);
    });
    after(() => srv.close());

    it('finds runs with a Mongo-style query, newest first, references as ids', async () => {
      const red = await client.runs.find({ query: { tags: 'red' } });
      const expected = runs
        .filter((r) => r.tags.includes('red'))
        .map((r) => r.id)
        .reverse();
      assert.deepEqual(
        red.map((r) => r.id),
        expected,
      );
      const first = red[0] as Record<string, unknown>;
      assert.equal(first.interaction, beta.interaction.id);
      assert.equal(first.environment, beta.env.id);
      assert.equal(typeof first.account, 'string');
      assert.equal(typeof first.project, 'string');
      assert.ok(Array.isArray(first.result));

      const failed = await client.runs.find({ query: { status: 'failed' } });
      assert.deepEqual(
        failed.map((r) => r.id),
        runs.filter((r) => r.status === 'failed').map((r) => r.id),
      );

      const byParam = await client.runs.find({
        query: { 'parameters.text': { $in: ['one', 'three'] }, interaction: alpha.interaction.id },
      });
      assert.deepEqual(
        byParam.map((r) => r.id),
        [runs[0].id],
      );

      const both = await client.runs.find({ query: { $or: [{ tags: 'blue' }, { status: 'failed' }] } });
      assert.deepEqual(new Set(both.map((r) => r.id)), new Set([runs[0].id, runs[2].id, runs[3].id]));
    });

    it('pages with limit and offset and projects with select', async () => {
      const all = await client.runs.find({ query: {} });
      assert.equal(all.length, runs.length);
      const page = await client.runs.find({ query: {}, limit: 2, offset: 1 });
      assert.deepEqual(
        page.map((r) => r.id),
        all.slice(1, 3).map((r) => r.id),
      );
      const projected = await client.runs.find({ query: { tags: 'blue' }, select: 'status tags' });
      for (const r of projected) assert.deepEqual(Object.keys(r).sort(), ['id', 'status', 'tags']);
      const dropped = await client.runs.find({ query: {}, select: '-prompt -result', limit: 1 });
      assert.equal('prompt' in dropped[0], false);
      assert.equal('result' in dropped[0], false);
      assert.ok('status' in dropped[0]);
    });

    it('refuses a bad find with a 400 that says what to fix', async () => {
      const unknown = await srv.api('POST', '/api/v1/runs/find', { query: { nope: 1 } });
      assert.equal(unknown.status, 400);
      assert.equal(unknown.body.error, 'invalid_query');
      assert.match(unknown.body.message, /unknown field "nope".*status/);
      const op = await srv.api('POST', '/api/v1/runs/find', { query: { status: { $where: 'x' } } });
      assert.equal(op.status, 400);
      const missing = await srv.api('POST', '/api/v1/runs/find', { limit: 1 });
      assert.equal(missing.status, 400);
      assert.match(missing.body.message, /query/);
      const notObject = await srv.api('POST', '/api/v1/runs/find', { query: 'status:failed' });
      assert.equal(notObject.status, 400);
      const offset = await srv.api('POST', '/api/v1/runs/find', { query: {}, offset: -1 });
      assert.equal(offset.status, 400);
      const select = await srv.api('POST', '/api/v1/runs/find', { query: {}, select: 'a..b' });
      assert.equal(select.status, 400);
      assert.match(select.body.message, /select/);
      // A limit above 1,000 is clamped, not refused.
      const big = await srv.api('POST', '/api/v1/runs/find', { query: {}, limit: 5000 });
      assert.equal(big.status, 200);
    });

    it("never finds another project's runs", async () => {
      const mine = await client.runs.find({ query: { id: otherRun } });
      assert.deepEqual(mine, []);
      const theirs = await other.runs.find({ query: {} });
      assert.deepEqual(
        theirs.map((r) => r.id),
        [otherRun],
      );
    });

    it('answers filter options with counts and names, honouring the list filters', async () => {
      const interactions = await client.runs.filterOptions('interaction', {});
      assert.deepEqual(
        [...interactions].sort((x, y) => x.name.localeCompare(y.name)),
        [
          { id: alpha.interaction.id, name: 'Alpha echo', count: 2 },
          { id: beta.interaction.id, name: 'Beta echo', count: 2 },
        ],
      );
      const tags = await client.runs.filterOptions('tags', {});
      assert.deepEqual(tags, [
        { id: 'red', name: 'red', count: 3 },
        { id: 'blue', name: 'blue', count: 2 },
      ]);
      const statuses = await client.runs.filterOptions('status', { interaction: beta.interaction.id });
      assert.deepEqual(statuses.map((s) => [s.id, s.count]).sort(), [
        ['completed', 1],
        ['failed', 1],
      ]);
      const envs = await client.runs.filterOptions('environment', { tag: 'blue' });
      assert.deepEqual(new Set(envs.map((e) => e.id)), new Set([alpha.env.id, beta.env.id]));
      assert.ok(envs.every((e) => e.name === 'Test env' && e.count === 1));
      const models = await client.runs.filterOptions('model', {});
      assert.ok(models.length >= 1 && models.every((m) => m.id === m.name));
      assert.equal(
        models.reduce((n, m) => n + m.count, 0),
        runs.length,
      );
    });

    it("refuses an unknown filter-options field, and never counts another project's runs", async () => {
      const bad = await srv.api('GET', '/api/v1/runs/filter-options/prompt');
      assert.equal(bad.status, 400);
      assert.match(bad.body.message, /interaction, environment, model/);
      const badFilter = await srv.api('GET', '/api/v1/runs/filter-options/status?status=nope');
      assert.equal(badFilter.status, 400);
      const theirs = await other.runs.filterOptions('tags', {});
      assert.deepEqual(theirs, [{ id: 'red', name: 'red', count: 1 }]);
      const mine = await client.runs.filterOptions('interaction', {});
      assert.ok(!mine.some((o) => o.name === 'Hidden echo'));
    });

    it('retrieves a run populated by default and as stored with populate=false', async () => {
      const full = await client.runs.retrieve(runs[0].id);
      assert.equal((full.interaction as any).id, alpha.interaction.id);
      assert.ok('prompts' in (full.interaction as any), 'the expanded interaction carries its prompts');
      const populated = await client.runs.retrievePopulated(runs[0].id);
      assert.deepEqual(populated.interaction, full.interaction);
      const stored = await srv.api('GET', `/api/v1/runs/${runs[0].id}?populate=false`);
      assert.equal(stored.status, 200);
      assert.equal(stored.body.interaction.id, alpha.interaction.id);
      assert.equal(stored.body.interaction.name, 'Alpha echo');
      assert.equal('prompts' in stored.body.interaction, false);
      assert.equal(stored.body.environment.id, alpha.env.id);
      const bad = await srv.api('GET', `/api/v1/runs/${runs[0].id}?populate=maybe`);
      assert.equal(bad.status, 400);
      assert.match(bad.body.message, /populate/);
      const hidden = await srv.api('GET', `/api/v1/runs/${otherRun}?populate=false`);
      assert.equal(hidden.status, 404);
      assert.equal((await statusOf(client.runs.retrievePopulated(otherRun))).status, 404);
    });
  });
}
