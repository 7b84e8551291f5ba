/**
 * The run writer's thread (runs/run-writer-thread.ts): its own connection to the SQLite file and
 * a RunWriter on it, so the statements and commits of runs cost this thread's core, not the one
 * that serves HTTP. Writes arrive prepared (encoded, with their search data); each is answered
 * with what it returned or why it failed, as soon as its transaction has committed or not.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openSqliteConnection } from '../db/open.ts';
import { sqliteDialect } from '../db/dialect.ts';
import { RunWriter } from './run-writer.ts';
import { applyRunWrite } from './store.ts';
import type { ThreadReply, ThreadRequest } from './run-writer-thread.ts';

/**
 * Writes per transaction. Smaller than the in-process writer's batches: replies to one batch
 * leave while the next is written, so the HTTP thread and this one work at the same time instead
 * of waiting for each other in turn (measured in bench/README.md).
 */
const BATCH = 16;

const db = openSqliteConnection((workerData as { file: string }).file, { eventLoop: false });
const writer = new RunWriter(db, sqliteDialect, BATCH);
const port = parentPort!;

let replies: ThreadReply[] = [];
const reply = (r: ThreadReply) => {
  if (!replies.length) {
    queueMicrotask(() => {
      port.postMessage({ replies });
      replies = [];
    });
  }
  replies.push(r);
};

port.on('message', (msg: ThreadRequest) => {
  if ('close' in msg) {
    void writer.drain().then(() => db.destroy()).finally(() => port.close());
    return;
  }
  for (const { seq, write } of msg.batch) {
    writer.run((trx) => applyRunWrite(trx, sqliteDialect, write)).then(
      (value) => reply({ seq, value }),
      (err: Error & { code?: string }) => reply({ seq, error: { message: err?.message ?? String(err), ...(err?.code ? { code: err.code } : {}) } }),
    );
  }
});
