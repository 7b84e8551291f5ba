/**
 * Issue 8 benchmark. Blocking POST /runs per second on PostgreSQL with one replica, then with two
 * replicas sharing the database (load split evenly, same total connections), in the same run; and
 * the time from a run's completion on replica A to its visibility in POST /runs/search on B.
 *
 *   npm run bench -- replicas        (DURATION=8 seconds per measurement, SAMPLES=100 visibility probes)
 */
import autocannon from 'autocannon';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { percentile, startChild, type Child } from './lib/processes.ts';
// @ts-expect-error plain ESM script without types
import { startCluster } from '../scripts/postgres-cluster.mjs';

const DURATION = Number(process.env.DURATION ?? 8);
const SAMPLES = Number(process.env.SAMPLES ?? 100);
const CONNECTIONS = 32;
const KEY = 'sk-bench-replicas-admin-key-012345678';

const load = (url: string, body: string, connections: number) =>
  new Promise<{ rps: number; ok: number; p99: number }>((resolve, reject) => {
    autocannon(
      {
        url,
        method: 'POST',
        body,
        connections,
        duration: DURATION,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
      },
      (err: unknown, r: any) =>
        err ? reject(err) : resolve({ rps: r.requests.average, ok: r['2xx'], p99: r.latency.p99 }),
    );
  });

async function post(base: string, path: string, body: unknown) {
  const r = await fetch(base + path, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!r.ok) throw new Error(`${path}: ${r.status} ${await r.text()}`);
  return (await r.json()) as any;
}

const cluster = await startCluster();
const replicas: Child[] = [];
try {
  const env = {
    ORRERY_DATABASE_URL: cluster.url,
    ORRERY_ADMIN_KEY: KEY,
    ORRERY_SECRET: 'bench-replicas-shared-secret-0123',
    ORRERY_LOG_LEVEL: 'warn',
  };
  const start = () =>
    startChild(
      ['src/cli.ts', 'serve'],
      { ...env, ORRERY_DATA_DIR: mkdtempSync(join(tmpdir(), 'orrery-rep-')) },
      '/health',
    );
  replicas.push(await start());
  const [a] = replicas;
  const envRow = await post(a.url, '/api/v1/environments', { name: 'bench', provider: 'test', default_model: 'echo' });
  const ix = await post(a.url, '/api/v1/interactions', {
    name: 'Replicas',
    environment: envRow.id,
    prompts: [
      { type: 'template', template: { role: 'user', content_type: 'handlebars', content: 'Summarise {{topic}}.' } },
    ],
  });
  const body = JSON.stringify({ interaction: ix.id, data: { topic: 'replicas' } });
  await load(`${a.url}/api/v1/runs`, body, CONNECTIONS); // warm-up
  const one = await load(`${a.url}/api/v1/runs`, body, CONNECTIONS);
  replicas.push(await start());
  const b = replicas[1];
  await load(`${b.url}/api/v1/runs`, body, CONNECTIONS); // warm-up B
  const [ra, rb] = await Promise.all([
    load(`${a.url}/api/v1/runs`, body, CONNECTIONS / 2),
    load(`${b.url}/api/v1/runs`, body, CONNECTIONS / 2),
  ]);
  const two = ra.rps + rb.rps;
  console.log(
    `blocking runs/s on PostgreSQL: 1 replica ${one.rps.toFixed(0)} (p99 ${one.p99} ms); 2 replicas ${two.toFixed(0)} (${ra.rps.toFixed(0)} + ${rb.rps.toFixed(0)}; p99 ${ra.p99}/${rb.p99} ms) → ×${(two / one.rps).toFixed(2)}`,
  );

  // Completion on A → visible in POST /runs/search on B.
  const visibility: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const run = await post(a.url, '/api/v1/runs', { interaction: ix.id, data: { topic: `probe ${i}` } });
    const done = performance.now(); // A answered: the run is completed and committed
    for (;;) {
      const found = await post(b.url, '/api/v1/runs/search', { query: `id:${run.id}`, limit: 1 });
      if (Array.isArray(found) && found.length === 1 && found[0].status === 'completed') break;
      if (performance.now() - done > 10_000) throw new Error(`run ${run.id} not visible on B after 10 s`);
    }
    visibility.push(performance.now() - done);
  }
  visibility.sort((x, y) => x - y);
  console.log(
    `completion on A → visible in POST /runs/search on B: p50 ${percentile(visibility, 50).toFixed(1)} ms, p95 ${percentile(visibility, 95).toFixed(1)} ms, max ${visibility.at(-1)!.toFixed(1)} ms (${SAMPLES} runs; target < 1 s)`,
  );
  console.log(
    JSON.stringify({
      date: new Date().toISOString(),
      oneReplica: one,
      twoReplicas: { a: ra, b: rb, total: two },
      visibilityMs: { p50: percentile(visibility, 50), p95: percentile(visibility, 95), max: visibility.at(-1) },
    }),
  );
} finally {
  for (const r of replicas) await r.stop();
  cluster.stop();
}
