/**
 * Issue 18 benchmark: what the rate-limit check adds to a blocking run. One server (SQLite, or
 * PostgreSQL with ORRERY_DATABASE_URL set for it by startOrrery's env), the `test` provider's
 * `echo`, sequential requests over one keep-alive connection, in alternating rounds of:
 *  - no limits: a key and project without limits (two cache lookups, nothing written);
 *  - limited: a key with requests, tokens and cost limits far above what the bench uses (the
 *    request counted in one upsert, the tokens and cost read before the run, both added after).
 *
 *   npm run bench -- limits        (ROUNDS=5 N=400 by default)
 */
import { startOrrery, machine } from './lib/processes.ts';
import { api, median } from './lib/runs.ts';

const ROUNDS = Number(process.env.ROUNDS ?? 5);
const N = Number(process.env.N ?? 400);

const orrery = await startOrrery();
try {
  const admin = orrery.adminKey;
  const env = await api(orrery.url, admin, '/api/v1/environments', {
    name: 'bench',
    provider: 'test',
    default_model: 'echo',
  });
  const prompts = [
    {
      type: 'template',
      template: { role: 'user', content_type: 'handlebars', content: 'Summarise {{topic}} in one line.' },
    },
  ];
  const interaction = (
    await api(orrery.url, admin, '/api/v1/interactions', { name: 'limits', environment: env.id, prompts })
  ).id as string;
  const free = (await api(orrery.url, admin, '/api/v1/apikeys', { name: 'free', role: 'developer' })).value as string;
  const limited = (
    await api(orrery.url, admin, '/api/v1/apikeys', {
      name: 'limited',
      role: 'developer',
      limits: { requests_per_minute: 1_000_000_000, tokens_per_minute: 1_000_000_000, cost_per_day: 1_000_000 },
    })
  ).value as string;
  const url = `${orrery.url}/api/v1/runs`;
  const body = JSON.stringify({ interaction, data: { topic: 'the outer planets' } });
  const kinds: Record<string, string> = { 'no limits': free, limited };

  const sequential = async (key: string) => {
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const times: number[] = [];
    for (let i = 0; i < N; i++) {
      const t = performance.now();
      const res = await fetch(url, { method: 'POST', headers, body });
      const run = (await res.json()) as { status?: string };
      times.push(performance.now() - t);
      if (run.status !== 'completed') throw new Error(`a run answered ${JSON.stringify(run).slice(0, 300)}`);
    }
    times.sort((a, b) => a - b);
    return { p50: times[Math.floor(N / 2)], p95: times[Math.floor(N * 0.95)] };
  };

  for (const key of Object.values(kinds)) await sequential(key); // warm-up
  const results: Record<string, Array<{ p50: number; p95: number }>> = Object.fromEntries(
    Object.keys(kinds).map((k) => [k, []]),
  );
  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 ? Object.keys(kinds).reverse() : Object.keys(kinds);
    const line: string[] = [];
    for (const kind of order) {
      const m = await sequential(kinds[kind]);
      results[kind].push(m);
      line.push(`${kind} p50 ${m.p50.toFixed(3)} ms p95 ${m.p95.toFixed(3)} ms`);
    }
    console.log(`round ${r + 1}: ${line.join(' | ')}`);
  }
  const p50 = (kind: string) => median(results[kind].map((m) => m.p50));
  const paired = median(results.limited.map((m, i) => m.p50 - results['no limits'][i].p50));
  console.log(
    JSON.stringify({
      bench: 'limits',
      machine: machine(),
      date: new Date().toISOString().slice(0, 10),
      n: N,
      rounds: ROUNDS,
      p50_ms: { no_limits: +p50('no limits').toFixed(3), limited: +p50('limited').toFixed(3) },
      added_ms_paired_median: +paired.toFixed(3),
    }),
  );
} finally {
  await orrery.stop();
}
