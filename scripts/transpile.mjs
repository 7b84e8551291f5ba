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

/** Compiles `files` (absolute .ts paths under `outbase`) into `outdir`, at the same relative paths. */
export async function transpile({ files, outbase, outdir, tsconfig, sourcemap = false }) {
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
    writeFileSync(
      file.path,
      file.path.endsWith('.js') ? file.text.replace(TS_SPECIFIER, '$1$2$3.js$2') : file.contents,
    );
  }
}
