/**
 * Issue 5 benchmark. Servers run as child processes (so the RSS measured is the server's own):
 *
 * 1. Transfer: SIZE_MB (1 GiB) uploaded through a signed PUT URL, then downloaded through a
 *    signed GET URL; throughput each way and the server's RSS (sampled every 10 ms from /proc)
 *    against its value just before. The ETag and a SHA-256 of the downloaded bytes are checked.
 *    In the same run, as baselines (the machine is noisy): the disk written by plain Node with
 *    and without fdatasync, and a bare Node HTTP server doing the least an upload must do
 *    (bench/objects-bare.ts). Durable uploads (the default) and ORRERY_BLOB_FSYNC=false.
 * 2. Find: OBJECTS (100,000) objects created through the API, then `POST /objects/find` with
 *    `properties.*` filters, one request at a time; p50/p95/p99 per query shape, and `count`.
 *
 *   node --import tsx bench/objects.ts                       (transfer, then find on both databases)
 *   PARTS=find DIALECTS=sqlite OBJECTS=20000 node --import tsx bench/objects.ts
 */
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { finished } from 'node:stream/promises';
import { openFileWriter } from '../src/blobs/file-writer.ts';
import { machine, percentile, startChild, startOrrery } from './lib/processes.ts';
// @ts-expect-error: a plain .mjs helper of the test scripts, without types
import { startCluster } from '../scripts/postgres-cluster.mjs';

const SIZE = Number(process.env.SIZE_MB ?? 1024) * 1024 * 1024;
const OBJECTS = Number(process.env.OBJECTS ?? 100_000);
const QUERIES = Number(process.env.QUERIES ?? 200);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
/** Which parts: transfer (once, on the first database: blobs do not depend on it) and find. */
const PARTS = (process.env.PARTS ?? 'transfer,find').split(',');
const DIALECTS = (process.env.DIALECTS ?? 'sqlite,postgres')
  .split(',')
  .map((d) => d.trim())
  .filter(Boolean);
const CHUNK = 1024 * 1024;
const MB = 1e6;

type Orrery = Awaited<ReturnType<typeof startOrrery>>;

const rssOf = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;

/** Samples the server's RSS every 10 ms until stopped; answers the peak. */
function rssSampler(pid: number) {
  let peak = rssOf(pid);
  const timer = setInterval(() => {
    peak = Math.max(peak, rssOf(pid));
  }, 10);
  return { stop: () => (clearInterval(timer), Math.max(peak, rssOf(pid))) };
}

async function api(o: Orrery, method: string, path: string, body?: unknown): Promise<any> {
  const r = await fetch(o.url + path, {
    method,
    headers: {
      authorization: `Bearer ${o.adminKey}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${text}`);
  return JSON.parse(text);
}

/** 16 MiB of random bytes, cycled: incompressible, and cheap to produce at any size. */
const POOL = randomBytes(16 * CHUNK);
const chunkAt = (offset: number, size: number) => {
  const start = offset % POOL.length;
  return POOL.subarray(start, Math.min(start + size, POOL.length));
};

function expectedSha(size: number): string {
  const h = createHash('sha256');
  for (let off = 0; off < size;) {
    const c = chunkAt(off, Math.min(CHUNK, size - off));
    h.update(c);
    off += c.length;
  }
  return h.digest('hex');
}

function put(url: string, size: number): Promise<{ status: number; etag: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method: 'PUT', headers: { 'content-length': String(size), 'content-type': 'application/octet-stream' } },
      (res) => {
        res.resume();
        res.on('end', () =>
          resolve({ status: res.statusCode!, etag: (res.headers.etag as string | undefined)?.replace(/"/g, '') }),
        );
      },
    );
    req.on('error', reject);
    let off = 0;
    const write = () => {
      while (off < size) {
        const c = chunkAt(off, Math.min(CHUNK, size - off));
        off += c.length;
        if (!req.write(c)) return req.once('drain', write);
      }
      req.end();
    };
    write();
  });
}

function get(url: string): Promise<{ status: number; bytes: number; sha: string }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, (res) => {
        const h = createHash('sha256');
        let bytes = 0;
        res.on('data', (c: Buffer) => {
          bytes += c.length;
          h.update(c);
        });
        res.on('end', () => resolve({ status: res.statusCode!, bytes, sha: h.digest('hex') }));
        res.on('error', reject);
      })
      .on('error', reject);
  });
}

