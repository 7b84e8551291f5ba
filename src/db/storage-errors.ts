/**
 * What a failed query says about the store, from its error codes: the database cannot be reached
 * (worth retrying soon), every pooled connection stayed busy past the pool wait (retrying soon
 * helps too, but the cause is load, not the database), or the disk is full (retrying will not help
 * until space is freed). The one place that knows both dialects' and the drivers' codes; the HTTP
 * layer maps the answer to a status.
 */
export type StorageFailure = 'unavailable' | 'busy' | 'full';

/** Thrown when a query waited ORRERY_DATABASE_POOL_WAIT for a connection while all were in use (db/open.ts). */
export class PoolBusyError extends Error {
  readonly code = 'ORRERY_POOL_BUSY';
  constructor(
    readonly poolSize: number,
    readonly waitedMs: number,
    options?: { cause?: unknown },
  ) {
    super(`all ${poolSize} database connections stayed busy for ${waitedMs} ms`, options);
    this.name = 'PoolBusyError';
  }
}

// Socket errors from connecting to PostgreSQL (node:net, DNS).
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
]);
// PostgreSQL SQLSTATEs: the server is shutting down, starting, or refusing connections.
const PG_UNAVAILABLE = new Set(['57P01', '57P02', '57P03', '53300', '58030']);
// pg and pg-pool raise these without a code.
const PG_UNAVAILABLE_MESSAGES = [
  /^Connection terminated/,
  /^timeout exceeded when trying to connect/,
  /^Client has encountered a connection error/,
  /is not currently accepting connections/,
];
const FULL_CODES = new Set(['ENOSPC', 'EDQUOT', 'SQLITE_FULL', '53100']);

export function classifyStorageError(err: unknown): StorageFailure | undefined {
  // Drivers and Kysely may wrap the cause; a few levels are enough.
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') {
      if (code === 'ORRERY_POOL_BUSY') return 'busy';
      if (FULL_CODES.has(code)) return 'full';
      if (NETWORK_CODES.has(code) || PG_UNAVAILABLE.has(code) || code.startsWith('08')) return 'unavailable';
    }
    const message = (e as { message?: unknown }).message;
    if (typeof message === 'string' && PG_UNAVAILABLE_MESSAGES.some((re) => re.test(message))) return 'unavailable';
    if (e instanceof AggregateError) {
      const inner = e.errors.map(classifyStorageError);
      if (inner.includes('full')) return 'full';
      if (inner.includes('unavailable')) return 'unavailable';
      if (inner.includes('busy')) return 'busy';
    }
  }
  return undefined;
}
