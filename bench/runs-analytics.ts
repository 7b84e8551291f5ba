/**
 * Issue 18 benchmark: usage analytics and the streaming export of runs, on SQLite and PostgreSQL.
 *
 * For each backend: start Orrery (it migrates and bootstraps) and create four environments,
 * stop it, load RUNS runs over the year before END straight into its database with the store's
 * bulk insert (secondary indexes dropped during the load and rebuilt from their definitions, as
 * bench/runs-search.ts does), ANALYZE, start Orrery again, then, one request at a time after a
 * warm-up, time each analytics endpoint ITER times through HTTP, and stream the whole export
 * (JSONL and CSV) once, sampling the server's RSS every 20 ms. The query plans (EXPLAIN QUERY
 * PLAN / EXPLAIN) of the aggregates are printed, and the aggregates are timed again without the
 * `runs_analytics` index (migration 0016) to show what it is for.
 *
 *   npm run bench -- runs-analytics          RUNS=100000 ITER=30 BACKENDS=sqlite,postgres EXPORT_ONLY=1
 */
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { Kysely, PostgresDialect, SqliteDialect, sql, type LogEvent } from 'kysely';
import { newId } from '../src/db/ids.ts';
import { postgresDialect, sqliteDialect, type OrreryDialect } from '../src/db/dialect.ts';
import type { Database } from '../src/db/schema.ts';
import type { RunDoc, RunRow } from '../src/runs/model.ts';
import { insertRuns, type NewRun } from '../src/runs/search-index.ts';
import { encodeRun } from '../src/runs/store.ts';
import { costOf } from '../src/pricing/cost.ts';
import * as analytics from '../src/runs/aggregates.ts';
import { machine, percentile, startOrrery, type Child } from './lib/processes.ts';
import { benchDatabase } from './lib/pg-bench.ts';

const RUNS = Number(process.env.RUNS ?? 100_000);
const ITER = Number(process.env.ITER ?? 30);
const WARMUP = Number(process.env.WARMUP ?? 5);
const BATCH = 2000;
/** EXPORT_ONLY=1: load, then only the two exports (the memory figures at a million runs). */
const EXPORT_ONLY = process.env.EXPORT_ONLY === '1';
const BACKENDS = (process.env.BACKENDS ?? 'sqlite,postgres')
  .split(',')
  .map((s) => s.trim())
  .filter(Boolean);
const DAY = 86_400_000;
const END = Date.parse('2026-11-01T00:00:00.000Z');
const MODELS = ['gpt-4o', 'gpt-4o-mini', 'gpt-4.1', 'gpt-4.1-mini', 'o3-mini', 'gpt-3.5-turbo'];
const INTERACTIONS = Array.from({ length: 40 }, (_, i) => ({
  id: `ix-${String(i).padStart(3, '0')}`,
  name: `Interaction ${i}`,
}));

function prng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Scope = { account: { id: string; name: string }; project: { id: string; name: string } };

