/** The official client's `files` API (used by the CLI): signed URLs and metadata of stored files. */
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../http/auth-hook.ts';
import { errorResponses } from '../http/schemas.ts';
import type { BlobService } from './blob-service.ts';
import { DownloadUrlBody, FileMetadataSchema, FileUrlSchema, UploadUrlBody } from './schemas.ts';

export const fileRoutes: FastifyPluginAsyncTypebox<{ blobs: BlobService }> = async (app, { blobs }) => {
  app.post('/files/upload-url', {
    schema: { tags: ['files'], summary: 'A signed URL that accepts a PUT of the bytes (no Authorization header)', body: UploadUrlBody, response: { 200: FileUrlSchema, ...errorResponses(400, 401, 404) } },
  }, (req) => blobs.uploadUrl(principalOf(req), req.body));
  app.post('/files/download-url', {
    schema: { tags: ['files'], summary: 'A signed, absolute GET URL for a file of this project', body: DownloadUrlBody, response: { 200: FileUrlSchema, ...errorResponses(400, 401, 404) } },
  }, (req) => blobs.downloadUrl(principalOf(req), req.body));
  app.get('/files/metadata', {
    schema: { tags: ['files'], summary: 'Name, size, content type and ETag of a file', querystring: Type.Object({ file: Type.String({ minLength: 1 }) }), response: { 200: FileMetadataSchema, ...errorResponses(400, 401, 404) } },
  }, (req) => blobs.metadata(principalOf(req), req.query.file));
};
