/**
 * A budget for client-shaped reads (find and count queries, collection member listings, run
 * searches).
 *
 * - PostgreSQL: the read runs in its own transaction with `SET LOCAL statement_timeout`, so one
 *   costly query cannot hold a pooled connection (and a backend's memory) for minutes, and the
 *   timeout ends with the transaction instead of leaking to the next user of the connection. A
 *   cancellation (SQLSTATE 57014) becomes a 422 that names the bound and its variable.
 * - SQLite: the read runs on a reader thread (db/sqlite-readers.ts) when the database has them,
 *   never on the HTTP thread; there the SQL's `readCost` term stops it past the same time budget
 *   or past ORRERY_QUERY_MAX_READ bytes of documents examined, with the same 422s.
 */
import { sql, type Expression, type Kysely, type RawBuilder, type SqlBool } from 'kysely';
import type { OrreryDialect } from './dialect.ts';
import { OrreryError } from '../util/errors.ts';
import { ReadBudgetExceeded, readersOf } from './sqlite-readers.ts';
import { requestSignal } from './read-context.ts';
import type { ReadGate } from './read-gate.ts';

const QUERY_TIMEOUT_VARIABLE = 'ORRERY_QUERY_TIMEOUT';
const QUERY_MAX_READ_VARIABLE = 'ORRERY_QUERY_MAX_READ';

class QueryTimeout extends OrreryError {
  constructor(ms: number) {
    super(
      'query_timeout',
      422,
      `the query ran longer than its budget of ${ms / 1000} s (${QUERY_TIMEOUT_VARIABLE}) and was cancelled; narrow it (fewer conditions, more selective fields)`,
      { timeout_ms: ms },
    );
  }
}

class QueryReadLimit extends OrreryError {
  constructor() {
    super(
      'query_too_costly',
      422,
      `the query examined more stored documents than its budget allows (${QUERY_MAX_READ_VARIABLE}) and was stopped; narrow it (more selective fields, a smaller project scope)`,
    );
  }
}

const QUERY_CANCELED = '57014';

/**
 * A term for the WHERE clause of a heavy read, first among its conditions: the bytes of the
 * row's documents, counted against the read's budget as each row is examined (SQLite reader
 * threads). TRUE on PostgreSQL, whose statement_timeout is the budget.
 */
export function readCost(dialect: OrreryDialect, ...documents: Expression<unknown>[]): RawBuilder<SqlBool> {
  if (dialect.name === 'postgres' || !documents.length) return sql<SqlBool>`TRUE`;
  const bytes = sql.join(
    documents.map((d) => sql`coalesce(octet_length(${d}), 0)`),
    sql` + `,
  );
  return sql<SqlBool>`(orrery_read(${bytes}) = 1)`;
}

/** What boundedRead uses by default for a database (db/open.ts sets it from the config). */
export interface ReadSettings {
  timeoutMs: number;
  /** Per-project concurrency of expensive reads. */
  gate?: ReadGate;
}

const settings = new WeakMap<object, ReadSettings>();

export function configureReads(db: object, s: ReadSettings): void {
  settings.set(db, s);
}

/** A read whose client went away before it started or while it ran on PostgreSQL (the answer goes nowhere). */
class ClientGone extends OrreryError {
  constructor() {
    super('client_closed', 499, 'the client closed the connection before the answer; the query was cancelled');
  }
}

export interface BoundedReadOptions {
  /** The project the read is for: at most ORRERY_PROJECT_READS of one project run at once (db/read-gate.ts). */
  project?: string;
}

/**
 * Runs `read` under the budget: `ms` (or the database's configured ORRERY_QUERY_TIMEOUT when
 * undefined), its project's turn, on a reader thread on SQLite, and cancelled on PostgreSQL when
 * the request's client goes away (db/read-context.ts).
 */
export async function boundedRead<D, T>(
  db: Kysely<D>,
  dialect: OrreryDialect,
  ms: number | undefined,
  read: (db: Kysely<D>) => Promise<T>,
  options: BoundedReadOptions = {},
): Promise<T> {
  const configured = settings.get(db);
  const timeout = ms ?? configured?.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const go = () => (dialect.name === 'postgres' ? postgresRead(db, timeout, read) : sqliteRead(db, timeout, read));
  if (requestSignal()?.aborted) throw new ClientGone();
  return configured?.gate && options.project && !db.isTransaction ? configured.gate.run(options.project, go) : go();
}

const DEFAULT_TIMEOUT_MS = 5000;

async function sqliteRead<D, T>(db: Kysely<D>, ms: number, read: (db: Kysely<D>) => Promise<T>): Promise<T> {
  const readers = db.isTransaction ? undefined : readersOf(db);
  if (!readers) return read(db);
  if (requestSignal()?.aborted) throw new ClientGone();
  try {
    return await read(readers.db<D>(ms));
  } catch (err) {
    if (err instanceof ReadBudgetExceeded) throw err.budget === 'time' ? new QueryTimeout(ms) : new QueryReadLimit();
    throw err;
  }
}

async function postgresRead<D, T>(db: Kysely<D>, ms: number, read: (db: Kysely<D>) => Promise<T>): Promise<T> {
  const signal = requestSignal();
  let cancelled = false;
  const run = async (trx: Kysely<D>) => {
    // set_config(…, true) is SET LOCAL with a bound value; the backend's pid, to cancel it.
    const { rows } = await sql<{
      pid: number;
    }>`SELECT set_config('statement_timeout', ${String(ms)}, true), pg_backend_pid() AS pid`.execute(trx);
    if (!signal || db.isTransaction) return read(trx);
    let cancelling: Promise<unknown> | undefined;
    // While this transaction holds the connection, so the cancel cannot reach another request's query.
    const cancel = () => {
      cancelled = true;
      cancelling = sql`SELECT pg_cancel_backend(${rows[0].pid})`.execute(db).catch(() => {});
    };
    if (signal.aborted) throw new ClientGone();
    signal.addEventListener('abort', cancel, { once: true });
    try {
      return await read(trx);
    } finally {
      signal.removeEventListener('abort', cancel);
      if (cancelling) await cancelling;
    }
  };
  try {
    return db.isTransaction ? await run(db) : await db.transaction().execute(run);
  } catch (err) {
    if ((err as { code?: unknown }).code === QUERY_CANCELED) throw cancelled ? new ClientGone() : new QueryTimeout(ms);
    throw err;
  }
}
