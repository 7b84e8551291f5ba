// Entry of a worker thread (the jst sandbox, the run writer: the entry module is in workerData) or
// of a content worker process (forked by content/worker/pool.ts with the entry as its argument).
// Neither inherits the loader that lets the main thread run TypeScript: when the entry is a .ts
// source (tests, `npm run dev`), register tsx here first; the compiled build (dist/, plain node)
// loads its .js entry directly, with no loader at run time.
import { workerData } from 'node:worker_threads';

const entry = workerData?.entry ?? process.argv[2];
if (entry.endsWith('.ts')) {
  const { register } = await import('tsx/esm/api');
  register();
}
await import(entry);