function generator(scope: Scope, environments: Array<{ id: string; name: string }>) {
  const r = prng(18);
  const skew = <T>(xs: readonly T[]) => xs[Math.floor(xs.length * r() ** 2)];
  let made = 0;
  return (): NewRun => {
    // Over the year before END, in the order they are stored (ids are time-ordered too).
    const created = END - 365 * DAY + Math.floor((made++ / RUNS) * 365 * DAY) + Math.floor(r() * 1000);
    const env = skew(environments);
    const ix = skew(INTERACTIONS);
    const model = skew(MODELS);
    const failed = r() < 0.1;
    const prompt = 50 + Math.floor(r() * 2000);
    const result = failed ? 0 : 20 + Math.floor(r() * 800);
    const cost = failed
      ? null
      : costOf({ provider: 'openai', model, usage: { prompt, result, total: prompt + result } });
    const execution = Math.round(Math.exp(6 + r() * 3));
    const doc: RunDoc = {
      result: failed ? [] : [{ type: 'text', value: `answer ${made} about ${ix.name}` }],
      parameters: { n: made, topic: `topic ${Math.floor(r() * 100)}` },
      prompt: [{ role: 'user', content: `question ${made} for ${ix.name}` }],
      config: { environment: env.id, model, temperature: 0.7 },
      ...(failed ? { error: { code: 'provider_error', message: 'upstream answered 500' } } : {}),
      source: {
        type: 'api',
        label: 'apikey:bench',
        principal_type: 'apikey',
        principal_id: 'bench',
        client_ip: '10.0.0.1',
      },
      ttl: 0,
      stream: false,
      interaction: { ...ix, version: 1 },
      environment: { ...env, provider: 'openai' },
      account: scope.account,
      project: scope.project,
      created_by: 'apikey:bench',
      cost,
    };
    const row = {
      id: newId(),
      account_id: scope.account.id,
      project_id: scope.project.id,
      interaction_id: ix.id,
      environment_id: env.id,
      model_id: model,
      status: failed ? 'failed' : 'completed',
      parent_id: null,
      finish_reason: failed ? null : 'stop',
      execution_time: execution,
      token_prompt: prompt,
      token_result: failed ? null : result,
      token_total: failed ? null : prompt + result,
      tags: r() < 0.2 ? ['sampled'] : [],
      created_at: new Date(created).toISOString(),
      updated_at: new Date(created + execution).toISOString(),
      doc,
      executor: null,
    } as RunRow;
    return { row, tags: row.tags as string[] };
  };
}

async function load(
  db: Kysely<Database>,
  d: OrreryDialect,
  environments: Array<{ id: string; name: string }>,
): Promise<number> {
  const project = await db.selectFrom('projects').select(['id', 'name', 'account_id']).executeTakeFirstOrThrow();
  const account = await db
    .selectFrom('accounts')
    .select(['id', 'name'])
    .where('id', '=', project.account_id)
    .executeTakeFirstOrThrow();
  const next = generator({ account, project: { id: project.id, name: project.name } }, environments);
  const defs =
    d.name === 'sqlite'
      ? (
          await sql<{
            name: string;
            def: string;
          }>`SELECT name, sql AS def FROM sqlite_master WHERE type = 'index' AND tbl_name IN ('runs', 'run_tags') AND sql IS NOT NULL`.execute(
            db,
          )
        ).rows
      : (
          await sql<{
            name: string;
            def: string;
          }>`SELECT indexname AS name, indexdef AS def FROM pg_indexes WHERE tablename IN ('runs', 'run_tags')
        AND indexname NOT IN ('runs_pkey', 'run_tags_pk')`.execute(db)
        ).rows;
  const keep = new Set(['runs_search_rowid']);
  for (const x of defs) if (!keep.has(x.name)) await sql`DROP INDEX ${sql.ref(x.name)}`.execute(db);
  const started = performance.now();
  for (let done = 0; done < RUNS; done += BATCH) {
    const batch = Array.from({ length: Math.min(BATCH, RUNS - done) }, next);
    await db.transaction().execute((trx) => insertRuns(trx, d, batch, (row) => encodeRun(d, row)));
    if ((done / BATCH) % 50 === 0)
      process.stdout.write(
        `  ${d.name}: ${done + batch.length} runs, ${((performance.now() - started) / 1000).toFixed(0)} s\n`,
      );
  }
  for (const x of defs) if (!keep.has(x.name)) await sql.raw(x.def).execute(db);
  if (d.name === 'sqlite') await sql`ANALYZE`.execute(db);
  else await sql`VACUUM ANALYZE`.execute(db);
  return (performance.now() - started) / 1000;
}

// ---- measuring ------------------------------------------------------------------------------

type Orrery = Child & { adminKey: string };

