// The build the tests run: src/ and test/ compiled once per `npm test` with esbuild (scripts/transpile.mjs),
// instead of tsx transpiling the whole module graph again in every test process (5-7 s
// of each file's start on a loaded 2-core machine). The build is a mirror of the repository in a
// temporary folder: every .ts file of src/ and test/ becomes a .js file (relative `.ts` import
// specifiers rewritten to `.js`, a source map beside it so that failures name the .ts lines), and
// is also linked there under its own name, as is every other file of src/ and test/ and every
// other entry of the repository's root. So `new URL('../..', import.meta.url)` is a root that has
// node_modules, dist/, console/, package.json and the .ts sources, as it is in the repository.
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { transpile } from './transpile.mjs';

// console/src: the tests import the console's plain TypeScript modules (its .tsx is Vite's).
const COMPILED = ['src', 'test', 'console/src'];

const walk = (dir) =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)],
  );

/** Builds the mirror and returns its root; `remove()` deletes it. */
export async function buildTests(root) {
  const out = mkdtempSync(join(tmpdir(), 'orrery-test-build-'));
  // Link every entry that holds nothing compiled; a folder that holds a compiled one (console/) is
  // mirrored, its other entries linked.
  const mirror = (dir) => {
    for (const name of readdirSync(join(root, dir))) {
      const path = dir ? `${dir}/${name}` : name;
      if (COMPILED.includes(path)) continue;
      if (COMPILED.some((c) => c.startsWith(`${path}/`))) {
        mkdirSync(join(out, path), { recursive: true });
        mirror(path);
      } else symlinkSync(join(root, path), join(out, path));
    }
  };
  mirror('');
  const sources = COMPILED.flatMap((d) => walk(join(root, d)));
  const ts = sources.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'));
  for (const file of sources) {
    const to = join(out, relative(root, file));
    mkdirSync(dirname(to), { recursive: true });
    // Plain JavaScript (worker boot files, generated validators) is copied, so that it resolves
    // its neighbours in the mirror; everything else (sources, fixtures) is linked.
    if (/\.(mjs|cjs|js)$/.test(file)) copyFileSync(file, to);
    else symlinkSync(file, to);
  }
  await transpile({
    files: ts,
    outbase: root,
    outdir: out,
    tsconfig: join(root, 'tsconfig.json'),
    sourcemap: true,
    packages: vendored(root),
  });
  return { root: out, files: ts.length, remove: () => rmSync(out, { recursive: true, force: true }) };
}

/**
 * The ES-module packages of many small files that the build bundles whole into dist/vendor/
 * (scripts/build.mjs: kysely's 264 files, TypeBox's 248, jose's 48): the tests import those
 * bundles too, as the server's build does, so that each test process does not resolve and compile
 * the 560 files again. Only bundles that re-export their package whole, and only when present.
 */
const WHOLE_BUNDLES = {
  kysely: 'kysely.js',
  '@sinclair/typebox': 'typebox.js',
  '@sinclair/typebox/value': 'typebox-value.js',
  jose: 'jose.js',
};
function vendored(root) {
  const found = {};
  for (const [name, file] of Object.entries(WHOLE_BUNDLES)) {
    const path = join(root, 'dist', 'vendor', file);
    if (existsSync(path)) found[name] = pathToFileURL(path).href;
  }
  return found;
}

/** Where the compiled form of a repository path (`test/x.test.ts`) is in the mirror. */
export const compiledPath = (out, path) => join(out, path.replace(/\.ts$/, '.js'));

// `node scripts/test-build.mjs`: build once and print the folder (to run `node --test` by hand).
if (import.meta.url === `file://${process.argv[1]}`) {
  const t0 = performance.now();
  const { root: out, files } = await buildTests(join(dirname(new URL(import.meta.url).pathname), '..'));
  console.log(`${files} files compiled into ${out} in ${Math.round(performance.now() - t0)} ms`);
}
