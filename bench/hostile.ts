/**
 * The hardening benchmark: each hostile form of the fuzz corpus (test/fuzz/hostile-corpus.ts),
 * sent alone to a server in its own process holding the large-document fixture, with
 *
 * - the **event loop's max delay** while the request ran, from `perf_hooks.monitorEventLoopDelay`
 *   inside the server (its `/metrics` gauge `orrery_nodejs_eventloop_lag_max_seconds`, which each
 *   scrape resets: one scrape before the request, one after);
 * - the request's **time**, and the server's **RSS growth** (peak during the request over the RSS
 *   before it, /proc sampled every 5 ms, and what is left once it is over).
 *
 * Work a request leaves behind (indexing, the jobs it queued) counts as its own: after the answer,
 * the loop is scraped every 200 ms until a window's max delay is under 50 ms ("busy after").
 *
 * Baselines in the same run: an idle window of the same server (what the loop's max delay is
 * with nothing to do, the floor of every figure), and with `BASE=<commit>` the same forms against
 * that commit's server, built in a temporary worktree, the two servers alternating round by
 * round (the code before a fix against the code after). Target: no form above 100 ms.
 *
 *   npm run bench -- hostile
 *   BASE=main ROUNDS=3 npm run bench -- hostile
 *   DIALECT=postgres npm run bench -- hostile     (a throwaway PostgreSQL cluster)
 *   FORMS=wildcard,bulk npm run bench -- hostile  (only the forms whose name holds one of these)
 *   CPU_PROF=/tmp/prof npm run bench -- hostile   (the server's CPU profile, node --cpu-prof, written there)
 */
import { readFileSync } from 'node:fs';
import { machine, startOrrery, type Child } from './lib/processes.ts';
import { checkoutBase, type BaseCheckout } from './lib/worktree.ts';
import { benchDatabase, type BenchDatabase } from './lib/pg-bench.ts';
import { hostileForms, seedHostileFixture, type HostileFixture } from '../test/fuzz/hostile-corpus.ts';

const ROUNDS = Number(process.env.ROUNDS ?? 3);
const BASE = process.env.BASE;
const DIALECT = process.env.DIALECT ?? 'sqlite';
/** Measure only the forms whose name holds one of these (comma-separated, case-insensitive): one form alone on a shared machine. */
const FORMS = (process.env.FORMS ?? '')
  .split(',')
  .map((f) => f.trim().toLowerCase())
  .filter(Boolean);
const chosen = (name: string) => !FORMS.length || FORMS.some((f) => name.toLowerCase().includes(f));
/** A directory for the server's CPU profile (this tree's server only), to find what holds its loop. */
const CPU_PROF = process.env.CPU_PROF;
const TARGET_MS = 100;
const IDLE_MS = 1000;
const SETTLE_MS = 200;
/** A window whose max delay is under this is quiet: the request's work is over. */
const QUIET_MS = 50;
const QUIET_WITHIN_MS = 60_000;

type Server = Child & { adminKey: string; label: string; fixture?: HostileFixture };

interface Sample {
  delayMs: number;
  timeMs: number;
  /** How long the server stayed busy after answering (the windows of SETTLE_MS before a quiet one). */
  busyAfterMs: number;
  peakMb: number;
  leftMb: number;
  status: number;
}

const rssOf = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;

/** The server's event-loop max delay since the previous scrape, in ms (the scrape resets it). */
async function loopMaxMs(srv: Server): Promise<number> {
  return (await scrape(srv)).maxMs;
}

/** The loop's max delay since the previous scrape and the background jobs still queued. */
async function scrape(srv: Server): Promise<{ maxMs: number; jobsQueued: number }> {
  const text = await (await fetch(`${srv.url}/metrics`)).text();
  const m = /^orrery_nodejs_eventloop_lag_max_seconds (\S+)$/m.exec(text);
  if (!m) throw new Error('no orrery_nodejs_eventloop_lag_max_seconds in /metrics');
  let jobsQueued = 0;
  for (const q of text.matchAll(/^orrery_jobs_queued\{[^}]*\} (\S+)$/gm)) jobsQueued += Number(q[1]);
  return { maxMs: Number(m[1]) * 1000, jobsQueued };
}

/** Waits until a SETTLE_MS window of the server's loop is quiet (seeding's own jobs, the previous form). */
async function quiet(srv: Server): Promise<void> {
  await loopMaxMs(srv);
  for (const until = performance.now() + QUIET_WITHIN_MS; performance.now() < until;) {
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    if ((await loopMaxMs(srv)) < QUIET_MS) return;
  }
}

async function measure(srv: Server, send: () => Promise<number>): Promise<Sample> {
  const pid = srv.proc.pid!;
  await loopMaxMs(srv);
  const before = rssOf(pid);
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, rssOf(pid))), 5);
  const t = performance.now();
  let status: number;
  try {
    status = await send();
  } catch (err) {
    clearInterval(sampler);
    throw err;
  }
  const timeMs = performance.now() - t;
  // Work the request leaves behind (indexing, the jobs it queued) holds the loop too: the form's
  // delay is the worst of the windows until one is quiet with no job left queued (the scrape
  // waits for the loop), so it never spills into the next form's figures: a bulk create's 1,000
  // embeddings jobs ran in windows under QUIET_MS and were counted in the forms after it.
  let delayMs = 0;
  let quietAfterMs = 0;
  for (const until = performance.now() + QUIET_WITHIN_MS; ;) {
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    const window = await scrape(srv);
    delayMs = Math.max(delayMs, window.maxMs);
    if ((window.maxMs < QUIET_MS && window.jobsQueued === 0) || performance.now() > until) break;
    quietAfterMs = performance.now() - t - timeMs;
  }
  clearInterval(sampler);
  const after = rssOf(pid);
  peak = Math.max(peak, after);
  return {
    delayMs,
    timeMs,
    busyAfterMs: quietAfterMs,
    peakMb: (peak - before) / 1e6,
    leftMb: (after - before) / 1e6,
    status,
  };
}

