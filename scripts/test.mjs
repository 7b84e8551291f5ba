// `npm test`: compiles src/ and test/ once (scripts/test-build.mjs), starts a throwaway PostgreSQL
// cluster with a template database migrated once, runs every test file on SQLite and PostgreSQL
// (node:test, explicit file list: Node 20 does not expand globs), stops the cluster.
// ORRERY_TEST_DIALECTS=sqlite skips PostgreSQL; arguments narrow the files (`npm test -- test/runs`,
// `npm test -- test/runs/stream.test.ts`: the .ts paths, run from the build).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import pg from 'pg';
import { startCluster } from './postgres-cluster.mjs';
import { closingLines, cpuLines } from './plain-reporter.mjs';
import { buildTests, compiledPath } from './test-build.mjs';

const root = new URL('..', import.meta.url).pathname;
const walk = (dir) =>
  readdirSync(dir).flatMap((name) => {
    const full = join(dir, name);
    return statSync(full).isDirectory() ? walk(full) : full.endsWith('.test.ts') ? [full] : [];
  });

const wanted = process.argv.slice(2);
const files = (
  wanted.length ? wanted.flatMap((w) => (statSync(w).isDirectory() ? walk(w) : [w])) : walk(join(root, 'test'))
)
  .map((f) => relative(root, f))
  .sort();
if (!files.length) {
  console.error('no test files found');
  process.exit(1);
}

const dialects = (process.env.ORRERY_TEST_DIALECTS ?? 'sqlite,postgres')
  .split(',')
  .map((d) => d.trim())
  .filter(Boolean);
const phase = (label, t0) => console.log(`# ${label} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
let t0 = performance.now();
const build = await buildTests(root);
phase(`compiled ${build.files} files of src/ and test/ into ${build.root}`, t0);

let cluster;
let runner; // the node --test under way
let pgUrl = process.env.ORRERY_TEST_PG_URL;
const cleanUp = () => {
  try {
    cluster?.stop();
  } catch (err) {
    console.error(`could not stop the PostgreSQL cluster: ${err.message}`);
  }
  cluster = undefined;
  if (sqliteTemplate) rmSync(dirname(sqliteTemplate), { recursive: true, force: true });
  build.remove();
};
// Stopping npm test stops the test runner too.
const stop = (code) => {
  runner?.kill('SIGTERM');
  cleanUp();
  process.exit(code);
};
process.on('SIGINT', () => stop(130));
process.on('SIGTERM', () => stop(143));

// One migrated database per run, copied (CREATE DATABASE … TEMPLATE) for every test server.
const TEMPLATE = `orrery_template_${process.pid}`;
if (dialects.includes('postgres')) {
  t0 = performance.now();
  if (!pgUrl) {
    // PostgreSQL's JIT compiles a query whose estimated cost passes jit_above_cost: the generated
    // find and search queries (nested jsonb paths) spent 0.5-2 s of the server's CPU each compiling
    // what runs in milliseconds on these small tables. Same answers without it; only on the cluster
    // started here, never on one given by ORRERY_TEST_PG_URL.
    cluster = await startCluster({ jit: 'off' });
    pgUrl = cluster.url;
    console.log(`PostgreSQL test cluster at ${cluster.url}`);
  }
  const admin = new pg.Client({ connectionString: pgUrl });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${TEMPLATE}`);
  await admin.query(`CREATE DATABASE ${TEMPLATE}`);
  const url = new URL(pgUrl);
  url.pathname = `/${TEMPLATE}`;
  const { openDatabase } = await import(compiledPath(build.root, 'src/db/open.ts'));
  const scratch = mkdtempSync(join(tmpdir(), 'orrery-template-'));
  const { db } = await openDatabase({ databaseUrl: url.toString(), dataDir: scratch });
  await db.destroy();
  rmSync(scratch, { recursive: true, force: true });
  await admin.end();
  phase(`PostgreSQL ready, template database ${TEMPLATE} migrated`, t0);
}

// SQLite too: one migrated database file per run, copied into the data folder of every test server
// that starts on a folder of its own (test/support/server.ts), instead of migrating each again.
let sqliteTemplate;
if (dialects.includes('sqlite')) {
  t0 = performance.now();
  const { openDatabase } = await import(compiledPath(build.root, 'src/db/open.ts'));
  const folder = mkdtempSync(join(tmpdir(), 'orrery-sqlite-template-'));
  const { db } = await openDatabase({ dataDir: folder });
  await db.destroy();
  sqliteTemplate = join(folder, 'orrery.db');
  phase(`SQLite template database migrated`, t0);
}

