import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { parseS3Url, S3BlobStore } from '../../src/blobs/s3-store.ts';
import { BlobMissing, BlobTooLarge } from '../../src/blobs/blob-store.ts';
import { startS3, type TestS3 } from '../support/s3.ts';

describe('S3 blob store against a real S3-compatible server', () => {
  let s3: TestS3;
  let store: S3BlobStore;
  before(async () => {
    s3 = await startS3();
    store = new S3BlobStore(parseS3Url(`${s3.blobUrl.replace('?', '/deployment-a?')}`));
  });
  after(() => s3.close());

  it('parses ORRERY_BLOB_URL and refuses malformed ones', () => {
    const loc = parseS3Url(
      's3://bucket/some/prefix?endpoint=http%3A%2F%2F127.0.0.1%3A9000&region=eu-west-1&path_style=true',
    );
    assert.deepEqual(loc, {
      bucket: 'bucket',
      endpoint: 'http://127.0.0.1:9000',
      region: 'eu-west-1',
      pathStyle: true,
      prefix: 'some/prefix',
    });
    assert.equal(parseS3Url('s3://b').pathStyle, false);
    assert.throws(() => parseS3Url('http://b'), /s3:\/\//);
    assert.throws(() => parseS3Url('s3://b?endpont=x'), /unknown parameter "endpont"/);
    assert.throws(() => parseS3Url('s3://b?endpoint=not-a-url'), /absolute URL/);
  });

  it('streams a multi-part upload in and out, with stat, range, list and delete', async () => {
    const bytes = randomBytes(12 * 1024 * 1024 + 123); // over one 8 MiB part
    const put = await store.put('p1/big.bin', Readable.from([bytes.subarray(0, 5e6), bytes.subarray(5e6)]), {
      contentType: 'application/octet-stream',
    });
    assert.equal(put.size, bytes.length);
    assert.equal(put.etag, createHash('sha256').update(bytes).digest('hex'));
    const stat = await store.stat('p1/big.bin');
    assert.equal(stat?.size, bytes.length);
    assert.deepEqual(await buffer(await store.get('p1/big.bin')), bytes);
    assert.deepEqual(await buffer(await store.get('p1/big.bin', { start: 10, end: 19 })), bytes.subarray(10, 20));
    await store.put('p1/small.txt', Readable.from([Buffer.from('hello')]));
    const keys: string[] = [];
    for await (const k of store.list('p1/')) keys.push(k);
    assert.deepEqual(keys.sort(), ['p1/big.bin', 'p1/small.txt']);
    await store.delete('p1/big.bin');
    assert.equal(await store.stat('p1/big.bin'), null);
    await assert.rejects(store.get('p1/big.bin'), BlobMissing);
    await store.delete('p1/never-there'); // not an error
  });

  it('refuses an upload over the limit and keeps nothing', async () => {
    await assert.rejects(
      store.put('p1/over.bin', Readable.from([randomBytes(1000), randomBytes(1000)]), { maxBytes: 1500 }),
      BlobTooLarge,
    );
    assert.equal(await store.stat('p1/over.bin'), null);
  });

  it('presigns PUT and GET URLs that work without credentials', async () => {
    const putUrl = await store.presign('p1/signed.txt', {
      method: 'PUT',
      expiresInSeconds: 60,
      contentType: 'text/plain',
    });
    assert.match(putUrl, /X-Amz-Signature=/);
    const put = await fetch(putUrl, { method: 'PUT', body: 'signed bytes', headers: { 'content-type': 'text/plain' } });
    assert.equal(put.status, 200);
    const getUrl = await store.presign('p1/signed.txt', {
      method: 'GET',
      expiresInSeconds: 60,
      disposition: 'attachment; filename="x.txt"',
    });
    const got = await fetch(getUrl);
    assert.equal(got.status, 200);
    assert.equal(await got.text(), 'signed bytes');
    await store.check();
  });

  it('refuses keys that could escape their folder', async () => {
    await assert.rejects(store.put('../x', Readable.from([Buffer.from('x')])), /invalid blob key/);
  });
});
