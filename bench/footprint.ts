/**
 * `npm run bench -- footprint`: what the compiled server (`npm start` = `node dist/cli.js serve`,
 * plain node) costs to start and to keep. Five starts on a fresh data folder and five on a loaded
 * one (10,000 runs on the `test` provider and 100 processed objects, created once), each timed
 * from the spawn to the first `GET /health` 200, then its idle RSS; the medians are printed. The
 * server that made the load reports its RSS right after it and again a minute later (no leak:
 * back within 20 % of its idle RSS).
 *
 * RSS is VmRSS of /proc/<pid>/status: one figure for the process, its threads included (they share
 * its address space). The content work runs in child processes that end after 10 s idle
 * (src/content/worker/pool.ts): the server's own RSS is the figure the targets are about, and the
 * readings after the load also give the sum with its worker processes' RSS (an upper bound: pages
 * they share with each other, the node binary's, are counted in each). Each reading prints the load
 * average. Settings: BUILD (a built checkout whose dist/cli.js is measured, by default this one:
 * run the same measurement on a base, e.g. `git worktree add /tmp/base HEAD`, built), STARTS (5), IDLE_MS (time after /health before idle RSS is read,
 * 5000), SETTLE_S (the "minute later": 15,60,120 reads it at 15, 60 and 120 s; the content worker
 * processes end after 10 s idle, src/content/worker/pool.ts), RUNS (10000), OBJECTS (100), KEEP=1 keeps the loaded
 * folder, IDLE_SETTLE_S (5,30,60,90: one more fresh server's RSS read at those seconds after
 * /health). The Portkey gateway is started the same way when `@portkey-ai/gateway` is installed
 * (PORTKEY_ENTRY names its start script otherwise). The server runs with the node options of
 * `npm start` (package.json's start script, read from BUILD's package.json); NODE_FLAGS replaces them
 * (`node $NODE_FLAGS dist/cli.js serve`, NODE_FLAGS= for none). COMPARE=<built checkout> runs paired start-ups
 * of this build against that one instead (see compare below).
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { ROOT, freePort, machine, startFlagsOf } from './lib/processes.ts';

const STARTS = Number(process.env.STARTS ?? 5);
const IDLE_MS = Number(process.env.IDLE_MS ?? 5000);
/** Seconds after the load at which RSS is read again (comma-separated: each one is recorded). */
const SETTLE_S = (process.env.SETTLE_S ?? '15,60,120')
  .split(',')
  .map(Number)
  .filter((n) => n >= 0)
  .sort((a, b) => a - b);
/** Seconds after /health at which one fresh server's idle RSS is read again. */
const IDLE_SETTLE_S = (process.env.IDLE_SETTLE_S ?? '5,30,60,90')
  .split(',')
  .map(Number)
  .filter((n) => n >= 0)
  .sort((a, b) => a - b);
const RUNS = Number(process.env.RUNS ?? 10_000);
const OBJECTS = Number(process.env.OBJECTS ?? 100);
const ADMIN_KEY = 'sk-bench-footprint-key-0123456789';
const BUILD = process.env.BUILD ?? ROOT;
const CLI = join(BUILD, 'dist', 'cli.js');

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
const mb = (bytes: number) => Math.round((bytes / 1048576) * 10) / 10;

/** CPU time the process (all its threads) used so far, ms: less sensitive than wall time to other load on the machine. */
function cpuMsOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10; // utime + stime, in clock ticks of 10 ms
}

function rssOf(pid: number): number {
  return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;
}

/** The ids of `pid`'s descendants (the content worker processes of a server). */
function descendantsOf(pid: number): number[] {
  const parent = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      parent.set(Number(name), Number(readFileSync(`/proc/${name}/stat`, 'utf8').split(') ')[1].split(' ')[1]));
    } catch {
      // ended meanwhile
    }
  }
  const out: number[] = [];
  const walk = (p: number) => {
    for (const [child, pp] of parent)
      if (pp === p) {
        out.push(child);
        walk(child);
      }
  };
  walk(pid);
  return out;
}

/** RSS of the process and of its descendants, summed; and how many descendants. */
function treeRssOf(pid: number): { rss: number; children: number } {
  const kids = descendantsOf(pid);
  let rss = rssOf(pid);
  for (const k of kids) {
    try {
      rss += rssOf(k);
    } catch {
      // ended meanwhile
    }
  }
  return { rss, children: kids.length };
}

