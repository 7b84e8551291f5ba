/**
 * Issue 4 benchmark: run search at a million runs, on SQLite and on PostgreSQL.
 *
 * The runs arrive over a year in the order they are stored (as in a real project), seeded, so
 * both backends hold the same data.
 *
 * For each backend: start Orrery (it migrates and bootstraps), stop it, load RUNS runs straight
 * into its database through the store's own bulk insert (`insertRuns`: the same rows, tags and
 * full-text entries the service writes; secondary indexes are dropped during the load and rebuilt
 * from their saved definitions), ANALYZE, start Orrery again, then time over HTTP, one request at
 * a time after a warm-up:
 *   list   GET /runs with a mix of filters (status, model, tag, interaction, environment), one page
 *   query  POST /runs/search: a phrase AND a range AND a boolean
 *   facets the same query with three facets (status, modelId, execution_time buckets) and its hits
 *
 *   npm run bench -- runs-search              RUNS=1000000 ITER=200 BACKENDS=sqlite,postgres
 *   ORRERY_BENCH_PG_URL=postgres://…          use that server instead of a throwaway cluster
 *
 * Targets: list p95 < 50 ms, query p95 < 150 ms, query + 3 facets p95 < 300 ms.
 *
 * SCORES=1: then one `quality` score (a number) is given to every run straight in the database,
 * the server restarted, and the same requests timed again (with the runs now carrying their
 * scores), plus a query on the score (`scores.quality:[0.8 TO *] AND` the query): the p95 with the
 * scores against the p95 without them, same database, same requests (target: within 20 %); a
 * control measure after a plain restart comes first, for the spread of two measures alike.
 */
import { rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { Kysely, PostgresDialect, SqliteDialect, sql } from 'kysely';
import { newId } from '../src/db/ids.ts';
import { postgresDialect, sqliteDialect, type OrreryDialect } from '../src/db/dialect.ts';
import type { Database } from '../src/db/schema.ts';
import type { RunDoc, RunRow } from '../src/runs/model.ts';
import { insertRuns, type NewRun } from '../src/runs/search-index.ts';
import { encodeRun } from '../src/runs/store.ts';
import { machine, percentile, startOrrery, type Child } from './lib/processes.ts';
import { benchDatabase } from './lib/pg-bench.ts';

const RUNS = Number(process.env.RUNS ?? 1_000_000);
const ITER = Number(process.env.ITER ?? 200);
const WARMUP = Number(process.env.WARMUP ?? 20);
const BATCH = 2000;
const SCORES = process.env.SCORES === '1';
const BACKENDS = (process.env.BACKENDS ?? 'sqlite,postgres')
  .split(',')
  .map((s) => s.trim())
  .filter(Boolean);

// ---- data -----------------------------------------------------------------------------------

/** A seeded PRNG, so both backends get the same runs. */
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

const SYLLABLES = [
  'ka',
  'lo',
  'mi',
  'ne',
  'ru',
  'sa',
  'ti',
  'vo',
  'ze',
  'an',
  'el',
  'or',
  'us',
  'ix',
  'qu',
  'br',
  'st',
  'pl',
  'gr',
  'ch',
];
/** 5,000 words drawn Zipf-like (s = 1.1), plus phrases planted in ~1–2 % of the runs each. */
const WORDS = Array.from({ length: 5000 }, (_, i) => {
  let w = '';
  for (let n = i + 7; n > 0; n = Math.floor(n / SYLLABLES.length)) w += SYLLABLES[n % SYLLABLES.length];
  return w;
});
const ZIPF = (() => {
  const weights = WORDS.map((_, i) => 1 / (i + 1) ** 1.1);
  const total = weights.reduce((a, b) => a + b, 0);
  let acc = 0;
  return weights.map((w) => (acc += w / total));
})();
export const PHRASES = [
  'quarterly report',
  'customer churn',
  'refund request',
  'shipping delay',
  'password reset',
  'invoice dispute',
  'contract renewal',
  'product recall',
  'security incident',
  'onboarding checklist',
];
const MODELS = [
  'gpt-4o',
  'gpt-4o-mini',
  'claude-3-5-sonnet',
  'claude-3-haiku',
  'llama3-70b',
  'mistral-large',
  'gemini-1.5-pro',
  'o1-mini',
];
const TAGS = Array.from({ length: 30 }, (_, i) => `tag-${i}`);
const INTERACTIONS = Array.from({ length: 40 }, (_, i) => ({
  id: `ix-${String(i).padStart(3, '0')}`,
  name: `Interaction ${i}`,
}));
const ENVIRONMENTS = Array.from({ length: 4 }, (_, i) => ({
  id: `env-${i}`,
  name: `Environment ${i}`,
  provider: 'openai',
}));
const YEAR = 365 * 24 * 3600 * 1000;
const END = Date.parse('2026-01-01T00:00:00.000Z');

function generator(scope: { account: { id: string; name: string }; project: { id: string; name: string } }) {
  const r = prng(4);
  const skew = <T>(xs: readonly T[]) => xs[Math.floor(xs.length * r() ** 2)];
  const word = () => {
    const x = r();
    let lo = 0;
    let hi = ZIPF.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (ZIPF[mid] < x) lo = mid + 1;
      else hi = mid;
    }
    return WORDS[lo];
  };
  const text = (min: number, max: number) => {
    const words = Array.from({ length: min + Math.floor(r() * (max - min)) }, word);
    if (r() < 0.12) words.splice(Math.floor(r() * words.length), 0, PHRASES[Math.floor(r() * PHRASES.length)]);
    return words.join(' ');
  };
  const recent: string[] = [];
  let made = 0;
  return (): NewRun => {
    // Runs arrive over a year in the order they are stored, as in a real project (ids are
    // time-ordered too): the table's physical order follows time, which PostgreSQL's planner
    // sees (correlation) and which newest-first walks of the indexes profit from.
    const created = END - YEAR + Math.floor((made++ / RUNS) * YEAR) + Math.floor(r() * 1000);
    const execution = Math.round(Math.exp(7 + r() * 2.5));
    const ix = skew(INTERACTIONS);
    const env = skew(ENVIRONMENTS);
    const model = skew(MODELS);
    const tags = [...new Set(Array.from({ length: Math.floor(r() * 4) }, () => skew(TAGS)))];
    const failed = r() < 0.15;
    const prompt = text(20, 60);
    const doc: RunDoc = {
      result: failed ? [] : [{ type: 'text', value: text(20, 120) }],
      parameters: {
        topic: text(3, 8),
        customer: { id: `c-${Math.floor(r() * 5000)}`, name: text(2, 3) },
        count: Math.floor(r() * 10),
      },
      prompt: [
        { role: 'system', content: 'You are a helpful assistant for support tickets.' },
        { role: 'user', content: prompt },
      ],
      config: { environment: env.id, model, temperature: 0.7, max_tokens: 1024 },
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
      interaction: { ...ix, endpoint: ix.name.toLowerCase().replace(/ /g, '-'), version: 1 },
      environment: env,
      account: scope.account,
      project: scope.project,
      created_by: 'apikey:bench',
    };
    const id = newId();
    const parent = recent.length && r() < 0.05 ? recent[Math.floor(r() * recent.length)] : null;
    if (recent.length < 1000) recent.push(id);
    else recent[Math.floor(r() * 1000)] = id;
    const row = {
      id,
      account_id: scope.account.id,
      project_id: scope.project.id,
      interaction_id: ix.id,
      environment_id: env.id,
      model_id: model,
      status: failed ? 'failed' : 'completed',
      parent_id: parent,
      finish_reason: failed ? null : r() < 0.9 ? 'stop' : 'length',
      execution_time: execution,
      token_prompt: 50 + Math.floor(r() * 500),
      token_result: failed ? null : 20 + Math.floor(r() * 800),
      token_total: null,
      tags,
      created_at: new Date(created).toISOString(),
      updated_at: new Date(created + execution).toISOString(),
      doc,
      executor: null,
    } as RunRow;
    return { row, tags };
  };
}

// ---- loading --------------------------------------------------------------------------------

interface Backend {
  name: 'sqlite' | 'postgres';
  env: Record<string, string>;
  open(orrery: { dataDir: string }): { db: Kysely<Database>; d: OrreryDialect };
  stop(): Promise<void>;
}

