/**
 * JSON of an answer that carries embedding vectors (a run's input_embedding and result_embedding:
 * 2 × 384 numbers in every blocking run's answer). The route's schema serializer turns numbers
 * into text one at a time, which cost a blocking run more than all of its other fields together
 * (bench/README.md, issue 17). Vectors on the wire are rounded to 1e-7 (embeddings/vectors.ts
 * `toWire`), so each one is an integer count of 1e-7 and is written here from that integer,
 * digit by digit, into a scratch buffer: the same text as JSON.stringify, about three times
 * faster. A number that is not such a count is written by JSON.stringify.
 */
import type { FastifyReply } from 'fastify';

const SCALE = 1e7;
const FRACTION_DIGITS = 7;
/** Widest text of one number written here: "-0.1234567" and a comma. */
const MAX_CHARS = 11;
/** Arrays longer than this are written by JSON.stringify. */
const MAX_WRITTEN = 1 << 18;
/** The scratch buffer's size at rest; one grown past KEEP_BYTES for a large answer is let go after it. */
const REST_BYTES = 16 * 1024;
const KEEP_BYTES = 256 * 1024;
let scratch = Buffer.allocUnsafe(REST_BYTES);

/** After an answer: a scratch buffer that a large one grew is not kept for the life of the process. */
function release(): void {
  if (scratch.length > KEEP_BYTES) scratch = Buffer.allocUnsafe(REST_BYTES);
}

/** The scratch buffer with room for `more` bytes after position `p`, what is before `p` kept. */
function room(p: number, more: number): Buffer {
  if (p + more > scratch.length) {
    const grown = Buffer.allocUnsafe(Math.max(scratch.length * 2, p + more));
    scratch.copy(grown, 0, 0, p);
    scratch = grown;
  }
  return scratch;
}

/** Writes `text` (ASCII-safe JSON or not) at `p` of the scratch buffer; answers the position after it. */
function writeText(text: string, p: number): number {
  return p + room(p, Buffer.byteLength(text)).write(text, p, 'utf8');
}

/** Writes the JSON of `xs` at `p` of the scratch buffer; answers the position after it. */
function writeNumbers(xs: readonly number[], p: number): number {
  if (xs.length > MAX_WRITTEN) return writeText(JSON.stringify(xs), p);
  let b = room(p, xs.length * MAX_CHARS + 2);
  b[p++] = 0x5b; // [
  for (let i = 0; i < xs.length; i++) {
    const x = xs[i];
    if (i) b[p++] = 0x2c; // ,
    if (x === 0) {
      b[p++] = 0x30; // 0 (and -0, as JSON writes it): most of a sparse vector
      continue;
    }
    const k = Math.round(x * SCALE);
    // Above 1: not a normalised vector's (nor a count of 1e-7 that this writes).
    if (k / SCALE !== x || k > SCALE || k < -SCALE) {
      // Wider than MAX_CHARS, perhaps ("1.2345678901234567e-300"): room for it and for the rest.
      const text = JSON.stringify(x) ?? 'null';
      b = room(p, text.length + (xs.length - i) * MAX_CHARS + 1);
      p += b.write(text, p, 'latin1');
      continue;
    }
    let a = k;
    if (a < 0) {
      b[p++] = 0x2d; // -
      a = -a;
    }
    if (a < 10) {
      // Below 1e-6 JavaScript writes an exponent: "3e-7".
      b[p++] = 0x30 + a;
      b[p++] = 0x65; // e
      b[p++] = 0x2d; // -
      b[p++] = 0x37; // 7
      continue;
    }
    if (a === SCALE) {
      b[p++] = 0x31; // 1
      continue;
    }
    b[p++] = 0x30; // 0
    b[p++] = 0x2e; // .
    let digits = FRACTION_DIGITS;
    while (a % 10 === 0) {
      a /= 10;
      digits--;
    }
    for (let d = digits - 1; d >= 0; d--) {
      b[p + d] = 0x30 + (a % 10);
      a = Math.floor(a / 10);
    }
    p += digits;
  }
  b[p++] = 0x5d; // ]
  return p;
}

/** JSON text of an array of numbers; exactly `JSON.stringify(xs)`. */
export function numbersJson(xs: readonly number[]): string {
  const end = writeNumbers(xs, 0); // first: it may replace the scratch buffer with a larger one
  const text = scratch.toString('latin1', 0, end);
  release();
  return text;
}

/**
 * Answers `body` through the route's schema serializer for `status`, with the number arrays under
 * `keys` written as numbersJson writes them after it (those keys must be declared arrays of numbers in the
 * schema, so the schema would have written them as they are). A body without them is answered as usual.
 */
export function sendWithVectors<T extends object>(
  reply: FastifyReply,
  body: T,
  keys: readonly string[],
  status = 200,
): T {
  const b = body as Record<string, unknown>;
  if (!keys.some((k) => Array.isArray(b[k]))) return body;
  const serialize = reply.getSerializationFunction(String(status));
  if (!serialize) return body;
  reply.type('application/json; charset=utf-8');
  // Fastify sends what a serializer answers as it sends a payload given to `send`: a string or a
  // Buffer (its typings say string).
  reply.serializer(((payload: unknown): string | Buffer => {
    const all = payload as Record<string, unknown>;
    // A copy with the vectors undefined, which the serializer leaves out: neither deleted nor
    // copied key by key, which both left a slow, dictionary-mode object (30 times slower to make).
    const rest: Record<string, unknown> = { ...all };
    for (const k of keys) if (k in rest) rest[k] = undefined;
    const json = serialize(rest);
    const vectors = keys.filter((k) => Array.isArray(all[k]));
    if (!vectors.length) return json;
    // The answer as bytes, the vectors written into it where they are made: no string per
    // vector, no concatenation, and no encoding of the whole text again when it is sent.
    let p = writeText(json, 0) - 1; // without its closing brace
    let first = json.length <= 2; // `{}`
    for (const k of vectors) {
      if (!first) room(p, 1)[p++] = 0x2c; // ,
      first = false;
      p = writeNumbers(all[k] as number[], writeText(`${JSON.stringify(k)}:`, p));
    }
    room(p, 1)[p++] = 0x7d; // }
    // A copy: the scratch buffer is the next answer's, and this one is sent later.
    const answer = Buffer.from(scratch.subarray(0, p));
    release();
    return answer;
  }) as (payload: unknown) => string);
  return body;
}
