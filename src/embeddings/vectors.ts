/**
 * Vector arithmetic and the storage encoding. Every stored vector is L2-normalised, so cosine
 * similarity is a dot product and one index metric (inner product) serves every model.
 */

/** Normalises in place; answers false for a zero (or non-finite) vector, which is not stored. */
export function normalise(v: Float32Array): boolean {
  let sum = 0;
  for (let i = 0; i < v.length; i++) sum += v[i] * v[i];
  if (!(sum > 0) || !Number.isFinite(sum)) return false;
  const inv = 1 / Math.sqrt(sum);
  for (let i = 0; i < v.length; i++) v[i] *= inv;
  return true;
}

export function dot(a: Float32Array, b: Float32Array, bOffset = 0, n = a.length): number {
  let s0 = 0;
  let s1 = 0;
  let s2 = 0;
  let s3 = 0;
  let i = 0;
  // Four accumulators: V8 keeps them in registers and the loop runs about twice as fast.
  for (; i + 3 < n; i += 4) {
    s0 += a[i] * b[bOffset + i];
    s1 += a[i + 1] * b[bOffset + i + 1];
    s2 += a[i + 2] * b[bOffset + i + 2];
    s3 += a[i + 3] * b[bOffset + i + 3];
  }
  for (; i < n; i++) s0 += a[i] * b[bOffset + i];
  return s0 + s1 + s2 + s3;
}

/** Little-endian float32 bytes (SQLite BLOB, PostgreSQL bytea). */
export function encodeVector(v: Float32Array): Buffer {
  return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
}

export function decodeVector(bytes: Uint8Array): Float32Array {
  // A pooled Buffer may start at an offset that is not a multiple of 4: copy then.
  if (bytes.byteOffset % 4 === 0)
    return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
  const out = new Float32Array(bytes.byteLength / 4);
  new Uint8Array(out.buffer).set(bytes);
  return out;
}

/** Numbers for the wire: float32 precision is about 7 digits, so more would only be noise. */
export function toWire(v: Float32Array): number[] {
  const out = new Array<number>(v.length);
  for (let i = 0; i < v.length; i++) out[i] = Math.round(v[i] * 1e7) / 1e7;
  return out;
}

/** Length-weighted mean of chunk vectors, normalised (the "combined" chunking strategy). */
export function combine(vectors: Float32Array[], weights: number[]): Float32Array | null {
  if (!vectors.length) return null;
  if (vectors.length === 1) {
    const only = Float32Array.from(vectors[0]);
    return normalise(only) ? only : null;
  }
  const out = new Float32Array(vectors[0].length);
  vectors.forEach((v, i) => {
    const w = weights[i] ?? 1;
    for (let j = 0; j < out.length; j++) out[j] += v[j] * w;
  });
  return normalise(out) ? out : null;
}
