/**
 * Opens the database named by the config: SQLite under the data folder by default, PostgreSQL
 * when ORRERY_DATABASE_URL is set. Runs the migrations (under Kysely's migration lock, which is an
 * advisory lock on PostgreSQL, so replicas starting together are safe).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type SQLite from 'better-sqlite3';
import type { PoolClient } from 'pg';
import { Kysely, Migrator, PostgresDialect, SqliteDialect } from 'kysely';
import type { Database } from './schema.ts';
import { postgresDialect, sqliteDialect, type OrreryDialect } from './dialect.ts';
import { OrreryMigrations } from './migrations.ts';
import { LockWaitingSqliteDialect } from './sqlite-lock-wait.ts';
import { openSqliteHandle } from './sqlite-handle.ts';
import { loadPg, type Pg } from './pg.ts';
import { PoolBusyError } from './storage-errors.ts';
import { attachReaders, SqliteReaders } from './sqlite-readers.ts';
import { configureReads } from './read-budget.ts';
import { ReadGate } from './read-gate.ts';

export interface OpenedDatabase {
  db: Kysely<Database>;
  dialect: OrreryDialect;
  /** A label for logs that never contains a password. */
  describe: string;
  /** SQLite: the database file, which other threads open for themselves. */
  file?: string;
}

export interface OpenOptions {
  databaseUrl?: string;
  dataDir: string;
  /** SQLite: reader threads for heavy reads (db/sqlite-readers.ts); 0 reads on the HTTP thread. */
  sqliteReaders?: number;
  /** SQLite: bytes of documents one heavy read may examine (ORRERY_QUERY_MAX_READ). */
  queryMaxReadBytes?: number;
  /** PostgreSQL: how long a query waits for a pooled connection before failing as unavailable (ms). */
  poolWaitMs?: number;
  /** Time budget of heavy reads (ORRERY_QUERY_TIMEOUT, ms; db/read-budget.ts). */
  queryTimeoutMs?: number;
  /** Heavy reads one project may run at once (ORRERY_PROJECT_READS; db/read-gate.ts). */
  projectReads?: number;
}

/** PostgreSQL connections of the pool; heavy reads take at most all but HEADROOM of them. */
const POOL_SIZE = 10;
const HEADROOM = 2;
/** Heavy reads of one project that may wait for their turn before more are refused with a 429. */
const QUEUE_PER_PROJECT = 64;

export async function openDatabase(opts: OpenOptions): Promise<OpenedDatabase> {
  const opened = opts.databaseUrl
    ? openPostgres(await loadPg(), opts.databaseUrl, opts.poolWaitMs ?? POOL_WAIT_MS)
    : openSqlite(opts.dataDir);
  try {
    await migrate(opened);
  } catch (err) {
    await opened.db.destroy().catch(() => {});
    throw err;
  }
  const readers = opts.sqliteReaders ?? 0;
  configureReads(opened.db, {
    timeoutMs: opts.queryTimeoutMs ?? 5000,
    gate: new ReadGate({
      perProject: opts.projectReads ?? 3,
      // SQLite: the threads' own queue holds the rest; the gate only keeps one project from filling it.
      total: opened.file ? Math.max(1, readers) * 4 : POOL_SIZE - HEADROOM,
      queuePerProject: QUEUE_PER_PROJECT,
    }),
  });
  // After the migrations: a read-only connection needs the schema (and the WAL) in place.
  if (opened.file && (opts.sqliteReaders ?? 0) > 0) {
    const readers = new SqliteReaders(opened.file, {
      size: opts.sqliteReaders!,
      maxReadBytes: opts.queryMaxReadBytes ?? Number.MAX_SAFE_INTEGER,
    });
    attachReaders(opened.db, readers);
    const destroy = opened.db.destroy.bind(opened.db);
    opened.db.destroy = async () => {
      await readers.close();
      await destroy();
    };
  }
  return opened;
}

function openSqlite(dataDir: string): OpenedDatabase {
  mkdirSync(dataDir, { recursive: true });
  const file = join(dataDir, 'orrery.db');
  return {
    db: openSqliteConnection(file, { eventLoop: true }),
    dialect: sqliteDialect,
    describe: `sqlite:${file}`,
    file,
  };
}

/** How long a query waits for one of the pool's connections by default (ORRERY_DATABASE_POOL_WAIT). */
const POOL_WAIT_MS = 10_000;

