/**
 * Errors on the OpenAI door in OpenAI's shape, `{error: {message, type, param, code}}`, with
 * OpenAI's status codes: what the door itself refuses (a parameter it does not apply, a malformed
 * message) and whatever Orrery raises on the way (limits, roles, unknown models, a failed run).
 * Only the /v1 routes answer so; the rest of the API keeps its own shape.
 */
import { OrreryError, OrreryErrorWithHeaders } from '../../util/errors.ts';
import { boundErrorMessage } from '../../util/error-message.ts';

export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

/** A request the door refuses, naming the parameter at fault (`messages[2].content[0].image_url`). */
export class OpenAIRequestError extends OrreryError {
  constructor(message: string, param: string | null, code: string | null = null, status = 400) {
    super('bad_request', status, message, { param, code });
  }
}

/** A parameter the door accepts on the wire but does not apply: a 400, never silently dropped. */
export const unsupported = (param: string, why: string): OpenAIRequestError =>
  new OpenAIRequestError(`${param} is not supported by Orrery's OpenAI door: ${why}`, param, 'unsupported_parameter');

const TYPE_BY_STATUS: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'invalid_request_error',
  403: 'permission_error',
  404: 'invalid_request_error',
  409: 'invalid_request_error',
  413: 'invalid_request_error',
  415: 'invalid_request_error',
  422: 'invalid_request_error',
  429: 'rate_limit_error',
};

/** Words of Orrery's own messages that name the OpenAI parameter at fault. */
const PARAM_HINTS: Array<[RegExp, string]> = [
  [/tool_definitions|tools?_unsupported|cannot call tools/i, 'tools'],
  [/tool_choice/i, 'tool_choice'],
  [/temperature/i, 'temperature'],
  [/max_tokens/i, 'max_tokens'],
  [/top_p/i, 'top_p'],
  [/\bstop\b/i, 'stop'],
  [/\bseed\b/i, 'seed'],
  [/presence_penalty/i, 'presence_penalty'],
  [/frequency_penalty/i, 'frequency_penalty'],
  [/result_schema/i, 'response_format'],
  [/\bmodel\b|environment/i, 'model'],
];

const paramOf = (message: string): string | null => PARAM_HINTS.find(([re]) => re.test(message))?.[1] ?? null;

/** Any error on a /v1 route: its status, its headers (a 429's Retry-After), its body in OpenAI's shape. */
export function toOpenAIError(err: unknown): {
  status: number;
  headers: Record<string, string>;
  body: OpenAIErrorBody;
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
    const details = err.details as { param?: string | null; code?: string | null; reason?: string } | undefined;
    const message = boundErrorMessage(err.message);
    if (err instanceof OpenAIRequestError)
      return body(
        err.status,
        headers,
        message,
        TYPE_BY_STATUS[err.status],
        details?.param ?? null,
        details?.code ?? null,
      );
    switch (err.status) {
      case 401:
        return body(401, headers, message, 'invalid_request_error', null, 'invalid_api_key');
      case 403:
        return body(403, headers, message, 'permission_error', null, 'insufficient_permissions');
      case 404:
        return body(404, headers, message, 'invalid_request_error', 'model', 'model_not_found');
      case 413:
        return body(413, headers, message, 'invalid_request_error', null, 'request_too_large');
      case 429: {
        const quota = headers['x-ratelimit-reason'] === 'quota';
        return body(
          429,
          headers,
          message,
          quota ? 'insufficient_quota' : 'rate_limit_error',
          null,
          quota ? 'insufficient_quota' : 'rate_limit_exceeded',
        );
      }
      case 502: {
        // A run that failed at its provider: the run's error code says why (provider_rate_limited, …).
        const f = runFailure(err.code, message);
        return { status: f.status, headers, body: f.body };
      }
      default:
        if (err.status >= 500) return body(err.status, headers, message, 'server_error', null, err.code);
        return body(
          err.status,
          headers,
          message,
          TYPE_BY_STATUS[err.status] ?? 'invalid_request_error',
          paramOf(message),
          err.code === 'bad_request' ? null : err.code,
        );
    }
  }
  if (e?.validation) {
    const first = e.validation[0];
    const path = (first?.instancePath ?? '').replace(/^\//, '').split('/').filter(Boolean);
    const param = path.reduce((acc, k) => (/^\d+$/.test(k) ? `${acc}[${k}]` : acc ? `${acc}.${k}` : k), '');
    const missing = first?.keyword === 'required' ? String(first.params?.missingProperty ?? '') : '';
    const named = missing ? (param ? `${param}.${missing}` : missing) : param;
    const message = missing
      ? `Missing required parameter: '${named}'.`
      : `Invalid value for '${named || 'body'}': ${first?.message ?? 'is invalid'}.`;
    return body(
      400,
      {},
      message,
      'invalid_request_error',
      named || null,
      missing ? 'missing_required_parameter' : 'invalid_value',
    );
  }
  const status = e?.statusCode ?? 500;
  if (status >= 400 && status < 500) {
    const code = e.code === 'FST_ERR_CTP_BODY_TOO_LARGE' ? 'request_too_large' : 'invalid_request';
    const message =
      e.code === 'FST_ERR_CTP_BODY_TOO_LARGE'
        ? 'the request body is larger than the server accepts (16 MiB); send fewer or smaller messages or images'
        : boundErrorMessage(e.message ?? 'bad request');
    return body(status, {}, message, 'invalid_request_error', null, code);
  }
  return body(500, {}, 'The server had an error while processing your request.', 'server_error', null, null);
}

/**
 * A failed run's error in OpenAI's terms: the provider refused the request (400, which the SDK
 * does not retry), limited it (429), refused by the egress policy (403), else a 502 api_error.
 */
export function runFailure(code: string, message: string): { status: number; body: OpenAIErrorBody } {
  const [status, type] =
    code === 'provider_bad_request'
      ? [400, 'invalid_request_error']
      : code === 'provider_rate_limited'
        ? [429, 'rate_limit_error']
        : code === 'egress_refused'
          ? [403, 'permission_error']
          : [502, 'api_error'];
  return { status, body: { error: { message: boundErrorMessage(message), type, param: null, code } } };
}

function body(
  status: number,
  headers: Record<string, string>,
  message: string,
  type: string | undefined,
  param: string | null,
  code: string | null,
) {
  return { status, headers, body: { error: { message, type: type ?? 'invalid_request_error', param, code } } };
}
