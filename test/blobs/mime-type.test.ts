/**
 * A MIME type goes back out as the Content-Type header of every download, so one with a control
 * or non-ASCII character is refused (400) where it is taken; a file that holds one already is
 * served as bytes rather than failing each download.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { text } from '../objects/helpers.ts';

const BAD = ['text/plain\r\nx-evil: 1', 'text/plain\nx', 'text/\u0001plain', 'text/\tplain', 'text/plain; name=中'];

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: MIME types that a header cannot carry`, () => {
    let srv: TestServer;
    before(async () => {
      srv = await startTestServer(dialect);
    });
    after(() => srv.close());

    const refused = (res: { status: number; body: any }, field: string) => {
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.equal(res.body.error, 'bad_request');
      assert.equal(res.body.status, 400);
      assert.match(res.body.message, new RegExp(field));
      assert.match(res.body.message, /text\/plain/);
    };

    for (const bad of BAD) {
      it(`upload-url refuses ${JSON.stringify(bad)}, and so do the bulk and files routes`, async () => {
        refused(await srv.api('POST', '/api/v1/objects/upload-url', { name: 'a.txt', mime_type: bad }), 'mime_type');
        refused(await srv.api('POST', '/api/v1/files/upload-url', { name: 'a.txt', mime_type: bad }), 'mime_type');
        refused(
          await srv.api('POST', '/api/v1/files/bulk-upload-urls', { files: [{ name: 'a.txt', mime_type: bad }] }),
          'mime_type',
        );
      });
    }

    it('an object whose content.type has CR/LF is refused', async () => {
      const up = await srv.api('POST', '/api/v1/objects/upload-url', { name: 'a.txt', mime_type: 'text/plain' });
      assert.equal((await fetch(up.body.url, { method: 'PUT', body: 'hi' })).status, 200);
      const res = await srv.api('POST', '/api/v1/objects', {
        name: 'a',
        content: { source: up.body.id, type: 'text/plain\r\nx: y', name: 'a.txt' },
      });
      refused(res, 'content.type');
    });

    it('a file stored with such a type downloads as application/octet-stream, not a 500', async () => {
      const up = await srv.api('POST', '/api/v1/objects/upload-url', { name: 'old.txt', mime_type: 'text/plain' });
      assert.equal((await fetch(up.body.url, { method: 'PUT', body: 'old bytes' })).status, 200);
      // As an earlier version stored it.
      await srv.orrery.database.db
        .updateTable('blobs')
        .set({ content_type: 'text/plain\r\nx-evil: 1' })
        .where('key', '=', up.body.path)
        .execute();
      const dl = await srv.api('POST', '/api/v1/objects/download-url', { file: up.body.id });
      assert.equal(dl.status, 200, JSON.stringify(dl.body));
      const res = await fetch(dl.body.url);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), 'application/octet-stream');
      assert.equal(res.headers.get('x-evil'), null);
      assert.equal(await text(res), 'old bytes');
    });
  });
}
