/**
 * Issue 3 benchmark. Blocking POST /runs on the offline `test` provider against a bare Fastify
 * route that only parses JSON and replies, in the same run, alternating rounds (the machine is
 * noisy): runs per second at 32 connections and the p50/p99 latency Orrery adds, with every run
 * checked as stored. Then the time to first SSE chunk with 500 streams open at once, against a
 * bare SSE route under the same 500 open streams.
 *
 *   npm run bench -- runs            (ROUNDS=3 DURATION=8 by default)
 */
import autocannon from 'autocannon';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { percentile, startChild, startOrrery, type Child } from './lib/processes.ts';

const ROUNDS = Number(process.env.ROUNDS ?? 3);
const DURATION = Number(process.env.DURATION ?? 8);
const CONNECTIONS = 32;
const OPEN_STREAMS = 500;
const PROBES = Number(process.env.PROBES ?? 200);

interface Round { rps: number; p50: number; p99: number; ok: number; errors: number }

const load = (url: string, body: string, headers: Record<string, string>) =>
  new Promise<Round>((resolve, reject) => {
    autocannon({ url, method: 'POST', body, headers: { 'content-type': 'application/json', ...headers }, connections: CONNECTIONS, duration: DURATION }, (err, r) => {
      if (err) return reject(err);
      resolve({ rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, ok: r['2xx'], errors: r.non2xx + r.errors + r.timeouts });
    });
  });