// Longest first: node:test starts the files in the order given, so a long file started last is the
// run's tail. The order is the recorded times of a whole run (scripts/test-times.json, written by
// `ORRERY_TEST_RECORD_TIMES=1 npm test`); a file not recorded yet counts as the median one.
// Every file runs side by side: no test asserts a duration (CONTRIBUTING.md), so none needs the
// machine to itself.
const TIMES = join(root, 'scripts', 'test-times.json');
const recorded = existsSync(TIMES) ? JSON.parse(readFileSync(TIMES, 'utf8')) : {};
const median = Object.values(recorded).sort((a, b) => a - b)[Math.floor(Object.keys(recorded).length / 2)] ?? 0;
const timeOf = (f) => recorded[f] ?? median;
const ordered = [...files].sort((a, b) => timeOf(b) - timeOf(a));
const counts = join(mkdtempSync(join(tmpdir(), 'orrery-test-counts-')), 'counts');
writeFileSync(counts, '');
// Each file's CPU time (scripts/test-cpu-probe.mjs), in clock ticks of this kernel.
const cpuTimes = `${counts}.cpu`;
writeFileSync(cpuTimes, '');
const clockTicks = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout?.trim() || '100';
const concurrency = Number(process.env.ORRERY_TEST_CONCURRENCY ?? 3);

const runFiles = (batch) => {
  const args = [
    '--enable-source-maps',
    '--import',
    join(root, 'scripts', 'test-cpu-probe.mjs'),
    '--test',
    `--test-concurrency=${concurrency}`,
    '--test-reporter=spec',
    '--test-reporter-destination=stdout',
    '--test-reporter=./scripts/plain-reporter.mjs',
    '--test-reporter-destination=stdout',
    ...batch.map((f) => compiledPath(build.root, f)),
  ];
  const child = (runner = spawn(process.execPath, args, {
    cwd: build.root,
    stdio: 'inherit',
    env: {
      ...process.env,
      ORRERY_TEST_DIALECTS: dialects.join(','),
      ORRERY_TEST_COUNTS: counts,
      ORRERY_TEST_CPU: cpuTimes,
      ORRERY_TEST_CLK_TCK: clockTicks,
      ORRERY_TEST_ROOT: root,
      ORRERY_TEST_BUILD: build.root,
      ...(pgUrl ? { ORRERY_TEST_PG_URL: pgUrl, ORRERY_TEST_PG_TEMPLATE: TEMPLATE } : {}),
      ...(sqliteTemplate ? { ORRERY_TEST_SQLITE_TEMPLATE: sqliteTemplate } : {}),
    },
  }));
  return new Promise((resolve) => child.on('exit', (c) => resolve(c ?? 1)));
};

t0 = performance.now();
const code = await runFiles(ordered);
phase(`${ordered.length} files, ${concurrency} at a time`, t0);
cleanUp();
const summaries = readFileSync(counts, 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((l) => JSON.parse(l));
// ORRERY_TEST_FILE_TIMES=1 lists every file's time, not only the slowest ten.
const listed = process.env.ORRERY_TEST_FILE_TIMES ? Infinity : 10;
console.log(cpuLines(readFileSync(cpuTimes, 'utf8'), build.root, listed));
console.log(closingLines(summaries, listed));
if (process.env.ORRERY_TEST_RECORD_TIMES) {
  // The files of this run at their new times, the others as recorded before.
  const times = { ...recorded };
  for (const [file, seconds] of summaries.flatMap((s) => s.files)) times[file] = seconds;
  const sorted = Object.fromEntries(
    Object.entries(times)
      .filter(([file]) => existsSync(join(root, file)))
      .sort((a, b) => b[1] - a[1]),
  );
  writeFileSync(TIMES, JSON.stringify(sorted, null, 2) + '\n');
  console.log(`recorded the files' times in ${relative(root, TIMES)}`);
}
const failed = summaries.reduce((n, s) => n + s.failed, 0);
process.exit(code || (failed > 0 ? 1 : 0));
