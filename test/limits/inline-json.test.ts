/**
 * What a run or an object stores inline as JSON is bounded (ORRERY_MAX_INLINE_JSON, 1 MiB by
 * default): a run's data, an imported run's parameters and result, an object's properties. Over
 * the bound is a 413 that names the field, the bound and the variable, and nothing is stored.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, startTestServer, seedEcho, type TestServer } from '../support/server.ts';

const MiB = 1024 ** 2;
const big = () => ({ text: 'x'.repeat(MiB + 10) });
const fits = () => ({ text: 'é'.repeat(100_000) });

function tooLarge(res: { status: number; body: any }, field: string) {
  assert.equal(res.status, 413, JSON.stringify(res.body).slice(0, 500));
  assert.equal(res.body.error, 'payload_too_large');
  assert.equal(res.body.status, 413);
  assert.match(res.body.message, new RegExp(field.replace('.', '\\.')));
  assert.match(res.body.message, /ORRERY_MAX_INLINE_JSON/);
  assert.match(res.body.message, new RegExp(String(MiB)));
  assert.equal(res.body.details.limit, MiB);
}

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: bounds on inline JSON`, () => {
    let srv: TestServer;
    let interaction: string;
    before(async () => {
      srv = await startTestServer(dialect);
      interaction = (await seedEcho(srv)).interaction.id;
    });
    after(() => srv.close());

    it('a run with data over the bound is refused before it is made', async () => {
      const before = await srv.api('GET', '/api/v1/runs');
      tooLarge(await srv.api('POST', '/api/v1/execute', { interaction, data: big() }), 'data');
      tooLarge(await srv.api('POST', '/api/v1/runs', { interaction, data: big() }), 'data');
      const afterRuns = await srv.api('GET', '/api/v1/runs');
      assert.equal(afterRuns.body.length, before.body.length);
      const ok = await srv.api('POST', '/api/v1/execute', { interaction, data: fits() });
      assert.equal(ok.status, 200, JSON.stringify(ok.body).slice(0, 500));
    });

    it("an object's properties over the bound are refused at create and update", async () => {
      tooLarge(await srv.api('POST', '/api/v1/objects', { name: 'big', properties: big() }), 'properties');
      const made = await srv.api('POST', '/api/v1/objects', { name: 'small', properties: fits() });
      assert.equal(made.status, 200, JSON.stringify(made.body).slice(0, 500));
      tooLarge(await srv.api('PUT', `/api/v1/objects/${made.body.id}`, { properties: big() }), 'properties');
    });

    it("an imported run's parameters or result over the bound are refused", async () => {
      const now = new Date().toISOString();
      const post = (run: Record<string, unknown>) =>
        srv.api('POST', '/api/v1/import/runs', {
          source: 'https://source.example',
          source_id: 'big-run',
          source_version: null,
          run: { status: 'completed', interaction: { id: interaction }, created_at: now, updated_at: now, ...run },
        });
      tooLarge(await post({ parameters: big() }), 'run.parameters');
      tooLarge(await post({ result: [{ type: 'text', value: 'y'.repeat(MiB) }] }), 'run.result');
      // Every other field it stores is bounded too: a run could hold 15 MB in its config.
      tooLarge(await post({ config: big() }), 'run.config');
      tooLarge(await post({ error: { code: 'x', message: 'm', data: big() } }), 'run.error');
      tooLarge(await post({ source: big() }), 'run.source');
      tooLarge(await post({ result_schema: big() }), 'run.result_schema');
      tooLarge(await post({ cost: big() }), 'run.cost');
      const links = await srv.api('GET', `/api/v1/import/links?source=${encodeURIComponent('https://source.example')}`);
      assert.deepEqual(links.body, []);
    });

    it('an import body over the bound of a whole run record is refused with a 413 that names it', async () => {
      const now = new Date().toISOString();
      const body = JSON.stringify({
        source: 'https://source.example',
        source_id: 'huge-run',
        source_version: null,
        run: {
          status: 'completed',
          interaction: { id: interaction },
          created_at: now,
          updated_at: now,
          config: { pieces: Array.from({ length: 15 }, () => 'z'.repeat(MiB)) },
        },
      });
      const r = await srv.api('POST', '/api/v1/import/runs', body);
      assert.equal(r.status, 413, JSON.stringify(r.body).slice(0, 500));
      assert.equal(r.body.error, 'payload_too_large');
      assert.match(r.body.message, new RegExp(`at most ${4 * MiB + 64 * 1024} bytes`));
      assert.match(r.body.message, /ORRERY_MAX_INLINE_JSON/);
      const links = await srv.api('GET', `/api/v1/import/links?source=${encodeURIComponent('https://source.example')}`);
      assert.deepEqual(links.body, []);
    });

    it('an imported run at the bound is stored, linked and found by its parameters', async () => {
      const now = new Date().toISOString();
      const parameters: Record<string, string> = { marker: 'needle-import' };
      for (let i = 0; i < 8000; i++) parameters[`k${i}`] = 'v'.repeat(100);
      const post = () =>
        srv.api('POST', '/api/v1/import/runs', {
          source: 'https://source.example',
          source_id: 'large-run',
          source_version: '1',
          run: { status: 'completed', interaction: { id: interaction }, created_at: now, updated_at: now, parameters },
        });
      const r = await post();
      assert.equal(r.status, 200, JSON.stringify(r.body).slice(0, 500));
      assert.equal(r.body.created, true);
      assert.deepEqual(await post().then((x) => x.body), { id: r.body.id, created: false });
      const found = await srv.api('POST', '/api/v1/runs/find', { query: { 'parameters.marker': 'needle-import' } });
      assert.equal(found.status, 200, JSON.stringify(found.body).slice(0, 500));
      assert.deepEqual(
        found.body.map((x: { id: string }) => x.id),
        [r.body.id],
      );
      const stored = await srv.api('GET', `/api/v1/runs/${r.body.id}`);
      assert.equal(stored.body.parameters.k7999, 'v'.repeat(100));
    });
  });
}
