/**
 * Baseline of bench/objects.ts: a bare Node HTTP server that does what an upload and a download
 * must do at the least (stream the body to a temporary file while hashing it, flush it to disk
 * when BARE_FSYNC=1, rename; stream a file back), with no framework, database or signatures.
 */
import { createHash } from 'node:crypto';
import { createReadStream, statSync } from 'node:fs';
import { rename } from 'node:fs/promises';
import http from 'node:http';
import { join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { openFileWriter } from '../src/blobs/file-writer.ts';

const dir = process.env.BARE_DIR!;
const durable = process.env.BARE_FSYNC === '1';
let n = 0;

// Never rejects: every failure answers 500.
async function serve(req: http.IncomingMessage, res: http.ServerResponse) {
  try {
    if (req.url === '/health') return res.end('ok');
    const file = join(dir, req.url!.slice(1));
    if (req.method === 'PUT') {
      const hash = createHash('sha256');
      const temp = `${file}.${n++}.tmp`;
      await pipeline(
        req,
        new Transform({ transform: (c, _e, done) => (hash.update(c), done(null, c)) }),
        await openFileWriter(temp, { durable }),
      );
      await rename(temp, file);
      res.setHeader('etag', `"${hash.digest('hex')}"`);
      return res.end('{}');
    }
    res.writeHead(200, { 'content-length': statSync(file).size });
    await pipeline(createReadStream(file, { highWaterMark: 256 * 1024 }), res);
  } catch (err) {
    res.statusCode = 500;
    res.end(String(err));
  }
}

http.createServer((req, res) => void serve(req, res)).listen(Number(process.env.BARE_PORT), '127.0.0.1');
