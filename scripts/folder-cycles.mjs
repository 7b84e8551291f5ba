// `npm run lint`: no runtime import cycle between src/'s top-level folders (type-only imports
// excepted). dependency-cruiser finds cycles between files; this collapses its module graph to
// folders (src/runs/…, src/db/…; a file directly under src/ is its own node) and reports every
// group of folders that import each other, with the file imports that close the loop.
// Reads `depcruise --output-type json` from a file argument or standard input.
import { readFileSync } from 'node:fs';

const input = JSON.parse(readFileSync(process.argv[2] ?? 0, 'utf8'));
const nodeOf = (path) => /^src\/([^/]+)/.exec(path)?.[1] ?? null;

const edges = new Map(); // folder -> Map(folder -> [file imports])
for (const mod of input.modules) {
  const from = nodeOf(mod.source);
  if (!from) continue;
  for (const dep of mod.dependencies) {
    if (dep.coreModule || dep.couldNotResolve || dep.dependencyTypes.includes('type-only')) continue;
    const to = nodeOf(dep.resolved);
    if (!to || to === from) continue;
    if (!edges.has(from)) edges.set(from, new Map());
    const out = edges.get(from);
    if (!out.has(to)) out.set(to, []);
    out.get(to).push(`${mod.source} -> ${dep.resolved}`);
  }
}

// Tarjan's strongly connected components.
let index = 0;
const stack = [];
const info = new Map();
const components = [];
const visit = (v) => {
  info.set(v, { index, low: index, onStack: true });
  index++;
  stack.push(v);
  for (const w of edges.get(v)?.keys() ?? []) {
    if (!info.has(w)) {
      visit(w);
      info.get(v).low = Math.min(info.get(v).low, info.get(w).low);
    } else if (info.get(w).onStack) info.get(v).low = Math.min(info.get(v).low, info.get(w).index);
  }
  if (info.get(v).low === info.get(v).index) {
    const component = [];
    let w;
    do {
      w = stack.pop();
      info.get(w).onStack = false;
      component.push(w);
    } while (w !== v);
    if (component.length > 1) components.push(component.sort());
  }
};
for (const v of edges.keys()) if (!info.has(v)) visit(v);

let failed = false;
for (const component of components) {
  failed = true;
  console.error(`\nruntime import cycle between src/ folders: ${component.join(', ')}`);
  for (const from of component)
    for (const [to, imports] of edges.get(from) ?? [])
      if (component.includes(to)) for (const line of imports) console.error(`  ${line}`);
}
if (failed) {
  console.error(
    '\nBreak the cycle: move what both sides need into the lower layer, or pass it in (see CONTRIBUTING.md).',
  );
  process.exit(1);
}
console.log(`no runtime import cycle between src/ folders (${edges.size} folders)`);
