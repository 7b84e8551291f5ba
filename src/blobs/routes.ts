/**
 * The public blob routes (style F1: registered outside the authenticated context, because the
 * URL signature is the credential). `PUT` receives an upload, `GET`/`HEAD` serve a download;
 * any other method, or a URL signed for the other method, is a 403 with the JSON error shape.
 */
import { Readable } from 'node:stream';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { Forbidden, NotFound, wireError } from '../util/errors.ts';
import { BLOB_ROUTE_PREFIX, parseBlobUrl, type BlobAddress, type BlobService } from './blob-service.ts';

const header = (req: FastifyRequest, name: string): string | undefined => {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
};

const addressOf = (req: FastifyRequest): BlobAddress => {
  const at = parseBlobUrl(req.raw.url ?? '');
  if (!at) throw new NotFound('file', req.raw.url?.split('?', 1)[0] ?? '');
  return at;
};

export const blobRoutes: FastifyPluginAsync<{ blobs: BlobService }> = async (app, { blobs }) => {
  // Upload bodies are bytes of any type, streamed to storage as they arrive: no parsing, no
  // buffering, no body limit here (the service enforces ORRERY_MAX_UPLOAD_SIZE while streaming).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_req, payload, done) => done(null, payload));

  const route = `${BLOB_ROUTE_PREFIX}/*`;

  app.put(route, { schema: { hide: true } }, async (req, reply) => {
    try {
      const at = addressOf(req);
      // No body at all (Content-Length: 0) leaves nothing to parse; the root hook then sets {}.
      const body = req.body instanceof Readable ? req.body : Readable.from([]);
      const received = await blobs.receive(
        at,
        req.query as Record<string, unknown>,
        {
          contentType: header(req, 'content-type'),
          contentLength: header(req, 'content-length'),
        },
        body,
      );
      reply.header('etag', `"${received.etag}"`);
      return received;
    } catch (err) {
      // Refused before the body was read in full (bad signature, too large): close the
      // connection after answering rather than draining what may be gigabytes.
      if (!req.raw.complete) reply.header('connection', 'close');
      throw err;
    }
  });

  const download = async (req: FastifyRequest, reply: FastifyReply) => {
    const method = req.method === 'HEAD' ? 'HEAD' : 'GET';
    const got = await blobs.open(addressOf(req), req.query as Record<string, unknown>, method, {
      range: header(req, 'range'),
      ifNoneMatch: header(req, 'if-none-match'),
      ifRange: header(req, 'if-range'),
    });
    reply.code(got.status).headers(got.headers);
    if (got.status === 416) {
      reply.header('content-type', 'application/json; charset=utf-8').removeHeader('content-length');
      return reply.send(
        wireError(
          'range_not_satisfiable',
          416,
          `the range ${header(req, 'range')} is outside the ${got.headers['content-range'].split('/')[1]} bytes of this file`,
        ),
      );
    }
    return sendBody(reply, got.body);
  };
  // HEAD is its own route: Fastify's automatic one would answer Content-Length: 0.
  app.get(route, { schema: { hide: true }, exposeHeadRoute: false }, download);
  app.head(route, { schema: { hide: true } }, download);

  app.route({
    method: ['POST', 'DELETE', 'PATCH'],
    url: route,
    schema: { hide: true },
    handler: async (req) => {
      throw new Forbidden(`signed file URLs accept GET or HEAD (download) and PUT (upload), not ${req.method}`, {
        reason: 'wrong_method',
      });
    },
  });
};

function sendBody(reply: FastifyReply, body: Readable | undefined) {
  if (!body) return reply.send();
  return reply.send(body);
}
