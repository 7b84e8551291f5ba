/**
 * Issue 3 breakdown: what one blocking run's writes cost SQLite, statement by statement, on the
 * real schema (migrated by Orrery), with better-sqlite3 directly (no HTTP, no Kysely), in
 * transactions of 64 runs as the run writer groups them. CPU time per run (process.cpuUsage), so
 * a busy machine inflates the figures less than wall time would. A lower bound: the statements
 * alone, on a small document, each step in its own transactions (the server also pays Kysely,
 * larger documents and commits that mix inserts, updates and FTS5 segment flushes; its own
 * figures are in bench/README.md).
 *
 *   npm run bench -- run-writes          (N runs per measure, default 4000; REPEAT 3; STORED 50000)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import SQLite from 'better-sqlite3';
import { openDatabase } from '../src/db/open.ts';
import { ftsRow, runSearchDoc } from '../src/runs/lucene-sql/index.ts';
import { machine } from './lib/processes.ts';

const N = Number(process.env.N ?? 4000);
const REPEAT = Number(process.env.REPEAT ?? 3);
/** Runs already stored when measures start (a table of some size, as in use). */
const STORED = Number(process.env.STORED ?? 50_000);
const B = 64;
const dir = mkdtempSync(join(tmpdir(), 'orrery-run-writes-'));
const { db } = await openDatabase({ dataDir: dir });
await db.destroy();
const h = new SQLite(join(dir, 'orrery.db'));
h.pragma('journal_mode = WAL');
h.pragma('synchronous = NORMAL');
h.pragma('cache_size = -65536');

const doc = {
  result: [{ type: 'text', value: 'The outer planets orbit slowly: Jupiter in 12 years, Neptune in 165.' }],
  parameters: { topic: 'the orbits of the outer planets' },
  prompt: [{ role: 'user', content: 'Summarise the orbits of the outer planets in one line.' }],
  config: { environment: 'e1', model: 'echo', temperature: 0.7 },
  source: { type: 'api', label: 'apikey:k', principal_type: 'apikey', principal_id: 'k', client_ip: '127.0.0.1' },
  ttl: 0,
  stream: false,
  interaction: { id: 'i1', name: 'Bench', endpoint: 'bench', version: 1 },
  environment: { id: 'e1', name: 'bench', provider: 'test' },
  account: { id: 'a1', name: 'a' },
  project: { id: 'p1', name: 'p' },
  created_by: 'apikey:k',
};
const docText = JSON.stringify(doc);
const fts = ftsRow(runSearchDoc(doc));
const statements = {
  insert:
    h.prepare(`INSERT INTO runs (id, account_id, project_id, interaction_id, environment_id, model_id, status, tags, created_at, updated_at, doc,
    executor, search_rowid, search_fields, interaction_name, environment_name)
    VALUES (@id, 'a1', 'p1', 'i1', 'e1', 'echo', 'processing', '["bench"]', @t, @t, @doc, 'r1', @rowid, '{}', 'Bench', 'bench')`),
  tag: h.prepare(`INSERT INTO run_tags (run_id, tag, search_rowid) VALUES (@id, 'bench', @rowid)`),
  complete:
    h.prepare(`UPDATE runs SET status = 'completed', updated_at = @t, finish_reason = 'stop', execution_time = 1, token_prompt = 10,
    token_result = 10, token_total = 20, doc = @doc, executor = NULL WHERE id = @id`),
  fts: h.prepare(`INSERT INTO runs_fts (rowid, body, prompt, result) VALUES (@rowid, @body, @prompt, @result)`),
};
let made = 0;
const start = Date.parse('2026-01-01T00:00:00Z');

const deleteRun = h.prepare('DELETE FROM runs WHERE id = ?');
const deleteTags = h.prepare('DELETE FROM run_tags WHERE run_id = ?');
const deleteFts = h.prepare('DELETE FROM runs_fts WHERE rowid = ?');

/** CPU µs per run of each step, over N runs; the runs are deleted after, so every measure starts from the same table. */
function once(): Record<keyof typeof statements, number> {
  const runs = Array.from({ length: N }, () => ({
    id: `r${String(made).padStart(12, '0')}`,
    rowid: ++made,
    t: new Date(start + made).toISOString(),
  }));
  const out = {} as Record<keyof typeof statements, number>;
  const step = (name: keyof typeof statements, args: (r: (typeof runs)[number]) => Record<string, unknown>) => {
    const before = process.cpuUsage();
    for (let b = 0; b < N; b += B)
      h.transaction(() => {
        for (const r of runs.slice(b, b + B)) statements[name].run(args(r));
      })();
    const used = process.cpuUsage(before);
    out[name] = (used.user + used.system) / N;
  };
  step('insert', (r) => ({ id: r.id, t: r.t, doc: docText, rowid: r.rowid }));
  step('tag', (r) => ({ id: r.id, rowid: r.rowid }));
  step('complete', (r) => ({ id: r.id, t: new Date(start + 1e9 + r.rowid).toISOString(), doc: docText }));
  step('fts', (r) => ({ rowid: r.rowid, ...fts }));
  h.transaction(() => {
    for (const r of runs) {
      deleteRun.run(r.id);
      deleteTags.run(r.id);
      deleteFts.run(r.rowid);
    }
  })();
  return out;
}

/** The least of REPEAT measures, step by step: the machine's noise only ever adds. */
function measure(): Record<keyof typeof statements, number> {
  const all = Array.from({ length: REPEAT }, once);
  return Object.fromEntries(
    Object.keys(all[0]).map((k) => [k, Math.min(...all.map((m) => m[k as keyof typeof statements]))]),
  ) as Record<keyof typeof statements, number>;
}

const show = (m: Record<string, number>) =>
  Object.entries(m)
    .map(([k, v]) => `${k} ${v.toFixed(1)}`)
    .join(', ') +
  `; total ${Object.values(m)
    .reduce((a, b) => a + b, 0)
    .toFixed(1)} µs`;

console.log(
  `run-writes: ${N} runs per measure (least of ${REPEAT}), ${STORED} runs stored, transactions of ${B}; ${machine()}; ${new Date().toISOString()}`,
);
h.transaction(() => {
  for (let i = 0; i < STORED; i++) {
    const r = { id: `s${String(i).padStart(12, '0')}`, rowid: ++made, t: new Date(start + made).toISOString() };
    statements.insert.run({ ...r, doc: docText });
    statements.tag.run(r);
    statements.complete.run({ id: r.id, t: new Date(start + 1e9 + made).toISOString(), doc: docText });
    statements.fts.run({ rowid: r.rowid, ...fts });
  }
})();
measure();
const base = measure();
console.log(`all indexes: ${show(base)}`);
h.close();
rmSync(dir, { recursive: true, force: true });
console.log(JSON.stringify({ base }));
