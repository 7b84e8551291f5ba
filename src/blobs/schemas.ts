/** Schemas of the signed-URL endpoints (`/objects/upload-url`, `/files/*`). */
import { Type } from '@sinclair/typebox';
import { OpenObject, ShortString } from '../http/schemas.ts';
import { MAX_URL_TTL } from './blob-service.ts';

const Ttl = Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_URL_TTL, description: 'Validity of the URL in seconds (default 3600, at most 7 days)' }));

export const UploadUrlBody = OpenObject({
  name: ShortString({ minLength: 1, description: 'File name; its extension gives the MIME type when mime_type is absent' }),
  id: Type.Optional(Type.String({ minLength: 1, maxLength: 4096, description: 'Key (or storage URI of this project) to upload to; generated when absent' })),
  mime_type: Type.Optional(Type.String()),
  ttl: Ttl,
});

export const DownloadUrlBody = OpenObject({
  file: Type.String({ minLength: 1, description: 'Storage URI (content.source) or key of a file of this project' }),
  name: Type.Optional(Type.String({ description: 'File name for Content-Disposition' })),
  disposition: Type.Optional(Type.Union([Type.Literal('inline'), Type.Literal('attachment')])),
  ttl: Ttl,
});

export const FileUrlSchema = Type.Object({
  url: Type.String({ description: 'Absolute signed URL' }),
  id: Type.String({ description: 'Storage URI: <scheme>://<bucket>/<key>, the value for content.source' }),
  path: Type.String({ description: 'Key inside the bucket' }),
  mime_type: Type.Optional(Type.String()),
});

export const FileMetadataSchema = Type.Object({
  name: Type.String(),
  size: Type.Integer(),
  contentType: Type.String(),
  etag: Type.String(),
});
