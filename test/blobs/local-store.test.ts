import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { LocalBlobStore } from '../../src/blobs/local-store.ts';
import { BlobKeyConflict, BlobMissing, BlobTooLarge } from '../../src/blobs/blob-store.ts';

const read = async (s: Readable) => {
  const parts: Buffer[] = [];
  for await (const c of s) parts.push(c as Buffer);
  return Buffer.concat(parts).toString('utf8');
};
const keys = async (store: LocalBlobStore, prefix = '') => {
  const out: string[] = [];
  for await (const k of store.list(prefix)) out.push(k);
  return out;
};

describe('local blob store', () => {
  let root: string;
  let store: LocalBlobStore;
  before(() => {
    root = mkdtempSync(join(tmpdir(), 'orrery-blobs-'));
    store = new LocalBlobStore(root);
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  it('stores, stats, reads ranges, lists and deletes', async () => {
    const put = await store.put('p1/a/b.txt', Readable.from([Buffer.from('hello '), Buffer.from('world')]));
    assert.deepEqual(put, { size: 11, etag: createHash('sha256').update('hello world').digest('hex') });
    assert.equal((await store.stat('p1/a/b.txt'))?.size, 11);
    assert.equal(await read(await store.get('p1/a/b.txt')), 'hello world');
    assert.equal(await read(await store.get('p1/a/b.txt', { start: 6, end: 10 })), 'world');
    await store.put('p1/c.txt', Readable.from([Buffer.from('c')]));
    await store.put('p2/d.txt', Readable.from([Buffer.from('d')]));
    assert.deepEqual(await keys(store, 'p1/'), ['p1/a/b.txt', 'p1/c.txt']);
    assert.deepEqual(await keys(store, 'p1/a'), ['p1/a/b.txt']);
    await store.delete('p1/a/b.txt');
    await store.delete('p1/a/b.txt'); // deleting twice is fine
    assert.equal(await store.stat('p1/a/b.txt'), null);
    await assert.rejects(store.get('p1/a/b.txt'), BlobMissing);
    assert.deepEqual(readdirSync(join(root, 'p1')), ['c.txt'], 'the emptied folder is removed');
  });

  it('never shows a partial file: readers see the old bytes until the new ones are complete', async () => {
    await store.put('p1/doc.txt', Readable.from([Buffer.from('old')]));
    const body = new PassThrough();
    const writing = store.put('p1/doc.txt', body);
    body.write('new bytes, part 1 ');
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(await read(await store.get('p1/doc.txt')), 'old');
    assert.deepEqual(await keys(store, 'p1/'), ['p1/c.txt', 'p1/doc.txt'], 'the temporary file is not listed');
    body.end('part 2');
    await writing;
    assert.equal(await read(await store.get('p1/doc.txt')), 'new bytes, part 1 part 2');
  });

  it('refuses a body over maxBytes and leaves neither the file nor a temporary one', async () => {
    await assert.rejects(
      store.put('p3/big.bin', Readable.from([Buffer.alloc(600), Buffer.alloc(600)]), { maxBytes: 1000 }),
      BlobTooLarge,
    );
    assert.equal(await store.stat('p3/big.bin'), null);
    assert.deepEqual(readdirSync(join(root, 'p3')), []);
  });

  it('discards the temporary file when the body fails midway', async () => {
    const body = new PassThrough();
    const writing = store.put('p4/broken.bin', body);
    body.write('some bytes');
    body.destroy(new Error('client went away'));
    await assert.rejects(writing, /client went away/);
    assert.deepEqual(readdirSync(join(root, 'p4')), []);
  });

  it('confines keys under the root', async () => {
    for (const key of ['../escape', 'a/../../escape', '/abs', 'a//b', 'a/./b', 'x\\y']) {
      await assert.rejects(store.put(key, Readable.from([Buffer.from('x')])), /invalid blob key|escapes/, key);
      await assert.rejects(store.get(key), /invalid blob key|escapes/, key);
    }
    assert.deepEqual(readdirSync(root).sort(), ['p1', 'p2', 'p3', 'p4']);
  });

  it('reports a key that collides with a folder of other keys', async () => {
    await store.put('p5/x', Readable.from([Buffer.from('file')]));
    await assert.rejects(store.put('p5/x/y', Readable.from([Buffer.from('under a file')])), BlobKeyConflict);
    await store.put('p5/dir/z', Readable.from([Buffer.from('z')]));
    await assert.rejects(store.put('p5/dir', Readable.from([Buffer.from('over a folder')])), BlobKeyConflict);
  });
});
