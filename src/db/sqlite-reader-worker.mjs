/**
 * A reader thread of the SQLite pool (db/sqlite-readers.ts): a read-only connection to the same WAL
 * database, answering SQL compiled on the HTTP thread with its rows. Plain JavaScript with one
 * dependency, so it starts in milliseconds from the sources and the build alike.
 *
 * The budget is checked as the query runs: the compiled SQL calls `orrery_read(bytes)` once per
 * row it examines (db/read-budget.ts `readCost`), which adds the bytes of the row's documents and
 * throws once the query has run past its deadline or read past its byte budget. SQLite then stops
 * the statement, and the error names which bound was passed.
 */
import { createRequire } from 'node:module';
import { parentPort, workerData } from 'node:worker_threads';

const Database = createRequire(import.meta.url)('better-sqlite3');
const { file, cacheKiB } = workerData;

const db = new Database(file, { readonly: true, fileMustExist: true });
db.pragma('busy_timeout = 5000');
db.pragma(`cache_size = -${cacheKiB}`);
db.pragma('mmap_size = 1073741824');
db.pragma('temp_store = MEMORY');

/** The query running now: its deadline (Date.now() ms) and the bytes it may still read. */
let deadline = Infinity;
let bytesLeft = Infinity;

class BudgetExceeded extends Error {
  constructor(budget) {
    super(`query budget exceeded: ${budget}`);
    this.budget = budget;
  }
}

db.function('orrery_read', { deterministic: false, directOnly: true }, (bytes) => {
  bytesLeft -= Number(bytes) || 0;
  if (bytesLeft < 0) throw new BudgetExceeded('bytes');
  if (Date.now() > deadline) throw new BudgetExceeded('time');
  return 1;
});

/** Prepared statements by SQL text (bounded), as the HTTP thread's connection keeps them (db/open.ts). */
const statements = new Map();
const prepare = (text) => {
  let stmt = statements.get(text);
  if (!stmt) {
    stmt = db.prepare(text);
    if (statements.size >= 500) statements.delete(statements.keys().next().value);
    statements.set(text, stmt);
  }
  return stmt;
};

parentPort.on('message', (msg) => {
  if (msg.close) {
    db.close();
    process.exit(0);
  }
  const { id, sql, parameters, timeoutMs, maxReadBytes } = msg;
  deadline = Date.now() + timeoutMs;
  bytesLeft = maxReadBytes;
  try {
    const stmt = prepare(sql);
    if (!stmt.reader) throw new Error('a reader thread runs only statements that return rows');
    parentPort.postMessage({ id, rows: stmt.all(...parameters) });
  } catch (err) {
    parentPort.postMessage({
      id,
      error: {
        message: String(err?.message ?? err),
        ...(typeof err?.code === 'string' ? { code: err.code } : {}),
        ...(err instanceof BudgetExceeded ? { budget: err.budget } : {}),
      },
    });
  } finally {
    deadline = Infinity;
    bytesLeft = Infinity;
  }
});

parentPort.postMessage({ ready: true });