async function time(o: Orrery, path: string, body?: unknown): Promise<{ p50: number; p95: number }> {
  const samples: number[] = [];
  for (let i = 0; i < WARMUP + ITER; i++) {
    const started = performance.now();
    const res = await fetch(o.url + path, {
      method: body ? 'POST' : 'GET',
      headers: { authorization: `Bearer ${o.adminKey}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${path}: ${res.status} ${text.slice(0, 300)}`);
    if (i >= WARMUP) samples.push(performance.now() - started);
  }
  samples.sort((a, b) => a - b);
  return { p50: Math.round(percentile(samples, 50) * 10) / 10, p95: Math.round(percentile(samples, 95) * 10) / 10 };
}

/**
 * The server's own memory (RssAnon: heap, buffers) apart from file pages it maps (RssFile: SQLite
 * maps up to 1 GB of its database, and every page an export reads stays counted in VmRSS until
 * the kernel needs it back).
 */
function rssOf(pid: number): { anon: number; file: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(status)![1]) * 1024;
  return { anon: kb('RssAnon'), file: kb('RssFile') };
}

/** The whole export, streamed; the server's RSS sampled every 20 ms. */
async function exportOnce(o: Orrery, format: 'jsonl' | 'csv') {
  const pid = o.proc.pid!;
  const before = rssOf(pid);
  const peak = { ...before };
  const timer = setInterval(() => {
    const now = rssOf(pid);
    peak.anon = Math.max(peak.anon, now.anon);
    peak.file = Math.max(peak.file, now.file);
  }, 20);
  const started = performance.now();
  const res = await fetch(`${o.url}/api/v1/runs/export?format=${format}`, {
    headers: { authorization: `Bearer ${o.adminKey}` },
  });
  if (!res.ok) throw new Error(`export: ${res.status} ${await res.text()}`);
  let bytes = 0;
  let lines = 0;
  let first = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    if (!first) first = performance.now() - started;
    bytes += chunk.length;
    for (let i = 0; i < chunk.length; i++) if (chunk[i] === 10) lines++;
  }
  const seconds = (performance.now() - started) / 1000;
  clearInterval(timer);
  const runs = format === 'csv' ? lines - 1 : lines; // CSV: the header line (no run has a line feed in a cell here)
  return {
    runs,
    MB: Math.round(bytes / 1e5) / 10,
    seconds: Math.round(seconds * 10) / 10,
    runsPerSecond: Math.round(runs / seconds),
    firstByteMs: Math.round(first),
    anonMB: `${Math.round(before.anon / 1e6)} → peak ${Math.round(peak.anon / 1e6)}`,
    fileMB: `${Math.round(before.file / 1e6)} → peak ${Math.round(peak.file / 1e6)}`,
  };
}

async function measureAggregates(o: Orrery, environments: Array<{ id: string }>) {
  const month = { start: new Date(END - 30 * DAY).toISOString(), end: new Date(END).toISOString() };
  const year = { start: new Date(END - 365 * DAY).toISOString(), end: new Date(END).toISOString() };
  const qs = (o: Record<string, string>) => new URLSearchParams(o).toString();
  return {
    'summary, all runs': await time(o, '/api/v1/analytics/runs/summary'),
    'summary, 30 days': await time(o, `/api/v1/analytics/runs/summary?${qs(month)}`),
    'summary, 30 days, one environment': await time(
      o,
      `/api/v1/analytics/runs/summary?${qs({ ...month, environment: environments[1].id })}`,
    ),
    'time-series, 48 hours (hourly)': await time(
      o,
      `/api/v1/analytics/runs/time-series?${qs({ start: new Date(END - 2 * DAY).toISOString(), end: month.end })}`,
    ),
    'time-series, 365 days (daily)': await time(o, `/api/v1/analytics/runs/time-series?${qs(year)}`),
    'token-usage, 365 days': await time(o, `/api/v1/analytics/runs/token-usage?${qs(year)}`),
    'cost/analytics, 365 days by model, daily': await time(o, '/api/v1/cost/analytics', {
      from: year.start,
      to: year.end,
      group_by: 'model',
      resolution: 'day',
    }),
    'cost/analytics, 30 days by environment, hourly': await time(o, '/api/v1/cost/analytics', {
      from: month.start,
      to: month.end,
      group_by: 'environment',
      resolution: 'hour',
    }),
    'cost/analytics, 365 days by provider, weekly': await time(o, '/api/v1/cost/analytics', {
      from: year.start,
      to: year.end,
      group_by: 'provider',
      resolution: 'week',
    }),
  };
}

interface Captured {
  name: string;
  sql: string;
  parameters: readonly unknown[];
}

