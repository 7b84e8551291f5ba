/**
 * SQLite on the HTTP thread waits for the write lock without blocking the event loop.
 *
 * Two connections write the SQLite file: this thread's and the run writer's thread
 * (runs/run-writer-thread.ts). SQLite's own busy handler waits for the lock by sleeping inside
 * the call, which on this thread would freeze every request for as long as the run writer holds
 * the lock, under load for good. So this thread's connection has `busy_timeout = 0`, and a
 * statement that finds the database locked (SQLITE_BUSY: it changed nothing) is tried again
 * after a timer, for as long as busy_timeout would have waited. BEGIN IMMEDIATE (db/open.ts) is
 * the statement that waits in practice: once a transaction holds the lock, its statements do not
 * meet SQLITE_BUSY.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import {
  SqliteDialect,
  SqliteDriver,
  type CompiledQuery,
  type DatabaseConnection,
  type Driver,
  type QueryResult,
  type SqliteDialectConfig,
} from 'kysely';

import { LOCK_WAIT_MS } from './sqlite-handle.ts';

const isBusy = (err: unknown): boolean =>
  typeof (err as { code?: unknown })?.code === 'string' && (err as { code: string }).code.startsWith('SQLITE_BUSY');

/** Runs `query`, again after 1, 2, 4 … 16 ms while the database is locked, up to LOCK_WAIT_MS. */
export async function whenUnlocked<R>(
  query: () => Promise<QueryResult<R>>,
  waitMs = LOCK_WAIT_MS,
): Promise<QueryResult<R>> {
  // The monotonic clock: Date.now() counts whole milliseconds, and a clock set back would stretch the wait.
  const until = performance.now() + waitMs;
  for (let delay = 1; ; delay = Math.min(delay * 2, 16)) {
    try {
      return await query();
    } catch (err) {
      if (!isBusy(err) || performance.now() >= until) throw err;
    }
    await sleep(delay);
  }
}

class LockWaitingSqliteDriver extends SqliteDriver {
  override async acquireConnection(): Promise<DatabaseConnection> {
    const connection = await super.acquireConnection();
    return {
      executeQuery: <R>(query: CompiledQuery) => whenUnlocked(() => connection.executeQuery<R>(query)),
      streamQuery: <R>(query: CompiledQuery, chunkSize?: number) => connection.streamQuery<R>(query, chunkSize),
    };
  }
}

/** Kysely's SQLite dialect with LockWaitingSqliteDriver; give it a connection with busy_timeout 0. */
export class LockWaitingSqliteDialect extends SqliteDialect {
  constructor(private readonly settings: SqliteDialectConfig) {
    super(settings);
  }

  override createDriver(): Driver {
    return new LockWaitingSqliteDriver(this.settings);
  }
}