interface Transfer {
  upload_MBps: number;
  download_MBps: number;
  upload_rss_growth_MB?: number;
  download_rss_growth_MB?: number;
  rss_base_MB?: number;
  rss_peak_MB?: number;
}

/** One upload and one download of SIZE bytes; checks the ETag and the SHA-256 of what came back. */
async function roundTrip(
  urls: { put: string; get: () => Promise<string> },
  pid: number | undefined,
  sha: string,
): Promise<Transfer> {
  const upBase = pid ? rssOf(pid) : 0;
  let rss = pid ? rssSampler(pid) : undefined;
  let t = performance.now();
  const putRes = await put(urls.put, SIZE);
  const upSeconds = (performance.now() - t) / 1000;
  const upPeak = rss?.stop() ?? 0;
  if (putRes.status !== 200 || putRes.etag !== sha)
    throw new Error(`upload: ${putRes.status}, etag ${putRes.etag} (expected ${sha})`);
  const getUrl = await urls.get();
  const downBase = pid ? rssOf(pid) : 0;
  rss = pid ? rssSampler(pid) : undefined;
  t = performance.now();
  const getRes = await get(getUrl);
  const downSeconds = (performance.now() - t) / 1000;
  const downPeak = rss?.stop() ?? 0;
  if (getRes.status !== 200 || getRes.bytes !== SIZE || getRes.sha !== sha)
    throw new Error(`download: ${getRes.status}, ${getRes.bytes} bytes, sha ${getRes.sha}`);
  return {
    upload_MBps: Math.round(SIZE / MB / upSeconds),
    download_MBps: Math.round(SIZE / MB / downSeconds),
    ...(pid
      ? {
          rss_base_MB: Math.round(upBase / MB),
          rss_peak_MB: Math.round(Math.max(upPeak, downPeak) / MB),
          upload_rss_growth_MB: Math.round((upPeak - upBase) / MB),
          download_rss_growth_MB: Math.round((downPeak - downBase) / MB),
        }
      : {}),
  };
}

const orreryUrls = async (o: Orrery, name: string) => {
  const up = await api(o, 'POST', '/api/v1/objects/upload-url', { name });
  return {
    put: up.url as string,
    get: async () => (await api(o, 'POST', '/api/v1/objects/download-url', { file: up.id })).url as string,
  };
};

/** The disk itself: SIZE bytes written with and without a final fdatasync, by plain Node. */
async function diskBaseline(dir: string) {
  const out: Record<string, number> = {};
  for (const durable of [true, false]) {
    const file = join(dir, `disk-${durable}.bin`);
    const w = await openFileWriter(file, { durable, syncEvery: durable ? 32 * CHUNK : Infinity });
    const t = performance.now();
    for (let off = 0; off < SIZE;) {
      const c = chunkAt(off, Math.min(CHUNK, SIZE - off));
      off += c.length;
      if (!w.write(c)) await once(w, 'drain');
    }
    w.end();
    await finished(w);
    out[durable ? 'write_fdatasync_MBps' : 'write_page_cache_MBps'] = Math.round(
      SIZE / MB / ((performance.now() - t) / 1000),
    );
    rmSync(file);
  }
  return out;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : Math.round((s[m - 1] + s[m]) / 2);
};
const medianOf = (rounds: Transfer[]) => {
  const keys = Object.keys(rounds[0]) as (keyof Transfer)[];
  const out: Transfer = { upload_MBps: 0, download_MBps: 0 };
  for (const k of keys)
    out[k] =
      k.startsWith('rss') || k.endsWith('growth_MB')
        ? Math.max(...rounds.map((r) => r[k]!))
        : median(rounds.map((r) => r[k]!));
  return out;
};

