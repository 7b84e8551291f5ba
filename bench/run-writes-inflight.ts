/**
 * Issue 17's design question, measured: what a blocking run's writes cost SQLite (its `processing`
 * row inserted, then the completing update) with three layouts of the runs table, in the same run:
 *
 * - **whole indexes** (before migration 0023): the row enters every index of `runs`, and its end
 *   moves it in each one that holds `status`, `updated_at` or a token column;
 * - **partial indexes, descending keys** (migration 0023 as it shipped): six read indexes hold no
 *   run in flight, so the end enters them once (reads are two arms: runs/run-arms.ts), and six keep
 *   `updated_at DESC`, which puts every new run at a leaf's left-hand edge;
 * - **partial indexes** (migrations 0023 and 0024, the schema of today): the same, keys ascending;
 * - **a narrow in-flight table** (a design, not built): the `processing` row goes into a table with
 *   one index; the final write inserts the ended run into `runs` (whole indexes) and deletes the
 *   in-flight row, in the same transaction.
 *
 * All keep a row committed before the provider call (DESIGN principle 3). The writes are the run
 * writer thread's own (runs/sqlite-run-writes.ts), in transactions of 32 as it groups them; the
 * in-flight table is made here for the measure only. CPU per run (process.cpuUsage) of the
 * statements alone: the documents and search data are prepared before the clock starts. Rotating
 * order of the layouts from round to round.
 *
 *   npm run bench -- run-writes-inflight        (N runs per round, default 20000; ROUNDS 4; BATCH 32)
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
const ROUNDS = Number(process.env.ROUNDS ?? 4);
/** Writes per transaction: the writer thread takes up to 32, and holds about 9 at saturation (bench/README.md, issue 17). */
const BATCH = Number(process.env.BATCH ?? 32);
/** Runs in flight at once: each run's final write comes this many inserts after its first. */
const IN_FLIGHT = 16;

/** The indexes that migration 0024 turned ascending, as they were before it: name and columns. */
const DESCENDING: ReadonlyArray<readonly [string, string]> = [
  ['runs_status', 'project_id, status, updated_at DESC'],
  ['runs_parent', 'project_id, parent_id, updated_at DESC'],
  ['runs_interaction', 'project_id, interaction_id, updated_at DESC'],
  ['runs_model', 'project_id, model_id, updated_at DESC, id DESC'],
  ['runs_environment', 'project_id, environment_id, updated_at DESC, id DESC'],
  [
    'runs_recent_cover',
    'project_id, updated_at DESC, id DESC, status, model_id, interaction_id, environment_id, finish_reason, execution_time, parent_id, interaction_name, environment_name, cost_total, search_rowid',
  ],
];

/**
 * A migrated database; `whole`: its read indexes rebuilt as they were before migration 0023 (with
 * today's ascending keys); `descending`: the keys of DESCENDING as they were before migration 0024.
 */
async function database(whole: boolean, descending = false) {
  const dir = mkdtempSync(join(tmpdir(), 'orrery-inflight-'));
  const { db } = await openDatabase({ dataDir: dir });
  await db.destroy();
  const h = openSqliteHandle(join(dir, 'orrery.db'), { eventLoop: false });
  const partial = h
    .prepare(
      `SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'runs' AND sql LIKE '%WHERE status <> ''processing'''`,
    )
    .all() as { name: string; sql: string }[];
  if (partial.length !== 6) throw new Error(`expected migration 0023's six partial indexes, found ${partial.length}`);
  if (whole)
    for (const x of partial) h.exec(`DROP INDEX ${x.name}; ${x.sql.replace(" WHERE status <> 'processing'", '')}`);
  if (descending) {
    for (const [name, columns] of DESCENDING) {
      const where =
        / WHERE .*$/.exec(
          (h.prepare('SELECT sql FROM sqlite_master WHERE name = ?').get(name) as { sql: string }).sql,
        )?.[0] ?? '';
      h.exec(`DROP INDEX ${name}; CREATE INDEX ${name} ON runs (${columns})${where}`);
    }
  }
  return { dir, h, writes: new SqliteRunWrites(h) };
}
const wholeDb = await database(true);
const partialDb = await database(false);
const descendingDb = await database(false, true);
const h = wholeDb.h;
h.exec(`CREATE TABLE runs_inflight (id TEXT PRIMARY KEY, account_id TEXT NOT NULL, project_id TEXT NOT NULL, status TEXT NOT NULL,
  executor TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, tags TEXT, doc TEXT NOT NULL, search_fields TEXT NOT NULL);
  CREATE INDEX runs_inflight_recent ON runs_inflight (project_id, updated_at DESC);`);
const insertInflight = h.prepare(
  'INSERT INTO runs_inflight (id, account_id, project_id, status, executor, created_at, updated_at, tags, doc, search_fields) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
);
const deleteInflight = h.prepare('DELETE FROM runs_inflight WHERE id = ?');

