/** The official client's `files` API (used by the CLI): signed URLs and metadata of stored files. */
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../http/auth-hook.ts';
import { errorResponses } from '../http/schemas.ts';
import type { BlobService } from './blob-service.ts';
import {
  BulkUploadUrlsBody,
  CopyFileBody,
  CopyFileResultSchema,
  DeleteFileResultSchema,
  DownloadUrlBody,
  FileListQuery,
  FileListSchema,
  FileMetadataSchema,
  FileUrlSchema,
  SetFileMetadataBody,
  UploadUrlBody,
} from './schemas.ts';

export const fileRoutes: FastifyPluginAsyncTypebox<{ blobs: BlobService }> = async (app, { blobs }) => {
  app.post(
    '/files/upload-url',
    {
      schema: {
        tags: ['files'],
        summary: 'A signed URL that accepts a PUT of the bytes (no Authorization header)',
        body: UploadUrlBody,
        response: { 200: FileUrlSchema, ...errorResponses(400, 401, 404) },
      },
    },
    (req) => blobs.uploadUrl(principalOf(req), req.body),
  );
  app.post(
    '/files/download-url',
    {
      schema: {
        tags: ['files'],
        summary: 'A signed, absolute GET URL for a file of this project',
        body: DownloadUrlBody,
        response: { 200: FileUrlSchema, ...errorResponses(400, 401, 404) },
      },
    },
    (req) => blobs.downloadUrl(principalOf(req), req.body),
  );
  app.get(
    '/files/metadata',
    {
      schema: {
        tags: ['files'],
        summary: 'Name, size, content type and ETag of a file',
        querystring: Type.Object({ file: Type.String({ minLength: 1 }) }),
        response: { 200: FileMetadataSchema, ...errorResponses(400, 401, 404) },
      },
    },
    (req) => blobs.metadata(principalOf(req), req.query.file),
  );
  app.put(
    '/files/metadata',
    {
      schema: {
        tags: ['files'],
        summary:
          'Set custom metadata on a file: string values merged into what it has (null removes a key); at most 64 keys and 8,192 bytes',
        body: SetFileMetadataBody,
        response: {
          200: Type.Object({ success: Type.Boolean(), file: Type.String() }),
          ...errorResponses(400, 401, 404, 413),
        },
      },
    },
    (req) => blobs.setMetadata(principalOf(req), req.body),
  );
  app.get(
    '/files/list',
    {
      schema: {
        tags: ['files'],
        summary:
          'Keys of the files of this project that start with prefix, in key order (at most 1,000 per call; offset pages on)',
        querystring: FileListQuery,
        response: { 200: FileListSchema, ...errorResponses(400, 401, 404) },
      },
    },
    (req) => blobs.listFiles(principalOf(req), req.query.prefix, req.query),
  );
  app.delete(
    '/files/*',
    {
      schema: {
        tags: ['files'],
        summary:
          'Delete a file, or with prefix=true every file whose key starts with the path (at most 1,000 per call)',
        params: Type.Object({ '*': Type.String({ description: 'Key (or storage URI) of the file, or the prefix' }) }),
        querystring: Type.Object({
          prefix: Type.Optional(Type.Boolean({ description: 'Delete every file whose key starts with the path' })),
        }),
        response: { 200: DeleteFileResultSchema, ...errorResponses(400, 401, 404) },
      },
    },
    (req) => blobs.deleteFiles(principalOf(req), req.params['*'], req.query.prefix === true),
  );
  app.post(
    '/files/copy',
    {
      schema: {
        tags: ['files'],
        summary: 'Copy a file of this project to another key of this project',
        body: CopyFileBody,
        response: { 200: CopyFileResultSchema, ...errorResponses(400, 401, 404, 409) },
      },
    },
    (req) => blobs.copyFile(principalOf(req), req.body),
  );
  app.post(
    '/files/bulk-upload-urls',
    {
      schema: {
        tags: ['files'],
        summary: 'Signed upload URLs for up to 100 files at once',
        body: BulkUploadUrlsBody,
        response: { 200: Type.Object({ files: Type.Array(FileUrlSchema) }), ...errorResponses(400, 401, 404) },
      },
    },
    (req) => blobs.bulkUploadUrls(principalOf(req), req.body),
  );
};
