/**
 * Where a worker's boot file (worker threads and content worker processes) and entry module are,
 * from both the sources (`src/`, run by tsx: the entry is a `.ts` file) and the compiled build
 * (`dist/`, plain node: a `.js` file). The compiler rewrites import specifiers, not URLs, so the
 * entry's extension follows the caller's.
 */
export const BOOT = new URL('./boot.mjs', import.meta.url);

/** The URL of the worker module `name` (without extension) next to `base` (the caller's import.meta.url). */
export function workerEntry(name: string, base: string): string {
  const ext = base.endsWith('.ts') ? '.ts' : '.js';
  return new URL(`${name}${ext}`, base).href;
}