const loadavg = () => readFileSync('/proc/loadavg', 'utf8').split(' ')[0];

const newest = (dir: string): number =>
  readdirSync(dir, { withFileTypes: true }).reduce(
    (m, e) => Math.max(m, e.isDirectory() ? newest(join(dir, e.name)) : statSync(join(dir, e.name)).mtimeMs),
    0,
  );

interface Started {
  url: string;
  proc: ChildProcess;
  /** Spawn to the first 200 of the health path, ms. */
  startMs: number;
  /** CPU time used by then, ms. */
  startCpuMs: number;
  stop(): Promise<void>;
}

/** Spawns `args` under plain node (no loader) and polls `healthPath` every 5 ms. */
async function start(args: string[], env: Record<string, string>, healthPath: string, port?: number): Promise<Started> {
  port ??= await freePort();
  const url = `http://127.0.0.1:${port}`;
  const t0 = performance.now();
  const proc = spawn(process.execPath, args, {
    cwd: ROOT,
    env: {
      ...process.env,
      NODE_OPTIONS: '',
      ORRERY_LOG_LEVEL: 'warn',
      ORRERY_HOST: '127.0.0.1',
      ORRERY_PORT: String(port),
      ...env,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  const until = Date.now() + 60_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`${args.join(' ')} exited early`);
    if (Date.now() > until) throw new Error(`${url}${healthPath} did not answer`);
    if (
      await fetch(url + healthPath).then(
        (r) => r.ok,
        () => false,
      )
    )
      break;
    await sleep(5);
  }
  const startMs = performance.now() - t0;
  const startCpuMs = cpuMsOf(proc.pid!);
  return {
    url,
    proc,
    startMs,
    startCpuMs,
    stop: async () => {
      if (proc.exitCode === null) proc.kill('SIGTERM');
      const t = setTimeout(() => proc.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(t);
    },
  };
}

/** Node options of the measured server, in every mode: `npm start`'s, or NODE_FLAGS (e.g. `--max-semi-space-size=4`). */
const NODE_FLAGS =
  process.env.NODE_FLAGS !== undefined ? process.env.NODE_FLAGS.split(' ').filter(Boolean) : startFlagsOf(BUILD);
const startOrrery = (dataDir: string, cli = CLI, flags: string[] = NODE_FLAGS) =>
  start([...flags, cli, 'serve'], { ORRERY_DATA_DIR: dataDir, ORRERY_ADMIN_KEY: ADMIN_KEY }, '/health');

async function api(url: string, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(url + path, {
    method,
    headers: {
      authorization: `Bearer ${ADMIN_KEY}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const out = await res.json();
  if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(out)}`);
  return out;
}

/** Starts a server `STARTS` times on `dataDir` (a fresh copy of it each time when `fresh`). */
async function starts(
  label: string,
  folder: () => string,
): Promise<{ startMs: number[]; startCpuMs: number[]; idleRss: number[] }> {
  const startMs: number[] = [];
  const startCpuMs: number[] = [];
  const idleRss: number[] = [];
  for (let i = 0; i < STARTS; i++) {
    const dir = folder();
    const srv = await startOrrery(dir);
    await sleep(IDLE_MS);
    startMs.push(srv.startMs);
    startCpuMs.push(srv.startCpuMs);
    idleRss.push(rssOf(srv.proc.pid!));
    await srv.stop();
    console.log(
      `  ${label} #${i + 1}: first /health 200 after ${Math.round(srv.startMs)} ms (${srv.startCpuMs} ms of CPU), idle RSS ${mb(idleRss.at(-1)!)} MB (load ${loadavg()})`,
    );
  }
  return { startMs, startCpuMs, idleRss };
}

async function makeFiles(): Promise<Array<{ name: string; type: string; bytes: Buffer }>> {
  const files: Array<{ name: string; type: string; bytes: Buffer }> = [];
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  for (let n = 1; n <= 3; n++)
    doc
      .addPage([595, 842])
      .drawText(`Page ${n} of a small report, with a few words on it.`, { x: 50, y: 780, size: 14, font });
  const pdf = Buffer.from(await doc.save());
  const png = await sharp({ create: { width: 800, height: 600, channels: 3, background: { r: 40, g: 120, b: 200 } } })
    .png()
    .toBuffer();
  for (let i = 0; i < OBJECTS; i++) {
    const kind = i % 4;
    if (kind === 0) files.push({ name: `report-${i}.pdf`, type: 'application/pdf', bytes: pdf });
    else if (kind === 1) files.push({ name: `picture-${i}.png`, type: 'image/png', bytes: png });
    else if (kind === 2)
      files.push({
        name: `page-${i}.html`,
        type: 'text/html',
        bytes: Buffer.from(`<html><body><h1>Note ${i}</h1><p>${'Some words of a note. '.repeat(40)}</p></body></html>`),
      });
    else
      files.push({
        name: `notes-${i}.txt`,
        type: 'text/plain',
        bytes: Buffer.from(`Plain notes number ${i}. `.repeat(100)),
      });
  }
  return files;
}

/** 10,000 runs and 100 processed objects through HTTP, on the server at `url`. */
async function load(url: string): Promise<void> {
  const env = await api(url, 'POST', '/api/v1/environments', {
    name: 'Test env',
    provider: 'test',
    default_model: 'echo',
  });
  const prompt = await api(url, 'POST', '/api/v1/prompts', {
    name: 'echo prompt',
    role: 'user',
    content: 'Say: {{text}}',
    content_type: 'handlebars',
  });
  await api(url, 'POST', '/api/v1/interactions', {
    name: 'Echo',
    status: 'draft',
    environment: env.id,
    prompts: [{ type: 'template', template: prompt.id }],
  });
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < RUNS) {
        const i = next++;
        const run = await api(url, 'POST', '/api/v1/execute', {
          interaction: 'Echo@draft',
          data: { text: `run ${i}` },
          tags: [`batch-${i % 10}`],
        });
        if (run.status !== 'completed') throw new Error(`run ${i} ended ${run.status}`);
      }
    }),
  );
  console.log(`  load: ${RUNS} runs in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  const t1 = performance.now();
  const ids: string[] = [];
  for (const f of await makeFiles()) {
    const up = await api(url, 'POST', '/api/v1/objects/upload-url', { name: f.name });
    const put = await fetch(up.url, { method: 'PUT', body: f.bytes, headers: { 'content-type': f.type } });
    if (put.status !== 200) throw new Error(`PUT ${f.name}: ${put.status}`);
    await put.arrayBuffer();
    ids.push(
      (await api(url, 'POST', '/api/v1/objects', { name: f.name, content: { source: up.id, type: f.type } })).id,
    );
  }
  for (const id of ids) {
    for (const until = Date.now() + 120_000; ; await sleep(50)) {
      const obj = await api(url, 'GET', `/api/v1/objects/${id}`);
      if (obj.status === 'ready') break;
      if (obj.status === 'failed') throw new Error(`object ${id} failed: ${JSON.stringify(obj.error)}`);
      if (Date.now() > until) throw new Error(`object ${id} still ${obj.status}`);
    }
  }
  console.log(`  load: ${OBJECTS} objects uploaded and processed in ${((performance.now() - t1) / 1000).toFixed(1)} s`);
}

/** The Portkey gateway, when installed, started the same way (its health: GET / answers 200). */
function portkeyEntry(): string | undefined {
  if (process.env.PORTKEY_ENTRY) return process.env.PORTKEY_ENTRY;
  const dir = join(ROOT, 'node_modules', '@portkey-ai', 'gateway');
  if (!existsSync(dir)) return undefined;
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
    bin?: string | Record<string, string>;
    main?: string;
  };
  const bin = typeof pkg.bin === 'string' ? pkg.bin : pkg.bin && Object.values(pkg.bin)[0];
  return bin ? join(dir, bin) : undefined;
}

/**
 * COMPARE=<checkout> (a built worktree, e.g. `git worktree add /tmp/base HEAD` then `node
 * scripts/build.mjs` in it): paired rounds on fresh data folders, this build against that one,
 * alternating which starts first (ROUNDS, 7), each read for its first /health, the CPU used by
 * then and the RSS IDLE_MS later. Medians and the median of the per-round ratios; nothing else runs.
 */
async function compare(baseRoot: string): Promise<void> {
  const rounds = Number(process.env.ROUNDS ?? 7);
  const flags = NODE_FLAGS;
  const sides = [
    {
      name: `base (${baseRoot})`,
      cli: join(baseRoot, 'dist', 'cli.js'),
      flags:
        process.env.BASE_NODE_FLAGS !== undefined
          ? process.env.BASE_NODE_FLAGS.split(' ').filter(Boolean)
          : startFlagsOf(baseRoot),
    },
    { name: `this build${flags.length ? ` (${flags.join(' ')})` : ''}`, cli: CLI, flags },
  ];
  const got = sides.map(() => ({ startMs: [] as number[], cpuMs: [] as number[], rss: [] as number[] }));
  const scratch = mkdtempSync(join(tmpdir(), 'orrery-footprint-ab-'));
  const loads: string[] = [];
  try {
    for (let r = 0; r < rounds; r++) {
      for (const i of r % 2 ? [1, 0] : [0, 1]) {
        const srv = await startOrrery(join(scratch, `${r}-${i}`), sides[i].cli, sides[i].flags);
        await sleep(IDLE_MS);
        got[i].startMs.push(srv.startMs);
        got[i].cpuMs.push(srv.startCpuMs);
        got[i].rss.push(rssOf(srv.proc.pid!));
        await srv.stop();
      }
      loads.push(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);
      console.log(
        `  round ${r + 1}: ${sides.map((s, i) => `${i ? 'this' : 'base'} ${Math.round(got[i].startMs.at(-1)!)} ms (${got[i].cpuMs.at(-1)} ms CPU), ${mb(got[i].rss.at(-1)!)} MB`).join('; ')}; load ${loads.at(-1)}`,
      );
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  const ratio = (k: 'startMs' | 'cpuMs' | 'rss') => median(got[1][k].map((v, r) => v / got[0][k][r]));
  console.log(
    `\n${rounds} paired rounds, fresh data folders, RSS ${IDLE_MS} ms after /health, load average ${loads.join(', ')}`,
  );
  console.log('| build | first /health 200 (median) | CPU by then (median) | idle RSS (median) |\n|---|---|---|---|');
  sides.forEach((s, i) =>
    console.log(
      `| ${s.name} | ${Math.round(median(got[i].startMs))} ms | ${median(got[i].cpuMs)} ms | ${mb(median(got[i].rss))} MB |`,
    ),
  );
  console.log(
    `| this / base, median of the per-round ratios | ${ratio('startMs').toFixed(2)} | ${ratio('cpuMs').toFixed(2)} | ${ratio('rss').toFixed(2)} |`,
  );
}

// --- run -------------------------------------------------------------------------------------

if (BUILD === ROOT && (!existsSync(CLI) || statSync(CLI).mtimeMs < newest(join(ROOT, 'src')))) {
  console.log('building dist/ (npm run build)');
  execFileSync(process.execPath, [join(ROOT, 'scripts', 'build.mjs')], { cwd: ROOT, stdio: 'inherit' });
}
if (process.env.COMPARE) {
  await compare(process.env.COMPARE);
  process.exit(0);
}
console.log(
  `footprint of node ${[...NODE_FLAGS, CLI].join(' ')} serve, ${machine()}; ${STARTS} starts each, idle RSS read ${IDLE_MS} ms after /health`,
);

const scratch = mkdtempSync(join(tmpdir(), 'orrery-footprint-'));
const result: Record<string, unknown> = {
  machine: machine(),
  date: new Date().toISOString().slice(0, 10),
  build: BUILD,
  nodeFlags: NODE_FLAGS.join(' '),
  starts: STARTS,
  idleMs: IDLE_MS,
};
try {
  let n = 0;
  const fresh = await starts('fresh', () => join(scratch, `fresh-${n++}`));
  result.fresh = {
    startMs: Math.round(median(fresh.startMs)),
    startCpuMs: median(fresh.startCpuMs),
    idleRssMb: mb(median(fresh.idleRss)),
  };

  // One fresh server left idle longer: V8 keeps the young generation the start-up grew (tens of MB)
  // until its memory reducer runs, after some idle seconds.
  const idler = await startOrrery(join(scratch, 'fresh-idle'));
  const idleStart = performance.now();
  const settledIdle: Array<{ afterS: number; rssMb: number; load: string }> = [];
  for (const s of IDLE_SETTLE_S) {
    await sleep(Math.max(0, idleStart + s * 1000 - performance.now()));
    settledIdle.push({ afterS: s, rssMb: mb(rssOf(idler.proc.pid!)), load: loadavg() });
  }
  await idler.stop();
  console.log(
    `  fresh, left idle: ${settledIdle.map((x) => `${x.rssMb} MB at ${x.afterS} s (load ${x.load})`).join(', ')}`,
  );
  result.freshIdle = settledIdle;

  const loaded = join(scratch, 'loaded');
  const maker = await startOrrery(loaded);
  await sleep(IDLE_MS);
  const makerIdle = rssOf(maker.proc.pid!);
  await load(maker.url);
  const afterLoad = rssOf(maker.proc.pid!);
  const afterTree = treeRssOf(maker.proc.pid!);
  console.log(
    `  RSS: idle ${mb(makerIdle)} MB, after the load ${mb(afterLoad)} MB (with ${afterTree.children} worker processes ${mb(afterTree.rss)} MB; load ${loadavg()})`,
  );
  const loadDone = performance.now();
  const later: Array<{
    afterS: number;
    rssMb: number;
    withinIdle20pc: boolean;
    treeRssMb: number;
    workers: number;
    load: string;
  }> = [];
  for (const s of SETTLE_S) {
    await sleep(Math.max(0, loadDone + s * 1000 - performance.now()));
    const rss = rssOf(maker.proc.pid!);
    const tree = treeRssOf(maker.proc.pid!);
    later.push({
      afterS: s,
      rssMb: mb(rss),
      withinIdle20pc: rss <= makerIdle * 1.2,
      treeRssMb: mb(tree.rss),
      workers: tree.children,
      load: loadavg(),
    });
    console.log(
      `  RSS ${s} s after the load: ${mb(rss)} MB (${rss <= makerIdle * 1.2 ? 'within' : 'NOT within'} 20 % of idle; with ${tree.children} worker processes ${mb(tree.rss)} MB; load ${loadavg()})`,
    );
  }
  await maker.stop();
  result.load = {
    runs: RUNS,
    objects: OBJECTS,
    idleRssMb: mb(makerIdle),
    afterLoadRssMb: mb(afterLoad),
    afterLoadTreeRssMb: mb(afterTree.rss),
    later,
  };

  const onLoaded = await starts('loaded', () => loaded);
  result.loaded = {
    startMs: Math.round(median(onLoaded.startMs)),
    startCpuMs: median(onLoaded.startCpuMs),
    idleRssMb: mb(median(onLoaded.idleRss)),
  };

  const portkey = portkeyEntry();
  if (portkey) {
    const startMs: number[] = [];
    const idleRss: number[] = [];
    for (let i = 0; i < STARTS; i++) {
      const port = await freePort();
      const srv = await start([portkey, `--port=${port}`], {}, '/', port);
      await sleep(IDLE_MS);
      startMs.push(srv.startMs);
      idleRss.push(rssOf(srv.proc.pid!));
      await srv.stop();
    }
    result.portkey = { startMs: Math.round(median(startMs)), idleRssMb: mb(median(idleRss)) };
  } else {
    result.portkey = 'not installed (@portkey-ai/gateway is not in node_modules; PORTKEY_ENTRY names its start script)';
  }
} finally {
  if (process.env.KEEP !== '1') rmSync(scratch, { recursive: true, force: true });
  else console.log(`kept ${scratch}`);
}

const f = result.fresh as { startMs: number; startCpuMs: number; idleRssMb: number };
const l = result.loaded as { startMs: number; startCpuMs: number; idleRssMb: number };
console.log(`\nload average at the end: ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
console.log(
  '\n| data folder | first /health 200 (median) | CPU used by then (median) | idle RSS (median) |\n|---|---|---|---|',
);
console.log(`| fresh | ${f.startMs} ms | ${f.startCpuMs} ms | ${f.idleRssMb} MB |`);
console.log(`| loaded (${RUNS} runs, ${OBJECTS} objects) | ${l.startMs} ms | ${l.startCpuMs} ms | ${l.idleRssMb} MB |`);
if (typeof result.portkey === 'object')
  console.log(
    `| Portkey gateway | ${(result.portkey as { startMs: number }).startMs} ms | — | ${(result.portkey as { idleRssMb: number }).idleRssMb} MB |`,
  );
else console.log(`Portkey: ${String(result.portkey)}`);
console.log(
  `targets: first /health within 1000 ms: ${f.startMs <= 1000 && l.startMs <= 1000 ? 'met' : 'NOT met'}; idle RSS <= 120 MB: ${f.idleRssMb <= 120 && l.idleRssMb <= 120 ? 'met' : 'NOT met'}`,
);
console.log(JSON.stringify({ bench: 'footprint', ...result }));
