/** Schemas of the signed-URL endpoints (`/objects/upload-url`, `/files/*`). */
import { Type } from '@sinclair/typebox';
import { Offset, OpenObject, ShortString } from '../http/schemas.ts';
import { MAX_BULK_UPLOAD_URLS, MAX_FILE_PAGE, MAX_URL_TTL } from './blob-service.ts';

const Ttl = Type.Optional(
  Type.Integer({
    minimum: 1,
    maximum: MAX_URL_TTL,
    description: 'Validity of the URL in seconds (default 3600, at most 7 days)',
  }),
);

export const UploadUrlBody = OpenObject({
  name: ShortString({
    minLength: 1,
    description: 'File name; its extension gives the MIME type when mime_type is absent',
  }),
  id: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 4096,
      description: 'Key (or storage URI of this project) to upload to; generated when absent',
    }),
  ),
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
  customMetadata: Type.Optional(
    Type.Record(Type.String(), Type.String(), { description: 'What files.setFileMetadata set' }),
  ),
});

export const SetFileMetadataBody = Type.Object(
  {
    file: Type.String({ minLength: 1, maxLength: 2048, description: 'Storage URI or key of a file of this project' }),
    metadata: Type.Record(
      Type.String({ minLength: 1, maxLength: 256 }),
      Type.Union([Type.String({ maxLength: 4096 }), Type.Null()]),
      {
        description:
          'Keys to set (strings) or remove (null); merged into what the file has. At most 64 keys and 8,192 bytes in all',
      },
    ),
  },
  { additionalProperties: false },
);

export const FileListQuery = Type.Object({
  prefix: Type.Optional(
    Type.String({ maxLength: 1024, description: 'Key prefix (e.g. "agents/run1/"); empty or absent lists every file' }),
  ),
  limit: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: MAX_FILE_PAGE,
      description: `At most this many keys (default and most: ${MAX_FILE_PAGE})`,
    }),
  ),
  offset: Type.Optional(Offset()),
});

export const FileListSchema = Type.Object({
  files: Type.Array(Type.String(), { description: 'Keys relative to the project, in key order' }),
});

export const DeleteFileResultSchema = Type.Object({
  success: Type.Boolean(),
  count: Type.Integer({ description: 'Files deleted' }),
  message: Type.Optional(Type.String()),
  file: Type.Optional(Type.String({ description: 'Storage URI of the file (or prefix) deleted' })),
});

export const CopyFileBody = OpenObject({
  source: Type.String({ minLength: 1, maxLength: 4096, description: 'Key or storage URI of a file of this project' }),
  dest: Type.String({
    minLength: 1,
    maxLength: 4096,
    description: 'Key (or storage URI of this project) to copy to; an existing file there is replaced',
  }),
});

export const CopyFileResultSchema = Type.Object({
  success: Type.Boolean(),
  source: Type.String({ description: 'Storage URI of the source' }),
  dest: Type.String({ description: 'Storage URI of the copy' }),
});

export const BulkUploadUrlsBody = OpenObject({
  files: Type.Array(
    OpenObject({
      name: ShortString({ minLength: 1 }),
      id: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 })),
      mime_type: Type.Optional(Type.String({ maxLength: 255 })),
    }),
    { maxItems: MAX_BULK_UPLOAD_URLS, description: `At most ${MAX_BULK_UPLOAD_URLS} files per call` },
  ),
});
