/**
 * The error catalogue. Services throw these; the HTTP error handler turns them into the one wire
 * shape `{error, status, message, details?}`. Nothing here imports fastify, so any layer may throw.
 */
import { boundErrorMessage } from './error-message.ts';

export class OrreryError extends Error {
  constructor(
    readonly code: string,
    readonly status: number,
    message: string,
    readonly details?: unknown,
    /** Extra top-level fields for the wire body (e.g. a failed run's `id`). */
    readonly extra?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'OrreryError';
  }
}

/** An error whose answer carries headers of its own (a 429's Retry-After and rate-limit state). */
export class OrreryErrorWithHeaders extends OrreryError {
  constructor(
    code: string,
    status: number,
    message: string,
    details: unknown,
    readonly headers: Record<string, string>,
  ) {
    super(code, status, message, details);
  }
}

const define = (code: string, status: number) =>
  class extends OrreryError {
    constructor(message: string, details?: unknown, extra?: Record<string, unknown>) {
      super(code, status, message, details, extra);
    }
  };

export const BadRequest = define('bad_request', 400);
export const Unauthorized = define('unauthorized', 401);
export const Forbidden = define('forbidden', 403);
export const Conflict = define('conflict', 409);
export const PreconditionFailed = define('precondition_failed', 412);
export const PayloadTooLarge = define('payload_too_large', 413);
export const UnsupportedMediaType = define('unsupported_media_type', 415);
/** Seconds a client should wait before retrying a request the database could not serve. */
export const DATABASE_RETRY_AFTER_SECONDS = 5;

export class NotFound extends OrreryError {
  constructor(kind: string, id: string) {
    super('not_found', 404, `${kind} ${JSON.stringify(id)} was not found in this project`);
  }
}

export interface WireError {
  error: string;
  status: number;
  message: string;
  details?: unknown;
  [extra: string]: unknown;
}

export const wireError = (
  code: string,
  status: number,
  message: string,
  details?: unknown,
  extra?: Record<string, unknown>,
): WireError => ({
  ...extra,
  error: code,
  status,
  // Messages may quote text from templates and providers: bounded like a run's stored error.
  message: boundErrorMessage(message),
  ...(details === undefined ? {} : { details }),
});
