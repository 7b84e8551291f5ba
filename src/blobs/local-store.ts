/**
 * Blobs in a local folder. A write streams into a temporary file next to its target (same
 * folder, so the same filesystem), hashing and counting as it goes, is flushed to disk and then
 * renamed over the target: memory stays bounded whatever the size, and a reader sees the old
 * bytes or the new ones, never a partial file. Keys are confined under the root: `join(root,
 * join('/', key))` cannot climb above it, and it is checked again after resolving.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Dirent } from 'node:fs';
import { mkdir, open, readdir, rename, rm, rmdir, stat } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { finished, Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  BlobKeyConflict,
  BlobMissing,
  BlobTooLarge,
  type BlobStat,
  type BlobStore,
  type ByteRange,
  type PutOptions,
  type PutResult,
} from './blob-store.ts';
import { keyProblem, MAX_KEY_BYTES, TEMP_MARKER } from './blob-keys.ts';
import { openFileWriter } from './file-writer.ts';

const WRITE_BUFFER = 1024 * 1024;
const READ_BUFFER = 256 * 1024;

export interface LocalBlobStoreOptions {
  /**
   * Flush every upload to disk before it is published (default). Off, an upload is only as
   * safe as the page cache: it survives a crash of Orrery, not of the machine.
   */
  durable?: boolean;
}

export class LocalBlobStore implements BlobStore {
  readonly scheme = 'local';
  private readonly root: string;
  private readonly durable: boolean;

  constructor(root: string, opts: LocalBlobStoreOptions = {}) {
    this.root = resolve(root);
    this.durable = opts.durable ?? true;
  }

  /** The file of `key`; throws on a key that is invalid or would leave the root. */
  private pathOf(key: string): string {
    // Store keys are `<prefix>/<key>`: room for a prefix beyond the API's limit.
    const problem = keyProblem(key, 2 * MAX_KEY_BYTES);
    if (problem) throw new Error(`invalid blob key ${JSON.stringify(key)}: ${problem}`);
    const full = join(this.root, join(sep, key));
    if (!full.startsWith(this.root + sep)) throw new Error(`blob key ${JSON.stringify(key)} escapes the store`);
    return full;
  }

  async put(key: string, body: Readable, opts: PutOptions = {}): Promise<PutResult> {
    const hash = createHash('sha256');
    let size = 0;
    const max = opts.maxBytes;
    const meter = new Transform({
      transform(chunk: Buffer, _enc, done) {
        size += chunk.length;
        if (max !== undefined && size > max) return done(new BlobTooLarge(max));
        hash.update(chunk);
        done(null, chunk);
      },
    });
    // Watch the body from the first moment (it may fail while the folder is being made). It is
    // piped rather than handed to pipeline(), which would destroy it on a refusal: the caller
    // (an HTTP request) must stay writable so that a 413 can still be answered.
    const stopWatching = finished(body, (err) => {
      if (err) meter.destroy(err);
    });
    meter.on('error', () => {}); // reported by pipeline() below, even when it happened before
    let temp: string | undefined;
    try {
      const target = this.pathOf(key);
      const folder = dirname(target);
      await mkdir(folder, { recursive: true });
      temp = join(folder, `.${basename(target)}.${randomBytes(6).toString('hex')}${TEMP_MARKER}`);
      const file = await openFileWriter(temp, { durable: this.durable, highWaterMark: WRITE_BUFFER });
      body.pipe(meter);
      // Durable: the bytes are on disk before the rename publishes them (and the rename after it).
      await pipeline(meter, file);
      await rename(temp, target);
      temp = undefined;
      if (this.durable) await syncFolder(folder);
    } catch (err) {
      body.unpipe(meter);
      if (temp) await rm(temp, { force: true }).catch(() => {});
      throw conflictOr(err, key);
    } finally {
      stopWatching();
    }
    return { size, etag: hash.digest('hex') };
  }

  async get(key: string, range?: ByteRange): Promise<Readable> {
    const file = this.pathOf(key);
    let handle;
    try {
      handle = await open(file, 'r');
    } catch (err) {
      if (isCode(err, 'ENOENT', 'ENOTDIR', 'EISDIR')) throw new BlobMissing(key);
      throw err;
    }
    return handle.createReadStream({
      start: range?.start,
      end: range?.end,
      highWaterMark: READ_BUFFER,
      autoClose: true,
    });
  }

  async stat(key: string): Promise<BlobStat | null> {
    try {
      const s = await stat(this.pathOf(key));
      return s.isFile() ? { size: s.size, modifiedAt: s.mtime } : null;
    } catch (err) {
      if (isCode(err, 'ENOENT', 'ENOTDIR')) return null;
      throw err;
    }
  }

  async move(from: string, to: string): Promise<BlobStat> {
    const source = this.pathOf(from);
    const target = this.pathOf(to);
    await mkdir(dirname(target), { recursive: true });
    try {
      await rename(source, target);
    } catch (err) {
      if (isCode(err, 'ENOENT', 'ENOTDIR')) throw new BlobMissing(from);
      throw conflictOr(err, to);
    }
    if (this.durable) await syncFolder(dirname(target));
    const s = await stat(target);
    return { size: s.size, modifiedAt: s.mtime };
  }

  async delete(key: string): Promise<void> {
    const file = this.pathOf(key);
    await rm(file, { force: true });
    // Tidy folders left empty, up to (not including) the root.
    for (let dir = dirname(file); dir.startsWith(this.root + sep); dir = dirname(dir)) {
      try {
        await rmdir(dir);
      } catch {
        break;
      }
    }
  }

  /**
   * Deletes temporary upload files that nothing has written to for `idleMs`: an upload cut off
   * by a crash (or kill -9) leaves one behind, and nothing else would ever remove it.
   */
  async sweepTemporary(idleMs: number, now = Date.now()): Promise<number> {
    let removed = 0;
    for await (const file of walk(this.root)) {
      if (!basename(file).endsWith(TEMP_MARKER)) continue;
      const s = await stat(file).catch(() => null);
      if (s && now - s.mtimeMs > idleMs) {
        await rm(file, { force: true });
        removed++;
      }
    }
    return removed;
  }

  async *list(prefix: string): AsyncIterable<string> {
    // Walk from the deepest folder the prefix names, then filter by the full prefix.
    const folderPart = prefix.includes('/') ? prefix.slice(0, prefix.lastIndexOf('/')) : '';
    const start = folderPart ? this.pathOf(folderPart) : this.root;
    for await (const file of walk(start)) {
      const key = relative(this.root, file).split(sep).join('/');
      if (key.startsWith(prefix) && !key.includes(TEMP_MARKER)) yield key;
    }
  }
}

async function* walk(dir: string): AsyncIterable<string> {
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (err) {
    if (isCode(err, 'ENOENT', 'ENOTDIR')) return;
    throw err;
  }
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const e of entries) {
    const full = join(dir, e.name);
    if (e.isDirectory()) yield* walk(full);
    else if (e.isFile()) yield full;
  }
}

/** Make the rename itself durable. Some filesystems refuse fsync on a folder: that is fine. */
async function syncFolder(folder: string): Promise<void> {
  try {
    const h = await open(folder, 'r');
    try {
      await h.sync();
    } finally {
      await h.close();
    }
  } catch {
    /* best effort */
  }
}

const isCode = (err: unknown, ...codes: string[]) => codes.includes((err as { code?: string })?.code ?? '');

const conflictOr = (err: unknown, key: string) =>
  isCode(err, 'ENOTDIR', 'EISDIR', 'EEXIST', 'ENOTEMPTY') ? new BlobKeyConflict(key) : err;
