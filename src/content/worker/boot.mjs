// Entry of a content worker process (pool.ts forks it with the worker module's URL as its
// argument). Child processes do not inherit the loader that lets the server run TypeScript: when
// the entry is a .ts source (tests, `npm run dev`), register tsx here first; the compiled build
// (dist/, plain node) loads its .js entry directly, with no loader at run time.
const entry = process.argv[2];
if (entry.endsWith('.ts')) {
  const { register } = await import('tsx/esm/api');
  register();
}
await import(entry);