const api = (srv: Server) => async (method: string, path: string, body?: unknown) => {
  const r = await fetch(srv.url + path, {
    method,
    headers: {
      authorization: `Bearer ${srv.adminKey}`,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : undefined };
};

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor((s.length - 1) / 2)];
};

const servers: Server[] = [];
let base: BaseCheckout | undefined;
const databases: BenchDatabase[] = [];
try {
  const envFor = async (): Promise<Record<string, string>> => {
    if (DIALECT !== 'postgres') return {};
    const db = await benchDatabase({ shared_buffers: '256MB', work_mem: '16MB' });
    databases.push(db);
    return { ORRERY_DATABASE_URL: db.url };
  };
  const profArgs = CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${CPU_PROF}`] : [];
  servers.push({ ...(await startOrrery(await envFor(), undefined, profArgs)), label: 'this tree' } as Server);
  if (BASE) {
    base = checkoutBase(BASE);
    servers.push({ ...(await startOrrery(await envFor(), base.dir)), label: `base ${base.sha}` } as Server);
  }
  for (const srv of servers) {
    const t = performance.now();
    srv.fixture = await seedHostileFixture(api(srv));
    console.log(`${srv.label}: fixture seeded in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  }

  const formsOf = (srv: Server) => hostileForms(srv.fixture!).filter((f) => chosen(f.name));
  const names = ['idle (no request)', ...formsOf(servers[0]).map((f) => f.name)];
  if (names.length === 1) throw new Error(`FORMS=${process.env.FORMS} names no form of the corpus`);
  const samples = new Map<string, Map<string, Sample[]>>(
    servers.map((s) => [s.label, new Map(names.map((n) => [n, []]))]),
  );
  for (let round = 0; round < ROUNDS; round++) {
    // Alternate which server goes first, so neither always runs on the warmer machine.
    const order = round % 2 ? [...servers].reverse() : servers;
    for (const srv of order) {
      const mine = samples.get(srv.label)!;
      await quiet(srv);
      mine.get(names[0])!.push(
        await measure(srv, async () => {
          await new Promise((r) => setTimeout(r, IDLE_MS));
          return 0;
        }),
      );
      for (const form of formsOf(srv)) {
        const s = await measure(srv, async () => {
          const r = await fetch(srv.url + form.path, {
            method: form.method,
            headers: {
              authorization: `Bearer ${srv.adminKey}`,
              ...(form.body !== undefined ? { 'content-type': 'application/json' } : {}),
            },
            body: form.body,
          });
          await r.arrayBuffer();
          return r.status;
        });
        if (!form.expect.includes(s.status))
          console.log(`  ${srv.label}: ${form.name} answered ${s.status} (expected ${form.expect.join(' or ')})`);
        mine.get(form.name)!.push(s);
      }
    }
    console.log(`round ${round + 1} of ${ROUNDS} done`);
  }

  console.log(`\n${machine()}, ${DIALECT}, ${ROUNDS} rounds, medians; target: max delay under ${TARGET_MS} ms`);
  const cols = servers.map((s) => s.label);
  console.log(
    `| form | ${cols.map((c) => `${c}: max delay ms / time ms / busy after ms / peak RSS +MB / left +MB / status`).join(' | ')} |`,
  );
  console.log(`|---|${cols.map(() => '---').join('|')}|`);
  const result: Record<string, Record<string, unknown>> = {};
  const over: string[] = [];
  for (const name of names) {
    const cells = servers.map((srv) => {
      const xs = samples.get(srv.label)!.get(name)!;
      const m = {
        delayMs: median(xs.map((x) => x.delayMs)),
        timeMs: median(xs.map((x) => x.timeMs)),
        busyAfterMs: median(xs.map((x) => x.busyAfterMs)),
        peakMb: median(xs.map((x) => x.peakMb)),
        leftMb: median(xs.map((x) => x.leftMb)),
        status: [...new Set(xs.map((x) => x.status))].join(','),
        worstDelayMs: Math.max(...xs.map((x) => x.delayMs)),
      };
      (result[name] ??= {})[srv.label] = m;
      if (srv === servers[0] && m.delayMs > TARGET_MS) over.push(name);
      return `${m.delayMs.toFixed(0)} / ${m.timeMs.toFixed(0)} / ${m.busyAfterMs.toFixed(0)} / ${m.peakMb.toFixed(1)} / ${m.leftMb.toFixed(1)} / ${m.status}`;
    });
    console.log(`| ${name} | ${cells.join(' | ')} |`);
  }
  console.log(
    over.length ? `over ${TARGET_MS} ms on this tree: ${over.join('; ')}` : `every form under ${TARGET_MS} ms`,
  );
  console.log(JSON.stringify({ bench: 'hostile', dialect: DIALECT, rounds: ROUNDS, base: base?.sha ?? null, result }));
} finally {
  for (const srv of servers) await srv.stop();
  base?.remove();
  for (const db of databases) await db.drop();
}