/** The store's own SQL for the main aggregates over the year, captured from its log. */
async function capture(db: Kysely<Database>, d: OrreryDialect, project: string): Promise<Captured[]> {
  const captured: LogEvent[] = [];
  const logged =
    d.name === 'sqlite'
      ? new Kysely<Database>({
          dialect: new SqliteDialect({ database: (db as any).__handle }),
          log: (e) => {
            captured.push(e);
          },
        })
      : new Kysely<Database>({
          dialect: new PostgresDialect({ pool: (db as any).__pool }),
          log: (e) => {
            captured.push(e);
          },
        });
  const f = { scope: { project }, from: new Date(END - 365 * DAY).toISOString(), to: new Date(END).toISOString() };
  const shapes: Record<string, () => Promise<unknown>> = {
    'summary, 365 days': () => analytics.statusCounts(logged, d, f),
    'time-series, 365 days': () => analytics.bucketCounts(logged, d, f, 'day'),
    'token-usage, 365 days': () => analytics.tokenSums(logged, d, f),
    'cost by model and environment, daily, 365 days': () => analytics.costRows(logged, d, f, 'model_id', 'day', true),
  };
  const out: Captured[] = [];
  for (const [name, run] of Object.entries(shapes)) {
    captured.length = 0;
    await run();
    const q = captured.find((e) => e.level === 'query')!.query;
    out.push({ name, sql: q.sql, parameters: q.parameters });
  }
  return out;
}

/** Without the index: the same statement, left to the planner. */
const unhinted = (q: Captured): Captured => ({ ...q, sql: q.sql.replace(/INDEXED BY runs_analytics/g, '') });

async function rawQuery(
  db: Kysely<Database>,
  d: OrreryDialect,
  text: string,
  parameters: readonly unknown[],
): Promise<Array<Record<string, string>>> {
  return d.name === 'sqlite'
    ? (db as any).__handle.prepare(text).all(...parameters)
    : (await (db as any).__pool.query(text, parameters)).rows;
}

async function explain(db: Kysely<Database>, d: OrreryDialect, q: Captured): Promise<string> {
  const rows = await rawQuery(
    db,
    d,
    `${d.name === 'sqlite' ? 'EXPLAIN QUERY PLAN' : 'EXPLAIN (COSTS OFF)'} ${q.sql}`,
    q.parameters,
  );
  return rows.map((r) => (r.detail ?? r['QUERY PLAN']).trim()).join(' | ');
}

/** The statement alone (no HTTP), median of ITER runs after one warm-up, in ms. */
async function timeSql(db: Kysely<Database>, d: OrreryDialect, q: Captured): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < Math.min(ITER, 10) + 1; i++) {
    const started = performance.now();
    await rawQuery(db, d, q.sql, q.parameters);
    if (i > 0) samples.push(performance.now() - started);
  }
  samples.sort((a, b) => a - b);
  return Math.round(percentile(samples, 50) * 10) / 10;
}

async function sqlFigures(db: Kysely<Database>, d: OrreryDialect, shapes: Captured[]) {
  const out: Record<string, { ms: number; plan: string }> = {};
  for (const q of shapes) out[q.name] = { ms: await timeSql(db, d, q), plan: await explain(db, d, q) };
  return out;
}

// ---- backends -------------------------------------------------------------------------------

interface Backend {
  name: 'sqlite' | 'postgres';
  env: Record<string, string>;
  open(dataDir: string): { db: Kysely<Database>; d: OrreryDialect };
  stop(): Promise<void>;
}

function sqliteBackend(): Backend {
  return {
    name: 'sqlite',
    env: {},
    open: (dataDir) => {
      const handle = new SQLite(join(dataDir, 'orrery.db'));
      handle.pragma('journal_mode = WAL');
      handle.pragma('synchronous = NORMAL');
      handle.pragma('cache_size = -262144');
      const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: handle }) });
      (db as any).__handle = handle;
      return { db, d: sqliteDialect };
    },
    stop: async () => {},
  };
}

/** As bench/runs-search.ts: the throwaway cluster gets a real buffer pool and sort memory, as any deployment would. */
const PG_SETTINGS = {
  shared_buffers: process.env.PG_SHARED_BUFFERS ?? '1GB',
  effective_cache_size: '8GB',
  work_mem: '32MB',
};

