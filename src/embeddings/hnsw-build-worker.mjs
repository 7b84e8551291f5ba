// Builds a usearch HNSW index off the main thread (a build of 100,000 vectors takes tens of
// seconds, which must never block the event loop) and saves it to a file the main thread loads.
// Plain JavaScript: the worker needs no TypeScript loader. usearch's ESM entry is broken on our
// machines; its CommonJS build works, hence createRequire.
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';

const require = createRequire(import.meta.url);
const usearch = require('usearch');

const { buffer, dimensions, slots, path, options, scalar } = workerData;
const QUANTIZATION = { f32: usearch.ScalarKind.F32, f16: usearch.ScalarKind.F16, i8: usearch.ScalarKind.I8 };
const data = new Float32Array(buffer);
const index = new usearch.Index({
  dimensions,
  metric: usearch.MetricKind.IP,
  quantization: QUANTIZATION[scalar ?? 'f32'],
  connectivity: options.connectivity,
  expansion_add: options.expansionAdd,
  expansion_search: options.expansionSearch,
});
const threads = Math.max(1, Math.min(options.threads || availableParallelism(), availableParallelism()));
// Batches, so the vectors copied for one add call stay small.
const BATCH = 4096;
for (let i = 0; i < slots.length; i += BATCH) {
  const part = slots.subarray(i, i + BATCH);
  const keys = new BigUint64Array(part.length);
  const vectors = new Float32Array(part.length * dimensions);
  for (let j = 0; j < part.length; j++) {
    keys[j] = BigInt(part[j]);
    vectors.set(data.subarray(part[j] * dimensions, (part[j] + 1) * dimensions), j * dimensions);
  }
  index.add(keys, vectors, threads);
}
index.save(path);
parentPort.postMessage({ size: index.size() });