const doc = {
  result: [] as unknown[],
  parameters: { topic: 'the orbits of the outer planets' },
  prompt: [{ role: 'user', content: 'Summarise the orbits of the outer planets in one line.' }],
  config: { environment: 'env', model: 'gpt-4o-mini', temperature: 0.7 },
  source: { type: 'api', label: 'apikey:k', principal_type: 'apikey', principal_id: 'k', client_ip: '127.0.0.1' },
  ttl: 0,
  stream: false,
  interaction: { id: 'ix', name: 'Peer', endpoint: 'Peer', version: 0 },
  environment: { id: 'env', name: 'peer', provider: 'openai_compatible' },
  account: { id: 'a', name: 'Account' },
  project: { id: 'p', name: 'Project' },
};
const ended = {
  ...doc,
  result: [{ type: 'text', value: 'The outer planets orbit the Sun slowly, far beyond the asteroid belt.' }],
  cost: null,
};
const outcome = {
  status: 'completed',
  finish_reason: 'stop',
  execution_time: 1,
  token_prompt: 20,
  token_result: 14,
  token_total: 34,
  executor: null,
};

const rowOf = (id: string, status: 'processing' | 'completed'): RunRow => {
  const now = nowIso();
  return {
    id,
    account_id: 'a',
    project_id: 'p',
    interaction_id: 'ix',
    environment_id: 'env',
    model_id: 'gpt-4o-mini',
    status,
    parent_id: null,
    finish_reason: null,
    execution_time: null,
    token_prompt: null,
    token_result: null,
    token_total: null,
    tags: ['peer'],
    created_at: now,
    updated_at: now,
    doc: status === 'completed' ? ended : doc,
    executor: 'replica',
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

/** The run's two writes as the server makes them, on `writes`' database. */
function insertThenUpdate(writes: SqliteRunWrites, n: number): () => void {
  const ids = Array.from({ length: n }, () => newId());
  const all: PreparedRunWrite[] = interleave(
    ids.map((id) => prepareRunInsert(sqliteDialect, rowOf(id, 'processing'), ['peer'])),
    ids.map((id) => prepareRunUpdate(sqliteDialect, id, { ...outcome, updated_at: nowIso(), doc: ended } as never)),
  );
  return () => {
    for (let i = 0; i < all.length; i += BATCH) writes.applyAll(all.slice(i, i + BATCH));
  };
}

type Step = { inflight: () => void } | { final: PreparedRunWrite; id: string };

function inflightTable(n: number): () => void {
  const ids = Array.from({ length: n }, () => newId());
  const docJson = JSON.stringify(doc);
  const fields = JSON.stringify({ parameters: [{}], 'parameters.topic': [doc.parameters.topic] });
  const steps = interleave<Step>(
    ids.map((id) => {
      const now = nowIso();
      return {
        inflight: () =>
          void insertInflight.run(id, 'a', 'p', 'processing', 'replica', now, now, '["peer"]', docJson, fields),
      };
    }),
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
    wholeDb.writes.applyAll(finals);
  });
  return () => {
    for (let i = 0; i < steps.length; i += BATCH) batch.immediate(steps.slice(i, i + BATCH));
  };
}

const designs = [
  {
    name: 'whole indexes (before 0023): insert, completing update',
    make: (n: number) => insertThenUpdate(wholeDb.writes, n),
  },
  {
    name: 'partial indexes, descending keys (0023): insert, completing update',
    make: (n: number) => insertThenUpdate(descendingDb.writes, n),
  },
  {
    name: 'partial indexes (0023 + 0024, today): insert, completing update',
    make: (n: number) => insertThenUpdate(partialDb.writes, n),
  },
  { name: 'in-flight table: narrow insert, then insert into runs + delete', make: inflightTable },
];
/** Each layout in every position once over four rounds. */
const ORDERS = [
  [0, 1, 2, 3],
  [3, 2, 1, 0],
  [1, 3, 0, 2],
  [2, 0, 3, 1],
];
console.log(
  `run-writes-inflight: ${N} runs a round, ${ROUNDS} rounds, transactions of ${BATCH} writes; ${machine()}; ${new Date().toISOString()}`,
);
for (const d of designs) d.make(2000)(); // warm-up: the tables hold some runs before the clock starts
const perRun: number[][] = designs.map(() => []);
for (let r = 0; r < ROUNDS; r++) {
  for (const k of ORDERS[r % ORDERS.length]) {
    const go = designs[k].make(N);
    const c0 = process.cpuUsage();
    go();
    const c = process.cpuUsage(c0);
    perRun[k].push((c.user + c.system) / N);
    console.log(
      `round ${r + 1} ${designs[k].name}: ${((c.user + c.system) / N).toFixed(0)} µs CPU per run (system ${(c.system / N).toFixed(0)})`,
    );
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const [whole, descending, partial, inflight] = perRun.map(median);
const pct = (x: number) => `${((x / whole) * 100).toFixed(0)} %`;
console.log(
  `\nmedian µs per run: whole indexes ${whole.toFixed(0)}, partial indexes with descending keys ${descending.toFixed(0)} (${pct(descending)}), partial indexes ${partial.toFixed(0)} (${pct(partial)}), in-flight table ${inflight.toFixed(0)} (${pct(inflight)})`,
);
console.log(
  JSON.stringify({
    date: new Date().toISOString(),
    machine: machine(),
    n: N,
    rounds: ROUNDS,
    wholeUs: whole,
    descendingUs: descending,
    partialUs: partial,
    inflightUs: inflight,
  }),
);
for (const { h: handle, dir } of [wholeDb, partialDb, descendingDb]) {
  handle.close();
  rmSync(dir, { recursive: true, force: true });
}
