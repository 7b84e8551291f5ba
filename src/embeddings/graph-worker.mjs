// Owns one partition's usearch HNSW graph off the main thread (graph-thread.ts posts to it):
// builds it from the shared vectors or loads a saved one, applies writes, answers searches and
// saves it. A build, a load or a replay of thousands of writes takes from a second to minutes of
// CPU that must never hold the event loop. Messages are handled one at a time, in the order they
// were posted, so a search sees every write posted before it, and writes posted during a build
// are applied right after it.
// Plain JavaScript: the worker needs no TypeScript loader. usearch's ESM entry is broken on our
// machines; its CommonJS build works, hence createRequire.
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';

const require = createRequire(import.meta.url);
const usearch = require('usearch');

const { dimensions, scalar, options } = workerData;
const QUANTIZATION = { f32: usearch.ScalarKind.F32, f16: usearch.ScalarKind.F16, i8: usearch.ScalarKind.I8 };
const cores = availableParallelism();
const threads = (wanted) => Math.max(1, Math.min(wanted || cores, cores));
const index = new usearch.Index({
  dimensions,
  metric: usearch.MetricKind.IP,
  quantization: QUANTIZATION[scalar ?? 'f32'],
  connectivity: options.connectivity,
  expansion_add: options.expansionAdd,
  expansion_search: options.expansionSearch,
});
// Batches, so the vectors copied for one add call stay small.
const BATCH = 4096;

const forget = (key) => {
  if (index.contains(key)) index.remove(key);
};

const handlers = {
  /** From the shared vectors of `slots` (keys are slots); saved to `savePath` when given. */
  build({ buffer, slots, savePath }) {
    const data = new Float32Array(buffer);
    for (let i = 0; i < slots.length; i += BATCH) {
      const part = slots.subarray(i, i + BATCH);
      const keys = new BigUint64Array(part.length);
      const vectors = new Float32Array(part.length * dimensions);
      for (let j = 0; j < part.length; j++) {
        keys[j] = BigInt(part[j]);
        vectors.set(data.subarray(part[j] * dimensions, (part[j] + 1) * dimensions), j * dimensions);
      }
      index.add(keys, vectors, threads(options.threads));
    }
    if (savePath) index.save(savePath);
    return { size: index.size() };
  },
  load({ path }) {
    index.load(path);
    return { size: index.size() };
  },
  upsert({ key, vector }) {
    forget(BigInt(key));
    index.add(BigInt(key), vector, 1);
  },
  remove({ key }) {
    forget(BigInt(key));
  },
  /** Many writes at once (a replay): `remove` slots leave, `keys` get `vectors`, in one multi-threaded add. */
  apply({ remove, keys, vectors }) {
    for (const key of remove) forget(key);
    for (const key of keys) forget(key);
    if (keys.length) index.add(keys, vectors, threads(0));
    return { size: index.size() };
  },
  /**
   * The `k` best of a search whose candidate list holds `ef` (usearch searches with
   * max(expansion_search, wanted), so asking for `ef` results is a search with that ef), plus a
   * few more, best first, so that the main thread can skip slots freed meanwhile.
   */
  search({ query, k, ef }) {
    const found = index.search(query, Math.max(k, ef ?? 0), 1);
    const n = Math.min(found.keys.length, k + Math.max(8, k));
    return { keys: found.keys.slice(0, n), distances: found.distances.slice(0, n) };
  },
  save({ path }) {
    index.save(path);
    return { size: index.size() };
  },
};

parentPort.on('message', (m) => {
  try {
    const result = handlers[m.op](m);
    if (m.id) parentPort.postMessage({ id: m.id, result });
  } catch (err) {
    parentPort.postMessage({ id: m.id ?? 0, op: m.op, error: err instanceof Error ? err.message : String(err) });
  }
});