/**
 * One connection to the SQLite file, configured as every connection of ours must be: the main
 * thread's and the run writer's thread (runs/run-writer-thread.ts) each open one. The main
 * thread's (`eventLoop`) waits for the write lock with timers (db/sqlite-lock-wait.ts); the
 * writer thread's may sleep in SQLite's busy handler, which blocks only that thread.
 */
function openSqliteConnection(file: string, { eventLoop }: { eventLoop: boolean }): Kysely<Database> {
  const config = { database: withStatementCache(openSqliteHandle(file, { eventLoop })) };
  return new Kysely<Database>({
    dialect: eventLoop ? new LockWaitingSqliteDialect(config) : new SqliteDialect(config),
  });
}

/**
 * Kysely prepares every query anew; preparing costs more than running a small statement. Reuse
 * prepared statements by SQL text (bounded), except one still busy iterating a streamed result.
 *
 * Kysely begins transactions DEFERRED. With two connections writing (this thread and the run
 * writer's), a deferred transaction that reads and then writes fails at once with SQLITE_BUSY
 * when the other committed in between; IMMEDIATE takes the write lock first and waits for it
 * instead (see openSqliteConnection).
 */
function withStatementCache(sqlite: SQLite.Database) {
  const cache = new Map<string, SQLite.Statement>();
  return {
    close: () => sqlite.close(),
    prepare: (text: string) => {
      // SQLite rolls a transaction back itself on some errors (SQLITE_FULL, SQLITE_IOERR); Kysely's
      // rollback would then fail and its error would hide the real one.
      if (text === 'rollback' && !sqlite.inTransaction) return sqlite.prepare('select 1');
      const cached = cache.get(text);
      if (cached && !cached.busy) return cached;
      const stmt = sqlite.prepare(text === 'begin' ? 'begin immediate' : text);
      if (!cached) {
        if (cache.size >= 2000) cache.delete(cache.keys().next().value!);
        cache.set(text, stmt);
      }
      return stmt;
    },
  };
}

function openPostgres(pg: Pg, url: string, poolWaitMs: number): OpenedDatabase {
  // connectionTimeoutMillis: a query that finds every connection busy fails after this instead of
  // waiting for ever. pg-pool says "timeout exceeded when trying to connect" both when the pool
  // stayed full and when a new connection could not be opened in time (the database is down): the
  // connections handed out and not yet released tell which. Ones still connecting do not count.
  const pool = new pg.Pool({ connectionString: url, max: POOL_SIZE, connectionTimeoutMillis: poolWaitMs });
  let inUse = 0;
  const checkedOut = {
    connect: async () => {
      const full = inUse >= POOL_SIZE;
      let client: PoolClient;
      try {
        client = await pool.connect();
      } catch (err) {
        if (full && /^timeout exceeded when trying to connect/.test((err as Error).message))
          throw new PoolBusyError(POOL_SIZE, poolWaitMs, { cause: err });
        throw err;
      }
      inUse++;
      const release = client.release.bind(client);
      let released = false;
      client.release = (err?: Error | boolean) => {
        if (!released) inUse--;
        released = true;
        release(err);
      };
      return client;
    },
    end: () => pool.end(),
  };
  // JIT off: it compiles the plans of costly searches (counts and facets over many runs) for
  // 20-30 ms and saves less than that on them (measured at 1M runs, bench/README.md). A SET on
  // each new connection, not a startup `options`, which PgBouncer refuses; queued before any
  // query of ours. A server without the setting (before PostgreSQL 11) just ignores the error.
  pool.on('connect', (client) => void client.query('SET jit = off').catch(() => {}));
  // An idle client that errors (server restart) must not crash the process.
  pool.on('error', () => {});
  const safe = new URL(url);
  safe.password = safe.password ? '***' : '';
  return {
    db: new Kysely<Database>({ dialect: new PostgresDialect({ pool: checkedOut }) }),
    dialect: postgresDialect,
    describe: safe.toString(),
  };
}

async function migrate({ db, dialect }: OpenedDatabase): Promise<void> {
  const migrator = new Migrator({ db, provider: new OrreryMigrations(dialect.name) });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error');
    throw new Error(`database migration ${failed?.migrationName ?? ''} failed: ${(error as Error).message ?? error}`);
  }
}
