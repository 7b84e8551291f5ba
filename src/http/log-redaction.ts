/**
 * Secrets never reach the log (issue 14). API keys and JWTs travel in the Authorization header,
 * in `?access_token=` (the SSE stream: EventSource sends no headers) and in `/token/issue`
 * bodies; signed blob URLs carry their credential in `sig` (ours) or `X-Amz-Signature` and
 * `X-Amz-Credential` (S3). Everything the server logs goes through these serializers: request
 * URLs lose those parameters' values, headers named here are censored, and error messages and
 * stacks are scrubbed of keys, bearer tokens and signature parameters.
 */
import type { FastifyServerOptions } from 'fastify';
import { stdSerializers } from 'pino';

const CENSOR = '[REDACTED]';

/** Query parameters whose value is a credential (compared in lower case). */
const SECRET_QUERY_PARAMS = [
  'access_token',
  'token',
  'sig',
  'signature',
  'x-amz-signature',
  'x-amz-credential',
  'x-amz-security-token',
  'key',
  'apikey',
  'api_key',
  'code',
  'client_secret',
];
const SECRET_PARAM = new RegExp(
  `([?&](?:${SECRET_QUERY_PARAMS.map((p) => p.replace(/[-_]/g, '[-_]')).join('|')})=)[^&#\\s"']*`,
  'gi',
);
/** Orrery API keys and JWTs (three base64url parts) wherever they appear in text. */
const SK_KEY = /\bsk-[A-Za-z0-9_-]{8,}/g;
const JWT = /\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}/g;
const BEARER = /(Bearer\s+)[^\s"',]+/gi;

/** `text` with every credential we know the shape of replaced by [REDACTED]. */
export function scrubSecrets(text: string): string {
  return text
    .replace(SECRET_PARAM, `$1${CENSOR}`)
    .replace(BEARER, `$1${CENSOR}`)
    .replace(SK_KEY, CENSOR)
    .replace(JWT, CENSOR);
}

interface LoggedRequest {
  method: string;
  url: string;
  host?: string;
  ip?: string;
  socket?: { remotePort?: number };
}

/** Logger options for Fastify's pino: redaction, and serializers that scrub what they print. */
export function redactingLoggerOptions(): Pick<
  Exclude<FastifyServerOptions['logger'], boolean | undefined>,
  'redact' | 'serializers'
> {
  return {
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers.cookie',
        'req.headers["x-api-key"]',
        'req.headers["proxy-authorization"]',
        'res.headers["set-cookie"]',
        'headers.authorization',
        'headers.cookie',
        'headers["x-api-key"]',
        'body.key',
        'body.apiKey',
        'body.api_key',
        'body.value',
      ],
      censor: CENSOR,
    },
    serializers: {
      req: (req: LoggedRequest) => ({
        method: req.method,
        url: scrubSecrets(req.url),
        host: req.host,
        remoteAddress: req.ip,
        remotePort: req.socket?.remotePort,
      }),
      err: (err: Error) => {
        const out = stdSerializers.err(err);
        if (typeof out.message === 'string') out.message = scrubSecrets(out.message);
        if (typeof out.stack === 'string') out.stack = scrubSecrets(out.stack);
        return out;
      },
    },
  };
}
