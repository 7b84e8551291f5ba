/**
 * A content worker process: parses documents, probes media, draws PDF pages and renditions (pdf.js,
 * canvas, sharp) and counts tokens for the server (worker/pool.ts). One task at a time; a task
 * that runs too long or exhausts this process's heap ends the process, never the server. Started
 * by workers/boot.mjs (which registers tsx first when this file is a .ts source).
 */
import { extractText } from '../extract/documents.ts';
import { probeMedia } from '../extract/media.ts';
import { countTokens } from '../tokens.ts';
import { getResolvedPDFJS } from 'unpdf';
import { drawRenditions } from './draw.ts';
import { convertImage } from './convert.ts';
import type { WorkerReady, WorkerReply, WorkerRequest } from './protocol.ts';

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

// The server went away (or ended this process's channel): nothing more will come.
process.on('disconnect', () => process.exit(0));

const send = (m: WorkerReply | WorkerReady) => process.send!(m);

/** The last input received (the pool sends an object's bytes once for all its steps, worker/pool.ts). */
let held: { key: number; bytes: Uint8Array } | null = null;

async function handle(req: WorkerRequest): Promise<unknown> {
  switch (req.op) {
    case 'extract':
      return extractText(req.family, req.mime, req.bytes, req.limits);
    case 'probe':
      return probeMedia(req.family, req.mime, req.bytes, req.limits);
    case 'renditions':
      return drawRenditions(req.family, req.bytes, req.specs, req.limits, () => send({ id: req.id, lap: true }));
    case 'countTokens':
      return countTokens(req.text);
    case 'convertImage':
      return convertImage(req.bytes, req.spec);
  }
}

// Load what the libraries load lazily (pdf.js, the tokenizer's tables), then tell the pool, which
// starts task deadlines from here: a deadline measures the work, not the process's start. sharp
// (libvips) is loaded at its first use, as music-metadata: a process that only reads documents
// does not map it.
await getResolvedPDFJS();
countTokens('warm up');
send({ ready: true });

process.on('message', (req: WorkerRequest) => {
  if (req.held !== undefined && req.op !== 'countTokens') {
    if (req.bytes) held = { key: req.held, bytes: req.bytes };
    else if (held?.key === req.held) req.bytes = held.bytes;
  }
  handle(req).then(
    (result) => send({ id: req.id, ok: true, result }),
    (err: Error & { code?: string }) =>
      send({
        id: req.id,
        ok: false,
        error: { name: err?.name ?? 'Error', code: err?.code, message: err?.message ?? String(err) },
      }),
  );
});
