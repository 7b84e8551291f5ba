/**
 * Errors on the Anthropic door in Anthropic's shape, `{type: "error", error: {type, message}}`,
 * with Anthropic's status codes: what the door refuses (a field it does not apply, a malformed
 * message) and whatever Orrery raises on the way (a key, a role, a limit, a failed run).
 */
import { OrreryError, OrreryErrorWithHeaders } from '../../util/errors.ts';
import { boundErrorMessage } from '../../util/error-message.ts';

export interface AnthropicErrorBody {
  type: 'error';
  error: { type: string; message: string };
}

/** A request the door refuses; the message names the field at fault (`messages.1.content.0.source`). */
export class AnthropicRequestError extends OrreryError {
  constructor(message: string, status = 400) {
    super('bad_request', status, message);
  }
}

/** A field the door accepts on the wire but does not apply: a 400 naming it, never silently dropped. */
export const unsupported = (field: string, why: string): AnthropicRequestError =>
  new AnthropicRequestError(`${field}: not supported by Orrery's Anthropic door: ${why}`);

/** Anthropic's error type for each status (its errors page). */
const TYPE_BY_STATUS: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  409: 'invalid_request_error',
  413: 'request_too_large',
  415: 'invalid_request_error',
  422: 'invalid_request_error',
  429: 'rate_limit_error',
  500: 'api_error',
  529: 'overloaded_error',
};

const typeOf = (status: number): string =>
  TYPE_BY_STATUS[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');

const body = (type: string, message: string): AnthropicErrorBody => ({ type: 'error', error: { type, message } });

/** Any error on an Anthropic door route: its status, its headers (a 429's retry-after), its body. */
export function toAnthropicError(err: unknown): {
  status: number;
  headers: Record<string, string>;
  body: AnthropicErrorBody;
} {
  const e = err as {
    statusCode?: number;
    code?: string;
    message?: string;
    validation?: Array<{ instancePath?: string; message?: string; keyword?: string; params?: Record<string, unknown> }>;
  };
  if (err instanceof OrreryError) {
    const headers = err instanceof OrreryErrorWithHeaders ? { ...err.headers } : {};
    const retryAfter = (err as { retryAfterSeconds?: unknown }).retryAfterSeconds;
    if (typeof retryAfter === 'number') headers['retry-after'] = String(retryAfter);
    const message = boundErrorMessage(err.message);
    // A run that failed at its provider: the run's error code says why.
    if (err.status === 502) {
      const f = runFailure(err.code, message);
      return { status: f.status, headers, body: f.body };
    }
    return { status: err.status, headers, body: body(typeOf(err.status), message) };
  }
  if (e?.validation) {
    const first = e.validation[0];
    const path = (first?.instancePath ?? '').replace(/^\//, '').split('/').filter(Boolean).join('.');
    const missing = first?.keyword === 'required' ? String(first.params?.missingProperty ?? '') : '';
    const message = missing
      ? `${path ? `${path}.` : ''}${missing}: Field required`
      : `${path || 'body'}: ${first?.message ?? 'is invalid'}`;
    return { status: 400, headers: {}, body: body('invalid_request_error', message) };
  }
  const status = e?.statusCode ?? 500;
  if (status >= 400 && status < 500) {
    const message =
      e.code === 'FST_ERR_CTP_BODY_TOO_LARGE'
        ? 'the request body is larger than the server accepts (16 MiB); send fewer or smaller messages, images or documents'
        : boundErrorMessage(e.message ?? 'bad request');
    return { status, headers: {}, body: body(typeOf(status), message) };
  }
  return { status: 500, headers: {}, body: body('api_error', 'Internal server error') };
}

/**
 * A failed run's error in Anthropic's terms: the provider refused the request (400, which the SDK
 * does not retry), limited it (429), the egress policy refused it (403), else a 502 api_error.
 */
export function runFailure(code: string, message: string): { status: number; body: AnthropicErrorBody } {
  const status =
    code === 'provider_bad_request'
      ? 400
      : code === 'provider_rate_limited'
        ? 429
        : code === 'egress_refused'
          ? 403
          : 502;
  return { status, body: body(typeOf(status), boundErrorMessage(`${message} (${code})`)) };
}
