/**
 * One better-sqlite3 handle to the SQLite file, configured as every connection of ours must be.
 * Kept apart from db/open.ts so that a thread running its own statements (the run writer's,
 * runs/sqlite-run-writes.ts) does not load Kysely.
 */
import SQLite from 'better-sqlite3';

/** How long a connection waits for the write lock before failing (busy_timeout, or db/sqlite-lock-wait.ts's timers). */
export const LOCK_WAIT_MS = 5000;

/**
 * Log pages past which a connection checkpoints inside its own commit. SQLite's default is 1,000;
 * the server checkpoints on a thread of its own (db/wal-checkpointer.ts) well before this, so a
 * connection does it only if that thread falls behind or is not running (tools, tests).
 */
export const FALLBACK_CHECKPOINT_PAGES = 10_000;

/** Page cache of a connection, KiB: the HTTP thread's reads (search, lists) keep up to this much of the file at hand. */
const READER_CACHE_KIB = 65_536;

/**
 * `eventLoop`: the HTTP thread's handle, which must never sleep in SQLite's busy handler
 * (db/sqlite-lock-wait.ts). `cacheKiB`: its page cache (READER_CACHE_KIB unless told).
 */
export function openSqliteHandle(
  file: string,
  { eventLoop, cacheKiB = READER_CACHE_KIB }: { eventLoop: boolean; cacheKiB?: number },
): SQLite.Database {
  const sqlite = new SQLite(file);
  sqlite.pragma(`busy_timeout = ${eventLoop ? 0 : LOCK_WAIT_MS}`);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('foreign_keys = ON');
  // A larger page cache and memory-mapped reads spare a read() system call per B-tree page.
  sqlite.pragma(`cache_size = -${cacheKiB}`);
  sqlite.pragma('mmap_size = 1073741824');
  sqlite.pragma('temp_store = MEMORY');
  sqlite.pragma(`wal_autocheckpoint = ${FALLBACK_CHECKPOINT_PAGES}`);
  // Heavy reads call this per row examined (db/read-budget.ts `readCost`); it checks their budget
  // on a reader thread (db/sqlite-reader-worker.mjs). Here, where nothing is budgeted, it passes.
  sqlite.function('orrery_read', { deterministic: false, directOnly: true }, (_bytes: unknown) => 1);
  return sqlite;
}
