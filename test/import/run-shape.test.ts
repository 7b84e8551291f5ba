/**
 * POST /import/runs refuses a run whose fields have the wrong type with a 400 that names the
 * field, instead of failing in the store with a 500.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, startTestServer, seedEcho, type TestServer } from '../support/server.ts';

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: import of a run of the wrong shape`, () => {
    let srv: TestServer;
    let interaction: string;
    const now = new Date().toISOString();
    const post = (run: Record<string, unknown>, id = 'src-run') =>
      srv.api('POST', '/api/v1/import/runs', {
        source: 'https://source.example',
        source_id: id,
        source_version: null,
        run: { status: 'completed', interaction: { id: interaction }, created_at: now, updated_at: now, ...run },
      });

    before(async () => {
      srv = await startTestServer(dialect);
      interaction = (await seedEcho(srv)).interaction.id;
    });
    after(() => srv.close());

    const cases: [string, Record<string, unknown>, string][] = [
      ['tags as a string', { tags: 'a,b' }, 'tags'],
      ['a tag that is not a string', { tags: [1] }, 'tags'],
      ['config as an array', { config: [1] }, 'config'],
      ['token_use as a number', { token_use: 5 }, 'token_use'],
      ['execution_time as a string', { execution_time: 'slow' }, 'execution_time'],
      ['error without a message', { error: { code: 'x' } }, 'error'],
      ['source as a string', { source: 'cli' }, 'source'],
      ['result_schema as a string', { result_schema: 'object' }, 'result_schema'],
      ['modelId as an object', { modelId: { id: 'm' } }, 'modelId'],
      ['parent as a number', { parent: 3 }, 'parent'],
      ['environment as a string', { environment: 'env-1' }, 'environment'],
      ['created_by as a number', { created_by: 1 }, 'created_by'],
    ];
    for (const [what, run, field] of cases) {
      it(`${what}: 400 naming run.${field}`, async () => {
        const res = await post(run);
        assert.equal(res.status, 400, JSON.stringify(res.body));
        assert.equal(res.body.error, 'bad_request');
        assert.equal(res.body.status, 400);
        assert.match(res.body.message, new RegExp(`run\\.${field}`));
      });
    }

    it('a well-formed run with nulls is still stored', async () => {
      const res = await post(
        {
          tags: ['x'],
          environment: null,
          modelId: null,
          token_use: null,
          error: null,
          source: null,
          ttl: null,
          result_schema: null,
        },
        'ok-run',
      );
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.created, true);
    });
  });
}
