/**
 * Issue 14, the smaller defects of objects and blobs: MIME guesses, what is served inline,
 * rendition records that can be read, children of a deleted parent, temporary upload files
 * left by a crash.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, existsSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { upload } from './helpers.ts';
import { mimeOf } from '../../src/blobs/mime.ts';

describe('mimeOf', () => {
  it('guesses from an extension only', () => {
    assert.equal(mimeOf('f'), undefined);
    assert.equal(mimeOf('README'), undefined);
    assert.equal(mimeOf('dir.v2/f'), undefined);
    assert.equal(mimeOf('report.PDF'), 'application/pdf');
    assert.equal(mimeOf('a.f'), 'text/x-fortran');
    assert.equal(mimeOf('data.jsonl'), 'application/x-ndjson');
  });
});

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: smaller defects of objects and blobs`, () => {
    let srv: TestServer;
    let dataDir: string;
    let stale: string;
    let fresh: string;

    before(async () => {
      // A data folder with what a crash leaves: a temporary upload file, one idle and one just written.
      dataDir = mkdtempSync(join(tmpdir(), 'orrery-crashed-'));
      const folder = join(dataDir, 'blobs', 'p', 'k');
      mkdirSync(folder, { recursive: true });
      stale = join(folder, '.big.bin.0a1b2c3d4e5f~orrery-upload');
      fresh = join(folder, '.other.bin.0a1b2c3d4e60~orrery-upload');
      writeFileSync(stale, Buffer.alloc(1024));
      writeFileSync(fresh, Buffer.alloc(1024));
      const twoHoursAgo = new Date(Date.now() - 2 * 3600_000);
      utimesSync(stale, twoHoursAgo, twoHoursAgo);
      srv = await startTestServer(dialect, { dataDir });
    });
    after(() => srv.close());

    it('sweeps temporary upload files left by an interrupted upload at start', async () => {
      for (let i = 0; i < 100 && existsSync(stale); i++) await new Promise((r) => setTimeout(r, 20));
      assert.equal(existsSync(stale), false, 'the idle temporary file is gone');
      assert.equal(existsSync(fresh), true, 'a file still being written (recently) stays');
    });

    it('answers application/octet-stream for an upload name without an extension', async () => {
      const r = await srv.api('POST', '/api/v1/objects/upload-url', { name: 'f' });
      assert.equal(r.status, 200);
      assert.equal(r.body.mime_type, 'application/octet-stream');
    });

    it('serves only passive types inline; every XML-family and active type is a sandboxed attachment', async () => {
      const cases: Array<[string, string, boolean]> = [
        ['feed.rss', 'application/rss+xml', false],
        ['a.atom', 'application/atom+xml', false],
        ['m.mml', 'application/mathml+xml', false],
        ['x.xsl', 'text/xsl', false],
        ['p.svg', 'image/svg+xml', false],
        ['page.html', 'text/html', false],
        ['any.thing', 'application/x-custom+xml', false],
        ['photo.png', 'image/png', true],
        ['doc.pdf', 'application/pdf', true],
        ['notes.txt', 'text/plain', true],
      ];
      for (const [name, type, passive] of cases) {
        const up = await srv.api('POST', '/api/v1/objects/upload-url', { name, mime_type: type });
        assert.equal(
          (await fetch(up.body.url, { method: 'PUT', body: '<x/>', headers: { 'content-type': type } })).status,
          200,
        );
        const url = await srv.api('POST', '/api/v1/objects/download-url', { file: up.body.id, disposition: 'inline' });
        const res = await fetch(url.body.url);
        await res.arrayBuffer();
        assert.equal(res.status, 200);
        assert.equal(res.headers.get('content-type'), type);
        if (passive) {
          assert.equal(res.headers.get('content-security-policy'), null, name);
          assert.match(res.headers.get('content-disposition') ?? '', /^inline/, name);
        } else {
          assert.equal(res.headers.get('content-security-policy'), 'sandbox', name);
          assert.match(res.headers.get('content-disposition') ?? '', /^attachment/, name);
        }
      }
    });

    it('lets the ids of rendition records be retrieved', async () => {
      const png = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#3366cc' } })
        .png()
        .toBuffer();
      const up = await upload(srv, 'pic.png', png, { type: 'image/png' });
      const client = srv.client();
      const obj = await client.objects.create({ name: 'Picture', content: { source: up.id } } as any);
      let list: any[] = [];
      for (let i = 0; i < 200 && !list.length; i++) {
        list = await client.objects.listRenditions(obj.id);
        if (!list.length) await new Promise((r) => setTimeout(r, 50));
      }
      assert.ok(list.length > 0, 'processing made renditions');
      for (const rendition of list) {
        const got = await client.objects.retrieve(rendition.id);
        assert.equal(got.id, rendition.id);
        assert.deepEqual((got as any).parent, { id: obj.id, name: 'Picture' });
        assert.deepEqual(got.content, rendition.content);
        const { url } = await client.objects.getDownloadUrl(got.content!.source!);
        assert.equal((await fetch(url)).headers.get('content-type'), got.content!.type);
      }
      assert.equal((await srv.api('GET', '/api/v1/objects/no-such-rendition')).status, 404);
    });

    it('detaches the children of a deleted parent instead of leaving them pointing at nothing', async () => {
      const parent = await srv.api('POST', '/api/v1/objects', { name: 'Folder' });
      const child = await srv.api('POST', '/api/v1/objects', {
        name: 'Child',
        parent: parent.body.id,
        location: '/folder',
      });
      assert.equal(child.body.parent, parent.body.id);
      assert.equal((await srv.api('DELETE', `/api/v1/objects/${parent.body.id}`)).status, 200);
      const after = await srv.api('GET', `/api/v1/objects/${child.body.id}`);
      assert.equal(after.body.parent ?? null, null);
      assert.notEqual(after.body.updated_at, child.body.updated_at);
      const listed = (await srv.api('GET', '/api/v1/objects?location=/folder')).body;
      assert.equal(listed.length, 1);
      assert.equal(listed[0].parent ?? null, null, 'no {id, name: ""} parent');
      assert.equal((await srv.api('GET', `/api/v1/objects?parent=${parent.body.id}`)).body.length, 0);
    });
  });
}
