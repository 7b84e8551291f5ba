/**
 * An open loop for latency targets (issue 17): request i leaves at t0 + i / rate (or as soon after
 * as the loop gets to it) over a pool of keep-alive connections, and each is timed from the moment
 * it leaves with `performance.now()` (autocannon's histogram has a 1 ms resolution).
 */
import { Pool } from 'undici';
import { percentile } from './processes.ts';

export interface PacedTarget {
  url: string;
  body: string;
  headers: Record<string, string>;
  /**
   * A streamed answer: each request is timed to its first chunk of text (the first body bytes
   * that match), not to its end; the rest is read and checked to end with `end`.
   */
  firstChunk?: { match: RegExp; end: RegExp };
  /** A stream read with a second request (POST /runs, then GET /runs/:id/stream): its path from the first answer. */
  follow?: (answer: string) => string;
}

export interface Paced {
  p50: number;
  p99: number;
  sent: number;
  ok: number;
  errors: number;
  /** Requests per second actually sent. */
  rate: number;
}

export async function paced(t: PacedTarget, seconds: number, rate: number, connections: number): Promise<Paced> {
  const u = new URL(t.url);
  const pool = new Pool(u.origin, { connections, pipelining: 1, keepAliveTimeout: 60_000 });
  const total = Math.round(rate * seconds);
  const latencies: number[] = [];
  let ok = 0;
  let errors = 0;
  const inFlight: Promise<void>[] = [];
  const t0 = performance.now();
  const one = async () => {
    const start = performance.now();
    try {
      let r = await pool.request({
        path: u.pathname,
        method: 'POST',
        body: t.body,
        headers: { 'content-type': 'application/json', ...t.headers },
      });
      if (t.follow && r.statusCode === 200)
        r = await pool.request({ path: t.follow(await r.body.text()), method: 'GET', headers: t.headers });
      const timed = t.firstChunk ? await untilFirst(r.body, t.firstChunk) : { text: await r.body.text(), ms: 0 };
      const ms = t.firstChunk ? timed.ms - start : performance.now() - start;
      if (r.statusCode === 200 && (!t.firstChunk || t.firstChunk.end.test(timed.text))) {
        ok++;
        latencies.push(ms);
      } else errors++;
    } catch {
      errors++;
    }
  };
  for (let i = 0; i < total; i++) {
    const due = t0 + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    inFlight.push(one());
  }
  await Promise.all(inFlight);
  const elapsed = (performance.now() - t0) / 1000;
  await pool.close();
  latencies.sort((a, b) => a - b);
  return {
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    sent: total,
    ok,
    errors,
    rate: total / elapsed,
  };
}

/** Reads a body to its end; `ms`: the performance.now() at which its text first matched `match`. */
async function untilFirst(body: AsyncIterable<Buffer>, { match }: { match: RegExp }) {
  let text = '';
  let ms = 0;
  for await (const b of body) {
    text += b.toString('utf8');
    if (!ms && match.test(text)) ms = performance.now();
  }
  return { text, ms: ms || performance.now() };
}
