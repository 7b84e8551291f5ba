/**
 * One error handler (style F4): deliberate errors keep their status and message, validation errors
 * become a 400 that says which field is wrong, everything else is logged behind a generic 500.
 * Every answer has the one wire shape `{error, status, message, details?}`.
 */
import type { FastifyError, FastifyInstance } from 'fastify';
import { DATABASE_RETRY_AFTER_SECONDS, OrreryError, OrreryErrorWithHeaders, wireError } from '../util/errors.ts';
import { classifyStorageError } from '../db/storage-errors.ts';
import { parseJsonBody } from './json-body.ts';
import { STATUS_CODES } from 'node:http';
import { table } from '../util/own.ts';

const FASTIFY_CODES: Record<string, string> = table({
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload_too_large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'bad_request',
  FST_ERR_CTP_INVALID_JSON_BODY: 'bad_request',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'bad_request',
});

export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError, req, reply) => {
    if (err instanceof OrreryError) {
      // A 429 tells when to come back (src/limits).
      if (err instanceof OrreryErrorWithHeaders) reply.headers(err.headers);
      const retryAfter = (err as { retryAfterSeconds?: unknown }).retryAfterSeconds;
      if (typeof retryAfter === 'number') reply.header('retry-after', String(retryAfter));
      return reply.code(err.status).send(wireError(err.code, err.status, err.message, err.details, err.extra));
    }
    if (err.validation) {
      const where = err.validationContext ?? 'request';
      const first = err.validation[0];
      const path = first?.instancePath ? first.instancePath.replace(/^\//, '').replace(/\//g, '.') : '';
      let what = `${where}${path ? `.${path}` : ''} ${first?.message ?? 'is invalid'}`;
      if (first?.keyword === 'required')
        what = `${where}${path ? `.${path}` : ''} must have property "${(first.params as { missingProperty?: string }).missingProperty}"`;
      if (first?.keyword === 'additionalProperties') {
        const field = (first.params as { additionalProperty?: string }).additionalProperty;
        what = `${where}${path ? `.${path}` : ''}.${field} is not a field of this request; remove it (unknown fields are refused)`;
      }
      if (first?.keyword === 'enum')
        what += `: ${((first.params as { allowedValues?: unknown[] }).allowedValues ?? []).join(', ')}`;
      return reply.code(400).send(
        wireError(
          'bad_request',
          400,
          what,
          err.validation.map((v) => ({ path: v.instancePath, message: v.message })),
        ),
      );
    }
    const status = err.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      const code = FASTIFY_CODES[err.code] ?? 'bad_request';
      return reply.code(status).send(wireError(code, status, err.message));
    }
    // A storage failure is not a bug of the request: say which, so clients retry or stop.
    const storage = classifyStorageError(err);
    if (storage === 'unavailable') {
      req.log.error({ err }, 'database unavailable');
      reply.header('retry-after', String(DATABASE_RETRY_AFTER_SECONDS));
      return reply
        .code(503)
        .send(wireError('database_unavailable', 503, 'the database cannot be reached; retry later'));
    }
    if (storage === 'busy') {
      req.log.warn({ err }, 'database pool busy');
      reply.header('retry-after', String(DATABASE_RETRY_AFTER_SECONDS));
      return reply
        .code(503)
        .send(
          wireError(
            'database_unavailable',
            503,
            'every database connection stayed busy with other requests for ORRERY_DATABASE_POOL_WAIT; retry later, or raise ORRERY_DATABASE_POOL_WAIT if requests this slow are expected',
          ),
        );
    }
    if (storage === 'full') {
      req.log.error({ err }, 'storage full');
      return reply
        .code(507)
        .send(
          wireError(
            'insufficient_storage',
            507,
            'the server has no space left to store this; free disk space and retry',
          ),
        );
    }
    req.log.error({ err }, 'unhandled error');
    return reply.code(500).send(wireError('internal', 500, 'Internal server error'));
  });

  app.setNotFoundHandler((req, reply) => {
    reply.code(404).send(wireError('not_found', 404, `no route for ${req.method} ${req.url.split('?')[0]}`));
  });
}

/**
 * JSON bodies (json-body.ts): an empty body, or none at all, is an empty object (the official
 * client posts `/token/issue` so); required fields then fail validation with a message that
 * names them. Prototype keys and nesting past MAX_JSON_DEPTH are refused with a 400.
 */
export function installJsonParser(app: FastifyInstance): void {
  app.addHook('preValidation', async (req) => {
    if (req.body === undefined && (req.method === 'POST' || req.method === 'PUT' || req.method === 'PATCH'))
      req.body = {};
  });
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    try {
      done(null, parseJsonBody(typeof body === 'string' ? body : body.toString('utf8')));
    } catch (err) {
      done(err as Error, undefined);
    }
  });
}

/**
 * Requests Node's HTTP parser refuses before Fastify sees them (headers or URL over 16 KiB, a
 * malformed request line, a request that takes too long): answered in the one error shape.
 */
export function clientErrorHandler(
  this: { log: { trace: (o: object, m: string) => void } },
  err: NodeJS.ErrnoException,
  socket: import('node:net').Socket,
): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, code, message] =
    err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? [408, 'request_timeout', 'the request took too long to arrive']
      : err.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'headers_too_large', 'the URL and headers exceed 16 KiB; send long lists or queries in a POST body']
        : [400, 'bad_request', 'malformed HTTP request'];
  this.log.trace({ err }, 'client error');
  if (socket.writable) {
    const body = JSON.stringify(wireError(code, status, message));
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(err);
}
