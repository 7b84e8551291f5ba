import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { StreamSource } from '@vertesia/client';
import { TEST_DIALECTS, startTestServer, type TestServer } from '../support/server.ts';
import { json, secondProject, sleep, text, upload } from '../objects/helpers.ts';

const LIMIT = 4096;
const sha256 = (b: string | Buffer) => createHash('sha256').update(b).digest('hex');

/** Every file under a folder, recursively (to look for leftovers of refused uploads). */
const filesUnder = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(join(dir, e.name)) : [join(dir, e.name)],
  );

for (const dialect of TEST_DIALECTS) {
  describe(`${dialect}: signed upload and download URLs`, () => {
    let srv: TestServer;
    before(async () => {
      srv = await startTestServer(dialect, { maxUploadBytes: LIMIT });
    });
    after(() => srv.close());

    it('answers {url, id, path, mime_type}: an absolute URL on the public URL, a storage URI, the MIME type from the extension', async () => {
      const r = await srv.api('POST', '/api/v1/objects/upload-url', { name: 'Report 2024.pdf' });
      assert.equal(r.status, 200);
      assert.ok(r.body.url.startsWith(`${srv.url}/blobs/`), r.body.url);
      const project = (await srv.api('GET', '/api/v1/projects')).body.find((p: any) => p.name === 'Default project').id;
      assert.match(r.body.id, new RegExp(`^local://${project}/[0-9a-z]{26}\\.pdf$`));
      assert.equal(r.body.id, `local://${project}/${r.body.path}`);
      assert.equal(r.body.mime_type, 'application/pdf');
      const given = await srv.api('POST', '/api/v1/objects/upload-url', {
        name: 'x.bin',
        mime_type: 'image/webp',
        id: 'folder/photo.webp',
      });
      assert.equal(given.body.mime_type, 'image/webp');
      assert.equal(given.body.path, 'folder/photo.webp');
      assert.equal(given.body.id, `local://${project}/folder/photo.webp`);
      const unknown = await srv.api('POST', '/api/v1/objects/upload-url', { name: 'README' });
      assert.equal(unknown.body.mime_type, 'application/octet-stream');
      const twin = await srv.api('POST', '/api/v1/files/upload-url', { name: 'a.md' });
      assert.equal(twin.status, 200);
      assert.equal(twin.body.mime_type, 'text/markdown');
    });

    it('refuses bad upload-url requests: no name, a ttl out of range, a key that escapes its folder', async () => {
      assert.equal((await srv.api('POST', '/api/v1/objects/upload-url', {})).status, 400);
      for (const ttl of [0, 7 * 24 * 3600 + 1, 1.5]) {
        const r = await srv.api('POST', '/api/v1/objects/upload-url', { name: 'a.txt', ttl });
        assert.equal(r.status, 400, `ttl ${ttl}`);
        assert.match(r.body.message, /ttl/);
      }
      for (const id of ['../escape.txt', 'a/../../b.txt', 'a//b', 'a/./b', 'x\\y', 'a/~orrery-upload']) {
        const r = await srv.api('POST', '/api/v1/objects/upload-url', { name: 'a.txt', id });
        assert.equal(r.status, 400, `id ${id}`);
        assert.equal(r.body.error, 'bad_request');
      }
    });

    it('accepts a PUT with no Authorization header, answers the SHA-256 ETag, and accepts a retry', async () => {
      const r = await srv.api('POST', '/api/v1/objects/upload-url', { name: 'hello.txt' });
      const put = await fetch(r.body.url, {
        method: 'PUT',
        body: 'hello',
        headers: { 'content-type': 'text/plain; charset=utf-8' },
      });
      assert.equal(put.status, 200);
      assert.equal(put.headers.get('etag'), `"${sha256('hello')}"`);
      const body = await json(put);
      assert.deepEqual(body, {
        source: r.body.id,
        path: r.body.path,
        etag: sha256('hello'),
        size: 5,
        type: 'text/plain; charset=utf-8',
      });
      // The same URL again (a retried PUT) replaces the bytes.
      const again = await fetch(r.body.url, {
        method: 'PUT',
        body: Buffer.from('hello again'),
        headers: { 'content-type': 'application/octet-stream' },
      });
      assert.equal(again.status, 200);
      assert.equal(again.headers.get('etag'), `"${sha256('hello again')}"`);
      await again.arrayBuffer();
      const meta = await srv.api('GET', `/api/v1/files/metadata?file=${encodeURIComponent(r.body.id)}`);
      // With no (or the generic) Content-Type, the type signed into the URL by upload-url applies.
      assert.deepEqual(meta.body, {
        name: 'hello.txt',
        size: 11,
        contentType: 'text/plain',
        etag: sha256('hello again'),
      });
    });

    it('serves downloads with Content-Type, Content-Length, ETag, ranges (206, 416), If-None-Match, HEAD and Content-Disposition', async () => {
      const content = '0123456789abcdefghij';
      const up = await upload(srv, 'digits.csv', content, { type: 'text/csv' });
      const { body: dl } = await srv.api('POST', '/api/v1/objects/download-url', { file: up.id });
      assert.ok(dl.url.startsWith(`${srv.url}/blobs/`));
      assert.equal(dl.mime_type, 'text/csv');
      const full = await fetch(dl.url);
      assert.equal(full.status, 200);
      assert.equal(full.headers.get('content-type'), 'text/csv');
      assert.equal(full.headers.get('content-length'), '20');
      assert.equal(full.headers.get('etag'), `"${sha256(content)}"`);
      assert.equal(full.headers.get('accept-ranges'), 'bytes');
      assert.equal(full.headers.get('content-disposition'), null);
      assert.equal(await text(full), content);

      const cases: [string, number, string, string][] = [
        ['bytes=2-5', 206, '2345', 'bytes 2-5/20'],
        ['bytes=15-', 206, 'fghij', 'bytes 15-19/20'],
        ['bytes=-3', 206, 'hij', 'bytes 17-19/20'],
        ['bytes=18-100', 206, 'ij', 'bytes 18-19/20'],
      ];
      for (const [range, status, bytes, contentRange] of cases) {
        const r = await fetch(dl.url, { headers: { range } });
        assert.equal(r.status, status, range);
        assert.equal(r.headers.get('content-range'), contentRange);
        assert.equal(r.headers.get('content-length'), String(bytes.length));
        assert.equal(await text(r), bytes);
      }
      const outside = await fetch(dl.url, { headers: { range: 'bytes=20-30' } });
      assert.equal(outside.status, 416);
      assert.equal(outside.headers.get('content-range'), 'bytes */20');
      assert.equal((await json(outside)).error, 'range_not_satisfiable');
      const stale = await fetch(dl.url, { headers: { range: 'bytes=0-1', 'if-range': '"not-the-etag"' } });
      assert.equal(stale.status, 200, 'If-Range with another ETag gives the whole file');
      assert.equal(await text(stale), content);

      const notModified = await fetch(dl.url, { headers: { 'if-none-match': `"${sha256(content)}"` } });
      assert.equal(notModified.status, 304);
      const head = await fetch(dl.url, { method: 'HEAD' });
      assert.equal(head.status, 200);
      assert.equal(head.headers.get('content-length'), '20');
      assert.equal(await text(head), '');

      const named = await srv.api('POST', '/api/v1/objects/download-url', {
        file: up.id,
        name: 'Résumé "final".csv',
        disposition: 'attachment',
      });
      const attached = await fetch(named.body.url);
      assert.equal(
        attached.headers.get('content-disposition'),
        `attachment; filename="R_sum_ _final_.csv"; filename*=UTF-8''R%C3%A9sum%C3%A9%20%22final%22.csv`,
      );
      await attached.arrayBuffer();
      const inline = await srv.api('POST', '/api/v1/objects/download-url', { file: up.id, disposition: 'inline' });
      const shown = await fetch(inline.body.url);
      assert.equal(
        shown.headers.get('content-disposition'),
        `inline; filename="digits.csv"; filename*=UTF-8''digits.csv`,
      );
      await shown.arrayBuffer();
    });

    it('round-trips keys with spaces, non-ASCII characters and the full 1,024 bytes, and empty files', async () => {
      const long =
        Array.from({ length: 6 }, (_, i) => String(i).repeat(200))
          .join('/')
          .slice(0, 1020) + '.txt';
      assert.equal(Buffer.byteLength(long), 1024);
      for (const id of ['dir/naïve name (1).txt', long, 'pct%2Fnot-a-slash?.txt']) {
        const up = await upload(srv, 'x.txt', `content of ${id}`, { id });
        assert.equal(up.path, id);
        const { body } = await srv.api('POST', '/api/v1/objects/download-url', { file: up.id });
        const r = await fetch(body.url);
        assert.equal(r.status, 200, id);
        assert.equal(await text(r), `content of ${id}`);
      }
      assert.equal((await srv.api('POST', '/api/v1/objects/upload-url', { name: 'x', id: `${long}x` })).status, 400);
      assert.equal(
        (await srv.api('POST', '/api/v1/objects/upload-url', { name: 'x', id: 'k'.repeat(201) })).status,
        400,
        'a segment over 200 bytes',
      );
      const empty = await upload(srv, 'empty.txt', '');
      assert.equal(empty.etag, sha256(''));
      const { body } = await srv.api('POST', '/api/v1/objects/download-url', { file: empty.id });
      const r = await fetch(body.url);
      assert.equal(r.headers.get('content-length'), '0');
      assert.equal(await text(r), '');
    });

    it('serves active content (HTML, SVG) sandboxed, never sniffed', async () => {
      const up = await upload(srv, 'page.html', '<script>alert(1)</script>');
      const { body } = await srv.api('POST', '/api/v1/objects/download-url', { file: up.id });
      const r = await fetch(body.url);
      assert.equal(r.headers.get('content-type'), 'text/html');
      assert.equal(r.headers.get('content-security-policy'), 'sandbox');
      assert.equal(r.headers.get('x-content-type-options'), 'nosniff');
      await r.arrayBuffer();
    });

    it('refuses tampered URLs with 403 and the JSON error shape', async () => {
      const up = await upload(srv, 'secret.txt', 'top secret');
      const other = await upload(srv, 'other.txt', 'other');
      const { body: dl } = await srv.api('POST', '/api/v1/objects/download-url', { file: up.id });
      const url = new URL(dl.url);
      const variants: [string, (u: URL) => void][] = [
        [
          'signature',
          (u) =>
            u.searchParams.set(
              'sig',
              u.searchParams.get('sig')!.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A')),
            ),
        ],
        ['expiry', (u) => u.searchParams.set('expires', String(Number(u.searchParams.get('expires')) + 3600))],
        [
          'path',
          (u) => {
            u.pathname = u.pathname.replace(up.path, other.path);
          },
        ],
        ['added disposition', (u) => u.searchParams.set('disposition', 'attachment')],
        ['no signature', (u) => u.searchParams.delete('sig')],
      ];
      for (const [what, change] of variants) {
        const u = new URL(url);
        change(u);
        const r = await fetch(u);
        assert.equal(r.status, 403, what);
        assert.match(r.headers.get('content-type') ?? '', /application\/json/);
        const body = await json(r);
        assert.equal(body.error, 'forbidden', what);
        assert.equal(body.status, 403);
        assert.ok(body.message, what);
      }
      const up2 = await srv.api('POST', '/api/v1/objects/upload-url', { name: 'x.txt' });
      const raised = new URL(up2.body.url);
      raised.searchParams.set('max', String(10 * LIMIT));
      const r = await fetch(raised, { method: 'PUT', body: 'x' });
      assert.equal(r.status, 403, 'a raised size limit');
      assert.equal((await json(r)).details.reason, 'bad_signature');
    });

    it('refuses a URL used with the wrong method', async () => {
      const up = await upload(srv, 'm.txt', 'method');
      const { body: dl } = await srv.api('POST', '/api/v1/objects/download-url', { file: up.id });
      const getWithPut = await fetch(up.url);
      assert.equal(getWithPut.status, 403);
      assert.equal((await json(getWithPut)).details.reason, 'wrong_method');
      const putWithGet = await fetch(dl.url, { method: 'PUT', body: 'overwrite' });
      assert.equal(putWithGet.status, 403);
      const body = await json(putWithGet);
      assert.equal(body.details.reason, 'wrong_method');
      assert.match(body.message, /signed for GET, not PUT/);
      for (const method of ['DELETE', 'POST', 'PATCH']) {
        const r = await fetch(up.url, { method });
        assert.equal(r.status, 403, method);
        assert.equal((await json(r)).error, 'forbidden');
      }
      // Nothing was overwritten.
      assert.equal(await text(await fetch(dl.url)), 'method');
    });

    it('refuses expired URLs, for upload and download', async () => {
      const up = await srv.api('POST', '/api/v1/objects/upload-url', { name: 'late.txt', ttl: 1 });
      const done = await upload(srv, 'early.txt', 'early');
      const dl = await srv.api('POST', '/api/v1/objects/download-url', { file: done.id, ttl: 1 });
      await sleep(2100);
      const put = await fetch(up.body.url, { method: 'PUT', body: 'too late' });
      assert.equal(put.status, 403);
      const putBody = await json(put);
      assert.equal(putBody.details.reason, 'expired');
      assert.match(putBody.message, /expired/);
      const get = await fetch(dl.body.url);
      assert.equal(get.status, 403);
      assert.equal((await json(get)).details.reason, 'expired');
    });

    it('refuses an oversize upload with 413 and keeps nothing of it', async () => {
      const r = await srv.api('POST', '/api/v1/objects/upload-url', { name: 'big.bin' });
      const declared = await fetch(r.body.url, { method: 'PUT', body: Buffer.alloc(LIMIT + 1, 1) });
      assert.equal(declared.status, 413);
      const body = await json(declared);
      assert.equal(body.error, 'payload_too_large');
      assert.match(body.message, new RegExp(`${LIMIT} bytes`));
      // Streamed without a Content-Length: refused while it streams.
      let sent = 0;
      const stream = new ReadableStream({
        pull(c) {
          if (sent >= 4 * LIMIT) return c.close();
          sent += 1024;
          c.enqueue(new Uint8Array(1024));
        },
      });
      const chunked = await fetch(r.body.url, { method: 'PUT', body: stream, duplex: 'half' } as RequestInit);
      assert.equal(chunked.status, 413);
      await chunked.arrayBuffer();
      const missing = await srv.api('POST', '/api/v1/objects/download-url', { file: r.body.id });
      assert.equal(missing.status, 404, 'no blob was recorded');
      const leftovers = filesUnder(join(srv.dataDir, 'blobs')).filter(
        (f) => f.includes('big.bin') || f.includes('~orrery-upload'),
      );
      assert.deepEqual(leftovers, []);
      // Exactly the limit is fine.
      const atLimit = await fetch(r.body.url, { method: 'PUT', body: Buffer.alloc(LIMIT, 1) });
      assert.equal(atLimit.status, 200);
      assert.equal((await json(atLimit)).size, LIMIT);
    });

    it('never lets a key leave the blob folder', async () => {
      const { body } = await srv.api('POST', '/api/v1/objects/upload-url', { name: 'a.txt' });
      const u = new URL(body.url);
      for (const path of [
        u.pathname.replace(/[^/]+$/, '..%2F..%2F..%2Fsecret'),
        u.pathname.replace(/[^/]+$/, '%2E%2E/x'),
      ]) {
        const r = await fetch(`${srv.url}${path}${u.search}`, { method: 'PUT', body: 'x' });
        assert.ok(r.status === 403 || r.status === 404, `${path}: ${r.status}`);
        await r.arrayBuffer();
      }
    });

    it("makes another project's storage URI a 404 for download-url and metadata", async () => {
      const mine = await upload(srv, 'mine.txt', 'mine');
      const other = await secondProject(srv);
      for (const path of ['/api/v1/objects/download-url', '/api/v1/files/download-url']) {
        const r = await srv.api('POST', path, { file: mine.id }, other.key);
        assert.equal(r.status, 404, path);
        assert.equal(r.body.error, 'not_found');
      }
      assert.equal(
        (await srv.api('GET', `/api/v1/files/metadata?file=${encodeURIComponent(mine.id)}`, undefined, other.key))
          .status,
        404,
      );
      // A URI of another scheme or a key that was never uploaded names nothing either.
      assert.equal((await srv.api('POST', '/api/v1/objects/download-url', { file: 'gs://bucket/x.txt' })).status, 404);
      assert.equal((await srv.api('POST', '/api/v1/objects/download-url', { file: 'never/uploaded.txt' })).status, 404);
      // The owner still can, with the URI or the bare key.
      assert.equal((await srv.api('POST', '/api/v1/objects/download-url', { file: mine.path })).status, 200);
    });

    it('works with the official client: objects.upload, objects.getDownloadUrl, files.getDownloadUrl, files.getMetadata', async () => {
      const client = srv.client();
      const bytes = Buffer.from('through the official client');
      const stream = new ReadableStream({
        start(c) {
          c.enqueue(new Uint8Array(bytes));
          c.close();
        },
      });
      const content = await client.objects.upload(new StreamSource(stream, 'client.txt', 'text/plain'));
      assert.match(content.source, /^local:\/\//);
      assert.equal(content.etag, sha256(bytes));
      assert.equal(content.type, 'text/plain');
      const { url } = await client.objects.getDownloadUrl(content.source, 'client.txt', 'attachment');
      assert.ok(url.startsWith('http'));
      assert.equal(await text(await fetch(url)), 'through the official client');
      const viaFiles = await client.files.getDownloadUrl(content.source);
      assert.equal(await text(await fetch(viaFiles.url)), 'through the official client');
      const meta = await client.files.getMetadata(content.source);
      assert.deepEqual(meta, {
        name: 'client.txt',
        size: bytes.length,
        contentType: 'text/plain',
        etag: sha256(bytes),
      });
      const downloaded = await client.files.downloadFile(content.source);
      assert.equal(await text(new Response(downloaded) as any), 'through the official client');
    });
  });
}
