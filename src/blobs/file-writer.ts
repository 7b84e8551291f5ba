/**
 * A Writable onto a new file that, when `durable`, is on disk when it finishes: it starts an
 * fdatasync every `syncEvery` bytes in the background while more bytes keep arriving, so the
 * disk writes back during the transfer instead of all at the end, and the final sync is short.
 * Chunks that queue up while a write is in flight go down in one writev.
 */
import { open, type FileHandle } from 'node:fs/promises';
import { Writable } from 'node:stream';

export interface FileWriterOptions {
  durable: boolean;
  /** Bytes written between two background syncs. */
  syncEvery?: number;
  highWaterMark?: number;
}

export async function openFileWriter(path: string, opts: FileWriterOptions): Promise<Writable> {
  const fh: FileHandle = await open(path, 'wx');
  const syncEvery = opts.syncEvery ?? 32 * 1024 * 1024;
  let unsynced = 0;
  let syncing: Promise<void> | null = null;
  const backgroundSync = () => {
    if (!opts.durable || syncing || unsynced < syncEvery) return;
    unsynced = 0;
    syncing = fh.datasync().finally(() => {
      syncing = null;
    });
    syncing.catch(() => {}); // awaited (and reported) in final()
  };
  const written = (n: number) => {
    unsynced += n;
    backgroundSync();
  };
  const check = (wrote: number, expected: number, done: (err?: Error) => void) => {
    if (wrote !== expected) return done(new Error(`short write to ${path}: ${wrote} of ${expected} bytes`));
    written(wrote);
    done();
  };
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await fh.close();
  };
  return new Writable({
    highWaterMark: opts.highWaterMark ?? 1024 * 1024,
    write(chunk: Buffer, _enc, done) {
      fh.write(chunk).then(({ bytesWritten }) => check(bytesWritten, chunk.length, done), done);
    },
    writev(chunks, done) {
      const buffers = chunks.map((c) => c.chunk as Buffer);
      fh.writev(buffers).then(
        ({ bytesWritten }) =>
          check(
            bytesWritten,
            buffers.reduce((n, b) => n + b.length, 0),
            done,
          ),
        done,
      );
    },
    final(done) {
      (async () => {
        await syncing;
        if (opts.durable) await fh.datasync();
        await close();
      })().then(() => done(), done);
    },
    destroy(err, done) {
      close().then(
        () => done(err),
        () => done(err),
      );
    },
  });
}
