/**
 * The gateway benchmark: Orrery beside a peer gateway. The `openai` SDK's request shape through
 * the OpenAI door (`POST /v1/chat/completions`), the same completion as a blocking `POST /runs`,
 * and the Portkey gateway 1.15.2, all on one local upstream (bench/lib/openai-upstream.ts):
 *   (a) straight to the upstream (the baseline the added latencies are measured from),
 *   (b) Portkey (`--headless`, stores nothing),
 *   (c) a blocking Orrery run of an interaction on an `openai_compatible` environment,
 *   (d) the door: `model: "<environment>/gpt-4o-mini"`, the SDK's headers, every call a run.
 * Saturated (32 connections) and paced (400 req/s, open loop) in interleaved rounds (the order
 * rotates), medians; then the same four with `stream: true`, paced, timed to the first chunk of
 * text (a streamed run of (c) is `POST /runs` and then `GET /runs/:id/stream`), without Portkey:
 * 1.15.2 on Node 20 fails every streamed call here (`TypeError: immutable`, as it adds its headers
 * to the upstream's streamed response). At the end every call answered 200 by (c) and (d) must be stored `completed`.
 *
 *   npm run bench -- gateway       (ROUNDS=3 DURATION=6 PACED_SECONDS=5 RATE=400 by default)
 */
import autocannon from 'autocannon';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, machine, ROOT, startChild, startOrrery, type Child } from './lib/processes.ts';
import { api, median, seedUpstream } from './lib/runs.ts';
import { paced, type Paced, type PacedTarget } from './lib/paced.ts';

const ROUNDS = Number(process.env.ROUNDS ?? 3);
const DURATION = Number(process.env.DURATION ?? 6);
const PACED_SECONDS = Number(process.env.PACED_SECONDS ?? 5);
const RATE = Number(process.env.RATE ?? 400);
const SATURATED_CONNECTIONS = 32;
const PACED_CONNECTIONS = 16;

const cpuUs = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) * 10_000;
};

function portkeyEntry(): string {
  const dirs = [process.env.PORTKEY_DIR, ROOT].filter(Boolean) as string[];
  for (const dir of dirs) {
    for (const pkg of [join(dir, 'node_modules/@portkey-ai/gateway'), join(dir, '@portkey-ai/gateway')]) {
      const manifest = join(pkg, 'package.json');
      if (!existsSync(manifest)) continue;
      const bin = (JSON.parse(readFileSync(manifest, 'utf8')) as { bin?: string | Record<string, string> }).bin;
      const rel = typeof bin === 'string' ? bin : (Object.values(bin ?? {})[0] ?? 'build/start-server.js');
      return join(pkg, rel);
    }
  }
  throw new Error(
    '@portkey-ai/gateway not found: add it as a devDependency, or set PORTKEY_DIR to a folder where it is installed',
  );
}

interface Target {
  name: 'upstream' | 'portkey' | 'runs' | 'door';
  url: string;
  body: string;
  headers: Record<string, string>;
  server: Child;
}

interface Saturated {
  rps: number;
  p99: number;
  ok: number;
  errors: number;
  serverUs: number;
}

const saturated = (t: Target, seconds: number) =>
  new Promise<Saturated>((resolve, reject) => {
    const s0 = cpuUs(t.server.proc.pid!);
    autocannon(
      {
        url: t.url,
        method: 'POST',
        body: t.body,
        headers: { 'content-type': 'application/json', ...t.headers },
        connections: SATURATED_CONNECTIONS,
        duration: seconds,
      },
      (err, r) => {
        if (err) return reject(err);
        const n = Math.max(1, r.requests.total);
        resolve({
          rps: r.requests.average,
          p99: r.latency.p99,
          ok: r['2xx'],
          errors: r.non2xx + r.errors + r.timeouts,
          serverUs: Math.round((cpuUs(t.server.proc.pid!) - s0) / n),
        });
      },
    );
  });

