/**
 * Corrupt, truncated, oversized and hostile files: each fails only its own object, with
 * `status: failed` and `error: {code, message, step}`, the object itself intact; the server keeps
 * serving and other objects keep being processed. Limits are made small through the config.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { ONE_DIALECT, startTestServer, type TestServer } from '../support/server.ts';
import { createObject, makeDocx, makePdf, makePng, makeZip, processed } from './helpers.ts';
import JSZip from 'jszip';

/** A DOCX with one more entry: `size` zero bytes, which deflate to almost nothing. */
async function docxWithPadding(size: number): Promise<Buffer> {
  const zip = await JSZip.loadAsync(await makeDocx());
  zip.file('word/media/padding.bin', Buffer.alloc(size));
  return zip.generateAsync({ type: 'nodebuffer', compression: 'DEFLATE' });
}

/** Rewrites the uncompressed size an entry declares (central directory and local header). */
function lieAboutSize(zip: Buffer, name: string, size: number): Buffer {
  const out = Buffer.from(zip);
  for (let p = 0; p < out.length - 46; p++) {
    if (
      out.readUInt32LE(p) === 0x02014b50 &&
      out.toString('utf8', p + 46, p + 46 + out.readUInt16LE(p + 28)) === name
    ) {
      out.writeUInt32LE(size, p + 24);
      const local = out.readUInt32LE(p + 42);
      out.writeUInt32LE(size, local + 22);
      return out;
    }
  }
  throw new Error(`no entry ${name}`);
}

const failedWith = async (srv: TestServer, id: string, code: string, step: string) => {
  const obj = await processed(srv, id);
  assert.equal(obj.status, 'failed', `expected a failure, got ${obj.status}`);
  assert.equal(obj.error.code, code, obj.error.message);
  assert.equal(obj.error.step, step, obj.error.message);
  assert.ok(obj.error.message.length > 10);
  return obj;
};

// One database (ONE_DIALECT): what the extractors make of a file does not depend on the storage.
for (const dialect of ONE_DIALECT) {
  describe(`${dialect}: hostile and broken files`, () => {
    let srv: TestServer;
    before(async () => {
      srv = await startTestServer(dialect, {
        contentMaxPages: 5,
        contentMaxDecompressedBytes: 1024 * 1024,
        contentMaxPixels: 4_000_000,
        contentMaxInputBytes: 3 * 1024 * 1024,
      });
    });
    after(() => srv.close());

    it('a corrupt PDF fails in the text step; the object is intact', async () => {
      const up = await import('../objects/helpers.ts').then((h) =>
        h.upload(srv, 'broken.pdf', '%PDF-1.7\nthis is not a PDF at all\n%%EOF'),
      );
      const r = await srv.api('POST', '/api/v1/objects', {
        name: 'Broken',
        description: 'keep me',
        properties: { a: 1 },
        content: { source: up.id },
      });
      const obj = await failedWith(srv, r.body.id, 'corrupt_file', 'text');
      assert.equal(obj.name, 'Broken');
      assert.equal(obj.description, 'keep me');
      assert.deepEqual(obj.properties, { a: 1 });
      assert.match(
        obj.content.source,
        new RegExp(`/\\.orrery/content/${obj.id}/[0-9a-z]{26}/${up.path.replace('.', '\\.')}$`),
        'the object owns its content',
      );
      assert.equal((await srv.api('GET', `/api/v1/objects/${r.body.id}/text`)).status, 200);
    });

    it('a truncated PDF, PNG and DOCX fail with corrupt_file', async () => {
      const pdf = await makePdf(3);
      const png = await makePng(400, 300);
      const docx = await makeDocx();
      const ids = await Promise.all([
        createObject(srv, 'half.pdf', pdf.subarray(0, 300)),
        createObject(srv, 'half.png', png.subarray(0, Math.floor(png.length / 2))),
        createObject(srv, 'half.docx', docx.subarray(0, Math.floor(docx.length / 2))),
      ]);
      await failedWith(srv, ids[0], 'corrupt_file', 'text');
      await failedWith(srv, ids[1], 'corrupt_file', 'renditions');
      await failedWith(srv, ids[2], 'corrupt_file', 'text');
    });

    it('more pages than ORRERY_CONTENT_MAX_PAGES: page_limit', async () => {
      await failedWith(srv, await createObject(srv, 'long.pdf', await makePdf(8)), 'page_limit', 'text');
    });

    it('more pixels than ORRERY_CONTENT_MAX_PIXELS: pixel_limit, before decoding', async () => {
      await failedWith(srv, await createObject(srv, 'huge.png', await makePng(3000, 3000)), 'pixel_limit', 'metadata');
    });

    it('a file larger than ORRERY_CONTENT_MAX_INPUT: size_limit, before reading it all', async () => {
      await failedWith(
        srv,
        await createObject(srv, 'big.txt', Buffer.alloc(4 * 1024 * 1024, 'a')),
        'size_limit',
        'read',
      );
    });

    it('a zip bomb (a DOCX that unpacks past ORRERY_CONTENT_MAX_DECOMPRESSED) is refused from its directory', async () => {
      const bomb = await docxWithPadding(8 * 1024 * 1024);
      assert.ok(bomb.length < 100_000, `the bomb is small: ${bomb.length} bytes`);
      const obj = await failedWith(srv, await createObject(srv, 'bomb.docx', bomb), 'decompressed_size_limit', 'text');
      assert.match(obj.error.message, /would unpack to \d+ bytes/);
    });

    it('a zip entry that lies about its size is caught when it inflates past what it declares', async () => {
      const liar = lieAboutSize(await docxWithPadding(512 * 1024), 'word/media/padding.bin', 100);
      const obj = await failedWith(srv, await createObject(srv, 'liar.docx', liar), 'decompressed_size_limit', 'text');
      assert.match(obj.error.message, /inflates past/);
    });

    it('a plain zip archive is not unpacked: no text, ready', async () => {
      const obj = await processed(
        srv,
        await createObject(srv, 'files.zip', await makeZip({ 'big.bin': Buffer.alloc(8 * 1024 * 1024) })),
      );
      assert.equal(obj.status, 'ready');
      assert.equal(obj.text, '');
    });

    it('after all that the server still serves and processes other objects', async () => {
      const obj = await processed(srv, await createObject(srv, 'fine.txt', 'still working'));
      assert.equal(obj.status, 'ready');
      assert.equal(obj.text, 'still working');
      assert.equal((await srv.api('GET', '/health', undefined, null)).status, 200);
    });
  });

  describe(`${dialect}: the step timeout`, () => {
    let srv: TestServer;
    before(async () => {
      srv = await startTestServer(dialect, { contentStepTimeoutMs: 500, contentWorkers: 1 });
    });
    after(() => srv.close());

    it('a step that runs too long is stopped (its worker process killed) and fails that object only', async () => {
      // Warm the single worker process first: the deadline counts from a started process.
      assert.equal((await processed(srv, await createObject(srv, 'warm.txt', 'warm up'))).status, 'ready');
      const slow = await createObject(srv, 'slow.pdf', await makePdf(2000));
      const obj = await processed(srv, slow);
      assert.equal(obj.status, 'failed');
      assert.equal(obj.error.code, 'step_timeout');
      assert.equal(obj.error.step, 'text');
      const next = await processed(srv, await createObject(srv, 'after.txt', 'next one'));
      assert.equal(next.status, 'ready', JSON.stringify(next.error));
      assert.equal(next.text, 'next one');
    });
  });
}
