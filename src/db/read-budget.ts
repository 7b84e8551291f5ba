/**
 * A time budget for client-shaped reads (find queries): on PostgreSQL the read runs in its own
 * transaction with `SET LOCAL statement_timeout`, so one costly query cannot hold a pooled
 * connection (and a backend's memory) for minutes, and the timeout ends with the transaction
 * instead of leaking to the next user of the connection. A cancellation (SQLSTATE 57014) becomes
 * a 422 that names the bound and its variable. SQLite has no statement timeout; there the cost
 * bound of the compiler (FIND_LIMITS.jsonConditions) is the budget.
 */
import { sql, type Kysely } from 'kysely';
import type { OrreryDialect } from './dialect.ts';
import { OrreryError } from '../http/errors.ts';

const QUERY_TIMEOUT_VARIABLE = 'ORRERY_QUERY_TIMEOUT';

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

const QUERY_CANCELED = '57014';

export async function boundedRead<D, T>(
  db: Kysely<D>,
  dialect: OrreryDialect,
  ms: number,
  read: (db: Kysely<D>) => Promise<T>,
): Promise<T> {
  if (dialect.name !== 'postgres') return read(db);
  const run = async (trx: Kysely<D>) => {
    // set_config(…, true) is SET LOCAL with a bound value.
    await sql`SELECT set_config('statement_timeout', ${String(ms)}, true)`.execute(trx);
    return read(trx);
  };
  try {
    return db.isTransaction ? await run(db) : await db.transaction().execute(run);
  } catch (err) {
    if ((err as { code?: unknown }).code === QUERY_CANCELED) throw new QueryTimeout(ms);
    throw err;
  }
}
