/**
 * A run whose outcome could not be stored does not stay `processing` for ever (DESIGN principle 3:
 * every failure ends as a `failed` run). The lost-run sweep fails a `processing` run that names
 * this replica as executor but that this process no longer executes (`storage_error`), and leaves
 * alone the runs it is executing.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { newId, nowIso } from '../../src/db/ids.ts';
import { getRun, insertRun } from '../../src/runs/store.ts';
import type { RunRow } from '../../src/runs/model.ts';
import { TEST_DIALECTS, startTestServer, seedEcho, type TestServer } from '../support/server.ts';
import { openStream } from '../support/sse.ts';

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: runs whose outcome was not stored`, () => {
    let srv: TestServer;
    let slow: Awaited<ReturnType<typeof seedEcho>>;
    before(async () => {
      srv = await startTestServer(dialect);
      slow = await seedEcho(srv, { name: 'Slow echo', config: { chunk_delay_ms: 150 } });
    });
    after(() => srv.close());

    it('fails an orphaned processing run of this replica with storage_error, and not a run it is executing', async () => {
      // Executing here: a streamed run that takes a while (a chunk every 150 ms).
      const live = (await srv.api('POST', '/api/v1/runs', { interaction: slow.interaction.id, data: { text: 'one two three four five six' }, stream: true })).body;
      const stream = await openStream(`${srv.url}/api/v1/runs/${live.id}/stream?access_token=${encodeURIComponent(srv.adminKey)}`);
      const first = await stream.next();
      assert.equal(first?.event, 'message');

      // Orphaned: the row that a lost final write leaves, `processing` and naming this replica
      // (a copy of a real run's row, as the service wrote it at creation).
      const { db, dialect: d } = srv.orrery.database;
      const { account, project } = srv.orrery.bootstrap;
      const model = (await srv.api('POST', '/api/v1/runs', { interaction: slow.interaction.id, data: { text: 'lost' } })).body;
      const row = (await getRun(db, d, { account: account.id, project: project.id }, model.id))!;
      const now = nowIso();
      const orphan: RunRow = {
        ...row, id: newId(), status: 'processing', finish_reason: null, execution_time: null, token_prompt: null, token_result: null, token_total: null,
        created_at: now, updated_at: now, executor: srv.orrery.replica.id, doc: { ...(row.doc as object), result: [] } as RunRow['doc'],
      };
      await insertRun(db, d, orphan, []);

      assert.equal(await srv.orrery.services.runs.sweepLost(), 1, 'only the orphan is failed');
      const failed = (await srv.api('GET', `/api/v1/runs/${orphan.id}`)).body;
      assert.equal(failed.status, 'failed');
      assert.equal(failed.error.code, 'storage_error');
      assert.match(failed.error.message, /could not store how this run ended/);

      const events = await stream.all();
      const close = JSON.parse(events.at(-1)!.data);
      assert.equal(close.status, 'completed', 'the run executing here ends as it would have');
      assert.equal((await srv.api('GET', `/api/v1/runs/${live.id}`)).body.status, 'completed');
    });
  });
}