async function load(db: Kysely<Database>, d: OrreryDialect): Promise<{ seconds: number; indexes: string[] }> {
  const project = await db.selectFrom('projects').select(['id', 'name', 'account_id']).executeTakeFirstOrThrow();
  const account = await db
    .selectFrom('accounts')
    .select(['id', 'name'])
    .where('id', '=', project.account_id)
    .executeTakeFirstOrThrow();
  const next = generator({ account, project: { id: project.id, name: project.name } });
  // Secondary indexes are rebuilt after the load from their own saved definitions.
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
  const keep = new Set(['runs_search_rowid']); // SQLite: the next search_rowid is read from it
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
  const loaded = performance.now();
  for (const x of defs) if (!keep.has(x.name)) await sql.raw(x.def).execute(db);
  if (d.name === 'sqlite') await sql`ANALYZE`.execute(db);
  else await sql`VACUUM ANALYZE`.execute(db);
  console.log(
    `  ${d.name}: loaded in ${((loaded - started) / 1000).toFixed(0)} s, indexes and ANALYZE in ${((performance.now() - loaded) / 1000).toFixed(0)} s`,
  );
  return { seconds: (performance.now() - started) / 1000, indexes: defs.map((x) => x.def) };
}

// ---- measuring ------------------------------------------------------------------------------

/** The requests' random choices: reset for each backend, so both get the same requests. */
let r = prng(9);
const pick = <T>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)];

function listUrl(): string {
  const q = new URLSearchParams();
  switch (Math.floor(r() * 5)) {
    case 0:
      q.set('status', 'completed');
      q.set('model', pick(MODELS));
      break;
    case 1:
      q.set('tag', pick(TAGS));
      break;
    case 2:
      q.set('interaction', pick(INTERACTIONS).id);
      q.set('status', pick(['completed', 'failed']));
      break;
    case 3:
      q.set('status', 'completed');
      q.set('model', pick(MODELS));
      q.set('tag', pick(TAGS));
      break;
    default:
      q.set('environment', pick(ENVIRONMENTS).id);
      q.set('tag', `${pick(TAGS)},${pick(TAGS)}`);
      break;
  }
  return `/api/v1/runs?${q.toString()}&limit=100`;
}

const luceneQuery = () =>
  `"${pick(PHRASES)}" AND execution_time:[500 TO 5000] AND (status:failed OR modelId:${pick(MODELS)})`;
const FACETS = {
  statuses: { type: 'string', path: 'status' },
  models: { type: 'string', path: 'modelId' },
  took: { type: 'number', path: 'execution_time', boundaries: [0, 500, 1000, 2000, 5000, 10_000], default: 'longer' },
};

