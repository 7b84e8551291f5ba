/**
 * Processing that was lost (the server stopped between the write that committed and the enqueue)
 * is found by the recovery sweep; replacing an object with the same content processes it again.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { createObject, processed } from './helpers.ts';

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: lost processing`, () => {
    let srv: TestServer;
    before(async () => {
      srv = await startTestServer(dialect);
    });
    after(() => srv.close());

    it('an object left created with no job is found by the recovery sweep and processed', async () => {
      const id = await createObject(srv, 'lost.txt', 'found again');
      assert.equal((await processed(srv, id)).text, 'found again');
      // The object is ready before its job's row is deleted (after the handler returns): wait for
      // that, so that the lost state below really has no job (under load the row was still there).
      const jobOf = () =>
        srv.orrery.database.db.selectFrom('jobs').select('id').where('subject', '=', id).executeTakeFirst();
      for (const until = Date.now() + 10_000; await jobOf(); await new Promise((r) => setTimeout(r, 20))) {
        if (Date.now() > until) assert.fail('the finished job was never deleted');
      }
      // As if the enqueue had been lost: back to created, no text, no job.
      await srv.orrery.database.db
        .updateTable('objects')
        .set({ status: 'created', text: null, text_etag: null })
        .where('id', '=', id)
        .execute();
      assert.equal(await srv.orrery.services.content.recover(0), 1);
      const obj = await processed(srv, id);
      assert.equal(obj.status, 'ready');
      assert.equal(obj.text, 'found again');
      assert.equal(await srv.orrery.services.content.recover(0), 0, 'nothing left to recover');
    });

    it('replacing an object (POST /objects with its id) with the same content processes it again', async () => {
      const id = await createObject(srv, 'same.txt', 'same bytes');
      const first = await processed(srv, id);
      const replaced = await srv.api('POST', '/api/v1/objects', {
        id,
        name: 'same.txt',
        content: { source: first.content.source },
      });
      assert.equal(replaced.status, 200);
      assert.equal(replaced.body.status, 'created');
      const obj = await processed(srv, id);
      assert.equal(obj.status, 'ready');
      assert.equal(obj.text, 'same bytes');
    });
  });
}