/** The paced part: lib/paced.ts, at RATE over PACED_CONNECTIONS. */
const pacedRun = (t: PacedTarget, seconds: number) => paced(t, seconds, RATE, PACED_CONNECTIONS);

/** The streamed form of a target: `stream: true`, timed to the answer's first word. */
function streamedOf(t: Target, streamPath: (id: string) => string): PacedTarget & { name: Target['name'] } {
  const body = JSON.stringify({ ...JSON.parse(t.body), stream: true });
  // The first word of the upstream's text; each form ends with its own last event.
  const match = /The /;
  if (t.name !== 'runs') return { ...t, body, firstChunk: { match, end: /data: \[DONE\]\s*$/ } };
  return {
    ...t,
    body,
    follow: (answer) => streamPath((JSON.parse(answer) as { id: string }).id),
    firstChunk: { match, end: /event: close\n/ },
  };
}

const upstream = await startChild(['bench/lib/openai-upstream.ts'], {}, '/health');
const portkeyPort = await freePort();
const portkeyBin = portkeyEntry();
const portkey = await startPortkey(portkeyBin, portkeyPort);
const orrery = await startOrrery();
try {
  const completion = JSON.stringify({
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'Summarise the orbits of the outer planets in one line.' }],
    temperature: 0.7,
  });
  const interaction = await seedUpstream(orrery, upstream);
  const targets: Target[] = [
    {
      name: 'upstream',
      url: `${upstream.url}/v1/chat/completions`,
      body: completion,
      headers: { authorization: 'Bearer sk-upstream' },
      server: upstream,
    },
    {
      name: 'portkey',
      url: `${portkey.url}/v1/chat/completions`,
      body: completion,
      server: portkey,
      headers: {
        authorization: 'Bearer sk-upstream',
        'x-portkey-provider': 'openai',
        'x-portkey-custom-host': `${upstream.url}/v1`,
      },
    },
    {
      name: 'runs',
      url: `${orrery.url}/api/v1/runs`,
      server: orrery,
      headers: { authorization: `Bearer ${orrery.adminKey}` },
      body: JSON.stringify({ interaction, data: { topic: 'the orbits of the outer planets' }, tags: ['peer'] }),
    },
    {
      name: 'door',
      url: `${orrery.url}/v1/chat/completions`,
      server: orrery,
      // What the openai SDK (5.x) sends with chat.completions.create.
      headers: {
        authorization: `Bearer ${orrery.adminKey}`,
        accept: 'application/json',
        'user-agent': 'OpenAI/JS 5.23.2',
        'x-stainless-lang': 'js',
        'x-stainless-package-version': '5.23.2',
        'x-stainless-retry-count': '0',
        'x-stainless-timeout': '600',
      },
      body: JSON.stringify({ ...JSON.parse(completion), model: 'bench upstream/gpt-4o-mini' }),
    },
  ];
  // Each answers the completion before any load.
  for (const t of targets) {
    const r = await fetch(t.url, {
      method: 'POST',
      body: t.body,
      headers: { 'content-type': 'application/json', ...t.headers },
    });
    const text = await r.text();
    if (r.status !== 200 || !text.includes('The outer planets orbit the Sun slowly'))
      throw new Error(`${t.name}: ${r.status} ${text.slice(0, 300)}`);
  }
  let answered = 2;
  for (const t of targets) {
    const w = await saturated(t, 2); // warm-up: JIT, pools, SQLite pages
    const p = await pacedRun(t, 1);
    if (t.name === 'runs' || t.name === 'door') answered += w.ok + p.ok;
  }
  const sat: Record<string, Saturated[]> = { upstream: [], portkey: [], runs: [], door: [] };
  const pac: Record<string, Paced[]> = { upstream: [], portkey: [], runs: [], door: [] };
  for (let i = 0; i < ROUNDS; i++) {
    const order = [...targets.slice(i % targets.length), ...targets.slice(0, i % targets.length)];
    for (const t of order) {
      const r = await saturated(t, DURATION);
      if (r.errors) throw new Error(`${t.name}: ${r.errors} failed requests (saturated)`);
      sat[t.name].push(r);
      if (t.name === 'runs' || t.name === 'door') answered += r.ok;
      console.log(
        `round ${i + 1} saturated ${t.name}: ${r.rps.toFixed(0)} req/s, p99 ${r.p99} ms, server CPU ${r.serverUs} µs/request`,
      );
    }
    for (const t of order) {
      const r = await pacedRun(t, PACED_SECONDS);
      if (r.errors) throw new Error(`${t.name}: ${r.errors} failed requests (paced)`);
      pac[t.name].push(r);
      if (t.name === 'runs' || t.name === 'door') answered += r.ok;
      console.log(
        `round ${i + 1} paced ${t.name}: ${r.rate.toFixed(0)} req/s sent, p50 ${r.p50.toFixed(3)} ms, p99 ${r.p99.toFixed(3)} ms`,
      );
    }
  }
  const streamed = targets
    .filter((t) => t.name !== 'portkey')
    .map((t) => streamedOf(t, (id) => `/api/v1/runs/${id}/stream`));
  const first: Record<string, Paced[]> = { upstream: [], runs: [], door: [] };
  for (const t of streamed) {
    const r = await pacedRun(t, 1); // warm-up
    if (r.errors) throw new Error(`${t.name}: ${r.errors} failed streams (warm-up)`);
    if (t.name === 'runs' || t.name === 'door') answered += r.ok;
  }
  for (let i = 0; i < ROUNDS; i++) {
    const order = [...streamed.slice(i % streamed.length), ...streamed.slice(0, i % streamed.length)];
    for (const t of order) {
      const r = await pacedRun(t, PACED_SECONDS);
      if (r.errors) throw new Error(`${t.name}: ${r.errors} failed streams (paced)`);
      first[t.name].push(r);
      if (t.name === 'runs' || t.name === 'door') answered += r.ok;
      console.log(
        `round ${i + 1} streamed ${t.name}: ${r.rate.toFixed(0)} req/s sent, first chunk p50 ${r.p50.toFixed(3)} ms, p99 ${r.p99.toFixed(3)} ms`,
      );
    }
  }
  const facets = await api(orrery.url, orrery.adminKey, '/api/v1/runs/facets', {
    facets: [{ name: 'status', field: 'status' }],
  });
  const completed =
    (facets.status as Array<{ _id: string; count: number }>).find((b) => b._id === 'completed')?.count ?? 0;
  // Autocannon stops its clock with requests in flight: those runs are stored but not counted as answered.
  const inFlight = 2 * (ROUNDS + 1) * SATURATED_CONNECTIONS;
  if (completed < answered || completed > answered + inFlight || facets.total !== completed) {
    throw new Error(`${answered} runs answered 200, ${completed} stored completed, ${facets.total} stored in all`);
  }
  const m = (xs: number[]) => median(xs);
  const summary = {
    date: new Date().toISOString(),
    machine: machine(),
    rounds: ROUNDS,
    duration: DURATION,
    pacedSeconds: PACED_SECONDS,
    rate: RATE,
    saturated: Object.fromEntries(
      Object.entries(sat).map(([k, rs]) => [
        k,
        {
          rps: Math.round(m(rs.map((r) => r.rps))),
          p99: m(rs.map((r) => r.p99)),
          serverUs: m(rs.map((r) => r.serverUs)),
        },
      ]),
    ),
    paced: Object.fromEntries(
      Object.entries(pac).map(([k, rs]) => [
        k,
        { p50: +m(rs.map((r) => r.p50)).toFixed(3), p99: +m(rs.map((r) => r.p99)).toFixed(3) },
      ]),
    ),
    added: Object.fromEntries(
      (['portkey', 'runs', 'door'] as const).map((k) => [
        k,
        {
          p50: +m(pac[k].map((r, i) => r.p50 - pac.upstream[i].p50)).toFixed(3),
          p99: +m(pac[k].map((r, i) => r.p99 - pac.upstream[i].p99)).toFixed(3),
        },
      ]),
    ),
    firstChunkAdded: Object.fromEntries(
      (['runs', 'door'] as const).map((k) => [
        k,
        {
          p50: +m(first[k].map((r, i) => r.p50 - first.upstream[i].p50)).toFixed(3),
          p99: +m(first[k].map((r, i) => r.p99 - first.upstream[i].p99)).toFixed(3),
        },
      ]),
    ),
    doorOverPortkey: +m(sat.door.map((r, i) => r.rps / sat.portkey[i].rps)).toFixed(2),
    doorOverRuns: +m(sat.door.map((r, i) => r.rps / sat.runs[i].rps)).toFixed(2),
    runsOverPortkey: +m(sat.runs.map((r, i) => r.rps / sat.portkey[i].rps)).toFixed(2),
    runs: { answered, completed },
  };
  const { saturated: st, added } = summary;
  console.log(
    `\nsaturated (${SATURATED_CONNECTIONS} connections, median of ${ROUNDS} rounds): upstream ${st.upstream.rps} req/s, Portkey ${st.portkey.rps} req/s, POST /runs ${st.runs.rps} runs/s, door ${st.door.rps} runs/s: door / POST /runs ${summary.doorOverRuns}× (target ≥ 1), door / Portkey ${summary.doorOverPortkey}× (target ≥ 2.5), POST /runs / Portkey ${summary.runsOverPortkey}× (target ≥ 2)`,
  );
  console.log(
    `paced ${RATE} req/s, ${PACED_CONNECTIONS} connections: upstream p50 ${summary.paced.upstream.p50} / p99 ${summary.paced.upstream.p99} ms; added p50 / p99: Portkey ${added.portkey.p50} / ${added.portkey.p99} ms, POST /runs ${added.runs.p50} / ${added.runs.p99} ms, door ${added.door.p50} / ${added.door.p99} ms (target: door ≤ POST /runs)`,
  );
  const fc = summary.firstChunkAdded;
  console.log(
    `stream: true, paced ${RATE} req/s: time to first chunk added over the upstream's, p50 / p99: POST /runs + GET stream ${fc.runs.p50} / ${fc.runs.p99} ms, door ${fc.door.p50} / ${fc.door.p99} ms`,
  );
  console.log(`every run stored: ${answered} answered 200, ${completed} stored completed`);
  console.log(JSON.stringify({ ...summary, detail: { saturated: sat, paced: pac, firstChunk: first } }));
} finally {
  await orrery.stop();
  await portkey.stop();
  await upstream.stop();
}

/** The gateway as its package starts it (`start:node`: build/start-server.js), headless, on loopback. */
async function startPortkey(bin: string, port: number): Promise<Child> {
  const { spawn } = await import('node:child_process');
  const proc = spawn(
    process.execPath,
    ['--import', new URL('./lib/loopback-only.mjs', import.meta.url).href, bin, `--port=${port}`, '--headless'],
    {
      env: { ...process.env, NODE_ENV: 'production' },
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  const url = `http://127.0.0.1:${port}`;
  const until = Date.now() + 60_000;
  for (;;) {
    try {
      await fetch(url);
      break;
    } catch {
      if (Date.now() > until || proc.exitCode !== null) throw new Error('the Portkey gateway did not come up');
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    url,
    proc,
    peakRss: () => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${proc.pid}/status`, 'utf8'))![1]) * 1024,
    stop: () =>
      new Promise<void>((resolve) => {
        if (proc.exitCode !== null) return resolve();
        proc.once('exit', () => resolve());
        proc.kill('SIGTERM');
        setTimeout(() => proc.kill('SIGKILL'), 5000).unref();
      }),
  };
}
