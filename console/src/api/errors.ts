/** The server's error shape, `{ error, status, message, details? }`, as an Error. */
export interface WireError {
  error: string;
  status: number;
  message: string;
  details?: unknown;
}

export class ApiError extends Error implements WireError {
  readonly error: string;
  readonly status: number;
  readonly details?: unknown;
  constructor(wire: WireError) {
    super(wire.message);
    this.name = 'ApiError';
    this.error = wire.error;
    this.status = wire.status;
    this.details = wire.details;
  }
}

/** Builds an ApiError from a failed response, whatever its body. */
export async function errorFromResponse(res: Response): Promise<ApiError> {
  const text = await res.text().catch(() => '');
  try {
    const body = JSON.parse(text) as Partial<WireError>;
    if (body && typeof body.message === 'string') {
      return new ApiError({
        error: body.error ?? 'error',
        status: body.status ?? res.status,
        message: body.message,
        details: body.details,
      });
    }
  } catch {
    /* not JSON */
  }
  return new ApiError({
    error: 'http_error',
    status: res.status,
    message: text.slice(0, 500) || `${res.status} ${res.statusText}`,
  });
}

/** A readable message for any thrown value: ApiError, the official client's errors, or others. */
export function errorMessage(err: unknown): string {
  if (err instanceof ApiError) return err.message;
  if (err && typeof err === 'object') {
    const e = err as { message?: unknown; payload?: { message?: unknown }; status?: unknown };
    if (e.payload && typeof e.payload.message === 'string') return e.payload.message;
    if (typeof e.message === 'string') return e.message;
  }
  return String(err);
}

/** The HTTP status of any thrown value, when it has one. */
export function errorStatus(err: unknown): number | undefined {
  const s = (err as { status?: unknown } | null)?.status;
  return typeof s === 'number' ? s : undefined;
}
