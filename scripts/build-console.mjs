// The web console's build: `vite build` of console/ into console/dist/ (served by src/console).
// Run by `npm run build` and by `prepare`, so `npm install` / `npm ci` leave a working console.
// Without the development dependencies it fails with a message, as scripts/build.mjs does. A tree
// without the console's sources (an image that copies only src/) skips it: the server then answers
// GET / with a page saying the console is not built.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
// A tree without the console's sources (an image that copies only src/) builds the server alone.
if (!existsSync(join(root, 'console', 'index.html'))) {
  console.log('build-console: no console/ sources here; the server is built without its web console');
  process.exit(0);
}
let vite;
try {
  vite = join(dirname(createRequire(import.meta.url).resolve('vite/package.json')), 'bin', 'vite.js');
} catch {
  console.error(
    'build-console: Vite is not installed (a development dependency); the console is not built. Install with `npm ci`, then `npm run build`.',
  );
  process.exit(1);
}
try {
  execFileSync(
    process.execPath,
    [vite, 'build', '--config', join(root, 'console', 'vite.config.ts'), '--logLevel', 'warn'],
    { cwd: join(root, 'console'), stdio: 'inherit' },
  );
} catch {
  console.error('build-console failed: Vite reported the errors above');
  process.exit(1);
}
console.log('built console/dist/');
