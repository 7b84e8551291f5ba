/**
 * Issue 7 check of the run hot path: blocking POST /runs with run embeddings on (the built-in
 * embedder: input_embedding and result_embedding in every answer, not stored) against the same server with them off (`PUT /projects/:id {embeddings: {runs:
 * false}}`), alternating rounds on one server so the machine's noise falls on both alike.
 *
 *   npm run bench -- runs-embeddings      (ROUNDS=4 DURATION=5)
 */
import autocannon from 'autocannon';
import { startOrrery } from './lib/processes.ts';

const ROUNDS = Number(process.env.ROUNDS ?? 4);
const DURATION = Number(process.env.DURATION ?? 5);

async function api(base: string, key: string, method: string, path: string, body: unknown) {
  const r = await fetch(base + path, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!r.ok) throw new Error(`${path}: ${r.status} ${await r.text()}`);
  return (await r.json()) as any;
}

const load = (url: string, body: string, key: string) =>
  new Promise<{ rps: number; p50: number; p99: number; errors: number; bytes: number }>((resolve, reject) => {
    autocannon(
      {
        url,
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        connections: 32,
        duration: DURATION,
      },
      (err, r) => {
        if (err) return reject(err);
        resolve({
          rps: r.requests.average,
          p50: r.latency.p50,
          p99: r.latency.p99,
          errors: r.non2xx + r.errors + r.timeouts,
          bytes: r.throughput.average / Math.max(1, r.requests.average),
        });
      },
    );
  });

const orrery = await startOrrery();
try {
  const projects = (await (
    await fetch(`${orrery.url}/api/v1/projects`, { headers: { authorization: `Bearer ${orrery.adminKey}` } })
  ).json()) as any[];
  const projectId = projects[0].id;
  const env = await api(orrery.url, orrery.adminKey, 'POST', '/api/v1/environments', {
    name: 'bench',
    provider: 'test',
    default_model: 'echo',
  });
  const ix = await api(orrery.url, orrery.adminKey, 'POST', '/api/v1/interactions', {
    name: 'Bench',
    environment: env.id,
    prompts: [
      {
        type: 'template',
        template: { role: 'user', content_type: 'handlebars', content: 'Summarise {{topic}} in one line.' },
      },
    ],
  });
  const body = JSON.stringify({
    interaction: ix.id,
    data: {
      topic:
        'the orbits of the outer planets: Jupiter, Saturn, Uranus and Neptune, their moons, rings and long, slow periods around the Sun',
    },
    tags: ['bench'],
  });
  const url = `${orrery.url}/api/v1/runs`;
  const set = (runs: boolean) =>
    api(orrery.url, orrery.adminKey, 'PUT', `/api/v1/projects/${projectId}`, { embeddings: { runs } });
  await load(url, body, orrery.adminKey); // warm-up
  const on: number[] = [];
  const off: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    await set(false);
    await new Promise((r) => setTimeout(r, 5500)); // the settings cache (5 s) expires
    const a = await load(url, body, orrery.adminKey);
    await set(true);
    await new Promise((r) => setTimeout(r, 5500));
    const b = await load(url, body, orrery.adminKey);
    off.push(a.rps);
    on.push(b.rps);
    console.log(
      `round ${i + 1}: off ${a.rps.toFixed(0)} runs/s p50 ${a.p50} p99 ${a.p99} ms (${a.bytes.toFixed(0)} B/answer) | on ${b.rps.toFixed(0)} runs/s p50 ${b.p50} p99 ${b.p99} ms (${b.bytes.toFixed(0)} B/answer), errors ${a.errors + b.errors}`,
    );
  }
  const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
  const ratio = median(on.map((x, i) => x / off[i]));
  console.log(
    `\nrun embeddings on: ${(ratio * 100).toFixed(0)}% of the throughput with them off (median of ${ROUNDS} paired rounds)`,
  );
  console.log(JSON.stringify({ date: new Date().toISOString(), on, off, ratio }));
} finally {
  await orrery.stop();
}
