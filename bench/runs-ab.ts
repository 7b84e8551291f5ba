/**
 * Blocking POST /runs of this working tree against a base commit, both servers up at once and
 * loaded in alternating rounds (A B, B A, …), so the machine's drift (its speed varies up to 2×
 * over a day) falls on both alike: runs/s, p99 and the server's CPU per run, paired by round.
 * The base is checked out into a temporary git worktree that uses this checkout's node_modules
 * (so a base whose dependencies differ needs its own `npm ci` first).
 *
 * `UPSTREAM=1`: the runs go through an `openai_compatible` environment to a local OpenAI-compatible
 * server in its own process (bench/lib/openai-upstream.ts, as `peer` does) instead of the offline
 * `test` provider, so the provider call's HTTP path is in the comparison.
 *
 * `THIS_NODE_OPTIONS`: node options for this tree's server only (its NODE_OPTIONS), to compare a
 * setting against the same code without it, e.g. `BASE=HEAD THIS_NODE_OPTIONS=--max-semi-space-size=8`.
 *
 * `CONNECTIONS` (32 by default): `CONNECTIONS=1` loads one run at a time, each alone on the server.
 *
 *   BASE=<commit> npm run bench -- runs-ab      (BASE=HEAD, ROUNDS=6, DURATION=6, UPSTREAM unset by default)
 */
import { startChild, startOrrery } from './lib/processes.ts';
import { load, median, runBody, seed, seedUpstream, type Round } from './lib/runs.ts';
import { checkoutBase } from './lib/worktree.ts';

const BASE = process.env.BASE ?? 'HEAD';
const ROUNDS = Number(process.env.ROUNDS ?? 6);
const DURATION = Number(process.env.DURATION ?? 6);
const UPSTREAM = process.env.UPSTREAM === '1';
const THIS_NODE_OPTIONS = process.env.THIS_NODE_OPTIONS ?? '';

const base = checkoutBase(BASE);
const baseSha = base.sha;

const upstream = UPSTREAM ? await startChild(['bench/lib/openai-upstream.ts'], {}, '/health') : undefined;
const servers = [
  { name: `base ${baseSha}`, server: await startOrrery({}, base.dir) },
  {
    name: THIS_NODE_OPTIONS ? `this tree (${THIS_NODE_OPTIONS})` : 'this tree',
    server: await startOrrery(THIS_NODE_OPTIONS ? { NODE_OPTIONS: THIS_NODE_OPTIONS } : {}),
  },
];
try {
  const targets = await Promise.all(
    servers.map(async ({ name, server }) => ({
      name,
      server,
      url: `${server.url}/api/v1/runs`,
      body: runBody(upstream ? await seedUpstream(server, upstream) : await seed(server)),
      auth: { authorization: `Bearer ${server.adminKey}` },
    })),
  );
  for (const t of targets) await load(t.url, t.body, t.auth, t.server, 3); // warm-up
  const rounds: Round[][] = [[], []];
  for (let i = 0; i < ROUNDS; i++) {
    const order = i % 2 ? [1, 0] : [0, 1];
    for (const k of order) {
      const t = targets[k];
      const r = await load(t.url, t.body, t.auth, t.server, DURATION);
      if (r.errors) throw new Error(`${t.name}: ${r.errors} failed requests`);
      rounds[k].push(r);
      console.log(
        `round ${i + 1} ${t.name}: ${r.rps.toFixed(0)} runs/s p99 ${r.p99} ms, server CPU ${r.serverUs} µs/run (HTTP thread ${r.mainUs}, other threads ${r.serverUs - r.mainUs})`,
      );
    }
  }
  const ratio = median(rounds[1].map((r, i) => r.rps / rounds[0][i].rps));
  const summary = (k: number) => ({
    rps: median(rounds[k].map((r) => r.rps)),
    p99: median(rounds[k].map((r) => r.p99)),
    serverUs: median(rounds[k].map((r) => r.serverUs)),
    mainUs: median(rounds[k].map((r) => r.mainUs)),
  });
  const [a, b] = [summary(0), summary(1)];
  console.log(`\n${upstream ? 'through an openai_compatible upstream' : 'on the test provider'}`);
  console.log(
    `base ${baseSha}: median ${a.rps.toFixed(0)} runs/s, p99 ${a.p99} ms, ${a.serverUs} µs CPU/run (HTTP thread ${a.mainUs})`,
  );
  console.log(
    `this tree: median ${b.rps.toFixed(0)} runs/s, p99 ${b.p99} ms, ${b.serverUs} µs CPU/run (HTTP thread ${b.mainUs}); ${(ratio * 100).toFixed(0)}% of the base's throughput (median of ${ROUNDS} paired rounds)`,
  );
  console.log(
    JSON.stringify({
      date: new Date().toISOString(),
      base: baseSha,
      provider: upstream ? 'openai_compatible' : 'test',
      rounds,
      ratio,
    }),
  );
} finally {
  for (const { server } of servers) await server.stop();
  await upstream?.stop();
  base.remove();
}
