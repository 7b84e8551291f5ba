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
      const r = await pool.request({
        path: u.pathname,
        method: 'POST',
        body: t.body,
        headers: { 'content-type': 'application/json', ...t.headers },
      });
      await r.body.text();
      const ms = performance.now() - start;
      if (r.statusCode === 200) {
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
