/**
 * Uploading a file as an object, the official client's way but with progress: a signed upload URL
 * (`POST /objects/upload-url`), a PUT of the bytes to it with XMLHttpRequest (fetch cannot report
 * upload progress) and no Authorization header, then `POST /objects` with `content.source`.
 */
import type { ContentObject } from '@vertesia/common';
import { client } from '../../api/client.ts';
import { ApiError } from '../../api/errors.ts';

export interface UploadProgress {
  loaded: number;
  total: number;
}

/** PUTs `file` to a signed URL, reporting progress; answers the ETag (quotes stripped). */
function putWithProgress(
  url: string,
  file: Blob,
  type: string,
  onProgress: (p: UploadProgress) => void,
  signal?: AbortSignal,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('PUT', url);
    xhr.setRequestHeader('content-type', type);
    xhr.upload.onprogress = (e) => onProgress({ loaded: e.loaded, total: e.lengthComputable ? e.total : file.size });
    xhr.onload = () => {
      if (xhr.status >= 200 && xhr.status < 300) {
        onProgress({ loaded: file.size, total: file.size });
        resolve((xhr.getResponseHeader('etag') ?? '').replace(/"/g, ''));
      } else {
        let message = `upload failed: ${xhr.status}`;
        try {
          message = (JSON.parse(xhr.responseText) as { message?: string }).message ?? message;
        } catch {
          /* not JSON */
        }
        reject(new ApiError({ error: 'upload_failed', status: xhr.status, message }));
      }
    };
    xhr.onerror = () =>
      reject(new ApiError({ error: 'upload_failed', status: 0, message: 'the upload failed (network error)' }));
    xhr.onabort = () => reject(new ApiError({ error: 'aborted', status: 0, message: 'upload cancelled' }));
    signal?.addEventListener('abort', () => xhr.abort());
    xhr.send(file);
  });
}

/** Uploads `file` and creates an object for it in `location`. */
export async function uploadObject(
  file: File,
  location: string,
  onProgress: (p: UploadProgress) => void,
  signal?: AbortSignal,
): Promise<ContentObject> {
  const objects = client().objects;
  const target = await objects.getUploadUrl({ name: file.name, mime_type: file.type || undefined } as never);
  const type = file.type || target.mime_type || 'application/octet-stream';
  const etag = await putWithProgress(target.url, file, type, onProgress, signal);
  return objects.create({
    name: file.name,
    location,
    content: { source: target.id, name: file.name, type, etag },
  } as never);
}
