/**
 * A content processing worker thread: parses documents, probes media, draws PDF pages and counts
 * tokens for the main thread (worker/pool.ts). One task at a time; a task that runs too long or
 * exhausts this thread's heap ends the thread, never the server.
 */
import { parentPort } from 'node:worker_threads';
import { extractText } from '../extract/documents.ts';
import { probeMedia } from '../extract/media.ts';
import { renderPdfPage } from '../extract/pdf-render.ts';
import { countTokens } from '../tokens.ts';
import { getResolvedPDFJS } from 'unpdf';
import type { WorkerReply, WorkerRequest } from './protocol.ts';

// pdf.js 5 needs ES2024's ArrayBuffer transfer methods, which Node 20 lacks: without them fonts
// fail to load and rendered pages come out blank. A copy is enough for how pdf.js uses them.
for (const name of ['transferToFixedLength', 'transfer'] as const) {
  if (!(name in ArrayBuffer.prototype)) {
    Object.defineProperty(ArrayBuffer.prototype, name, {
      configurable: true,
      writable: true,
      value(this: ArrayBuffer, length = this.byteLength) {
        const copy = new ArrayBuffer(length);
        new Uint8Array(copy).set(new Uint8Array(this, 0, Math.min(length, this.byteLength)));
        return copy;
      },
    });
  }
}

// pdf.js reports recoverable problems of hostile or sloppy files on the console: not our news.
console.log = () => {};
console.warn = () => {};

async function handle(req: WorkerRequest): Promise<unknown> {
  switch (req.op) {
    case 'extract':
      return extractText(req.family, req.mime, req.bytes, req.limits);
    case 'probe':
      return probeMedia(req.family, req.mime, req.bytes, req.limits);
    case 'renderPdfPage':
      return renderPdfPage(req.bytes, req.page, req.maxSide, req.limits);
    case 'countTokens':
      return countTokens(req.text);
  }
}

// Load what the libraries load lazily (pdf.js, the tokenizer's tables), then tell the pool, which
// starts task deadlines from here: a deadline measures the work, not the thread's start.
await getResolvedPDFJS();
countTokens('warm up');
parentPort!.postMessage({ ready: true });

parentPort!.on('message', (req: WorkerRequest) => {
  handle(req).then(
    (result) => parentPort!.postMessage({ id: req.id, ok: true, result } satisfies WorkerReply),
    (err: Error & { code?: string }) => parentPort!.postMessage({
      id: req.id, ok: false, error: { name: err?.name ?? 'Error', code: err?.code, message: err?.message ?? String(err) },
    } satisfies WorkerReply),
  );
});
