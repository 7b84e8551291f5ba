// `npm test`: starts a throwaway PostgreSQL cluster, runs every test file on SQLite and
// PostgreSQL (node:test, explicit file list: Node 20 does not expand globs), stops the cluster.
// ORRERY_TEST_DIALECTS=sqlite skips PostgreSQL; arguments narrow the files (`npm test -- test/runs`).
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { startCluster } from './postgres-cluster.mjs';

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
let cluster;
if (dialects.includes('postgres') && !process.env.ORRERY_TEST_PG_URL) {
  cluster = await startCluster();
  console.log(`PostgreSQL test cluster at ${cluster.url}`);
}

const stopCluster = () => {
  try {
    cluster?.stop();
  } catch (err) {
    console.error(`could not stop the PostgreSQL cluster: ${err.message}`);
  }
  cluster = undefined;
};
process.on('SIGINT', () => {
  stopCluster();
  process.exit(130);
});
process.on('SIGTERM', () => {
  stopCluster();
  process.exit(143);
});

// Files that time the server (GET /health budgets while hostile requests are answered) run after
// the others, alone, so that the other test files' load on a small machine does not count as the
// server's stalls.
const TIMED = new Set([
  join('test', 'http', 'hardening-bounds.test.ts'),
  join('test', 'templates', 'templates-http.test.ts'),
]);
const alone = (f) => f.startsWith(join('test', 'fuzz') + '/') || TIMED.has(f);
const batches = [files.filter((f) => !alone(f)), files.filter(alone)].filter((b) => b.length);
const counts = join(mkdtempSync(join(tmpdir(), 'orrery-test-counts-')), 'counts');
writeFileSync(counts, '');

const runBatch = (batch, concurrency) => {
  const args = [
    '--import',
    'tsx',
    '--test',
    `--test-concurrency=${concurrency}`,
    '--test-reporter=spec',
    '--test-reporter-destination=stdout',
    '--test-reporter=./scripts/plain-reporter.mjs',
    '--test-reporter-destination=stdout',
    ...batch,
  ];
  const child = spawn(process.execPath, args, {
    cwd: root,
    stdio: 'inherit',
    env: {
      ...process.env,
      ORRERY_TEST_DIALECTS: dialects.join(','),
      ORRERY_TEST_COUNTS: counts,
      ...(cluster ? { ORRERY_TEST_PG_URL: cluster.url } : {}),
    },
  });
  return new Promise((resolve) => child.on('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0))));
};

let code = 0;
for (const [i, batch] of batches.entries()) {
  const c = await runBatch(batch, i === 0 && !alone(batch[0]) ? (process.env.ORRERY_TEST_CONCURRENCY ?? 3) : 1);
  code = code || c;
}
stopCluster();
const [passed, failed, skipped] = readFileSync(counts, 'utf8')
  .trim()
  .split('\n')
  .filter(Boolean)
  .map((l) => l.split(' ').map(Number))
  .reduce((a, b) => a.map((x, i) => x + b[i]), [0, 0, 0]);
console.log(`\n${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(code || (failed > 0 ? 1 : 0));
