/**
 * Issue 17, target 1's latency in paired rounds: the paced part of `peer` (400 req/s over 16
 * connections, each request timed from the moment it leaves) against a blocking run on this tree
 * and on a base commit, both through one local OpenAI-compatible upstream, alternating with the
 * upstream alone in every round. A machine whose speed drifts by half within minutes moves both
 * servers alike, so the paired difference means more than either figure.
 *
 *   BASE=<commit> npm run bench -- peer-ab      (BASE=HEAD, ROUNDS=10, SECONDS=3, RATE=400)
 */
import { machine, startChild, startOrrery, type Child } from './lib/processes.ts';
import { paced, type Paced, type PacedTarget } from './lib/paced.ts';
import { median, seedUpstream } from './lib/runs.ts';
import { checkoutBase } from './lib/worktree.ts';

const BASE = process.env.BASE ?? 'HEAD';
const ROUNDS = Number(process.env.ROUNDS ?? 10);
const SECONDS = Number(process.env.SECONDS ?? 3);
const RATE = Number(process.env.RATE ?? 400);
const CONNECTIONS = 16;

/** The paced part of peer (lib/paced.ts); every request must be answered 200. */
async function pacedRun(t: PacedTarget, seconds: number): Promise<Paced> {
  const r = await paced(t, seconds, RATE, CONNECTIONS);
  if (r.errors) throw new Error(`${t.url}: ${r.errors} failed requests`);
  return r;
}

const base = checkoutBase(BASE);
const upstream = await startChild(['bench/lib/openai-upstream.ts'], {}, '/health');
const servers: Array<Child & { adminKey: string }> = [];
try {
  servers.push(await startOrrery({}, base.dir), await startOrrery());
  const completion = JSON.stringify({
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'Summarise the orbits of the outer planets in one line.' }],
    temperature: 0.7,
  });
  const alone: PacedTarget = {
    url: `${upstream.url}/v1/chat/completions`,
    body: completion,
    headers: { authorization: 'Bearer sk-upstream' },
  };
  const [a, b] = await Promise.all(
    servers.map(async (s): Promise<PacedTarget> => ({
      url: `${s.url}/api/v1/runs`,
      headers: { authorization: `Bearer ${s.adminKey}` },
      body: JSON.stringify({
        interaction: await seedUpstream(s, upstream),
        data: { topic: 'the orbits of the outer planets' },
        tags: ['peer'],
      }),
    })),
  );
  for (const t of [alone, a, b]) await pacedRun(t, 2); // warm-up: JIT, pools, the writer threads
  const rounds: Array<{ upstream: Paced; base: Paced; tree: Paced }> = [];
  for (let i = 0; i < ROUNDS; i++) {
    const up = await pacedRun(alone, SECONDS);
    const [first, second] = i % 2 ? [b, a] : [a, b];
    const r1 = await pacedRun(first, SECONDS);
    const r2 = await pacedRun(second, SECONDS);
    const round = { upstream: up, base: i % 2 ? r2 : r1, tree: i % 2 ? r1 : r2 };
    rounds.push(round);
    const added = (p: Paced) => `${(p.p50 - up.p50).toFixed(3)} / ${(p.p99 - up.p99).toFixed(2)}`;
    console.log(
      `round ${i + 1}: upstream p50 ${up.p50.toFixed(3)} ms; added p50 / p99: base ${added(round.base)} ms, this tree ${added(round.tree)} ms`,
    );
  }
  const added = (k: 'base' | 'tree', q: 'p50' | 'p99') =>
    +median(rounds.map((r) => r[k][q] - r.upstream[q])).toFixed(3);
  const lower = rounds.filter((r) => r.tree.p50 < r.base.p50).length;
  const summary = {
    date: new Date().toISOString(),
    machine: machine(),
    base: base.sha,
    rounds: ROUNDS,
    seconds: SECONDS,
    rate: RATE,
    upstream: { p50: +median(rounds.map((r) => r.upstream.p50)).toFixed(3) },
    added: {
      base: { p50: added('base', 'p50'), p99: added('base', 'p99') },
      tree: { p50: added('tree', 'p50'), p99: added('tree', 'p99') },
    },
    treeLowerP50: lower,
  };
  console.log(
    `\npaced ${RATE} req/s over ${CONNECTIONS} connections, median of ${ROUNDS} paired rounds: added p50 / p99 base ${base.sha} ${summary.added.base.p50} / ${summary.added.base.p99} ms, this tree ${summary.added.tree.p50} / ${summary.added.tree.p99} ms; this tree's p50 lower in ${lower} of ${ROUNDS} rounds`,
  );
  console.log(JSON.stringify({ ...summary, detail: rounds }));
} finally {
  for (const s of servers) await s.stop();
  await upstream.stop();
  base.remove();
}
