// `npm run lint`: Prettier, ESLint, the import boundaries, the table owners and knip, each failing
// the run. ESLint with type information is most of the time and uses one core; the other checks run
// beside it, in turn, so the whole stays within two minutes on a two-core machine. Each check's output is
// printed when it ends, under its name.
import { spawn } from 'node:child_process';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const bin = (name) => join(root, 'node_modules', '.bin', name);

const run = (name, command, args) =>
  new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(command, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('error', (err) => (out += `${err.message}\n`));
    child.on('close', (code) => {
      const ok = code === 0;
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      process.stdout.write(`\n── ${name}: ${ok ? 'ok' : 'FAILED'} (${seconds} s)\n${out.trimEnd()}${out ? '\n' : ''}`);
      resolve(ok);
    });
  });

const inTurn = async (...checks) => {
  let ok = true;
  for (const check of checks) ok = (await check()) && ok;
  return ok;
};

const results = await Promise.all([
  run('eslint', bin('eslint'), []),
  inTurn(
    () => run('prettier', bin('prettier'), ['--check', '.']),
    () => run('import boundaries', process.execPath, [join(root, 'scripts', 'lint-boundaries.mjs')]),
    () => run('table owners', process.execPath, [join(root, 'scripts', 'table-owners.mjs')]),
    () => run('knip', bin('knip'), []),
  ),
]);
if (results.includes(false)) {
  console.error('\nnpm run lint failed: see the checks marked FAILED above (CONTRIBUTING.md, "Guard rails").');
  process.exit(1);
}
console.log('\nnpm run lint: clean');
