/**
 * Issue 23 benchmark. (1) Blocking runs of the same interaction written as a handlebars prompt and
 * as a jst prompt (the jst renders in the QuickJS sandbox of a worker thread), in alternating
 * rounds on one server: runs per second of each and the jst/handlebars ratio (target ≥ 0.8).
 * (2) The cost of one render, in this process: sequential renders of each kind through the
 * template engine (jst: the worker hop included), and the first render of a new jst prompt.
 *
 *   npm run bench -- templates        (ROUNDS=3 DURATION=8 by default)
 */
import { startOrrery, machine } from './lib/processes.ts';
import { api, load, median, type Round } from './lib/runs.ts';
import { TemplateEngine } from '../src/templates/render.ts';

const ROUNDS = Number(process.env.ROUNDS ?? 3);
const DURATION = Number(process.env.DURATION ?? 8);
const HANDLEBARS = 'Summarise {{topic}} in one line.';
const JST = 'return `Summarise ${topic} in one line.`';

async function throughput() {
  const orrery = await startOrrery();
  try {
    const env = await api(orrery.url, orrery.adminKey, '/api/v1/environments', {
      name: 'bench',
      provider: 'test',
      default_model: 'echo',
    });
    const ix = async (content_type: string, content: string) =>
      (
        await api(orrery.url, orrery.adminKey, '/api/v1/interactions', {
          name: `Bench ${content_type}`,
          environment: env.id,
          prompts: [{ type: 'template', template: { role: 'user', content_type, content } }],
        })
      ).id as string;
    const body = (id: string) =>
      JSON.stringify({ interaction: id, data: { topic: 'the orbits of the outer planets' }, tags: ['bench'] });
    const hb = body(await ix('handlebars', HANDLEBARS));
    const js = body(await ix('jst', JST));
    const auth = { authorization: `Bearer ${orrery.adminKey}` };
    const url = `${orrery.url}/api/v1/runs`;
    await load(url, hb, auth, orrery, DURATION); // warm-up
    await load(url, js, auth, orrery, DURATION);
    const rounds: Array<{ hb: Round; js: Round }> = [];
    for (let i = 0; i < ROUNDS; i++) {
      const h = await load(url, hb, auth, orrery, DURATION);
      const j = await load(url, js, auth, orrery, DURATION);
      rounds.push({ hb: h, js: j });
      console.log(
        `round ${i + 1}: handlebars ${h.rps.toFixed(0)} runs/s p99 ${h.p99} ms, CPU µs/run ${h.serverUs}, errors ${h.errors} | jst ${j.rps.toFixed(0)} runs/s p99 ${j.p99} ms, CPU µs/run ${j.serverUs}, errors ${j.errors}`,
      );
    }
    return {
      handlebars: median(rounds.map((r) => r.hb.rps)),
      jst: median(rounds.map((r) => r.js.rps)),
      ratio: median(rounds.map((r) => r.js.rps / r.hb.rps)),
      cpu: { handlebars: median(rounds.map((r) => r.hb.serverUs)), jst: median(rounds.map((r) => r.js.serverUs)) },
    };
  } finally {
    await orrery.stop();
  }
}

async function renderCost() {
  const engine = new TemplateEngine();
  try {
    const data = { topic: 'the orbits of the outer planets' };
    const timeFirst = async (content: string) => {
      const t = performance.now();
      await engine.render({ content_type: 'jst', content }, data);
      return performance.now() - t;
    };
    const boot = await timeFirst(JST); // the worker thread and its sandbox start
    const firstNew = await timeFirst(`return \`Another ${'${topic}'} prompt.\``);
    const each = async (content_type: 'handlebars' | 'jst', content: string, n: number) => {
      for (let i = 0; i < 200; i++) await engine.render({ content_type, content }, data);
      const t = performance.now();
      for (let i = 0; i < n; i++) await engine.render({ content_type, content }, data);
      return ((performance.now() - t) * 1000) / n;
    };
    return {
      bootMs: boot,
      firstRenderOfNewJstMs: firstNew,
      handlebarsUs: await each('handlebars', HANDLEBARS, 20_000),
      jstUs: await each('jst', JST, 5_000),
    };
  } finally {
    await engine.close();
  }
}

console.log(machine());
const t = await throughput();
console.log(
  `runs/s: handlebars ${t.handlebars.toFixed(0)}, jst ${t.jst.toFixed(0)}; jst/handlebars ${(t.ratio * 100).toFixed(0)}% (target ≥ 80%); server CPU µs/run handlebars ${t.cpu.handlebars}, jst ${t.cpu.jst}`,
);
const r = await renderCost();
console.log(
  `one render: handlebars ${r.handlebarsUs.toFixed(1)} µs, jst ${r.jstUs.toFixed(1)} µs (worker hop included); first jst render ${r.bootMs.toFixed(0)} ms (worker and sandbox start), first render of a new jst prompt ${r.firstRenderOfNewJstMs.toFixed(1)} ms`,
);
