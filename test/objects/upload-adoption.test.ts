/**
 * Issue 14, defect 6: an upload URL that is still valid cannot change an object's bytes once the
 * object adopted the upload, on the folder store and on S3; the object's ETag always describes
 * the bytes it serves; a PUT cannot change the type the URL was signed for.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { startS3, type TestS3 } from '../support/s3.ts';

const sha256 = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
const md5 = (b: Buffer | string) => createHash('md5').update(b).digest('hex');

for (const dialect of TEST_DIALECTS) {
  for (const store of ['folder', 's3'] as const) {
    describe(`${dialect}, ${store} store: an object owns the content it adopted`, () => {
      let srv: TestServer;
      let s3: TestS3 | undefined;

      before(async () => {
        s3 = store === 's3' ? await startS3() : undefined;
        srv = await startTestServer(dialect, s3 ? { blobUrl: s3.blobUrl } : {});
      });
      after(async () => {
        await srv.close();
        await s3?.close();
      });

      /** The bytes the object serves through its content source, and their hashes. */
      async function served(objectId: string) {
        const obj = await srv.api('GET', `/api/v1/objects/${objectId}`);
        const url = await srv.api('POST', '/api/v1/objects/download-url', { file: obj.body.content.source });
        assert.equal(url.status, 200, JSON.stringify(url.body));
        const bytes = Buffer.from(await (await fetch(url.body.url)).arrayBuffer());
        return { content: obj.body.content, bytes };
      }

      it('keeps the adopted bytes and their ETag when the upload URL is used again', async () => {
        const up = await srv.api('POST', '/api/v1/objects/upload-url', { name: 'report.txt' });
        const first = await fetch(up.body.url, {
          method: 'PUT',
          body: 'the original bytes',
          headers: { 'content-type': 'text/plain' },
        });
        assert.equal(first.status, 200);
        const client = srv.client();
        const obj = await client.objects.create({ name: 'Report', content: { source: up.body.id } } as any);
        assert.notEqual(obj.content!.source, up.body.id, 'the object points at a key of its own');

        // The URL is still valid: a second PUT is accepted (it is a new upload) …
        const again = await fetch(up.body.url, {
          method: 'PUT',
          body: 'REPLACED by someone else',
          headers: { 'content-type': 'text/plain' },
        });
        assert.equal(again.status, 200);
        // … and changes nothing the object serves.
        const { content, bytes } = await served(obj.id);
        assert.equal(bytes.toString(), 'the original bytes');
        assert.ok(
          content.etag === sha256(bytes) || content.etag === md5(bytes),
          `etag ${content.etag} describes the served bytes`,
        );
        assert.deepEqual(await client.objects.getContentSource(obj.id), content);

        // An update that adopts another upload moves it too; the object's previous content goes.
        const up2 = await srv.api('POST', '/api/v1/objects/upload-url', { name: 'v2.txt' });
        await fetch(up2.body.url, { method: 'PUT', body: 'version 2', headers: { 'content-type': 'text/plain' } });
        const updated = await client.objects.update(obj.id, { content: { source: up2.body.id } } as any);
        await fetch(up2.body.url, {
          method: 'PUT',
          body: 'version 2, tampered',
          headers: { 'content-type': 'text/plain' },
        });
        const after = await served(updated.id);
        assert.equal(after.bytes.toString(), 'version 2');
        assert.ok(after.content.etag === sha256(after.bytes) || after.content.etag === md5(after.bytes));
        assert.equal(
          (await srv.api('POST', '/api/v1/objects/download-url', { file: obj.content!.source })).status,
          404,
          'the first content was released',
        );
      });

      it("refuses an upload id under the server's own prefix, so no upload URL reaches adopted bytes", async () => {
        const r = await srv.api('POST', '/api/v1/objects/upload-url', {
          name: 'x.txt',
          id: '.orrery/content/anything/x.txt',
        });
        assert.equal(r.status, 400);
      });

      if (store === 'folder') {
        it('refuses a PUT whose Content-Type differs from the type the URL was signed for', async () => {
          const up = await srv.api('POST', '/api/v1/objects/upload-url', { name: 'photo.png' });
          assert.equal(up.body.mime_type, 'image/png');
          const html = await fetch(up.body.url, {
            method: 'PUT',
            body: '<script>alert(1)</script>',
            headers: { 'content-type': 'text/html' },
          });
          assert.equal(html.status, 415);
          assert.match(((await html.json()) as { message: string }).message, /signed for Content-Type image\/png/);
          const generic = await fetch(up.body.url, {
            method: 'PUT',
            body: 'png bytes',
            headers: { 'content-type': 'application/octet-stream' },
          });
          assert.equal(generic.status, 200);
          const meta = await srv.api('GET', `/api/v1/files/metadata?file=${encodeURIComponent(up.body.id)}`);
          assert.equal(meta.status, 200, JSON.stringify(meta.body));
          assert.equal(meta.body.contentType, 'image/png');
          const same = await fetch(up.body.url, {
            method: 'PUT',
            body: 'png bytes',
            headers: { 'content-type': 'image/png; charset=binary' },
          });
          assert.equal(same.status, 200);
        });
      }
    });
  }
}
