/**
 * The scaffold every fake provider server (test/support/*-wire-server.ts) stands on: an HTTP
 * server on a free loopback port whose handler's own bugs answer a 500 in the provider's error
 * shape (or cut a reply already under way), the request body read whole, JSON replies, SSE
 * writers and pauses. Each wire server keeps only what its provider's wire says.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Listening {
  /** `http://127.0.0.1:PORT`. */
  origin: string;
  /** Closes the server and every connection still open (a hanging reply included). */
  close(): Promise<void>;
}

/**
 * Listens on loopback with `handle`; a handler that throws answers `bug(res, message)` (the
 * provider's 500) when nothing was sent yet, and otherwise has its connection destroyed.
 */
export async function listenOnLoopback(
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
  bug: (res: ServerResponse, message: string) => void,
): Promise<Listening> {
  const server = createServer((req, res) => {
    void handle(req, res).catch((err) => {
      if (!res.headersSent) bug(res, `wire server bug: ${String(err)}`);
      else res.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The request body, whole, as text. */
export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on('data', (b: Buffer) => parts.push(b));
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    req.on('error', reject);
  });
}

/** A JSON reply with its length; `headers` add to (or replace) the content type. */
export function writeJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Whitespace-separated words: the fake token count of the wire servers. */
export const words = (s: string) => s.split(/\s+/).filter(Boolean).length;
