/**
 * Issue 3 benchmark. Blocking POST /runs on the offline `test` provider against a bare Fastify
 * route that only parses JSON and replies, in the same run, alternating rounds (the machine is
 * noisy): runs per second at 32 connections and the p50/p99 latency Orrery adds, with every run
 * checked as stored. Then the time to first SSE chunk with 500 streams open at once, against a
 * bare SSE route under the same 500 open streams.
 *
 *   npm run bench -- runs            (ROUNDS=3 DURATION=8 by default)
 */
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { percentile, startChild, startOrrery } from './lib/processes.ts';
import { api, CONNECTIONS, load as loadRound, median, runBody, seed, type Round } from './lib/runs.ts';

const ROUNDS = Number(process.env.ROUNDS ?? 3);
const DURATION = Number(process.env.DURATION ?? 8);
const OPEN_STREAMS = 500;
const PROBES = Number(process.env.PROBES ?? 1000);

/**
 * Cores kept busy by a round: the server's CPU and the load generator's, per request, times the
 * requests per second. Both servers share the machine's cores with autocannon, so the share of
 * the bare route is about the ratio of their CPU per request, scaled by how busy each kept the cores.
 */
const coresBusy = (r: Round): number => (r.rps * (r.serverUs + r.loaderUs)) / 1e6;

async function throughput() {
  const orrery = await startOrrery();
  const bare = await startChild(['bench/lib/bare-server.ts'], {}, '/health');
  try {
    const body = runBody(await seed(orrery));
    const load = (url: string, b: string, headers: Record<string, string>, server: typeof bare) =>
      loadRound(url, b, headers, server, DURATION);
    const auth = { authorization: `Bearer ${orrery.adminKey}` };
    const warm = await load(`${orrery.url}/api/v1/runs`, body, auth, orrery); // warm-up (JIT, caches, SQLite pages)
    await load(`${bare.url}/api/v1/runs`, body, {}, bare);
    const rounds: Array<{ bare: Round; orrery: Round }> = [];
    let stored = warm.ok;
    for (let i = 0; i < ROUNDS; i++) {
      const b = await load(`${bare.url}/api/v1/runs`, body, {}, bare);
      const o = await load(`${orrery.url}/api/v1/runs`, body, auth, orrery);
      rounds.push({ bare: b, orrery: o });
      stored += o.ok;
      console.log(
        `round ${i + 1}: bare ${b.rps.toFixed(0)} req/s p50 ${b.p50} p99 ${b.p99} ms, CPU µs/request server ${b.serverUs} autocannon ${b.loaderUs}, cores busy ${coresBusy(b).toFixed(2)} | orrery ${o.rps.toFixed(0)} runs/s p50 ${o.p50} p99 ${o.p99} ms, CPU µs/run server ${o.serverUs} autocannon ${o.loaderUs}, cores busy ${coresBusy(o).toFixed(2)}, errors ${o.errors}`,
      );
    }
    const db = new Database(join(orrery.dataDir, 'orrery.db'), { readonly: true });
    const count = (db.prepare(`SELECT count(*) AS n FROM runs WHERE status = 'completed'`).get() as { n: number }).n;
    db.close();
    const ratio = median(rounds.map((r) => r.orrery.rps / r.bare.rps));
    const cores = {
      bare: median(rounds.map((r) => coresBusy(r.bare))),
      orrery: median(rounds.map((r) => coresBusy(r.orrery))),
    };
    const added50 = median(rounds.map((r) => r.orrery.p50 - r.bare.p50));
    const added99 = median(rounds.map((r) => r.orrery.p99 - r.bare.p99));
    // Every run answered 200 is stored; a run in flight when a round's clock stops is stored but
    // not counted as answered by autocannon: at most one per connection and round.
    const inFlight = (ROUNDS + 1) * CONNECTIONS;
    if (count < stored || count > stored + inFlight)
      throw new Error(`${stored} runs answered 200 but ${count} stored as completed`);
    return {
      rounds,
      ratio,
      added50,
      added99,
      stored: count,
      answered: stored,
      cpuUs: {
        bare: median(rounds.map((r) => r.bare.serverUs)),
        orrery: median(rounds.map((r) => r.orrery.serverUs)),
        autocannon: median(rounds.map((r) => r.bare.loaderUs)),
      },
      cores,
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
        const run = await api(orrery.url, key, '/api/v1/runs', {
          interaction: slow,
          data: { topic: longText },
          stream: true,
        });
        return run.id as string;
      }),
    );
    await Promise.all(opened.map((id) => firstChunk(streamUrl(id), held)));
    await Promise.all(Array.from({ length: OPEN_STREAMS }, () => firstChunk(`${bare.url}/stream?hold=1`, held)));
    const orreryMs: number[] = [];
    const bareMs: number[] = [];
    for (let i = 0; i < PROBES; i++) {
      bareMs.push(await firstChunk(`${bare.url}/stream`, []));
      const run = await api(orrery.url, key, '/api/v1/runs', {
        interaction: fast,
        data: { topic: 'probe' },
        stream: true,
      });
      orreryMs.push(await firstChunk(streamUrl(run.id), []));
    }
    orreryMs.sort((a, b) => a - b);
    bareMs.sort((a, b) => a - b);
    return {
      open: OPEN_STREAMS,
      probes: PROBES,
      orrery: { p50: percentile(orreryMs, 50), p99: percentile(orreryMs, 99) },
      bare: { p50: percentile(bareMs, 50), p99: percentile(bareMs, 99) },
      added: {
        p50: percentile(orreryMs, 50) - percentile(bareMs, 50),
        p99: percentile(orreryMs, 99) - percentile(bareMs, 99),
      },
    };
  } finally {
    for (const h of held) h();
    await orrery.stop();
    await bare.stop();
  }
}

const t = await throughput();
console.log(
  `\nblocking POST /runs: ${(t.ratio * 100).toFixed(1)}% of the bare route's throughput (median of ${ROUNDS} rounds); added latency p50 ${t.added50} ms, p99 ${t.added99} ms; server CPU per request: bare ${t.cpuUs.bare} µs, Orrery ${t.cpuUs.orrery} µs per run (autocannon ${t.cpuUs.autocannon} µs per request); cores busy (server and autocannon): bare ${t.cores.bare.toFixed(2)}, Orrery ${t.cores.orrery.toFixed(2)}; ${t.stored} runs stored for ${t.answered} answered; server peak RSS ${t.rssMb} MB`,
);
const s = await sse();
console.log(
  `SSE, ${s.open} streams open, ${s.probes} probes: time to first chunk orrery p50 ${s.orrery.p50.toFixed(2)} p99 ${s.orrery.p99.toFixed(2)} ms, bare p50 ${s.bare.p50.toFixed(2)} p99 ${s.bare.p99.toFixed(2)} ms → added p50 ${s.added.p50.toFixed(2)} p99 ${s.added.p99.toFixed(2)} ms`,
);
console.log(JSON.stringify({ date: new Date().toISOString(), throughput: t, sse: s }));
