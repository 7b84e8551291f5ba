// The node options `npm start` gives the server (package.json: `node <options> dist/cli.js serve`),
// for the harnesses that start what `npm start` runs (the compiled-build test, the benchmarks).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The options of `checkout`'s start script; undefined when that script is of another shape (an
 * older checkout whose start script ran the sources).
 * @param {string} checkout
 * @returns {string[] | undefined}
 */
export function startOptionsOf(checkout) {
  const start = JSON.parse(readFileSync(join(checkout, 'package.json'), 'utf8')).scripts?.start ?? '';
  const m = /^node\s+(.*?)\s*dist\/cli\.js serve$/.exec(start);
  return m ? m[1].split(' ').filter(Boolean) : undefined;
}
