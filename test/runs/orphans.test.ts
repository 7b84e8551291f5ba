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
      slow = await seedEcho(srv, { name: 'Slow echo', config: { chunk_delay_ms: 250 } });
    });
    after(() => srv.close());

    /**
     * A `processing` row naming this replica, last updated at `at`: the row a lost final write
     * leaves (a copy of a real run's row as the service wrote it at creation, with a new id).
     */
    async function insertProcessingCopy(text: string, at: string): Promise<RunRow> {
      const { db, dialect: d } = srv.orrery.database;
      const { account, project } = srv.orrery.bootstrap;
      const model = (await srv.api('POST', '/api/v1/runs', { interaction: slow.interaction.id, data: { text } })).body;
      // Read from the database, not through HTTP: as a request would, wait for the runs answered before their commit.
      await srv.orrery.services.runs.whenStored();
      const row = (await getRun(db, d, { account: account.id, project: project.id }, model.id))!;
      const copy: RunRow = {
        ...row,
        id: newId(),
        status: 'processing',
        finish_reason: null,
        execution_time: null,
        token_prompt: null,
        token_result: null,
        token_total: null,
        created_at: at,
        updated_at: at,
        executor: srv.orrery.replica.id,
        doc: { ...(row.doc as object), result: [] } as RunRow['doc'],
      };
      await insertRun(db, d, copy, []);
      return copy;
    }

    it('fails an orphaned processing run of this replica with storage_error, and not a run it is executing', async () => {
      const { db } = srv.orrery.database;
      const longAgo = new Date(Date.now() - 60_000).toISOString();

      // Executing here: a streamed run that takes a while, which eight subscribers race to start.
      const live = (
        await srv.api('POST', '/api/v1/runs', {
          interaction: slow.interaction.id,
          data: { text: 'one two three four five six seven eight' },
          stream: true,
        })
      ).body;
      const streams = await Promise.all(
        Array.from({ length: 8 }, () =>
          openStream(`${srv.url}/api/v1/runs/${live.id}/stream?access_token=${encodeURIComponent(srv.adminKey)}`),
        ),
      );
      for (const s of streams) assert.equal((await s.next())?.event, 'message');
      // As if it had been executing for a minute, so only "executing here" keeps the sweep off it.
      await db.updateTable('runs').set({ updated_at: longAgo }).where('id', '=', live.id).execute();

      // Orphaned: the row that a lost final write leaves, a minute old.
      const orphan = await insertProcessingCopy('lost', longAgo);

      assert.equal(
        (await srv.api('GET', `/api/v1/runs/${live.id}`)).body.status,
        'processing',
        'still executing when the sweep runs',
      );
      assert.equal(await srv.orrery.services.runs.sweepLost(), 1, 'only the orphan is failed');
      const failed = (await srv.api('GET', `/api/v1/runs/${orphan.id}`)).body;
      assert.equal(failed.status, 'failed');
      assert.equal(failed.error.code, 'storage_error');
      assert.match(failed.error.message, /could not store how this run ended/);
      assert.equal(
        (await srv.api('GET', `/api/v1/runs/${live.id}`)).body.status,
        'processing',
        'the run executing here is left alone',
      );

      for (const s of streams) {
        const close = (await s.all()).at(-1)!;
        assert.equal(close.event, 'close');
        assert.equal(JSON.parse(close.data).status, 'completed', 'the run executing here ends as it would have');
      }
    });

    it('runs one lost-run sweep at a time: a sweep asked for meanwhile is the one in progress', async () => {
      const orphan = await insertProcessingCopy('twice', new Date(Date.now() - 60_000).toISOString());
      // Two sweeps at once would each find the orphan and race to fail it: one would count it, the other not.
      const sweeps = [srv.orrery.services.runs.sweepLost(), srv.orrery.services.runs.sweepLost()];
      assert.deepEqual(await Promise.all(sweeps), [1, 1]);
      assert.equal((await srv.api('GET', `/api/v1/runs/${orphan.id}`)).body.status, 'failed');
      assert.equal(await srv.orrery.services.runs.sweepLost(), 0, 'a sweep after it is a new one');
    });

    it('leaves a processing run of this replica alone for a few seconds (its row may be being written)', async () => {
      const recent = await insertProcessingCopy('recent', nowIso());
      assert.equal(await srv.orrery.services.runs.sweepLost(), 0);
      assert.equal((await srv.api('GET', `/api/v1/runs/${recent.id}`)).body.status, 'processing');
    });
  });
}
