/**
 * Issue 7 benchmark: similarity search over 100,000 vectors of 384 and of 1,536 dimensions, on
 * SQLite and on PostgreSQL (a throwaway cluster). For each: writing the vectors to the `vectors`
 * table, loading them into the in-process index, building the usearch HNSW graph (in its worker
 * thread, as the server does), then 200 top-10 queries: latency p50/p95 of the index alone and of
 * the server's search path (index + the SQL check that the owners exist, filtered-search.ts), and
 * recall@10 against exact search (a scan of the same vectors). Also the exact scan's own latency.
 *
 *   npm run bench -- embeddings       (N=100000 DIMS=384,1536 BACKENDS=sqlite,postgres QUERIES=200)
 *
 * Issue 20 modes (`MODE`, default `search`, the above):
 *
 *   MODE=restart  (N=100000 DIMS=384, SQLite): build and save the graph of a partition; a fresh
 *                 registry (a restarted server) answers its first query; then write and delete
 *                 some vectors (CHANGES, default 2000: half new, half deleted) and restart again.
 *                 Per restart: time to that first answer, whether it came from the graph, and the
 *                 longest event-loop stall meanwhile (what every other request would wait).
 *   MODE=scalar   (N=100000 DIMS=1536 SCALARS=f32,f16,i8, no database): per scalar kind, the build
 *                 time, the graph's size (its saved file; usearch's memory is the same layout), the
 *                 process RSS, index p50/p95 and recall@10 against an exact scan, with the
 *                 server's ef for that size (searchExpansion) and with each of EFS (e.g.
 *                 EFS=128,256,512) on the same graph; EF_ADD sets ef_construction (default the
 *                 server's).
 *
 * Data: clustered like real embeddings (500 Gaussian centroids plus noise, normalised), from a
 * seeded generator so every run measures the same vectors; queries are fresh points near stored ones.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { availableParallelism, cpus, totalmem, tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import pg from 'pg';
import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
import { openDatabase, type OpenedDatabase } from '../src/db/open.ts';
import { openNotifier } from '../src/db/notify.ts';
import { VectorIndexes } from '../src/embeddings/index-registry.ts';
import { upsertVectors, type PartitionKey, type VectorRow } from '../src/embeddings/store.ts';
import { filteredSearch } from '../src/embeddings/filtered-search.ts';
import { normalise } from '../src/embeddings/vectors.ts';
import { LocalBlobStore } from '../src/blobs/local-store.ts';
import { authReads } from '../src/auth/reads.ts';
import { deleteVectors } from '../src/embeddings/store.ts';
import { PartitionIndex, DEFAULT_HNSW, searchExpansion } from '../src/embeddings/vector-index.ts';
import type { ScalarKind } from '../src/embeddings/graph-file.ts';

const N = Number(process.env.N ?? 100_000);
const DIMS = (process.env.DIMS ?? '384,1536').split(',').map(Number);
const BACKENDS = (process.env.BACKENDS ?? 'sqlite,postgres').split(',') as Array<'sqlite' | 'postgres'>;
const QUERIES = Number(process.env.QUERIES ?? 200);
const K = 10;
const CENTROIDS = 500;

/** mulberry32: a small seeded generator; Box–Muller for normals. */
function rng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const normal = () => Math.sqrt(-2 * Math.log(next() || 1e-12)) * Math.cos(2 * Math.PI * next());
  return { next, normal };
}

function dataset(dims: number, n: number, seed: number): Float32Array[] {
  const r = rng(seed);
  const centroids = Array.from({ length: CENTROIDS }, () => Float32Array.from({ length: dims }, () => r.normal()));
  return Array.from({ length: n }, () => {
    const c = centroids[Math.floor(r.next() * CENTROIDS)];
    const v = Float32Array.from(c, (x) => x + 0.6 * r.normal());
    normalise(v);
    return v;
  });
}

const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];
const ms = (t0: number) => performance.now() - t0;

/**
 * Each query's graph answer timed and compared with an exact scan of the same vectors: times (ms)
 * and recall@K. `truth` keeps the scans' answers across calls on the same vectors (a scan of a
 * million vectors takes a second).
 */
