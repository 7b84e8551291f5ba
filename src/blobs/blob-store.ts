/**
 * The storage contract for content bytes (style D4): a small streaming interface that a local
 * folder and S3 both implement, so services cannot tell one from the other. Keys are validated
 * `/`-separated paths (see `blob-keys.ts`); an implementation must also confine them itself.
 * Presigning is an optional capability: S3 hands out its own URLs, a folder's URLs are signed
 * and served by Orrery.
 */
import type { Readable } from 'node:stream';

export interface BlobStat {
  size: number;
  /** A content hash when the backend knows it (S3 does; a folder keeps it in the `blobs` table). */
  etag?: string;
  modifiedAt: Date;
}

export interface PutResult {
  size: number;
  /** Hex SHA-256 of the bytes, computed while they streamed in. */
  etag: string;
}

/** Inclusive byte offsets, as in an HTTP Range header. */
export interface ByteRange {
  start: number;
  end: number;
}

export interface PutOptions {
  contentType?: string;
  /** Refuse (BlobTooLarge) once more than this many bytes arrived; nothing is kept. */
  maxBytes?: number;
}

export interface BlobStore {
  /** URI scheme of the storage URIs for this backend: `local`, `s3`. */
  readonly scheme: string;
  /** Stream `body` to `key`. Readers see the old bytes or the new ones, never a partial file. */
  put(key: string, body: Readable, opts?: PutOptions): Promise<PutResult>;
  /** The bytes (or a range of them). Throws BlobMissing when there is no such blob. */
  get(key: string, range?: ByteRange): Promise<Readable>;
  stat(key: string): Promise<BlobStat | null>;
  /** Deleting a missing blob is not an error. */
  delete(key: string): Promise<void>;
  /**
   * Moves a blob to another key (a rename in a folder, copy then delete in S3) and answers what
   * now lives at `to`: its size, and its etag when the store knows it (S3). BlobMissing when
   * there is nothing at `from`.
   */
  move(from: string, to: string): Promise<BlobStat>;
  /** Keys under `prefix` (a folder prefix ending in `/`, or any key prefix). */
  list(prefix: string): AsyncIterable<string>;
  /** Throws while the storage cannot be reached (readiness); without it, a `stat` probes. */
  check?(): Promise<void>;
}

export interface PresignOptions {
  method: 'GET' | 'PUT';
  expiresInSeconds: number;
  contentType?: string;
  maxBytes?: number;
  disposition?: string;
}

/** A backend that issues its own time-limited URLs (S3). */
export interface PresigningBlobStore extends BlobStore {
  presign(key: string, opts: PresignOptions): Promise<string>;
}

export const canPresign = (s: BlobStore): s is PresigningBlobStore =>
  typeof (s as Partial<PresigningBlobStore>).presign === 'function';

/** The body went past `maxBytes`; the partial upload was discarded. */
export class BlobTooLarge extends Error {
  constructor(readonly maxBytes: number) {
    super(`upload is larger than the limit of ${maxBytes} bytes`);
    this.name = 'BlobTooLarge';
  }
}

export class BlobMissing extends Error {
  constructor(readonly key: string) {
    super(`no blob at ${JSON.stringify(key)}`);
    this.name = 'BlobMissing';
  }
}

/** The key cannot be stored (it collides with a folder of other keys, or the reverse). */
export class BlobKeyConflict extends Error {
  constructor(readonly key: string) {
    super(`key ${JSON.stringify(key)} collides with an existing key's folder`);
    this.name = 'BlobKeyConflict';
  }
}
