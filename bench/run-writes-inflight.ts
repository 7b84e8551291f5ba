/**
 * Issue 17's design question, measured: what a blocking run's writes cost SQLite today (its
 * `processing` row inserted into `runs` with every index, then the completing update that moves
 * it in every index holding `status` or `updated_at`), against a narrow table of runs in flight
 * (the `processing` row there, with one index; the final write inserts the ended run into `runs`
 * once and deletes the in-flight row, in the same transaction). Both keep a row committed before
 * the provider call (DESIGN principle 3). The writes are the run writer thread's own
 * (runs/sqlite-run-writes.ts), in transactions of 32 as it groups them, the in-flight table is
 * made here for the measure only. CPU per run (process.cpuUsage) of the statements alone: the
 * documents and search data are prepared before the clock starts. Alternating rounds.
 *
 *   npm run bench -- run-writes-inflight        (N runs per round, default 20000; ROUNDS 3)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { openDatabase } from '../src/db/open.ts';
import { openSqliteHandle } from '../src/db/sqlite-handle.ts';
import { sqliteDialect } from '../src/db/dialect.ts';
import { newId, nowIso } from '../src/db/ids.ts';
import { SqliteRunWrites } from '../src/runs/sqlite-run-writes.ts';
import { prepareRunInsert, prepareRunUpdate, type PreparedRunWrite } from '../src/runs/store.ts';
import type { RunRow } from '../src/runs/model.ts';
import { machine } from './lib/processes.ts';

const N = Number(process.env.N ?? 20_000);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const BATCH = 32;
/** Runs in flight at once: each run's final write comes this many inserts after its first. */
const IN_FLIGHT = 16;

const dir = mkdtempSync(join(tmpdir(), 'orrery-inflight-'));
const { db } = await openDatabase({ dataDir: dir });
await db.destroy();
const h = openSqliteHandle(join(dir, 'orrery.db'), { eventLoop: false });
h.exec(`CREATE TABLE runs_inflight (id TEXT PRIMARY KEY, account_id TEXT NOT NULL, project_id TEXT NOT NULL, status TEXT NOT NULL,
  executor TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, tags TEXT, doc TEXT NOT NULL, search_fields TEXT NOT NULL);
  CREATE INDEX runs_inflight_recent ON runs_inflight (project_id, updated_at DESC);`);
const writes = new SqliteRunWrites(h);
const insertInflight = h.prepare('INSERT INTO runs_inflight (id, account_id, project_id, status, executor, created_at, updated_at, tags, doc, search_fields) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)');
const deleteInflight = h.prepare('DELETE FROM runs_inflight WHERE id = ?');

const doc = {
  result: [] as unknown[], parameters: { topic: 'the orbits of the outer planets' },
  prompt: [{ role: 'user', content: 'Summarise the orbits of the outer planets in one line.' }],
  config: { environment: 'env', model: 'gpt-4o-mini', temperature: 0.7 },
  source: { type: 'api', label: 'apikey:k', principal_type: 'apikey', principal_id: 'k', client_ip: '127.0.0.1' },
  ttl: 0, stream: false, interaction: { id: 'ix', name: 'Peer', endpoint: 'Peer', version: 0 },
  environment: { id: 'env', name: 'peer', provider: 'openai_compatible' }, account: { id: 'a', name: 'Account' }, project: { id: 'p', name: 'Project' },
};
const ended = { ...doc, result: [{ type: 'text', value: 'The outer planets orbit the Sun slowly, far beyond the asteroid belt.' }], cost: null };
const outcome = { status: 'completed', finish_reason: 'stop', execution_time: 1, token_prompt: 20, token_result: 14, token_total: 34, executor: null };

const rowOf = (id: string, status: 'processing' | 'completed'): RunRow => {
  const now = nowIso();
  return {
    id, account_id: 'a', project_id: 'p', interaction_id: 'ix', environment_id: 'env', model_id: 'gpt-4o-mini', status, parent_id: null,
    finish_reason: null, execution_time: null, token_prompt: null, token_result: null, token_total: null, tags: ['peer'],
    created_at: now, updated_at: now, doc: status === 'completed' ? ended : doc, executor: 'replica',
    ...(status === 'completed' ? outcome : {}),
  } as RunRow;
};