async function timedRecall(
  index: PartitionIndex,
  queries: Float32Array[],
  ef?: number,
  truth: Array<Set<string>> = [],
): Promise<{ times: number[]; recall: number }> {
  const times: number[] = [];
  let hits = 0;
  for (const [i, q] of queries.entries()) {
    const t = performance.now();
    const approx = await index.nearest(q, K, ef);
    times.push(ms(t));
    truth[i] ??= new Set(index.scan(q, K).map((h) => h.ownerId));
    hits += approx.filter((h) => truth[i].has(h.ownerId)).length;
  }
  return { times, recall: hits / (queries.length * K) };
}
const ownerId = (i: number) => `o${String(i).padStart(7, '0')}`;

interface Result {
  backend: string;
  dims: number;
  n: number;
  insertS: number;
  loadS: number;
  buildS: number;
  indexP50: number;
  indexP95: number;
  searchP50: number;
  searchP95: number;
  exactP95: number;
  recall: number;
  rssMb: number;
}

async function openBackend(
  backend: 'sqlite' | 'postgres',
  pgAdmin?: string,
): Promise<{ opened: OpenedDatabase; url?: string; cleanup: () => Promise<void> }> {
  if (backend === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'orrery-bench-emb-'));
    const opened = await openDatabase({ dataDir: dir });
    return {
      opened,
      cleanup: async () => {
        await opened.db.destroy();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const name = `bench_${Date.now().toString(36)}`;
  const admin = new pg.Client({ connectionString: pgAdmin });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(pgAdmin!);
  url.pathname = `/${name}`;
  const opened = await openDatabase({ dataDir: tmpdir(), databaseUrl: url.toString() });
  return {
    opened,
    url: url.toString(),
    cleanup: async () => {
      await opened.db.destroy();
    },
  };
}

async function measure(
  backend: 'sqlite' | 'postgres',
  dims: number,
  data: Float32Array[],
  queries: Float32Array[],
  pgAdmin?: string,
): Promise<Result> {
  const { opened, url, cleanup } = await openBackend(backend, pgAdmin);
  const scope = { account: 'bench', project: 'bench' };
  const key: PartitionKey = { scope, kind: 'object', type: 'text', model: `bench-${dims}` };
  const notifier = openNotifier(opened, url);
  const indexes = new VectorIndexes(opened.db, notifier, {
    exactBelow: 10_000,
    replicaId: 'bench',
    onError: (err) => console.error(err),
  });
  try {
    let t0 = performance.now();
    const BATCH = 1000;
    for (let i = 0; i < data.length; i += BATCH) {
      const rows: VectorRow[] = data.slice(i, i + BATCH).map((vector, j) => ({
        ownerKind: 'object',
        ownerId: ownerId(i + j),
        type: 'text',
        model: key.model,
        etag: 'e',
        vector,
      }));
      await opened.db.transaction().execute((trx) => upsertVectors(trx, scope, rows));
    }
    const insertS = ms(t0) / 1000;
    console.log(`  ${backend} ${dims}d: ${data.length} vectors written in ${insertS.toFixed(1)} s`);

    t0 = performance.now();
    const index = (await indexes.get(key, dims))!;
    const loadS = ms(t0) / 1000;
    t0 = performance.now();
    await index.ready();
    const buildS = ms(t0) / 1000;
    if (index.mode !== 'hnsw') throw new Error('the HNSW graph was not built');
    console.log(`  ${backend} ${dims}d: loaded in ${loadS.toFixed(1)} s, HNSW built in ${buildS.toFixed(1)} s`);

    const accept = async (ids: string[]) => {
      const rows = await opened.db
        .selectFrom('vectors')
        .select('owner_id')
        .where('project_id', '=', 'bench')
        .where('owner_kind', '=', 'object')
        .where('type', '=', 'text')
        .where('model', '=', key.model)
        .where('owner_id', 'in', ids.length ? ids : [''])
        .execute();
      return new Set(rows.map((r) => r.owner_id));
    };
    // Warm-up (JIT, SQLite pages, PostgreSQL plans).
    for (const q of queries.slice(0, 20)) {
      await index.nearest(q, K);
      await filteredSearch({ index, query: q, k: K, filter: { accept }, exactLimit: 10_000 });
    }
    const indexTimes: number[] = [];
    const searchTimes: number[] = [];
    const exactTimes: number[] = [];
    let hits = 0;
    for (const q of queries) {
      let t = performance.now();
      const approx = await index.nearest(q, K);
      indexTimes.push(ms(t));
      t = performance.now();
      const served = await filteredSearch({ index, query: q, k: K, filter: { accept }, exactLimit: 10_000 });
      searchTimes.push(ms(t));
      t = performance.now();
      const exact = index.scan(q, K);
      exactTimes.push(ms(t));
      const truth = new Set(exact.map((h) => h.ownerId));
      hits += approx.filter((h) => truth.has(h.ownerId)).length;
      if (served.hits.length !== K) throw new Error(`the search path answered ${served.hits.length} hits`);
    }
    const r: Result = {
      backend,
      dims,
      n: data.length,
      insertS,
      loadS,
      buildS,
      indexP50: pct(indexTimes, 50),
      indexP95: pct(indexTimes, 95),
      searchP50: pct(searchTimes, 50),
      searchP95: pct(searchTimes, 95),
      exactP95: pct(exactTimes, 95),
      recall: hits / (queries.length * K),
      rssMb: Math.round(process.memoryUsage().rss / 1e6),
    };
    console.log(
      `  ${backend} ${dims}d: top-${K} index p50 ${r.indexP50.toFixed(2)} ms p95 ${r.indexP95.toFixed(2)} ms; search path p50 ${r.searchP50.toFixed(2)} ms p95 ${r.searchP95.toFixed(2)} ms; exact scan p95 ${r.exactP95.toFixed(1)} ms; recall@${K} ${r.recall.toFixed(4)}; RSS ${r.rssMb} MB`,
    );
    return r;
  } finally {
    indexes.close();
    await notifier.close();
    await cleanup();
  }
}

const MODE = process.env.MODE ?? 'search';
const machine = () =>
  `machine: ${cpus()[0]?.model ?? 'unknown CPU'}, ${availableParallelism()} cores, ${Math.round(totalmem() / 1e9)} GB; Node ${process.version}; ${new Date().toISOString()}`;

async function restartMode(): Promise<void> {
  const n = Number(process.env.N ?? 100_000);
  const dims = Number(process.env.DIMS ?? 384);
  console.log(`${machine()}; MODE=restart N=${n} DIMS=${dims}`);
  const all = dataset(dims, n + 1000 + QUERIES, dims);
  const queries = all.slice(n + 1000);
  const { opened, cleanup } = await openBackend('sqlite');
  const dir = mkdtempSync(join(tmpdir(), 'orrery-bench-graphs-'));
  const scope = { account: 'bench', project: 'bench' };
  const key: PartitionKey = { scope, kind: 'object', type: 'text', model: `bench-${dims}` };
  const notifier = openNotifier(opened);
  const events: string[] = [];
  let saved: () => void = () => {};
  const open = () =>
    new VectorIndexes(opened.db, notifier, {
      exactBelow: 10_000,
      replicaId: 'bench',
      onError: (err) => console.error(err),
      graphs: {
        store: new LocalBlobStore(join(dir, 'vector-graphs'), { durable: false }),
        prefix: '',
        dialect: 'sqlite',
        projectSettings: authReads(opened.db, opened.dialect).projectSettings,
        // The benchmark's partition belongs to no configured project: the periodic sweep would delete its graph.
        pruneEveryMs: 0,
        events: (e, _p, detail) => {
          events.push(e);
          console.log(`  event ${e}${detail ? ` (${detail})` : ''}`);
          if (e === 'saved') saved();
        },
      },
    });
  try {
    let t0 = performance.now();
    for (let i = 0; i < n; i += 1000) {
      const rows: VectorRow[] = all.slice(i, Math.min(n, i + 1000)).map((vector, j) => ({
        ownerKind: 'object',
        ownerId: ownerId(i + j),
        type: 'text',
        model: key.model,
        etag: 'e',
        vector,
      }));
      await opened.db.transaction().execute((trx) => upsertVectors(trx, scope, rows));
    }
    console.log(`  ${n} vectors written in ${(ms(t0) / 1000).toFixed(1)} s`);
    let indexes = open();
    t0 = performance.now();
    const done = new Promise<void>((r) => (saved = r));
    const first = (await indexes.get(key, dims))!;
    const loadS = ms(t0) / 1000;
    const buildStall = monitorEventLoopDelay({ resolution: 5 });
    buildStall.enable();
    t0 = performance.now();
    await done;
    const buildS = ms(t0) / 1000;
    buildStall.disable();
    const fileMb = statSync(join(dir, 'vector-graphs')).isDirectory()
      ? Math.round(dirSize(join(dir, 'vector-graphs')) / 1e6)
      : 0;
    console.log(
      `  first start: loaded from the table in ${loadS.toFixed(1)} s, graph built and saved in ${buildS.toFixed(1)} s (file ${fileMb} MB), mode ${first.mode}; longest event-loop stall during build + save ${(buildStall.max / 1e6).toFixed(0)} ms`,
    );
    indexes.close();
    // Two restarts (a new registry on the same database and data folder, what a restarted server
    // does on its first similarity query): first with nothing written since the save, then after
    // CHANGES/2 new vectors and CHANGES/2 deleted (replayed onto the saved graph).
    const half = Math.floor(Number(process.env.CHANGES ?? 2000) / 2);
    const results: Array<Record<string, unknown>> = [];
    for (const changes of [0, 2 * half]) {
      if (changes) {
        const extra: VectorRow[] = all.slice(n, n + half).map((vector, j) => ({
          ownerKind: 'object',
          ownerId: ownerId(n + j),
          type: 'text',
          model: key.model,
          etag: 'e',
          vector,
        }));
        await upsertVectors(opened.db, scope, extra);
        for (let i = 0; i < half; i++) await deleteVectors(opened.db, scope, 'object', ownerId(i * 7), ['text']);
      }
      events.length = 0;
      indexes = open();
      const rssBefore = process.memoryUsage().rss;
      // The longest the event loop was held during the restart (what every other request waits).
      const stall = monitorEventLoopDelay({ resolution: 5 });
      stall.enable();
      t0 = performance.now();
      const index = (await indexes.get(key, dims))!;
      const hit = await index.nearest(queries[0], K);
      const firstS = ms(t0) / 1000;
      stall.disable();
      const stallMs = stall.max / 1e6;
      console.log(
        `  restart (${changes} changes): first answer in ${firstS.toFixed(2)} s, from ${index.mode} (${hit.length} hits), ${index.size} vectors; longest event-loop stall ${stallMs.toFixed(0)} ms; events ${events.join(', ')}; RSS +${Math.round((process.memoryUsage().rss - rssBefore) / 1e6)} MB`,
      );
      const { times, recall } = await timedRecall(index, queries);
      console.log(
        `  after restart: index p50 ${pct(times, 50).toFixed(2)} ms p95 ${pct(times, 95).toFixed(2)} ms, recall@${K} ${recall.toFixed(4)}`,
      );
      results.push({
        changes,
        firstS,
        stallMs,
        fromGraph: index.mode === 'hnsw',
        p50: pct(times, 50),
        p95: pct(times, 95),
        recall,
      });
      indexes.close();
    }
    console.log(
      JSON.stringify({
        mode: 'restart',
        n,
        dims,
        loadS,
        buildS,
        fileMb,
        restarts: results,
        date: new Date().toISOString(),
      }),
    );
  } finally {
    await notifier.close();
    await cleanup();
    rmSync(dir, { recursive: true, force: true });
  }
}

function dirSize(d: string): number {
  let total = 0;
  for (const e of require('node:fs').readdirSync(d, { withFileTypes: true }) as Array<{
    name: string;
    isDirectory(): boolean;
  }>) {
    total += e.isDirectory() ? dirSize(join(d, e.name)) : statSync(join(d, e.name)).size;
  }
  return total;
}

async function scalarMode(): Promise<void> {
  const n = Number(process.env.N ?? 100_000);
  const dims = Number(process.env.DIMS ?? 1536);
  const scalars = (process.env.SCALARS ?? 'f32,f16,i8').split(',') as ScalarKind[];
  const efs = (process.env.EFS ?? '').split(',').filter(Boolean).map(Number);
  const hnsw = { ...DEFAULT_HNSW, expansionAdd: Number(process.env.EF_ADD ?? DEFAULT_HNSW.expansionAdd) };
  console.log(
    `${machine()}; MODE=scalar N=${n} DIMS=${dims} SCALARS=${scalars.join(',')} ef_construction ${hnsw.expansionAdd}`,
  );
  const all = dataset(dims, n + QUERIES, dims);
  const queries = all.slice(n);
  const rows: string[] = [];
  const truth: Array<Set<string>> = []; // the same vectors for every kind
  for (const scalar of scalars) {
    const index = new PartitionIndex(dims, 10_000, hnsw, (err) => console.error(err), { scalar, wantGraph: () => {} });
    for (let i = 0; i < n; i++) index.upsert(ownerId(i), all[i]);
    const rssBefore = process.memoryUsage().rss;
    let graphMb = 0;
    const t0 = performance.now();
    await index.startBuild(async (path) => {
      graphMb = statSync(path).size / 1e6;
    });
    const buildS = ms(t0) / 1000;
    const rssMb = Math.round(process.memoryUsage().rss / 1e6);
    for (const q of queries.slice(0, 20)) await index.nearest(q, K);
    const growth = Math.round((process.memoryUsage().rss - rssBefore) / 1e6);
    // The server's ef for this size first, then any asked for (EFS) on the same graph.
    for (const ef of [undefined, ...efs]) {
      const { times, recall } = await timedRecall(index, queries, ef, truth);
      const efShown = ef ?? `${searchExpansion(n, hnsw.expansionSearch)} (server)`;
      const row = `| ${scalar} | ${dims} | ${n} | ${buildS.toFixed(1)} s | ${graphMb.toFixed(0)} MB | ${growth} MB (RSS ${rssMb} MB) | ${efShown} | ${pct(times, 50).toFixed(2)} / ${pct(times, 95).toFixed(2)} ms | ${recall.toFixed(4)} |`;
      console.log(row);
      rows.push(row);
    }
    index.close();
  }
  console.log(
    '\n| scalar | dims | vectors | HNSW build | graph (saved file) | RSS growth from the build | ef | index p50 / p95 | recall@10 |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const r of rows) console.log(r);
}

if (MODE === 'restart') {
  await restartMode();
  process.exit(0);
}
if (MODE === 'scalar') {
  await scalarMode();
  process.exit(0);
}

// The test harness's throwaway cluster (plain JavaScript, so typed here).
const { startCluster } = (await import('../scripts/postgres-cluster.mjs' as string)) as {
  startCluster(): Promise<{ url: string; stop(): void }>;
};
const cluster = BACKENDS.includes('postgres') ? await startCluster() : undefined;
try {
  console.log(
    `machine: ${cpus()[0]?.model ?? 'unknown CPU'}, ${availableParallelism()} cores, ${Math.round(totalmem() / 1e9)} GB; N=${N}, queries ${QUERIES}, k=${K}`,
  );
  const results: Result[] = [];
  for (const dims of DIMS) {
    const t0 = performance.now();
    const all = dataset(dims, N + QUERIES, dims);
    const data = all.slice(0, N);
    const queries = all.slice(N);
    console.log(`${dims} dimensions: ${N} vectors generated in ${(ms(t0) / 1000).toFixed(1)} s`);
    for (const backend of BACKENDS) results.push(await measure(backend, dims, data, queries, cluster?.url));
  }
  console.log(
    '\n| backend | dims | vectors | write | load | HNSW build | index p50 / p95 | search path p50 / p95 | exact scan p95 | recall@10 |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|---|');
  for (const r of results) {
    console.log(
      `| ${r.backend} | ${r.dims} | ${r.n} | ${r.insertS.toFixed(1)} s | ${r.loadS.toFixed(1)} s | ${r.buildS.toFixed(1)} s | ${r.indexP50.toFixed(2)} / ${r.indexP95.toFixed(2)} ms | ${r.searchP50.toFixed(2)} / ${r.searchP95.toFixed(2)} ms | ${r.exactP95.toFixed(1)} ms | ${r.recall.toFixed(3)} |`,
    );
  }
  console.log(JSON.stringify({ date: new Date().toISOString(), results }));
} finally {
  cluster?.stop();
}
