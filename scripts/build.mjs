// The compiled build: `tsc -p tsconfig.build.json` turns src/ into dist/ (relative `.ts` imports
// rewritten to `.js`), then every file of src/ that is not TypeScript (worker boot files, the price
// table and its licence) is copied beside it, at the same relative path, so that `new URL(…,
// import.meta.url)` finds it from dist/ as it does from src/. Run by `npm run build` and by the
// `prepare` script, so `npm install` / `npm ci` leave a ready build. Then two start-up savings:
// the dependencies made of hundreds of small ES modules are bundled into dist/vendor/ (below), and
// the route schemas are compiled into validator and serializer code (scripts/compile-schemas.mjs,
// src/http/validation.ts).
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const src = join(root, 'src');
const dist = join(root, 'dist');
// Built beside dist/ and swapped in at the end, so a server or test running the old build keeps
// its files until then, and a failed build leaves the old one in place.
const out = join(root, `.dist-build-${process.pid}`);

rmSync(out, { recursive: true, force: true });
let tsc;
try {
  tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
} catch {
  console.error('build: TypeScript is not installed (a development dependency). Install with them (npm ci), then drop them with npm prune --omit=dev, as the Dockerfile does.');
  process.exit(1);
}
try {
  execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json'), '--outDir', out], { cwd: root, stdio: 'inherit' });
} catch {
  rmSync(out, { recursive: true, force: true });
  console.error('build failed: tsc reported the errors above');
  process.exit(1);
}

let copied = 0;
(function copyAssets(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const from = join(dir, entry.name);
    if (entry.isDirectory()) copyAssets(from);
    else if (!entry.name.endsWith('.ts')) {
      const to = join(out, relative(src, from));
      mkdirSync(dirname(to), { recursive: true });
      copyFileSync(from, to);
      copied++;
    }
  }
})(src);
// Pure ES-module dependencies of many small files, bundled (esbuild, the development dependency
// tsx brings) into one module each, with their shared code split into chunks so that each exists
// once: Node resolves, reads and compiles one file instead of kysely's 262, TypeBox's 247 and
// jose's 46 at every start (about 0.25 s of CPU and 19 MB less). The bundles are the packages' own
// ES builds, resolved as Node resolves them (conditions import, node, default); the imports of
// dist/ naming these packages are pointed at them. Anything unexpected (esbuild missing, another
// subpath of these packages imported) leaves the imports as they are: dist/ then loads them from
// node_modules as before.
const VENDOR = { kysely: 'kysely', '@sinclair/typebox': 'typebox', '@sinclair/typebox/value': 'typebox-value', jose: 'jose' };
let vendored = 'dependencies loaded from node_modules';
try {
  vendored = await vendor(out);
} catch (err) {
  rmSync(join(out, 'vendor'), { recursive: true, force: true });
  console.error(`build: warning: dependencies not bundled, dist/ loads them from node_modules: ${err.message}`);
}

async function vendor(dir) {
  const specifier = /(\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(['"])(kysely|@sinclair\/typebox|jose)(\/[^'"]*)?\2/g;
  const files = [];
  (function walk(d) {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(d, e.name));
      else if (e.name.endsWith('.js') || e.name.endsWith('.mjs')) files.push(join(d, e.name));
    }
  })(dir);
  const edits = [];
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    let n = 0;
    const next = text.replace(specifier, (_m, lead, quote, pkg, sub = '') => {
      const name = VENDOR[pkg + sub];
      if (!name) throw new Error(`${relative(dir, file)} imports ${pkg + sub}, which is not bundled`);
      n++;
      let rel = relative(dirname(file), join(dir, 'vendor', `${name}.js`));
      if (!rel.startsWith('.')) rel = `./${rel}`;
      return `${lead}${quote}${rel}${quote}`;
    });
    if (n) edits.push([file, next]);
  }
  const esbuild = await import(pathToFileURL(createRequire(import.meta.url).resolve('esbuild')).href);
  const entries = join(dir, '.vendor-entries');
  mkdirSync(entries, { recursive: true });
  const entryPoints = {};
  for (const [pkg, name] of Object.entries(VENDOR)) {
    writeFileSync(join(entries, `${name}.mjs`), `export * from '${pkg}';\n`);
    entryPoints[name] = join(entries, `${name}.mjs`);
  }
  try {
    await esbuild.build({
      entryPoints, outdir: join(dir, 'vendor'), bundle: true, splitting: true, format: 'esm', platform: 'node', target: 'node20',
      conditions: [], nodePaths: [join(root, 'node_modules')], logLevel: 'warning', legalComments: 'eof',
    });
  } finally {
    rmSync(entries, { recursive: true, force: true });
  }
  for (const [file, text] of edits) writeFileSync(file, text);
  return `${Object.keys(VENDOR).join(', ')} bundled into dist/vendor/ for ${edits.length} modules`;
}

// Route validators and serializers compiled now rather than at every start (scripts/compile-schemas.mjs).
// Without them the server compiles its schemas at start-up as before, so a failure here only warns.
let schemas = 'route schemas compiled at start-up: the build could not compile them';
try {
  schemas = execFileSync(process.execPath, [join(root, 'scripts', 'compile-schemas.mjs'), out], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' }).trim();
} catch {
  rmSync(join(out, 'http', 'compiled'), { recursive: true, force: true });
  console.error('build: warning: could not compile the route schemas (above); the server will compile them at start-up');
}
// The build is as new as its newest input: src/http/compiled/ is written after tsc, so dist/cli.js is
// touched to stay newer than it (the tests and benchmarks rebuild a dist/ older than src/).
const now = new Date();
utimesSync(join(out, 'cli.js'), now, now);
const old = join(root, `.dist-old-${process.pid}`);
if (existsSync(dist)) renameSync(dist, old);
renameSync(out, dist);
rmSync(old, { recursive: true, force: true });
console.log(`built dist/ (${copied} assets copied; ${vendored}; ${schemas})`);
