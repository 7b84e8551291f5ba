/**
 * The HTTP edge of the network drivers (providers/provider-http.ts), at the wire: an answer sent
 * in pieces is read whole; a reader of pieces that does not keep up pauses the connection instead
 * of holding the whole answer; a reader that leaves early closes the request; a call still waiting
 * for a connection times out on time.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { postToProvider } from '../../src/providers/provider-http.ts';
import { Outbound } from '../../src/providers/outbound.ts';
import { EgressPolicy } from '../../src/providers/egress.ts';

const MB = 1 << 20;
const BIG = 32 * MB;

describe('provider-http: reading answers', () => {
  let server: Server;
  let base: string;
  const outbound = new Outbound({ policy: new EgressPolicy('private', 'this test') });
  /** What the /big route had written when asked, and whether its client went away. */
  const big = { written: 0, closed: false, done: false };
  const hanging: ServerResponse[] = [];

  before(async () => {
    server = createServer((req, res) => {
      if (req.url === '/pieces') return void writePieces(res);
      if (req.url === '/big') return void writeBig(res);
      if (req.url === '/hang') return void hanging.push(res); // answers when the test ends
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    for (const res of hanging) res.end('{}');
    await outbound.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  async function writePieces(res: ServerResponse) {
    res.writeHead(200, { 'content-type': 'application/json' });
    const text = JSON.stringify({ answer: 'é'.repeat(5000), n: 42 });
    const bytes = Buffer.from(text);
    // Cut inside a two-byte character too: pieces are bytes, the text is decoded once, whole.
    for (const [a, b] of [
      [0, 1],
      [1, 7777],
      [7777, bytes.length],
    ]) {
      res.write(bytes.subarray(a, b));
      await new Promise((r) => setTimeout(r, 10));
    }
    res.end();
  }

  async function writeBig(res: ServerResponse) {
    Object.assign(big, { written: 0, closed: false, done: false });
    res.on('close', () => (big.closed = true));
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    const chunk = Buffer.alloc(64 * 1024, 120);
    while (big.written < BIG && !big.closed) {
      big.written += chunk.length;
      if (!res.write(chunk)) await new Promise((r) => res.once('drain', r).once('close', r));
    }
    big.done = !big.closed;
    res.end();
  }

  const post = (path: string) =>
    postToProvider({
      label: 'the test server',
      url: base + path,
      method: 'GET',
      headers: {},
      timeoutMs: 10_000,
      outbound,
    });

  it('reads an answer sent in pieces as one JSON document', async () => {
    const res = await post('/pieces');
    assert.deepEqual(await res.json(), { answer: 'é'.repeat(5000), n: 42 });
  });

  it('pauses the connection while a reader of pieces does not keep up, and reads every byte after', async () => {
    const res = await post('/big');
    const pieces = res.bytes();
    const first = await pieces.next(); // reading has started, then nothing is read for a while
    await new Promise((r) => setTimeout(r, 400));
    assert.ok(
      big.written < BIG / 2,
      `the server could write ${big.written} bytes of ${BIG} to a reader that read none: the connection was not paused`,
    );
    let total = (first.value as Uint8Array).length;
    for await (const p of { [Symbol.asyncIterator]: () => pieces }) total += p.length;
    assert.equal(total, BIG);
    assert.ok(big.done);
  });

  it('closes the request when the reader leaves early', async () => {
    const res = await post('/big');
    for await (const _ of res.bytes()) break;
    const until = Date.now() + 5000;
    while (!big.closed && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    assert.ok(big.closed, 'the server saw its client go away');
    assert.ok(!big.done);
  });

  it('times out a call still waiting for a connection at its own deadline, not after the call ahead of it', async () => {
    const one = new Outbound({ policy: new EgressPolicy('private', 'this test'), connections: 1 });
    try {
      const call = (timeoutMs: number) =>
        postToProvider({
          label: 'the test server',
          url: `${base}/hang`,
          method: 'GET',
          headers: {},
          timeoutMs,
          outbound: one,
        });
      const ahead = call(60_000); // holds the only connection
      let aheadSettled = false;
      ahead.catch(() => {}).finally(() => (aheadSettled = true));
      await new Promise((r) => setTimeout(r, 50));
      await assert.rejects(
        call(200),
        (err: Error & { code?: string }) =>
          err.code === 'provider_unreachable' && /did not answer within 200 ms/.test(err.message),
      );
      // Timed out while still queued: the call ahead holds the connection until its own 60 s.
      assert.equal(aheadSettled, false, 'the queued call timed out before the connection came free');
    } finally {
      await one.agent.destroy(); // the call ahead is still waiting: not close(), which would wait for it
    }
  });
});