async function api(base: string, key: string, path: string, body: unknown) {
  const r = await fetch(base + path, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (!r.ok) throw new Error(`${path}: ${r.status} ${await r.text()}`);
  return (await r.json()) as any;
}

async function seed(orrery: { url: string; adminKey: string }, chunkDelayMs = 0) {
  const env = await api(orrery.url, orrery.adminKey, '/api/v1/environments', { name: 'bench', provider: 'test', default_model: 'echo', config: { chunk_delay_ms: chunkDelayMs } });
  const ix = await api(orrery.url, orrery.adminKey, '/api/v1/interactions', {
    name: `Bench ${chunkDelayMs}`, environment: env.id,
    prompts: [{ type: 'template', template: { role: 'user', content_type: 'handlebars', content: 'Summarise {{topic}} in one line.' } }],
  });
  return ix.id as string;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function throughput() {
  const orrery = await startOrrery();
  const bare = await startChild(['bench/lib/bare-server.ts'], {}, '/health');
  try {
    const interaction = await seed(orrery);
    const body = JSON.stringify({ interaction, data: { topic: 'the orbits of the outer planets' }, tags: ['bench'] });
    const auth = { authorization: `Bearer ${orrery.adminKey}` };
    const warm = await load(`${orrery.url}/api/v1/runs`, body, auth); // warm-up (JIT, caches, SQLite pages)
    await load(`${bare.url}/api/v1/runs`, body, {});
    const rounds: Array<{ bare: Round; orrery: Round }> = [];
    let stored = warm.ok;
    for (let i = 0; i < ROUNDS; i++) {
      const b = await load(`${bare.url}/api/v1/runs`, body, {});
      const o = await load(`${orrery.url}/api/v1/runs`, body, auth);
      rounds.push({ bare: b, orrery: o });
      stored += o.ok;
      console.log(`round ${i + 1}: bare ${b.rps.toFixed(0)} req/s p50 ${b.p50} p99 ${b.p99} ms | orrery ${o.rps.toFixed(0)} runs/s p50 ${o.p50} p99 ${o.p99} ms, errors ${o.errors}`);
    }
    const db = new Database(join(orrery.dataDir, 'orrery.db'), { readonly: true });
    const count = (db.prepare(`SELECT count(*) AS n FROM runs WHERE status = 'completed'`).get() as { n: number }).n;
    db.close();
    const ratio = median(rounds.map((r) => r.orrery.rps / r.bare.rps));
    const added50 = median(rounds.map((r) => r.orrery.p50 - r.bare.p50));
    const added99 = median(rounds.map((r) => r.orrery.p99 - r.bare.p99));
    // Every run answered 200 is stored; a run in flight when a round's clock stops is stored but
    // not counted as answered by autocannon: at most one per connection and round.
    const inFlight = (ROUNDS + 1) * CONNECTIONS;
    if (count < stored || count > stored + inFlight) throw new Error(`${stored} runs answered 200 but ${count} stored as completed`);
    return {
      rounds, ratio, added50, added99, stored: count, answered: stored,
      rssMb: Math.round(orrery.peakRss() / 1e6),
    };
  } finally {
    await orrery.stop();
    await bare.stop();
  }
}

/** Reads an SSE response until the first `message` event; returns ms from request to that event. */
async function firstChunk(url: string, hold: Array<() => void>): Promise<number> {
  const controller = new AbortController();
  const t0 = performance.now();
  const res = await fetch(url, { signal: controller.signal });
  if (res.status !== 200) throw new Error(`${url}: ${res.status}`);
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error('stream ended before a chunk');
    buf += decoder.decode(value, { stream: true });
    if (/(^|\n)data: "/.test(buf)) {
      const ms = performance.now() - t0;
      hold.push(() => controller.abort());
      return ms;
    }
  }
}

async function sse() {
  const orrery = await startOrrery();
  const bare = await startChild(['bench/lib/bare-server.ts'], {}, '/health');
  const held: Array<() => void> = [];
  try {
    const slow = await seed(orrery, 2000); // background runs: one chunk every 2 s, they stay open
    const fast = await seed(orrery, 0);
    const key = orrery.adminKey;
    const streamUrl = (id: string) => `${orrery.url}/api/v1/runs/${id}/stream?access_token=${key}`;
    const longText = Array.from({ length: 60 }, (_, i) => `word${i}`).join(' ');
    // 500 streams open at once on both servers.
    const opened = await Promise.all(
      Array.from({ length: OPEN_STREAMS }, async () => {
        const run = await api(orrery.url, key, '/api/v1/runs', { interaction: slow, data: { topic: longText }, stream: true });
        return run.id as string;
      }),
    );
    await Promise.all(opened.map((id) => firstChunk(streamUrl(id), held)));
    await Promise.all(Array.from({ length: OPEN_STREAMS }, () => firstChunk(`${bare.url}/stream?hold=1`, held)));
    const orreryMs: number[] = [];
    const bareMs: number[] = [];
    for (let i = 0; i < PROBES; i++) {
      bareMs.push(await firstChunk(`${bare.url}/stream`, []));
      const run = await api(orrery.url, key, '/api/v1/runs', { interaction: fast, data: { topic: 'probe' }, stream: true });
      orreryMs.push(await firstChunk(streamUrl(run.id), []));
    }
    orreryMs.sort((a, b) => a - b);
    bareMs.sort((a, b) => a - b);
    return {
      open: OPEN_STREAMS,
      probes: PROBES,
      orrery: { p50: percentile(orreryMs, 50), p99: percentile(orreryMs, 99) },
      bare: { p50: percentile(bareMs, 50), p99: percentile(bareMs, 99) },
      added: { p50: percentile(orreryMs, 50) - percentile(bareMs, 50), p99: percentile(orreryMs, 99) - percentile(bareMs, 99) },
    };
  } finally {
    for (const h of held) h();
    await orrery.stop();
    await bare.stop();
  }
}

const t = await throughput();
console.log(`\nblocking POST /runs: ${(t.ratio * 100).toFixed(0)}% of the bare route's throughput (median of ${ROUNDS} rounds); added latency p50 ${t.added50} ms, p99 ${t.added99} ms; ${t.stored} runs stored for ${t.answered} answered; server peak RSS ${t.rssMb} MB`);
const s = await sse();
console.log(`SSE, ${s.open} streams open, ${s.probes} probes: time to first chunk orrery p50 ${s.orrery.p50.toFixed(2)} p99 ${s.orrery.p99.toFixed(2)} ms, bare p50 ${s.bare.p50.toFixed(2)} p99 ${s.bare.p99.toFixed(2)} ms → added p50 ${s.added.p50.toFixed(2)} p99 ${s.added.p99.toFixed(2)} ms`);
console.log(JSON.stringify({ date: new Date().toISOString(), throughput: t, sse: s }));
