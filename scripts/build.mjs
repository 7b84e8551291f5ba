// The compiled build: `tsc -p tsconfig.build.json` turns src/ into dist/ (relative `.ts` imports
// rewritten to `.js`), then every file of src/ that is not TypeScript (worker boot files, the price
// table and its licence) is copied beside it, at the same relative path, so that `new URL(…,
// import.meta.url)` finds it from dist/ as it does from src/. Run by `npm run build` and by the
// `prepare` script, so `npm install` / `npm ci` leave a ready build.
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

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
const old = join(root, `.dist-old-${process.pid}`);
if (existsSync(dist)) renameSync(dist, old);
renameSync(out, dist);
rmSync(old, { recursive: true, force: true });
console.log(`built dist/ (${copied} assets copied)`);
