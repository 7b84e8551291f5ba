// TypeScript to JavaScript, file by file, with esbuild: no bundling and no type check (`npm run
// typecheck` is the type check), relative `.ts` import specifiers rewritten to `.js` as tsc's
// rewriteRelativeImportExtensions does. The build (scripts/build.mjs) and the tests' build
// (scripts/test-build.mjs) both compile this way: a second or two where tsc's emit took half a
// minute of the install.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { build } from 'esbuild';

// Relative specifiers only: `from './x.ts'`, `import './x.ts'`, `import('./x.ts')`, `export … from`.
const TS_SPECIFIER = /((?:\bfrom|\bimport)\s*\(?\s*)(['"])(\.{1,2}\/[^'"\n]*?)\.ts\2/g;

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

/**
 * Compiles `files` (absolute .ts paths under `outbase`) into `outdir`, at the same relative paths.
 * `packages` maps bare specifiers to the files their imports are pointed at instead.
 */
export async function transpile({ files, outbase, outdir, tsconfig, sourcemap = false, packages = {} }) {
  const names = Object.keys(packages);
  const bare = names.length
    ? new RegExp(`((?:\\bfrom|\\bimport)\\s*\\(?\\s*)(['"])(${names.map(escape).join('|')})\\2`, 'g')
    : undefined;
  const rewrite = (text) => {
    const relativeJs = text.replace(TS_SPECIFIER, '$1$2$3.js$2');
    return bare ? relativeJs.replace(bare, (_m, lead, q, name) => `${lead}${q}${packages[name]}${q}`) : relativeJs;
  };
  const result = await build({
    entryPoints: files,
    outbase,
    outdir,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: sourcemap ? 'linked' : false,
    sourcesContent: false,
    bundle: false,
    write: false,
    logLevel: 'error',
    tsconfig,
  });
  for (const file of result.outputFiles) {
    mkdirSync(dirname(file.path), { recursive: true });
    writeFileSync(file.path, file.path.endsWith('.js') ? rewrite(file.text) : file.contents);
  }
}
