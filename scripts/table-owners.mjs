// `npm run lint`: features use each other's services, not each other's tables. Every table has one
// owning folder of src/ (OWNERS); code in any other folder that names it in a query, through
// Kysely (selectFrom, insertInto, updateTable, deleteFrom, the joins) or in raw SQL (FROM, JOIN,
// INTO, UPDATE), fails the check. The owner exposes what others need: a method of its service, or
// a read in a non-store module of its folder (auth/reads.ts). src/db/ is below the features and
// names tables for them (project-rows.ts, migrations). A table a migration creates without an
// owner here fails too, so the map stays whole.
// What it cannot see: a table name held in a variable (db/project-rows.ts takes lists by design).
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const src = join(root, 'src');

/** Each table and the folder of src/ that owns it (writes it, and answers others' reads of it). */
const OWNERS = {
  accounts: 'auth',
  projects: 'auth',
  api_keys: 'auth',
  settings: 'auth',
  agent_runs: 'agents',
  agent_steps: 'agents',
  mcp_servers: 'agents',
  audit_events: 'audit',
  blobs: 'blobs',
  replicas: 'cluster',
  collections: 'collections',
  collection_members: 'collections',
  collection_parents: 'collections',
  object_renditions: 'content',
  datasets: 'datasets',
  dataset_items: 'datasets',
  door_turns: 'doors',
  vectors: 'embeddings',
  vector_clock: 'embeddings',
  vector_graph_leases: 'embeddings',
  vector_tombstones: 'embeddings',
  evaluators: 'evaluators',
  evaluator_versions: 'evaluators',
  experiments: 'experiments',
  experiment_items: 'experiments',
  experiment_cells: 'experiments',
  evaluation_rules: 'experiments',
  event_subscriptions: 'events',
  event_deliveries: 'events',
  import_links: 'import',
  environments: 'interactions',
  interactions: 'interactions',
  prompts: 'interactions',
  jobs: 'jobs',
  usage_counters: 'limits',
  objects: 'objects',
  object_types: 'objects',
  runs: 'runs',
  async_runs: 'runs',
  run_cache: 'runs',
  run_chunks: 'runs',
  run_tags: 'runs',
  runs_fts: 'runs',
  runs_fts_instances: 'runs',
  runs_fts_terms: 'runs',
  run_scores: 'scores',
  score_names: 'scores',
  users: 'users',
  user_links: 'users',
  user_memberships: 'users',
  user_sessions: 'users',
};

/**
 * Files that still name another folder's tables, each with the tables: known debt, to be moved
 * to the owner's service or reads. An entry no longer needed fails the check (the list only
 * shrinks); a new crossing is never added here without a reason beside it.
 */
const KNOWN = {};

const names = Object.keys(OWNERS).join('|');
const builder = new RegExp(
  `\\b(?:selectFrom|insertInto|replaceInto|updateTable|deleteFrom|mergeInto|innerJoin|leftJoin|rightJoin|fullJoin)\\(\\s*['"\`](${names})\\b`,
  'g',
);
const raw = new RegExp(`\\b(?:FROM|JOIN|INTO|UPDATE)\\s+(${names})\\b`, 'g');

/** The text with comments blanked out (a table named in prose is no query). */
const code = (text) =>
  text
    .replace(/\/\*[\s\S]*?\*\//g, (c) => c.replace(/[^\n]/g, ' '))
    .split('\n')
    .map((line) => (/^\s*\/\//.test(line) ? '' : line))
    .join('\n');

const files = (dir) =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    return e.isDirectory() ? files(p) : /\.(ts|mts|mjs)$/.test(e.name) ? [p] : [];
  });

const problems = [];

// Every table a migration creates has an owner.
const created = new Set();
for (const file of files(join(src, 'db', 'migrations'))) {
  const text = readFileSync(file, 'utf8');
  for (const m of text.matchAll(/createTable\(\s*'([a-z_0-9]+)'/g)) created.add(m[1]);
  for (const m of text.matchAll(/CREATE (?:VIRTUAL )?TABLE (?:IF NOT EXISTS )?([a-z_0-9]+)/g)) created.add(m[1]);
}
for (const t of created)
  if (!OWNERS[t]) problems.push(`table ${t} has no owner: add it to OWNERS in scripts/table-owners.mjs`);

const seenKnown = new Map(Object.keys(KNOWN).map((f) => [f, new Set()]));
let checked = 0;
for (const file of files(src)) {
  const rel = relative(root, file);
  if (rel.startsWith('src/db/') || rel.startsWith('src/http/compiled/')) continue;
  checked++;
  const folder = /^src\/([^/]+)\//.exec(rel)?.[1] ?? rel;
  const lines = code(readFileSync(file, 'utf8')).split('\n');
  lines.forEach((line, i) => {
    for (const re of [builder, raw])
      for (const m of line.matchAll(re)) {
        const table = m[1];
        if (OWNERS[table] === folder) continue;
        if (KNOWN[rel]?.includes(table)) {
          seenKnown.get(rel).add(table);
          continue;
        }
        problems.push(
          `${rel}:${i + 1}: names ${table}, a table of src/${OWNERS[table]}/: ask that feature's service or its reads (e.g. auth/reads.ts) instead`,
        );
      }
  });
}
for (const [file, tables] of Object.entries(KNOWN))
  for (const t of tables)
    if (!seenKnown.get(file).has(t))
      problems.push(`${file} no longer names ${t}: remove it from KNOWN in scripts/table-owners.mjs`);

if (problems.length) {
  for (const p of problems) console.error(`error ${p}`);
  console.error(`\n${problems.length} table ownership problems (scripts/table-owners.mjs says why the rule holds)`);
  process.exitCode = 1;
} else
  console.log(
    `table owners: ${Object.keys(OWNERS).length} tables, ${checked} files, ${Object.keys(KNOWN).length} known crossings left`,
  );
