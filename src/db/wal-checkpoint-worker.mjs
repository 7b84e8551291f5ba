/**
 * The WAL checkpointer's thread (db/wal-checkpointer.ts). Plain JavaScript with one dependency, so
 * that it starts in milliseconds from the sources and the build alike. Every `everyMs` it copies
 * what the write-ahead log holds into the database file (a PASSIVE checkpoint: it never waits for,
 * nor blocks, a reader or a writer), and it ends once nothing has been written for `idleEndMs`.
 */
import { createRequire } from 'node:module';
import { parentPort, workerData } from 'node:worker_threads';

const Database = createRequire(import.meta.url)('better-sqlite3');
const { file, everyMs, idleEndMs } = workerData;

const db = new Database(file);
let lastLog = -1;
let quietSince = Date.now();

const timer = setInterval(() => {
  let state;
  try {
    [state] = db.pragma('wal_checkpoint(PASSIVE)');
  } catch (err) {
    // The connections' own checkpoints (wal_autocheckpoint) still run: end, say why.
    parentPort.postMessage({ error: String(err?.message ?? err) });
    return stop();
  }
  // `log`: frames in the log; `checkpointed`: those now in the database file.
  if (state.log !== lastLog || state.checkpointed < state.log) {
    lastLog = state.log;
    quietSince = Date.now();
  } else if (Date.now() - quietSince >= idleEndMs) stop();
}, everyMs);

function stop() {
  clearInterval(timer);
  if (db.open) db.close();
  parentPort.close();
}

parentPort.on('message', (msg) => msg?.close && stop());