/**
 * Orrery against the bare baseline, both durable (the default) and not, ROUNDS alternating
 * rounds each: medians of the throughputs, the worst RSS figures.
 */
async function transfer(env: Record<string, string>) {
  const sha = expectedSha(SIZE);
  const scratch = mkdtempSync(join(tmpdir(), 'orrery-bench-disk-'));
  const out: Record<string, unknown> = {
    size_MiB: SIZE / 1024 / 1024,
    rounds: ROUNDS,
    load_average_before: loadavg().map((x) => +x.toFixed(1)),
  };
  try {
    out.disk = await diskBaseline(scratch);
    for (const durable of [true, false]) {
      const o = await startOrrery({ ...env, ORRERY_BLOB_FSYNC: String(durable) });
      const bare = await startChild(
        ['bench/objects-bare.ts'],
        { BARE_DIR: scratch, BARE_FSYNC: durable ? '1' : '0' },
        '/health',
      );
      try {
        // Warm-up: JIT, the blob folder, the first database pages.
        const warm = await orreryUrls(o, 'warm.bin');
        await put(warm.put, 8 * CHUNK);
        await get(await warm.get());
        const mine: Transfer[] = [];
        const base: Transfer[] = [];
        for (let r = 0; r < ROUNDS; r++) {
          mine.push(await roundTrip(await orreryUrls(o, `big-${r}.bin`), o.proc.pid!, sha));
          base.push(
            await roundTrip(
              { put: `${bare.url}/big-${r}.bin`, get: async () => `${bare.url}/big-${r}.bin` },
              undefined,
              sha,
            ),
          );
          rmSync(join(scratch, `big-${r}.bin`), { force: true });
        }
        out[durable ? 'durable' : 'not_durable'] = {
          orrery: medianOf(mine),
          bare_node: medianOf(base),
          orrery_rounds: mine,
          bare_rounds: base,
        };
      } finally {
        await o.stop();
        await bare.stop();
      }
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  out.load_average_after = loadavg().map((x) => +x.toFixed(1));
  return out;
}

const CATEGORIES = 20;

async function seed(o: Orrery, n: number) {
  const t = performance.now();
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < n; i = next++) {
      await api(o, 'POST', '/api/v1/objects', {
        name: `Object ${i}`,
        location: `/bench/${i % 10}`,
        tags: [`t${i % 10}`],
        properties: {
          category: `cat-${i % CATEGORIES}`,
          n: i,
          score: ((i * 7919) % 1000) / 1000,
          flag: i % 3 === 0,
          nested: { level: i % 5 },
          title: `Title of object number ${i}`,
        },
      });
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  return Math.round(n / ((performance.now() - t) / 1000));
}

async function latency(o: Orrery, path: string, body: (i: number) => unknown, expect: (r: any) => boolean) {
  for (let i = 0; i < 20; i++) await api(o, 'POST', path, body(i)); // warm-up
  const ms: number[] = [];
  for (let i = 0; i < QUERIES; i++) {
    const t = performance.now();
    const r = await api(o, 'POST', path, body(i));
    ms.push(performance.now() - t);
    if (!expect(r))
      throw new Error(`${path} ${JSON.stringify(body(i))}: unexpected answer ${JSON.stringify(r).slice(0, 200)}`);
  }
  ms.sort((a, b) => a - b);
  const f = (x: number) => +x.toFixed(1);
  return { p50_ms: f(percentile(ms, 50)), p95_ms: f(percentile(ms, 95)), p99_ms: f(percentile(ms, 99)) };
}

/**
 * Waits until the server has been nearly idle (under 5% of a core) for 4 s: creating objects
 * queues background work (embeddings, content processing) that would otherwise be measured too.
 */
async function waitIdle(pid: number, maxMs = 20 * 60_000): Promise<number> {
  const ticks = () => {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return Number(f[11]) + Number(f[12]); // utime + stime, in clock ticks (100 per second)
  };
  const start = performance.now();
  let quiet = 0;
  while (performance.now() - start < maxMs) {
    const before = ticks();
    await new Promise((r) => setTimeout(r, 1000));
    quiet = ticks() - before <= 5 ? quiet + 1 : 0;
    if (quiet >= 4) break;
  }
  return Math.round((performance.now() - start) / 1000);
}

async function find(o: Orrery) {
  const seeded = await seed(o, OBJECTS);
  const settledAfter = await waitIdle(o.proc.pid!);
  const perCategory = OBJECTS / CATEGORIES;
  const shapes = {
    // 5% of the objects match; the first 100 (newest first) are answered.
    'properties.category = x (limit 100)': await latency(
      o,
      '/api/v1/objects/find',
      (i) => ({ query: { 'properties.category': `cat-${i % CATEGORIES}` }, limit: 100 }),
      (r) => r.length === Math.min(100, perCategory),
    ),
    'category = x and score >= 0.5 (limit 100)': await latency(
      o,
      '/api/v1/objects/find',
      (i) => ({
        query: { 'properties.category': `cat-${i % CATEGORIES}`, 'properties.score': { $gte: 0.5 } },
        limit: 100,
      }),
      (r) => r.length === Math.min(100, perCategory / 2),
    ),
    'nested.level $in [1, 2] (limit 100)': await latency(
      o,
      '/api/v1/objects/find',
      () => ({ query: { 'properties.nested.level': { $in: [1, 2] } }, limit: 100 }),
      (r) => r.length === Math.min(100, (OBJECTS * 2) / 5),
    ),
    'n in a range of 10 (rare: scans every object)': await latency(
      o,
      '/api/v1/objects/find',
      (i) => {
        const k = (i * 997) % (OBJECTS - 10);
        return { query: { 'properties.n': { $gte: k, $lt: k + 10 } } };
      },
      (r) => r.length === 10,
    ),
    'count of category = x (counts every object)': await latency(
      o,
      '/api/v1/objects/count',
      (i) => ({ query: { 'properties.category': `cat-${i % CATEGORIES}` } }),
      (r) => r.count === perCategory,
    ),
  };
  return {
    objects: OBJECTS,
    seeded_per_s: seeded,
    idle_after_seeding_s: settledAfter,
    queries_per_shape: QUERIES,
    load_average: loadavg().map((x) => +x.toFixed(1)),
    shapes,
  };
}

const results: Record<string, unknown> = { machine: machine(), date: new Date().toISOString() };
let cluster: { url: string; stop: () => void } | undefined;
try {
  if (PARTS.includes('transfer')) {
    console.log(`\n--- transfer of ${SIZE / 1024 / 1024} MiB through signed URLs ---`);
    results.transfer = await transfer({});
    console.log(JSON.stringify(results.transfer, null, 1));
  }
  if (PARTS.includes('find')) {
    for (const dialect of DIALECTS) {
      let env: Record<string, string> = {};
      if (dialect === 'postgres') {
        cluster ??= await startCluster();
        env = { ORRERY_DATABASE_URL: cluster!.url };
      }
      const o = await startOrrery(env);
      try {
        const f = await find(o);
        console.log(`\n--- find on ${OBJECTS} objects, ${dialect} (seeded at ${f.seeded_per_s}/s) ---`);
        console.table(f.shapes);
        results[`find_${dialect}`] = f;
      } finally {
        await o.stop();
      }
    }
  }
} finally {
  cluster?.stop();
}
console.log(JSON.stringify(results));
