/**
 * The run writer's thread (runs/run-writer-thread.ts): its own connection to the SQLite file, on
 * which the writes arriving from the HTTP thread (prepared there: encoded, with their search data)
 * run as plain statements (runs/sqlite-run-writes.ts), group-committed. Each write is answered
 * with what it returned or why it failed, as soon as its transaction has committed or not.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openSqliteHandle } from '../db/sqlite-handle.ts';
import { SqliteRunWrites } from './sqlite-run-writes.ts';
import type { ThreadMessage, ThreadReply, ThreadRequest, ThreadWrite } from './run-writer-thread.ts';

/**
 * Writes per transaction. Small: replies to one batch leave while the next is written, so the
 * HTTP thread and this one work at the same time instead of waiting for each other in turn. With
 * 32 connections a message brings about 22 writes; in transactions of 32 the HTTP thread was idle
 * a quarter of the time, waiting for replies. 8 gave 109-116 % of the runs/s of 32 (16: 114 %,
 * 4: 93 %, the commits' own cost then showing; bench/README.md, issue 17, sixth pass).
 */
const BATCH = 8;

/**
 * This connection's page cache, KiB. A run's writes touch the right-hand edges of the runs table's
 * B-trees and little else, which a few thousand pages hold; a 64 MB cache (the readers') only grew
 * with fresh pages, each a page fault, and left up to 30 MB in glibc's arenas after the thread ended:
 * 8 MB made runs 12-15 % faster and the memory after a load smaller (bench/README.md, issue 22, ninth pass).
 */
const CACHE_KIB = 8192;

const db = openSqliteHandle((workerData as { file: string }).file, { eventLoop: false, cacheKiB: CACHE_KIB });
const writes = new SqliteRunWrites(db);
const port = parentPort!;

/** Writes received and not yet written: the messages of one turn of this thread's loop share transactions. */
const pending: ThreadWrite[] = [];

const describe = (err: unknown): ThreadReply['error'] => {
  const e = err as Error & { code?: unknown };
  return { message: e?.message ?? String(err), ...(typeof e?.code === 'string' ? { code: e.code } : {}) };
};

function writePending(): void {
  while (pending.length) {
    const part = pending.splice(0, BATCH);
    const outcomes = writes.applyAll(part.map((w) => w.write));
    port.postMessage({ replies: part.map(({ seq }, i): ThreadReply => {
      const o = outcomes[i];
      return 'error' in o ? { seq, error: describe(o.error) } : { seq, value: o.value };
    }) });
  }
}

port.postMessage({ ready: true } satisfies ThreadMessage);

port.on('message', (msg: ThreadRequest) => {
  if ('close' in msg) {
    writePending();
    db.close();
    port.close();
    return;
  }
  if (!pending.length) setImmediate(writePending);
  for (const w of msg.batch) pending.push(w);
});
