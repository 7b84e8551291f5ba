/**
 * Issue 57 item 7 benchmark: an experiment of ITEMS (1,000) dataset items × 2 variants (two
 * published versions of an interaction) × 3 evaluators (exact_match, contains, a jst `code`
 * evaluator) on the `test` provider's echo model, on SQLite (PostgreSQL with DIALECT=postgres and
 * ORRERY_DATABASE_URL), through HTTP: the wall time from POST /experiments to `completed` (target:
 * under 60 s on this machine), runs/s and scores/s, and the figures checked against what the echo
 * model makes them (a bench that measures a wrong result measures nothing).
 *
 *   npm run bench -- evals        (ITEMS=1000 CONCURRENCY=16 by default)
 */
import { startOrrery, machine } from './lib/processes.ts';
import { api } from './lib/runs.ts';

const ITEMS = Number(process.env.ITEMS ?? 1000);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 16);

const orrery = await startOrrery(
  process.env.ORRERY_DATABASE_URL ? { ORRERY_DATABASE_URL: process.env.ORRERY_DATABASE_URL } : {},
);
try {
  const key = orrery.adminKey;
  const call = (path: string, body: unknown) => api(orrery.url, key, `/api/v1${path}`, body);
  const get = async (path: string) => {
    const res = await fetch(`${orrery.url}/api/v1${path}`, { headers: { authorization: `Bearer ${key}` } });
    if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    return res.json() as Promise<any>;
  };
  const env = await call('/environments', { name: 'bench', provider: 'test', default_model: 'echo' });
  const p1 = await call('/prompts', { name: 'p1', role: 'user', content: 'Say: {{text}}', content_type: 'handlebars' });
  const p2 = await call('/prompts', {
    name: 'p2',
    role: 'user',
    content: 'Answer: {{text}}',
    content_type: 'handlebars',
  });
  const ix = await call('/interactions', {
    name: 'Bench',
    status: 'draft',
    environment: env.id,
    prompts: [{ type: 'template', template: p1.id }],
  });
  await call(`/interactions/${ix.id}/publish`, {});
  const put = await fetch(`${orrery.url}/api/v1/interactions/${ix.id}`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ prompts: [{ type: 'template', template: p2.id }] }),
  });
  if (!put.ok) throw new Error(`PUT interaction: ${put.status}`);
  await call(`/interactions/${ix.id}/publish`, {});
  const ds = await call('/datasets', { name: 'bench set' });
  for (let i = 0; i < ITEMS; i += 1000) {
    const items = Array.from({ length: Math.min(1000, ITEMS - i) }, (_, k) => ({
      data: { text: `item ${i + k} about the outer planets` },
      expected: `Say: item ${i + k} about the outer planets`,
    }));
    await call(`/datasets/${ds.id}/items`, { items });
  }
  const evaluators = [
    await call('/evaluators', { name: 'exact', type: 'exact_match' }),
    await call('/evaluators', { name: 'planets', type: 'contains', config: { value: 'planets' } }),
    await call('/evaluators', { name: 'short', type: 'code', config: { body: 'return output.length < 45;' } }),
  ].map((e) => e.id);

  const t0 = performance.now();
  const exp = await call('/experiments', {
    dataset: ds.id,
    variants: [
      { name: 'v1', interaction: 'Bench@1' },
      { name: 'v2', interaction: 'Bench@2' },
    ],
    evaluators,
    concurrency: CONCURRENCY,
  });
  let done: any;
  for (;;) {
    done = await get(`/experiments/${exp.id}`);
    if (done.status !== 'queued' && done.status !== 'running') break;
    await new Promise((r) => setTimeout(r, 250));
  }
  const seconds = (performance.now() - t0) / 1000;
  if (done.status !== 'completed' || done.progress.completed !== ITEMS * 2)
    throw new Error(`the experiment ended ${done.status}: ${JSON.stringify(done.progress)} ${done.error ?? ''}`);
  const [v1, v2] = done.variants;
  if (v1.scores.exact.mean !== 1 || v2.scores.exact.mean !== 0 || v1.scores.planets.mean !== 1)
    throw new Error(`unexpected figures: ${JSON.stringify(done.variants)}`);
  const runs = ITEMS * 2;
  console.log(machine());
  console.log(
    `experiment of ${ITEMS} items x 2 variants x 3 evaluators (concurrency ${CONCURRENCY}, ${process.env.ORRERY_DATABASE_URL ? 'PostgreSQL' : 'SQLite'}): ` +
      `${seconds.toFixed(1)} s (target < 60 s), ${(runs / seconds).toFixed(0)} runs/s, ${((runs * 3) / seconds).toFixed(0)} scores/s; ` +
      `v1 latency p50 ${v1.latency.p50} ms p95 ${v1.latency.p95} ms`,
  );
} finally {
  await orrery.stop();
}