async function time(
  orrery: Child & { adminKey: string },
  make: () => { path: string; body?: unknown },
  check: (body: any) => void,
) {
  const samples: number[] = [];
  for (let i = 0; i < WARMUP + ITER; i++) {
    const { path, body } = make();
    const started = performance.now();
    const res = await fetch(orrery.url + path, {
      method: body ? 'POST' : 'GET',
      headers: { authorization: `Bearer ${orrery.adminKey}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const json = await res.json();
    const ms = performance.now() - started;
    if (!res.ok) throw new Error(`${path}: ${res.status} ${JSON.stringify(json)}`);
    check(json);
    if (i >= WARMUP) samples.push(ms);
  }
  samples.sort((a, b) => a - b);
  return { p50: percentile(samples, 50), p95: percentile(samples, 95) };
}

async function measure(orrery: Child & { adminKey: string }, scoredToo = false) {
  r = prng(9);
  const list = await time(
    orrery,
    () => ({ path: listUrl() }),
    (b) => {
      if (!Array.isArray(b)) throw new Error(`not a list: ${JSON.stringify(b).slice(0, 200)}`);
    },
  );
  let hits = 0;
  const query = await time(
    orrery,
    () => ({ path: '/api/v1/runs/search', body: { query: luceneQuery(), limit: 100 } }),
    (b) => {
      hits += b.length;
    },
  );
  let total = 0;
  const facets = await time(
    orrery,
    () => ({ path: '/api/v1/runs/search', body: { query: luceneQuery(), facets: FACETS, limit: 100 } }),
    (b) => {
      total += b.count.total;
      if (b.facet.statuses.buckets.length < 1) throw new Error('no facet buckets');
    },
  );
  let scoredHits = 0;
  const scored = scoredToo
    ? await time(
        orrery,
        () => ({
          path: '/api/v1/runs/search',
          body: { query: `scores.quality:[0.8 TO *] AND ${luceneQuery()}`, limit: 100 },
        }),
        (b) => {
          scoredHits += b.length;
        },
      )
    : undefined;
  return {
    list,
    query,
    facets,
    ...(scored ? { scored, avgScoredHits: scoredHits / (WARMUP + ITER) } : {}),
    avgHits: hits / (WARMUP + ITER),
    avgMatches: total / (WARMUP + ITER),
  };
}

/** One `quality` score for every run, written as the scores' store writes a latest score. */
async function scoreEveryRun(db: Kysely<Database>, d: OrreryDialect): Promise<number> {
  const started = performance.now();
  const value = d.name === 'sqlite' ? sql`(abs(random()) % 1000) / 1000.0` : sql`floor(random() * 1000) / 1000.0`;
  await sql`INSERT INTO score_names (project_id, name, kind, created_at)
    SELECT DISTINCT project_id, 'quality', 'number', '2026-01-01T00:00:00.000Z' FROM runs`.execute(db);
  await sql`INSERT INTO run_scores (id, account_id, project_id, run_id, name, kind, num_value, text_value, comment,
      source, evaluator_id, latest, created_by, created_at)
    SELECT 's' || id, account_id, project_id, id, 'quality', 'number', ${value}, NULL, NULL, 'api', NULL, 1, 'bench',
      created_at FROM runs`.execute(db);
  await sql.raw(d.name === 'sqlite' ? 'ANALYZE' : 'VACUUM ANALYZE').execute(db);
  return (performance.now() - started) / 1000;
}

// ---- backends -------------------------------------------------------------------------------

async function sqliteBackend(): Promise<Backend> {
  let handle: SQLite.Database | undefined;
  return {
    name: 'sqlite',
    env: {},
    open: ({ dataDir }) => {
      handle = new SQLite(join(dataDir, 'orrery.db'));
      handle.pragma('journal_mode = WAL');
      handle.pragma('synchronous = NORMAL');
      handle.pragma('cache_size = -262144');
      return { db: new Kysely<Database>({ dialect: new SqliteDialect({ database: handle }) }), d: sqliteDialect };
    },
    stop: async () => {},
  };
}

/**
 * The throwaway cluster starts with PostgreSQL's defaults (shared_buffers 128 MB); a server that
 * holds a 7 GB database gets a real buffer pool, as any deployment would.
 */
const PG_SETTINGS = {
  shared_buffers: process.env.PG_SHARED_BUFFERS ?? '4GB',
  effective_cache_size: '12GB',
  work_mem: '32MB',
};

async function postgresBackend(): Promise<Backend> {
  const database = await benchDatabase(PG_SETTINGS);
  const url = new URL(database.url);
  return {
    name: 'postgres',
    env: { ORRERY_DATABASE_URL: url.toString() },
    open: () => ({
      db: new Kysely<Database>({
        dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: url.toString(), max: 2 }) }),
      }),
      d: postgresDialect,
    }),
    stop: () => database.drop(),
  };
}

async function sizeOf(backend: Backend, db: Kysely<Database>, dataDir: string): Promise<string> {
  if (backend.name === 'sqlite') {
    const bytes = ['orrery.db', 'orrery.db-wal'].reduce(
      (n, f) => n + (statSync(join(dataDir, f), { throwIfNoEntry: false })?.size ?? 0),
      0,
    );
    return `${(bytes / 2 ** 30).toFixed(2)} GiB`;
  }
  const { rows } = await sql<{ b: number }>`SELECT pg_database_size(current_database())::bigint AS b`.execute(db);
  return `${(Number(rows[0].b) / 2 ** 30).toFixed(2)} GiB`;
}

console.log(
  `runs-search: ${RUNS} runs, ${ITER} timed requests per measure after ${WARMUP} warm-up; ${machine()}; ${new Date().toISOString()}`,
);
const KEEP = process.env.KEEP === '1';
const results: Record<string, unknown> = {};
for (const name of BACKENDS) {
  const reuse = name === 'sqlite' ? process.env.SQLITE_DIR : process.env.PG_REUSE_URL;
  const backend = reuse
    ? reused(name as 'sqlite' | 'postgres', reuse)
    : name === 'postgres'
      ? await postgresBackend()
      : await sqliteBackend();
  let orrery = await startOrrery({
    ...backend.env,
    ...(reuse && name === 'sqlite' ? { ORRERY_DATA_DIR: reuse } : {}),
    ORRERY_LOG_LEVEL: 'warn',
  });
  const dataDir = reuse && name === 'sqlite' ? reuse : orrery.dataDir;
  try {
    let load_: Record<string, unknown> = { reused: reuse };
    if (!reuse) {
      // Stop the server during the load (its pool and sweepers stay out of the way); keep the folder.
      orrery.proc.kill('SIGTERM');
      await new Promise((r) => orrery.proc.once('exit', r));
      const { db, d } = backend.open({ dataDir });
      const loaded = await load(db, d);
      load_ = { loadSeconds: Math.round(loaded.seconds), size: await sizeOf(backend, db, dataDir) };
      await db.destroy();
      const again = await startOrrery({ ...backend.env, ORRERY_DATA_DIR: dataDir, ORRERY_LOG_LEVEL: 'warn' });
      orrery = { ...again, stop: () => again.stop() };
    }
    const m = await measure(orrery);
    results[name] = { ...load_, ...m };
    console.log(`${name}: ${JSON.stringify(results[name])}`);
    if (SCORES) {
      // The control: the same requests after a restart without any change, so the ratios below
      // are read against the spread of two measures of the same database.
      orrery.proc.kill('SIGTERM');
      await new Promise((r) => orrery.proc.once('exit', r));
      const control = await startOrrery({ ...backend.env, ORRERY_DATA_DIR: dataDir, ORRERY_LOG_LEVEL: 'warn' });
      orrery = { ...control, stop: () => control.stop() };
      const repeated = await measure(orrery);
      const controlRatio = (k: 'list' | 'query' | 'facets') => +(repeated[k].p95 / m[k].p95).toFixed(2);
      results[`${name} again (control)`] = {
        ...repeated,
        p95Ratio: { list: controlRatio('list'), query: controlRatio('query'), facets: controlRatio('facets') },
      };
      console.log(`${name} again: ${JSON.stringify(results[`${name} again (control)`])}`);
      orrery.proc.kill('SIGTERM');
      await new Promise((r) => orrery.proc.once('exit', r));
      const { db, d } = backend.open({ dataDir });
      const scoreSeconds = await scoreEveryRun(db, d);
      await db.destroy();
      const again = await startOrrery({ ...backend.env, ORRERY_DATA_DIR: dataDir, ORRERY_LOG_LEVEL: 'warn' });
      orrery = { ...again, stop: () => again.stop() };
      const withScores = await measure(orrery, true);
      const ratio = (k: 'list' | 'query' | 'facets') => +(withScores[k].p95 / m[k].p95).toFixed(2);
      results[`${name} with a score on every run`] = {
        scoreSeconds: Math.round(scoreSeconds),
        ...withScores,
        p95Ratio: { list: ratio('list'), query: ratio('query'), facets: ratio('facets') },
      };
      console.log(`${name} with scores: ${JSON.stringify(results[`${name} with a score on every run`])}`);
    }
  } finally {
    await orrery.stop().catch(() => {});
    if (KEEP || reuse) {
      console.log(
        `  kept: ${name === 'sqlite' ? `SQLITE_DIR=${dataDir}` : `PG_REUSE_URL=${backend.env.ORRERY_DATABASE_URL}`}`,
      );
      if (name === 'postgres' && !reuse) rmSync(dataDir, { recursive: true, force: true });
    } else {
      await backend.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }
}
console.log(JSON.stringify(results, null, 2));

/** A database loaded by an earlier run with KEEP=1. */
function reused(name: 'sqlite' | 'postgres', where: string): Backend {
  return {
    name,
    env: name === 'postgres' ? { ORRERY_DATABASE_URL: where } : {},
    open: () => {
      throw new Error('reused');
    },
    stop: async () => {},
  };
}
