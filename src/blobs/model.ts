/** What the blob service takes and answers: its bounds, inputs, answers and addresses. */
import type { Readable } from 'node:stream';
import { DERIVED_PREFIX } from './blob-keys.ts';

export const DEFAULT_URL_TTL = 3600;
/** Most keys `GET /files/list` answers, and `DELETE /files/<prefix>?prefix=true` deletes, per call. */
export const MAX_FILE_PAGE = 1000;
/** Most upload URLs one `POST /files/bulk-upload-urls` gives. */
export const MAX_BULK_UPLOAD_URLS = 100;
/** Custom metadata of one file: at most this many keys, and bytes of keys and values (a bucket's own bound is 8 KiB). */
export const MAX_CUSTOM_METADATA_KEYS = 64;
export const MAX_CUSTOM_METADATA_BYTES = 8192;
export const MAX_URL_TTL = 7 * 24 * 3600;
/** Path prefix of the public routes that receive and serve blobs. */
export const BLOB_ROUTE_PREFIX = '/blobs';

export interface BlobServiceOptions {
  /** Read at each call: the test harness learns its port after the server is built. */
  publicUrl: () => string;
  maxUploadBytes: number;
}

export interface UploadUrlInput {
  name?: string;
  id?: string;
  mime_type?: string;
  ttl?: number;
}

export interface DownloadUrlInput {
  file?: string;
  name?: string;
  disposition?: 'inline' | 'attachment';
  ttl?: number;
}

/** `GetFileUrlResponse` of the official client. */
export interface FileUrl {
  url: string;
  /** The storage URI. */
  id: string;
  /** The key inside the bucket. */
  path: string;
  mime_type?: string;
}

export interface FileMetadata {
  name: string;
  size: number;
  contentType: string;
  etag: string;
}

export interface ReceivedBlob {
  source: string;
  path: string;
  etag: string;
  size: number;
  type: string;
}

export interface BlobDownload {
  status: 200 | 206 | 304 | 416;
  headers: Record<string, string>;
  body?: Readable;
}

/** Where a public blob request points: decoded from `/blobs/<project>/<key…>`. */
export interface BlobAddress {
  project: string;
  key: string;
}

/**
 * Where an object's content lives once the object adopts it (claim()): a key no upload URL can
 * name (DERIVED_PREFIX is refused by upload-url), so a still-valid upload URL cannot change the
 * bytes an object serves (issue 14).
 */
export const CONTENT_PREFIX = `${DERIVED_PREFIX}content/`;

/** An upload moved under CONTENT_PREFIX for an object: what the object records of it. */
export interface ClaimedBlob {
  uri: string;
  key: string;
  etag: string;
  size: number;
  type: string;
  name: string;
}

/** The path a blob URL signs. */
export const canonicalPath = (at: BlobAddress) => `${BLOB_ROUTE_PREFIX}/${at.project}/${at.key}`;

export const blobUrlPath = (at: BlobAddress): string =>
  `${BLOB_ROUTE_PREFIX}/${encodeURIComponent(at.project)}/${at.key.split('/').map(encodeURIComponent).join('/')}`;

/** `/blobs/<project>/<key…>?…` → its address, or null when the path is not one. */
export function parseBlobUrl(rawUrl: string): BlobAddress | null {
  const path = rawUrl.split('?', 1)[0];
  if (!path.startsWith(`${BLOB_ROUTE_PREFIX}/`)) return null;
  const segments = path.slice(BLOB_ROUTE_PREFIX.length + 1).split('/');
  if (segments.length < 2) return null;
  try {
    const [project, ...key] = segments.map((s) => decodeURIComponent(s));
    return { project, key: key.join('/') };
  } catch {
    return null;
  }
}
