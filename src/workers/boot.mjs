// Entry of a worker thread (the jst sandbox, the run writer; content processing runs in child
// processes started by src/content/worker/boot.mjs). Worker threads do
// not inherit the loader that lets the main thread run TypeScript: when the entry is a .ts source
// (tests, `npm run dev`), register tsx here first; the compiled build (dist/, plain node) loads its
// .js entry directly, with no loader at run time.
import { workerData } from 'node:worker_threads';

if (workerData.entry.endsWith('.ts')) {
  const { register } = await import('tsx/esm/api');
  register();
}
await import(workerData.entry);
