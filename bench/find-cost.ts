/**
 * What a costly find costs: one server in this process on SQLite and on a throwaway PostgreSQL, a
 * project holding one run whose `data` is about 1 MB and `SMALL` small ones, then `POST /runs/find`
 * with 1, 8 and 32 `$or` conditions on `parameters.*`. For each: the request's time, the event
 * loop's max delay while it ran (`perf_hooks.monitorEventLoopDelay`), and the process's RSS growth.
 * A `GET /health` is polled beside each find and its slowest answer reported too.
 *
 *   npm run bench -- find-cost          (BACKENDS=sqlite,postgres SMALL=1000 ITER=3)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { loadConfig } from '../src/config.ts';
import { buildServer } from '../src/server.ts';
import { benchDatabase } from './lib/pg-bench.ts';

const BACKENDS = (process.env.BACKENDS ?? 'sqlite,postgres').split(',');
const SMALL = Number(process.env.SMALL ?? 1000);
const ITER = Number(process.env.ITER ?? 3);
const CONDITIONS = (process.env.CONDITIONS ?? '1,8,32').split(',').map(Number);

/** About 1 MB of JSON that does not compress to nothing (PostgreSQL would keep it inline). */
function bigData(): Record<string, unknown> {
  const items: Record<string, string> = {};
  let seed = 7;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff), seed);
  for (let i = 0; i < 9000; i++) items[`f${i}`] = rnd().toString(36).repeat(12).slice(0, 100);
  return { ...items, k3: 'v3' };
}

const manyOr = (n: number) => ({ $or: Array.from({ length: n }, (_, i) => ({ [`parameters.k${i}`]: `v${i}` })) });

async function measure(backend: string) {
  const dataDir = mkdtempSync(join(tmpdir(), 'orrery-find-cost-'));
  const pgdb = backend === 'postgres' ? await benchDatabase({ shared_buffers: '256MB', work_mem: '16MB' }) : undefined;
  const config = loadConfig({}, { port: 0, host: '127.0.0.1', dataDir, databaseUrl: pgdb?.url, logLevel: 'silent' });
  const orrery = await buildServer(config, { logger: false });
  const url = await orrery.app.listen({ port: 0, host: '127.0.0.1' });
  const key = orrery.bootstrap.key!;
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(url + path, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  try {
    const env = await call('POST', '/api/v1/environments', { name: 'b', provider: 'test', default_model: 'echo' });
    const ix = await call('POST', '/api/v1/interactions', {
      name: 'b',
      environment: env.body.id,
      prompts: [{ type: 'template', template: { role: 'user', content_type: 'handlebars', content: 'Say {{k3}}' } }],
    });
    const big = await call('POST', '/api/v1/runs', { interaction: ix.body.id, data: bigData() });
    if (big.status !== 200) throw new Error(`big run: ${JSON.stringify(big.body).slice(0, 300)}`);
    for (let i = 0; i < SMALL; i += 50)
      await Promise.all(
        Array.from({ length: 50 }, (_, j) =>
          call('POST', '/api/v1/runs', { interaction: ix.body.id, data: { k3: `s${i + j}` } }),
        ),
      );
    for (const n of CONDITIONS) {
      for (let it = 0; it < ITER; it++) {
        global.gc?.();
        const rss0 = process.memoryUsage().rss;
        let rssMax = rss0;
        const h = monitorEventLoopDelay({ resolution: 5 });
        h.enable();
        let last = performance.now();
        let driftMax = 0;
        const tick = setInterval(() => {
          const now = performance.now();
          driftMax = Math.max(driftMax, now - last - 5);
          last = now;
        }, 5);
        let polling = true;
        let healthMax = 0;
        const poll = (async () => {
          while (polling) {
            const t = performance.now();
            await fetch(`${url}/health`).then((r) => r.text());
            healthMax = Math.max(healthMax, performance.now() - t);
            rssMax = Math.max(rssMax, process.memoryUsage().rss);
            await new Promise((r) => setTimeout(r, 5));
          }
        })();
        const t0 = performance.now();
        const r = await call('POST', '/api/v1/runs/find', { query: manyOr(n), limit: 10 });
        const ms = performance.now() - t0;
        polling = false;
        await poll;
        h.disable();
        clearInterval(tick);
        console.log(
          JSON.stringify({
            backend,
            conditions: n,
            status: r.status,
            found: Array.isArray(r.body) ? r.body.length : r.body?.error,
            ms: Math.round(ms),
            loop_max_ms: Math.round(Math.max(h.max / 1e6, driftMax)),
            health_max_ms: Math.round(healthMax),
            rss_growth_mb: Math.round((rssMax - rss0) / 1e6),
          }),
        );
      }
    }
  } finally {
    await orrery.app.close();
    await pgdb?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

for (const b of BACKENDS) await measure(b);