/** Each run's first write, then (IN_FLIGHT runs later) its last, as runs overlap in the server. */
function interleave<T>(first: T[], last: T[]): T[] {
  const out: T[] = [];
  first.forEach((f, i) => {
    out.push(f);
    if (i >= IN_FLIGHT) out.push(last[i - IN_FLIGHT]);
  });
  return out.concat(last.slice(first.length - IN_FLIGHT));
}

function today(n: number): () => void {
  const ids = Array.from({ length: n }, () => newId());
  const all: PreparedRunWrite[] = interleave(
    ids.map((id) => prepareRunInsert(sqliteDialect, rowOf(id, 'processing'), ['peer'])),
    ids.map((id) => prepareRunUpdate(sqliteDialect, id, { ...outcome, updated_at: nowIso(), doc: ended } as never)),
  );
  return () => { for (let i = 0; i < all.length; i += BATCH) writes.applyAll(all.slice(i, i + BATCH)); };
}

type Step = { inflight: () => void } | { final: PreparedRunWrite; id: string };

function inflightTable(n: number): () => void {
  const ids = Array.from({ length: n }, () => newId());
  const docJson = JSON.stringify(doc);
  const fields = JSON.stringify({ parameters: [{}], 'parameters.topic': [doc.parameters.topic] });
  const steps = interleave<Step>(
    ids.map((id) => { const now = nowIso(); return { inflight: () => void insertInflight.run(id, 'a', 'p', 'processing', 'replica', now, now, '["peer"]', docJson, fields) }; }),
    ids.map((id) => ({ final: prepareRunInsert(sqliteDialect, rowOf(id, 'completed'), ['peer']), id })),
  );
  // One transaction a batch, as the thread's: the final inserts go through its statements (one
  // savepoint a batch, as applyAll nests), each with the delete of its in-flight row.
  const batch = h.transaction((part: Step[]) => {
    const finals: PreparedRunWrite[] = [];
    for (const st of part) {
      if ('inflight' in st) st.inflight();
      else {
        finals.push(st.final);
        deleteInflight.run(st.id);
      }
    }
    writes.applyAll(finals);
  });
  return () => { for (let i = 0; i < steps.length; i += BATCH) batch.immediate(steps.slice(i, i + BATCH)); };
}

const designs = [
  { name: 'today: insert into runs, completing update', make: today },
  { name: 'in-flight table: narrow insert, then insert into runs + delete', make: inflightTable },
];
console.log(`run-writes-inflight: ${N} runs a round, ${ROUNDS} rounds, transactions of ${BATCH} writes; ${machine()}; ${new Date().toISOString()}`);
for (const d of designs) d.make(2000)(); // warm-up: the tables hold some runs before the clock starts
const perRun: number[][] = designs.map(() => []);
for (let r = 0; r < ROUNDS; r++) {
  for (const k of r % 2 ? [1, 0] : [0, 1]) {
    const go = designs[k].make(N);
    const c0 = process.cpuUsage();
    go();
    const c = process.cpuUsage(c0);
    perRun[k].push((c.user + c.system) / N);
    console.log(`round ${r + 1} ${designs[k].name}: ${((c.user + c.system) / N).toFixed(0)} µs CPU per run (system ${(c.system / N).toFixed(0)})`);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const [a, b] = perRun.map(median);
console.log(`\nmedian: today ${a.toFixed(0)} µs, in-flight table ${b.toFixed(0)} µs per run (${((b / a) * 100).toFixed(0)} % of today)`);
console.log(JSON.stringify({ date: new Date().toISOString(), machine: machine(), n: N, rounds: ROUNDS, todayUs: a, inflightUs: b }));
h.close();
rmSync(dir, { recursive: true, force: true });
