/**
 * `npm run bench -- run-heap`: how much of the server's old space (V8's old generation) a stored
 * blocking run leaves behind, this working tree against a base commit (BASE, HEAD by default), in
 * paired rounds. What a run leaves in the old space is garbage that only a mark-compact frees,
 * which V8 runs late on an idle server (its memory reducer, 30 s or more after a load): it is what
 * keeps RSS high after a burst of runs (issue 22) and what the mark-compacts under load cost (issue 17).
 *
 * Both servers start with `--initial-old-space-size=1024`, so no mark-compact runs during a round
 * and the growth of the old space over a round is what the round's runs put there (read from
 * /metrics: prom-client's `nodejs_heap_space_size_used_bytes{space="old"}`; a round in which a
 * major GC or incremental marking ran anyway, per `nodejs_gc_duration_seconds_count`, is shown and
 * left out).
 * Rounds at 1 connection (each run alone) and at 32 (runs overlapping), alternating which server
 * goes first. A GET of the interactions list is measured alike, as the floor of a request that
 * stores nothing.
 *
 *   BASE=<commit> ROUNDS=3 DURATION=4 npm run bench -- run-heap
 */
import autocannon from 'autocannon';
import { machine, startOrrery, type Child } from './lib/processes.ts';
import { median, runBody, seed } from './lib/runs.ts';
import { checkoutBase } from './lib/worktree.ts';

const BASE = process.env.BASE ?? 'HEAD';
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const DURATION = Number(process.env.DURATION ?? 4);
const NODE_ARGS = ['--initial-old-space-size=1024'];

type Server = Child & { adminKey: string; dataDir: string };

/** Old-space bytes in use and major or incremental-marking GCs so far, from the server's /metrics. */
async function heapOf(server: Server): Promise<{ old: number; majors: number }> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const old = /^orrery_nodejs_heap_space_size_used_bytes\{space="old"\} (\d+)/m.exec(text);
  // A mark-compact frees old space, and incremental marking allocates black while it runs: a
  // round with either is not counted.
  const count = (kind: string) =>
    Number(new RegExp(`^orrery_nodejs_gc_duration_seconds_count\\{kind="${kind}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
  if (!old) throw new Error('/metrics has no old-space figure');
  return { old: Number(old[1]), majors: count('major') + count('incremental') };
}

interface Measure {
  requests: number;
  kbPerRequest: number;
  majors: number;
  rps: number;
}

async function measure(
  server: Server,
  request: { path: string; body?: string },
  connections: number,
): Promise<Measure> {
  const before = await heapOf(server);
  const r = await new Promise<autocannon.Result>((resolve, reject) =>
    autocannon(
      {
        url: server.url + request.path,
        connections,
        duration: DURATION,
        ...(request.body ? { method: 'POST', body: request.body } : {}),
        headers: {
          authorization: `Bearer ${server.adminKey}`,
          ...(request.body ? { 'content-type': 'application/json' } : {}),
        },
      },
      (err, res) => (err ? reject(err) : resolve(res)),
    ),
  );
  if (r.non2xx || r.errors || r.timeouts)
    throw new Error(`${request.path}: ${r.non2xx + r.errors + r.timeouts} failed requests`);
  const after = await heapOf(server);
  const n = r['2xx'];
  return {
    requests: n,
    kbPerRequest: (after.old - before.old) / n / 1000,
    majors: after.majors - before.majors,
    rps: r.requests.average,
  };
}

const base = checkoutBase(BASE);
const servers: Array<{ name: string; server: Server }> = [
  { name: `base ${base.sha}`, server: await startOrrery({}, base.dir, NODE_ARGS) },
  { name: 'this tree', server: await startOrrery({}, undefined, NODE_ARGS) },
];
try {
  console.log(
    `old space left per request, ${machine()}, ${new Date().toISOString()}; ${ROUNDS} paired rounds of ${DURATION} s, node ${NODE_ARGS.join(' ')}`,
  );
  const requests = await Promise.all(
    servers.map(async ({ server }) => ({
      run: { path: '/api/v1/runs', body: runBody(await seed(server)) },
      list: { path: '/api/v1/interactions' },
    })),
  );
  // Warm-up: the code is optimised before anything is counted.
  for (const [k, { server }] of servers.entries()) await measure(server, requests[k].run, 32);
  const cases = [
    { label: 'blocking run, 1 connection', kind: 'run' as const, connections: 1 },
    { label: 'blocking run, 32 connections', kind: 'run' as const, connections: 32 },
    { label: 'GET /interactions, 32 connections', kind: 'list' as const, connections: 32 },
  ];
  const table: string[] = [];
  for (const c of cases) {
    const kept: number[][] = [[], []];
    for (let i = 0; i < ROUNDS; i++) {
      for (const k of i % 2 ? [1, 0] : [0, 1]) {
        const m = await measure(servers[k].server, requests[k][c.kind], c.connections);
        console.log(
          `  ${c.label}, round ${i + 1}, ${servers[k].name}: ${m.requests} requests (${m.rps.toFixed(0)}/s), old space +${m.kbPerRequest.toFixed(2)} KB each${m.majors ? ` (${m.majors} major or incremental GC: left out)` : ''}`,
        );
        if (!m.majors) kept[k].push(m.kbPerRequest);
      }
    }
    const cell = (xs: number[]) => (xs.length ? `${median(xs).toFixed(2)} KB (${xs.length} rounds)` : 'no clean round');
    table.push(`| ${c.label} | ${cell(kept[0])} | ${cell(kept[1])} |`);
  }
  console.log(
    `\n| old space left per request (median) | base ${base.sha} | this tree |\n|---|---|---|\n${table.join('\n')}`,
  );
} finally {
  for (const { server } of servers) await server.stop();
  base.remove();
}
