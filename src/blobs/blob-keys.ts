/**
 * Object keys inside a project's bucket, and the storage URIs that name them
 * (`<scheme>://<bucket>/<key>`, decisions.md). A key is a `/`-separated path of plain segments:
 * no `.` or `..`, no empty segment, no control characters or backslashes, and never the marker
 * of an upload in progress, so it cannot escape its folder or shadow a temporary file.
 */
import { extname } from 'node:path';
import { newId } from '../db/ids.ts';

export const MAX_KEY_BYTES = 1024;
/** Per segment: a file name is at most 255 bytes, and the temporary one adds about 30. */
const MAX_SEGMENT_BYTES = 200;
/** Temporary upload files carry this marker; no key may. */
export const TEMP_MARKER = '~orrery-upload';
/** Keys of blobs the server makes itself (renditions): never given out for an upload. */
export const DERIVED_PREFIX = '.orrery/';

/** Why `key` is not acceptable, or null when it is. */
export function keyProblem(key: string, maxBytes = MAX_KEY_BYTES): string | null {
  if (!key) return 'is empty';
  if (Buffer.byteLength(key) > maxBytes) return `is longer than ${maxBytes} bytes`;
  if (/[\u0000-\u001f\u007f\\]/.test(key)) return 'contains a control character or a backslash';
  if (key.includes(TEMP_MARKER)) return `contains "${TEMP_MARKER}"`;
  for (const seg of key.split('/')) {
    if (seg === '') return 'has an empty path segment (a leading, trailing or doubled "/")';
    if (seg === '.' || seg === '..') return 'has a "." or ".." segment';
    if (Buffer.byteLength(seg) > MAX_SEGMENT_BYTES) return `has a path segment longer than ${MAX_SEGMENT_BYTES} bytes`;
  }
  return null;
}

/** A fresh key for an upload: time-sortable, with the file's extension when it has a plain one. */
export function generatedKey(name: string): string {
  const ext = extname(name).toLowerCase();
  return newId() + (/^\.[a-z0-9]{1,12}$/.test(ext) ? ext : '');
}

export interface StorageUri {
  scheme: string;
  bucket: string;
  key: string;
}

const URI = /^([a-z][a-z0-9+.-]*):\/\/([^/]+)\/(.+)$/i;

/** Parses `<scheme>://<bucket>/<key>`; anything else (a bare key) gives null. */
export function parseStorageUri(value: string): StorageUri | null {
  const m = URI.exec(value);
  return m ? { scheme: m[1].toLowerCase(), bucket: m[2], key: m[3] } : null;
}

export const formatStorageUri = (u: StorageUri): string => `${u.scheme}://${u.bucket}/${u.key}`;

/** Last path segment of a key: the default file name of a download. */
export const keyBaseName = (key: string): string => key.slice(key.lastIndexOf('/') + 1);
