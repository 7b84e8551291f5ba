/** `npm run bench -- <name>`: runs one benchmark (or all, in order, with no name). */
const BENCHES: Record<string, string> = {
  runs: './runs-throughput.ts',
  'run-writes': './run-writes.ts',
  'run-writes-inflight': './run-writes-inflight.ts',
  'runs-search': './runs-search.ts',
  'runs-analytics': './runs-analytics.ts',
  replicas: './replicas.ts',
  objects: './objects.ts',
  embeddings: './embeddings.ts',
  embedder: './embedder.ts',
  'runs-embeddings': './runs-embeddings-ab.ts',
  'runs-ab': './runs-ab.ts',
  'run-heap': './run-heap.ts',
  content: './content.ts',
  templates: './templates.ts',
  resilience: './resilience.ts',
  limits: './limits.ts',
  'find-cost': './find-cost.ts',
  retention: './retention.ts',
  'peer-ab': './peer-ab.ts',
  gateway: './gateway.ts',
  footprint: './footprint.ts',
  hostile: './hostile.ts',
  conversation: './conversation.ts',
  otel: './otel.ts',
  agents: './agents.ts',
  evals: './evals.ts',
  media: './media.ts',
};
const wanted = process.argv.slice(2);
const names = wanted.length ? wanted : Object.keys(BENCHES);
for (const name of names) {
  const file = BENCHES[name];
  if (!file) {
    console.error(`unknown benchmark "${name}"; known: ${Object.keys(BENCHES).join(', ')}`);
    process.exit(2);
  }
  console.log(`\n=== ${name} ===`);
  await import(file);
}
