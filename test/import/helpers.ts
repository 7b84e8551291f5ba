/** Shared pieces of the import tests: a seeded source behind a breakable proxy, and running the command. */
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadConfig } from '../../src/config.ts';
import { importCommand, type ImportFlags } from '../../src/import/command.ts';
import { openLocalTarget } from '../../src/local-target.ts';
import type { TestServer } from '../support/server.ts';

/**
 * A reverse proxy in front of the source server. The source's public URL is the proxy's, so its
 * signed download URLs come through here too; `failDownloadsAfter = n` lets n downloads through
 * and cuts every later one after its first bytes (a source that fails mid-object).
 */
export class FlakyProxy {
  upstream = '';
  failDownloadsAfter = Infinity;
  downloads = 0;
  private server?: Server;
  url = '';

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      const up = new URL(this.upstream);
      const download = req.method === 'GET' && (req.url ?? '').startsWith('/blobs/');
      const fail = download && ++this.downloads > this.failDownloadsAfter;
      const fwd = request(
        { host: up.hostname, port: up.port, method: req.method, path: req.url, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          if (!fail) return void answer.pipe(res);
          answer.once('data', (chunk: Buffer) => {
            res.write(chunk.subarray(0, Math.min(chunk.length, 100)));
            setTimeout(() => {
              answer.destroy();
              res.destroy();
            }, 20);
          });
        },
      );
      fwd.on('error', () => res.destroy());
      req.pipe(fwd);
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
    return this.url;
  }

  close(): Promise<void> {
    this.server?.closeAllConnections();
    return new Promise((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}

/** An output stream that keeps what is written (not a TTY: plain progress lines). */
function captured(): NodeJS.WriteStream & { text(): string } {
  let text = '';
  return {
    isTTY: false,
    write(chunk: string | Uint8Array) {
      text += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
      return true;
    },
    text: () => text,
  } as unknown as NodeJS.WriteStream & { text(): string };
}

/** `orrery import` in this process, local mode against `target`'s database, or `--to` when flags say so. */
export async function runImport(target: TestServer, flags: ImportFlags): Promise<{ code: number; out: string }> {
  const config = loadConfig({}, { dataDir: target.dataDir, databaseUrl: target.databaseUrl, logLevel: 'silent' });
  const out = captured();
  const code = await importCommand(config, flags, openLocalTarget, out);
  return { code, out: out.text() };
}

/** The "copied N" of a kind in the summary. */
export function copiedOf(out: string, kind: string): number {
  const m = new RegExp(
    `^\\s+${kind}\\s+(?:copied|to copy) (\\d+), skipped (\\d+) \\(unchanged\\), failed (\\d+)`,
    'm',
  ).exec(out);
  if (!m) throw new Error(`no summary line for ${kind} in:\n${out}`);
  return Number(m[1]);
}

export function countsOf(out: string, kind: string): { copied: number; skipped: number; failed: number } {
  const m = new RegExp(
    `^\\s+${kind}\\s+(?:copied|to copy) (\\d+), skipped (\\d+) \\(unchanged\\), failed (\\d+)`,
    'm',
  ).exec(out);
  if (!m) throw new Error(`no summary line for ${kind} in:\n${out}`);
  return { copied: Number(m[1]), skipped: Number(m[2]), failed: Number(m[3]) };
}
