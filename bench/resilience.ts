/**
 * Issue 16 benchmark: the time a retry loop and a cache hit add to a blocking run. One server
 * (SQLite, the `test` provider's `echo`), sequential requests over one keep-alive connection, in
 * alternating rounds of each kind, so every kind sees the same machine noise:
 *  - plain: a run of an interaction without cache_policy (the baseline);
 *  - retried: `flaky:1` with a fresh prompt each time: the first call fails (503) and the retry,
 *    with no backoff (`config.retries.base_delay_ms: 0`), answers: the loop's own cost plus a
 *    second provider call;
 *  - cache miss: an interaction with cache_policy and a fresh prompt each time (look up, miss,
 *    run, store the answer);
 *  - cache hit: the same request again (look up, hit, store a run of its own; no provider call).
 * Then saturated throughput (32 connections) of plain runs against cache hits.
 *
 *   npm run bench -- resilience        (ROUNDS=3 N=400 DURATION=6 by default)
 */
import { startOrrery, machine } from './lib/processes.ts';
import { api, load, median } from './lib/runs.ts';

const ROUNDS = Number(process.env.ROUNDS ?? 3);
const N = Number(process.env.N ?? 400);
const DURATION = Number(process.env.DURATION ?? 6);

const orrery = await startOrrery();
try {
  const key = orrery.adminKey;
  const env = await api(orrery.url, key, '/api/v1/environments', {
    name: 'bench',
    provider: 'test',
    default_model: 'echo',
    config: { retries: { max_retries: 1, base_delay_ms: 0 } },
  });
  const prompts = [
    {
      type: 'template',
      template: { role: 'user', content_type: 'handlebars', content: 'Summarise {{topic}} in one line.' },
    },
  ];
  const plain = (await api(orrery.url, key, '/api/v1/interactions', { name: 'plain', environment: env.id, prompts }))
    .id as string;
  const cached = (
    await api(orrery.url, key, '/api/v1/interactions', {
      name: 'cached',
      environment: env.id,
      prompts,
      cache_policy: { type: 'cache', ttl: 3600, varies_on: [], refresh_probability: 0 },
    })
  ).id as string;
  const url = `${orrery.url}/api/v1/runs`;
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  let fresh = 0;
  const kinds: Record<string, () => string> = {
    plain: () => JSON.stringify({ interaction: plain, data: { topic: 'the outer planets' } }),
    retried: () =>
      JSON.stringify({ interaction: plain, data: { topic: `planet ${++fresh}` }, config: { model: 'flaky:1' } }),
    'cache miss': () => JSON.stringify({ interaction: cached, data: { topic: `moon ${++fresh}` } }),
    'cache hit': () => JSON.stringify({ interaction: cached, data: { topic: 'the outer planets' } }),
  };

  /** Median and p95 latency (ms) of N sequential runs; every answer checked completed, and retried ones checked retried. */
  const sequential = async (kind: string) => {
    const times: number[] = [];
    for (let i = 0; i < N; i++) {
      const t = performance.now();
      const res = await fetch(url, { method: 'POST', headers, body: kinds[kind]() });
      const run = (await res.json()) as { status?: string; attempts?: unknown[]; cached?: boolean };
      times.push(performance.now() - t);
      if (run.status !== 'completed') throw new Error(`${kind}: a run answered ${JSON.stringify(run).slice(0, 300)}`);
      if (kind === 'retried' && run.attempts?.length !== 2) throw new Error('retried: the run was not retried');
      if (kind === 'cache hit' && run.cached !== true)
        throw new Error('cache hit: the run was not served from the cache');
    }
    times.sort((a, b) => a - b);
    return { p50: times[Math.floor(N / 2)], p95: times[Math.floor(N * 0.95)] };
  };

  await fetch(url, { method: 'POST', headers, body: kinds['cache hit']() }).then((r) => r.json()); // fills the cache
  for (const kind of Object.keys(kinds)) await sequential(kind); // warm-up
  const results: Record<string, Array<{ p50: number; p95: number }>> = Object.fromEntries(
    Object.keys(kinds).map((k) => [k, []]),
  );
  for (let r = 0; r < ROUNDS; r++) {
    const line: string[] = [];
    for (const kind of Object.keys(kinds)) {
      const m = await sequential(kind);
      results[kind].push(m);
      line.push(`${kind} p50 ${m.p50.toFixed(2)} ms p95 ${m.p95.toFixed(2)} ms`);
    }
    console.log(`round ${r + 1}: ${line.join(' | ')}`);
  }
  const p50 = (kind: string) => median(results[kind].map((m) => m.p50));
  const summary = {
    bench: 'resilience',
    machine: machine(),
    date: new Date().toISOString().slice(0, 10),
    n: N,
    rounds: ROUNDS,
    p50_ms: Object.fromEntries(Object.keys(kinds).map((k) => [k, +p50(k).toFixed(3)])),
    added_ms: {
      retry: +(p50('retried') - p50('plain')).toFixed(3),
      cache_miss: +(p50('cache miss') - p50('plain')).toFixed(3),
      cache_hit: +(p50('cache hit') - p50('plain')).toFixed(3),
    },
  };

  // Saturated: plain runs vs cache hits, alternating.
  const auth = { authorization: `Bearer ${key}` };
  const plainBody = kinds.plain();
  const hitBody = kinds['cache hit']();
  const through: Array<{ plain: number; hit: number }> = [];
  for (let r = 0; r < ROUNDS; r++) {
    const a = await load(url, plainBody, auth, orrery, DURATION);
    const b = await load(url, hitBody, auth, orrery, DURATION);
    if (a.errors || b.errors) throw new Error(`errors under load: plain ${a.errors}, hit ${b.errors}`);
    through.push({ plain: a.rps, hit: b.rps });
    console.log(
      `load round ${r + 1}: plain ${a.rps.toFixed(0)} runs/s p99 ${a.p99} ms | cache hit ${b.rps.toFixed(0)} runs/s p99 ${b.p99} ms`,
    );
  }
  const result = {
    ...summary,
    runs_per_s: {
      plain: Math.round(median(through.map((t) => t.plain))),
      cache_hit: Math.round(median(through.map((t) => t.hit))),
    },
  };
  console.log(JSON.stringify(result));
} finally {
  await orrery.stop();
}
