// The compiled build: every .ts file of src/ compiled into dist/ (scripts/transpile.mjs: esbuild,
// relative `.ts` imports rewritten to `.js`; `npm run typecheck` checks the types), then every file
// of src/ that is not TypeScript (worker boot files, the price table and its licence) copied beside
// it, at the same relative path, so that `new URL(…, import.meta.url)` finds it from dist/ as it
// does from src/. Run by `npm run build` and by the
// `prepare` script, so `npm install` / `npm ci` leave a ready build. Then two start-up savings:
// the dependencies made of hundreds of small ES modules are bundled into dist/vendor/ (below), and
// the route schemas are compiled into validator and serializer code (scripts/compile-schemas.mjs,
// src/http/validation.ts).
import { execFileSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
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
const sources = [];
(function collect(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const from = join(dir, entry.name);
    if (entry.isDirectory()) collect(from);
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) sources.push(from);
  }
})(src);
try {
  const { transpile } = await import('./transpile.mjs');
  await transpile({ files: sources, outbase: src, outdir: out, tsconfig: join(root, 'tsconfig.json') });
} catch (err) {
  rmSync(out, { recursive: true, force: true });
  console.error(
    err?.code === 'ERR_MODULE_NOT_FOUND'
      ? 'build: esbuild is not installed (a development dependency). Install with them (npm ci), then drop them with npm prune --omit=dev, as the Dockerfile does.'
      : `build failed: ${err.message}`,
  );
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
// Dependencies made of many small modules, bundled (esbuild, a development dependency)
// into one module each under dist/vendor/, with their shared code split into chunks so that each
// exists once: Node resolves, reads and compiles a few files instead of about 620 at every start
// (kysely's 262, TypeBox's 247, Ajv's 86, yaml's 75 through @fastify/swagger, prom-client's
// @opentelemetry/api 52, …; issue 22). The ES-module packages are re-exported whole; a CommonJS
// package's names exist only once it has run, so its bundle re-exports the names dist/ imports from
// it (collected from the import statements below). Each bundle is the package's own code, resolved
// as Node resolves it; CommonJS code in an ES module gets a `require` from createRequire (the
// banner), for Node's built-in modules. dist/ imports naming these packages are pointed at the
// bundles. Anything unexpected (esbuild missing, a subpath or a namespace import of a package that
// is not bundled that way) leaves the imports as they are: dist/ then loads them from node_modules.
const VENDOR = {
  kysely: 'kysely',
  '@sinclair/typebox': 'typebox',
  '@sinclair/typebox/value': 'typebox-value',
  jose: 'jose',
  fastify: 'fastify',
  '@fastify/swagger': 'fastify-swagger',
  '@fastify/static': 'fastify-static',
  'prom-client': 'prom-client',
  ajv: 'ajv',
  'ajv-formats': 'ajv-formats',
  'secure-json-parse': 'secure-json-parse',
  pino: 'pino',
  'mime-types': 'mime-types',
  handlebars: 'handlebars',
  acorn: 'acorn',
  'eslint-scope': 'eslint-scope',
  jsonrepair: 'jsonrepair',
  'csv-stringify/sync': 'csv-stringify-sync',
};
/** ES-module packages: bundled whole (`export *`). The others are bundled by the names imported. */
const WHOLE = new Set(['kysely', '@sinclair/typebox', '@sinclair/typebox/value', 'jose']);
const PACKAGES = new Set(
  Object.keys(VENDOR).map((k) => (k.startsWith('@') ? k.split('/').slice(0, 2) : k.split('/').slice(0, 1)).join('/')),
);
let vendored = 'dependencies loaded from node_modules';
try {
  vendored = await vendor(out);
} catch (err) {
  rmSync(join(out, 'vendor'), { recursive: true, force: true });
  console.error(`build: warning: dependencies not bundled, dist/ loads them from node_modules: ${err.message}`);
}

async function vendor(dir) {
  const specifier = /(\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(['"])((?:@[\w.-]+\/)?[\w.-]+)(\/[^'"]*)?\2/g;
  // `import X, { a, b as c } from 'pkg'`: the clause before a bundled package's specifier.
  const statement =
    /\bimport\s+([\w$]+\s*,\s*)?(\{[^}]*\}|\*\s*as\s+[\w$]+|[\w$]+)?\s*from\s*(['"])((?:@[\w.-]+\/)?[\w.-]+(?:\/[^'"]*)?)\3/g;
  const names = new Map(Object.keys(VENDOR).map((k) => [k, new Set()]));
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
    for (const [, first, clause = '', , spec] of text.matchAll(statement)) {
      if (!names.has(spec) || WHOLE.has(spec)) continue;
      const wanted = names.get(spec);
      const parts = first ? [first.replace(',', '').trim(), clause] : [clause];
      for (const part of parts.map((p) => p.trim()).filter(Boolean)) {
        if (part.startsWith('*'))
          throw new Error(`${relative(dir, file)} imports all of ${spec}, which is bundled by name`);
        if (!part.startsWith('{')) wanted.add('default');
        else
          for (const n of part
            .slice(1, -1)
            .split(',')
            .map((x) => x.trim().split(/\s+as\s+/)[0])
            .filter(Boolean))
            wanted.add(n);
      }
    }
    let n = 0;
    const next = text.replace(specifier, (m, lead, quote, pkg, sub = '') => {
      if (!PACKAGES.has(pkg)) return m;
      const name = VENDOR[pkg + sub];
      if (!name) throw new Error(`${relative(dir, file)} imports ${pkg + sub}, which is not bundled`);
      if (!WHOLE.has(pkg + sub) && !lead.startsWith('from'))
        throw new Error(`${relative(dir, file)} imports ${pkg + sub} without naming what it takes`);
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
    const wanted = [...names.get(pkg)];
    if (!WHOLE.has(pkg) && !wanted.length) continue; // not imported by dist/
    const source = WHOLE.has(pkg) ? `export * from '${pkg}';\n` : `export { ${wanted.join(', ')} } from '${pkg}';\n`;
    writeFileSync(join(entries, `${name}.mjs`), source);
    entryPoints[name] = join(entries, `${name}.mjs`);
  }
  try {
    await esbuild.build({
      entryPoints,
      outdir: join(dir, 'vendor'),
      bundle: true,
      splitting: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      conditions: [],
      nodePaths: [join(root, 'node_modules')],
      logLevel: 'warning',
      legalComments: 'eof',
      // better-sqlite3 finds its native addon from its own files: it stays in node_modules.
      external: ['better-sqlite3'],
      banner: {
        js: "import { createRequire as __orreryCreateRequire } from 'node:module';\nconst require = __orreryCreateRequire(import.meta.url);",
      },
    });
  } finally {
    rmSync(entries, { recursive: true, force: true });
  }
  for (const [file, text] of edits) writeFileSync(file, text);
  return `${Object.keys(entryPoints).length} packages bundled into dist/vendor/ for ${edits.length} modules`;
}

// Route validators and serializers compiled now rather than at every start (scripts/compile-schemas.mjs).
// Without them the server compiles its schemas at start-up as before, so a failure here only warns.
let schemas = 'route schemas compiled at start-up: the build could not compile them';
try {
  schemas = execFileSync(process.execPath, [join(root, 'scripts', 'compile-schemas.mjs'), out], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
  }).trim();
} catch {
  rmSync(join(out, 'http', 'compiled'), { recursive: true, force: true });
  console.error(
    'build: warning: could not compile the route schemas (above); the server will compile them at start-up',
  );
}
try {
  schemas += `; ${await vendorSchemaRuntime(out)}`;
} catch (err) {
  console.error(
    `build: warning: the compiled schemas' helpers are not bundled, they load from node_modules: ${err.message}`,
  );
}

/**
 * The generated validators and serializers require their helpers (fast-json-stringify's
 * serializer and validator, Ajv's runtime functions): from node_modules that is Ajv again, about
 * 80 files at every start. They are bundled into dist/vendor/schema-runtime.cjs (CommonJS, as
 * the generated files are), each resolved from where the code that generated it resolves it
 * (scripts/compile-schemas.mjs), and the generated files require them from there.
 */
async function vendorSchemaRuntime(dir) {
  const folder = join(dir, 'http', 'compiled');
  if (!existsSync(folder)) return 'no compiled schemas';
  const helper = /require\((['"])((?:fast-json-stringify\/lib|ajv\/dist\/runtime)\/[\w.-]+)\1\)/g;
  const fromRoot = createRequire(join(root, 'package.json'));
  // The fast-json-stringify that generated the serializers: where validation.ts resolves it (as compile-schemas.mjs does).
  const validation = await import(pathToFileURL(join(dir, 'http', 'validation.js')).href);
  const fromCompiler = createRequire(validation.resolveSerializerLibrary());
  const files = readdirSync(folder).filter((f) => f.endsWith('.cjs'));
  const used = new Set();
  for (const f of files) for (const m of readFileSync(join(folder, f), 'utf8').matchAll(helper)) used.add(m[2]);
  if (!used.size) return 'the compiled schemas need no helpers';
  const entry = join(dir, '.schema-runtime-entry.cjs');
  const lines = [...used]
    .sort()
    .map(
      (spec) =>
        `  ${JSON.stringify(spec)}: require(${JSON.stringify((spec.startsWith('ajv/') ? fromRoot : fromCompiler).resolve(spec))}),`,
    );
  writeFileSync(entry, `module.exports = {\n${lines.join('\n')}\n};\n`);
  try {
    const esbuild = await import(pathToFileURL(createRequire(import.meta.url).resolve('esbuild')).href);
    await esbuild.build({
      entryPoints: [entry],
      outfile: join(dir, 'vendor', 'schema-runtime.cjs'),
      bundle: true,
      format: 'cjs',
      platform: 'node',
      target: 'node20',
      logLevel: 'warning',
      legalComments: 'eof',
    });
  } finally {
    rmSync(entry, { force: true });
  }
  for (const f of files) {
    const text = readFileSync(join(folder, f), 'utf8');
    writeFileSync(
      join(folder, f),
      text.replace(helper, (_m, _q, spec) => `require('../../vendor/schema-runtime.cjs')[${JSON.stringify(spec)}]`),
    );
  }
  return `their ${used.size} helpers bundled into vendor/schema-runtime.cjs`;
}
// ASCII only: V8 keeps the source of every module it loads in the heap, and a source with one
// character past Latin-1 (an ellipsis in a schema description, an em dash in a comment) is held at
// two bytes per character. About 80 files of the build had one (4.3 MB of source loaded at start,
// the compiled schemas and kysely's bundle among them): written as \u escapes, which mean the same
// in strings, templates and regular expressions (the sources use no String.raw) and nothing in comments.
let escaped = 0;
(function ascii(d) {
  for (const e of readdirSync(d, { withFileTypes: true })) {
    const f = join(d, e.name);
    if (e.isDirectory()) ascii(f);
    else if (/\.(c|m)?js$/.test(e.name)) {
      const text = readFileSync(f, 'utf8');
      // A character escaped by a backslash (never seen) is left as written: `\\u…` would undo the escape.
      if (!/[^\x00-\x7f]/.test(text) || /\\[^\x00-\x7f]/.test(text)) continue;
      writeFileSync(
        f,
        text.replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`),
      );
      escaped++;
    }
  }
})(out);
// The build is as new as its newest input: src/http/compiled/ is written after the code, so dist/cli.js is
// touched to stay newer than it (the tests and benchmarks rebuild a dist/ older than src/).
const now = new Date();
utimesSync(join(out, 'cli.js'), now, now);
const old = join(root, `.dist-old-${process.pid}`);
if (existsSync(dist)) renameSync(dist, old);
renameSync(out, dist);
rmSync(old, { recursive: true, force: true });
console.log(`built dist/ (${copied} assets copied; ${vendored}; ${schemas}; ${escaped} files written in ASCII)`);
