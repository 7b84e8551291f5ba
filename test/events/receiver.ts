/**
 * A loopback webhook receiver for the tests: it verifies each request's Standard Webhooks
 * signature with its own code (not Orrery's) and keeps what it received. `failFirst` answers the
 * first n requests of a webhook-id with a 500.
 */
import { createServer, type Server } from 'node:http';
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { AddressInfo } from 'node:net';

export interface Received {
  id: string;
  timestamp: number;
  body: any;
  raw: string;
  path: string;
  /** The signature matched the secret given for this path. */
  verified: boolean;
}

export function verify(secret: string, id: string, timestamp: string, raw: string, header: string): boolean {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.${raw}`).digest();
  return header.split(' ').some((sig) => {
    const [version, value] = sig.split(',');
    const given = Buffer.from(value ?? '', 'base64');
    return version === 'v1' && given.length === expected.length && timingSafeEqual(given, expected);
  });
}

export class Receiver {
  readonly received: Received[] = [];
  /** Secrets by path. */
  readonly secrets = new Map<string, string>();
  failFirst = 0;
  private readonly tries = new Map<string, number>();
  private server!: Server;
  url = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      let raw = '';
      req.on('data', (c) => (raw += c));
      req.on('end', () => {
        const id = String(req.headers['webhook-id'] ?? '');
        const ts = String(req.headers['webhook-timestamp'] ?? '');
        const sig = String(req.headers['webhook-signature'] ?? '');
        const n = (this.tries.get(id) ?? 0) + 1;
        this.tries.set(id, n);
        if (n <= this.failFirst) {
          res.statusCode = 500;
          return res.end('not yet');
        }
        const secret = this.secrets.get(req.url ?? '') ?? '';
        this.received.push({
          id,
          timestamp: Number(ts),
          body: JSON.parse(raw),
          raw,
          path: req.url ?? '',
          verified: verify(secret, id, ts, raw, sig),
        });
        res.statusCode = 204;
        res.end();
      });
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** Tries seen of one webhook-id (failed ones included). */
  triesOf(id: string): number {
    return this.tries.get(id) ?? 0;
  }

  close(): Promise<void> {
    return new Promise((r) => this.server.close(() => r()));
  }
}
