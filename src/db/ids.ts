/**
 * Time-sortable, opaque ids: ULIDs (48-bit millisecond time + 80 random bits, Crockford base32),
 * lower-cased, monotonic within a millisecond. Random bytes come from a pooled buffer: one
 * system call per 256 ids instead of one per character (ids are made on every run).
 */
import { randomFillSync } from 'node:crypto';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
const pool = Buffer.alloc(10 * 256);
let poolAt = pool.length;
let lastTime = -1;
const last = new Uint8Array(10);

function freshRandom(): void {
  if (poolAt >= pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  pool.copy(last, 0, poolAt, poolAt + 10);
  poolAt += 10;
}

/** Adds one to the 80-bit random part, so ids made in the same millisecond still sort. */
function increment(): void {
  for (let i = last.length - 1; i >= 0; i--) {
    if (last[i] < 255) {
      last[i]++;
      return;
    }
    last[i] = 0;
  }
}

export function newId(): string {
  const now = Date.now();
  if (now > lastTime) {
    lastTime = now;
    freshRandom();
  } else {
    increment();
  }
  let time = '';
  for (let t = lastTime, i = 0; i < 10; i++, t = Math.floor(t / 32)) time = ALPHABET[t % 32] + time;
  // 80 bits → 16 base32 characters, 5 bits at a time.
  let rand = '';
  let acc = 0;
  let bits = 0;
  for (const byte of last) {
    acc = (acc << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      rand += ALPHABET[(acc >> bits) & 31];
    }
    acc &= (1 << bits) - 1;
  }
  return time + rand;
}

let isoMs = -1;
let iso = '';
/** Now as `Date#toISOString`, formatted once per millisecond (a run asks for it several times). */
export const nowIso = (): string => {
  const ms = Date.now();
  if (ms !== isoMs) {
    isoMs = ms;
    iso = new Date(ms).toISOString();
  }
  return iso;
};
