/**
 * The run writer's thread (runs/run-writer-thread.ts): its own connection to the SQLite file, on
 * which the writes arriving from the HTTP thread (prepared there: encoded, with their search data,
 * but for a new run's search fields, derived here from its document) run as plain statements
 * (runs/sqlite-run-writes.ts), group-committed. Each write is answered with what it returned or
 * why it failed, as soon as its transaction has committed or not.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openSqliteHandle } from '../db/sqlite-handle.ts';
import { SqliteRunWrites } from './sqlite-run-writes.ts';
import type { ThreadMessage, ThreadReply, ThreadReplyError, ThreadRequest, ThreadWrite } from './run-writer-thread.ts';

/**
 * Writes per transaction, at most: what has arrived when the thread gets to it, up to this. The
 * HTTP thread sends every 8 writes (POST_AT in runs/run-writer-thread.ts), so the first ones start
 * here while it still reads requests; a transaction then takes what several messages brought,
 * and each commit writes the B-trees' right-hand pages once for all of them. Against 8 per
 * transaction (with POST_AT): 109 %, 117 % of the runs/s and 11-16 % less CPU per run (test
 * provider), 120 % through an upstream (16: 101-115 %; bench/README.md, issue 17, sixth pass).
 */
const BATCH = 32;

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

const describe = (err: unknown): ThreadReplyError => {
  const e = err as Error & { code?: unknown };
  return { message: e?.message ?? String(err), ...(typeof e?.code === 'string' ? { code: e.code } : {}) };
};

function writePending(): void {
  while (pending.length) {
    const part = pending.splice(0, BATCH);
    const outcomes = writes.applyWire(part.map((w) => w[1]));
    port.postMessage({
      replies: part.map(([seq], i): ThreadReply => {
        const o = outcomes[i];
        return 'error' in o ? [seq, null, describe(o.error)] : [seq, o.value];
      }),
    } satisfies ThreadMessage);
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