async function postgresBackend(): Promise<Backend> {
  const database = await benchDatabase(PG_SETTINGS);
  const url = new URL(database.url);
  return {
    name: 'postgres',
    env: { ORRERY_DATABASE_URL: url.toString() },
    open: () => {
      const pool = new pg.Pool({ connectionString: url.toString(), max: 2 });
      const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
      (db as any).__pool = pool;
      return { db, d: postgresDialect };
    },
    stop: () => database.drop(),
  };
}

console.log(
  `runs-analytics: ${RUNS} runs, ${ITER} timed requests per endpoint after ${WARMUP} warm-up; ${machine()}; ${new Date().toISOString()}`,
);
const results: Record<string, unknown> = {};
for (const name of BACKENDS) {
  const backend = name === 'postgres' ? await postgresBackend() : sqliteBackend();
  let orrery: Orrery = await startOrrery({ ...backend.env, ORRERY_LOG_LEVEL: 'warn' });
  let stopped = false;
  const dataDir = (orrery as Orrery & { dataDir: string }).dataDir;
  try {
    const environments: Array<{ id: string; name: string }> = [];
    for (let i = 0; i < 4; i++) {
      const res = await fetch(`${orrery.url}/api/v1/environments`, {
        method: 'POST',
        headers: { authorization: `Bearer ${orrery.adminKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: `Environment ${i}`, provider: 'test', default_model: 'echo' }),
      });
      const env = (await res.json()) as { id: string; name: string };
      environments.push({ id: env.id, name: env.name });
    }
    orrery.proc.kill('SIGTERM');
    await new Promise((r) => orrery.proc.once('exit', r));
    const { db, d } = backend.open(dataDir);
    const loadSeconds = await load(db, d, environments);
    console.log(`  ${name}: loaded and indexed in ${loadSeconds.toFixed(0)} s`);
    const project = (await db.selectFrom('projects').select('id').executeTakeFirstOrThrow()).id;
    const again = await startOrrery({ ...backend.env, ORRERY_DATA_DIR: dataDir, ORRERY_LOG_LEVEL: 'warn' });
    orrery = { ...again, stop: () => again.stop() };

    if (EXPORT_ONLY) {
      results[name] = {
        loadSeconds: Math.round(loadSeconds),
        jsonl: await exportOnce(orrery, 'jsonl'),
        csv: await exportOnce(orrery, 'csv'),
      };
      console.log(`${name}: ${JSON.stringify(results[name], null, 2)}`);
      await db.destroy();
      continue;
    }
    const withIndex = await measureAggregates(orrery, environments);
    const jsonl = await exportOnce(orrery, 'jsonl');
    const csv = await exportOnce(orrery, 'csv');
    const modelPrices = await time(orrery, '/api/v1/cost/model-prices');
    const someRun = (
      await db.selectFrom('runs').select('id').where('project_id', '=', project).limit(1).executeTakeFirstOrThrow()
    ).id;
    const runPrice = await time(orrery, '/api/v1/cost/run-price', { run_id: someRun });

    // The aggregates' SQL alone, with the index of migration 0016 and without it (left to the planner).
    const shapes = await capture(db, d, project);
    const sqlWithIndex = await sqlFigures(db, d, shapes);
    await orrery.stop().catch(() => {});
    stopped = true;
    await sql`DROP INDEX runs_analytics`.execute(db);
    await sql`ANALYZE`.execute(db);
    const sqlWithoutIndex = await sqlFigures(db, d, shapes.map(unhinted));
    results[name] = {
      loadSeconds: Math.round(loadSeconds),
      http: withIndex,
      jsonl,
      csv,
      modelPrices,
      runPrice,
      sqlWithIndex,
      sqlWithoutIndex,
    };
    console.log(`${name}: ${JSON.stringify(results[name], null, 2)}`);
    await db.destroy();
  } finally {
    if (!stopped) await orrery.stop().catch(() => {});
    await backend.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
console.log(JSON.stringify(results, null, 2));
