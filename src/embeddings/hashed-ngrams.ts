/**
 * The built-in offline embedder, `orrery-hashed-ngrams-384`: hashed word and character n-gram
 * features, L2-normalised. Lexical, not semantic: texts that share words (or word stems, through
 * the character trigrams) are close; paraphrases with different words are not. It needs no key,
 * no download and no network, so similarity works on a fresh install, and it costs a few
 * microseconds per short text, so it can run on every run's prompt and result.
 *
 * Features of a text (lower-cased; words are runs of letters and digits; English stop words and
 * one-character words are skipped):
 *   - each word (weight 1), and each pair of consecutive words (weight 0.5);
 *   - each character trigram of the word padded with boundaries (`#cat#` → `#ca`, `cat`, `at#`),
 *     weight 1/√(number of trigrams), so a word's trigrams weigh as much as the word itself.
 * Each feature is hashed (FNV-1a, finalised with murmur3's mixer) to one of 384 buckets with a
 * sign from another bit of the hash (the signed hashing trick keeps collisions unbiased). The
 * bucket values are square-rooted (keeping their sign: a repeated word counts, sub-linearly)
 * and the vector is L2-normalised.
 */
import type { Embedder } from './embedder.ts';

export const HASHED_NGRAMS_MODEL = 'orrery-hashed-ngrams-384';
const DIMENSIONS = 384;
/** Longer inputs are chunked by the caller; this bounds one call's work (≈ 1 ms). */
const MAX_CHARS = 100_000;

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
const BIGRAM_SEED = 0x9e3779b9;
const TRIGRAM_SEED = 0x7f4a7c15;

const STOP_WORDS = (
  'a an and are as at be been but by can could did do does for from had has have he her his how i if in into is it its ' +
  'me my no not of on or our she so such than that the their them then there these they this those to too us was we ' +
  'were what when where which while who whom why will with would you your yours all any also about after before just more most ' +
  'some only other over own same very should each both few here out up down again once under until off'
).split(' ');

const fmix = (h: number): number => {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
};

/** FNV-1a of a string's UTF-16 units (callers hash lower-cased words). */
const fnv = (s: string, seed = FNV_OFFSET): number => {
  let h = seed;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), FNV_PRIME);
  return h;
};

const STOP_HASHES = new Set(STOP_WORDS.map((w) => fnv(w)));

/** Letters and digits; other scripts (code units above 0x7f) count as letters except common punctuation. */
function isWordUnit(c: number): boolean {
  if (c < 0x80) return (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a);
  if (c === 0xa0 || c === 0xab || c === 0xbb || c === 0xb7) return false;
  if (c >= 0x2000 && c <= 0x206f) return false; // general punctuation, spaces, quotes, dashes
  if (c >= 0x3000 && c <= 0x303f) return false; // CJK punctuation
  if (c === 0xfeff) return false;
  return true;
}

export class HashedNgramsEmbedder implements Embedder {
  readonly model = HASHED_NGRAMS_MODEL;
  readonly dimensions = DIMENSIONS;
  readonly supportsImages = false;
  readonly maxInputChars = MAX_CHARS;

  async embed(texts: string[]): Promise<Float32Array[]> {
    return texts.map((t) => this.embedNow(t));
  }

  embedNow(input: string): Float32Array {
    const v = new Float32Array(DIMENSIONS);
    const text = (input.length > MAX_CHARS ? input.slice(0, MAX_CHARS) : input).toLowerCase();
    const n = text.length;
    let prev = 0;
    let hasPrev = false;
    let i = 0;
    while (i < n) {
      while (i < n && !isWordUnit(text.charCodeAt(i))) i++;
      const start = i;
      let h = FNV_OFFSET;
      while (i < n) {
        const c = text.charCodeAt(i);
        if (!isWordUnit(c)) break;
        h = Math.imul(h ^ c, FNV_PRIME);
        i++;
      }
      const len = i - start;
      if (len < 2 || STOP_HASHES.has(h)) continue;
      add(v, fmix(h), 1);
      if (hasPrev) add(v, fmix(Math.imul(prev ^ BIGRAM_SEED, FNV_PRIME) ^ h), 0.5);
      prev = h;
      hasPrev = true;
      // Trigrams of "#word#": len trigrams; boundary marker is code unit 0x23 ('#').
      const w = 1 / Math.sqrt(len);
      for (let k = -1; k < len - 1; k++) {
        const a = k < 0 ? 0x23 : text.charCodeAt(start + k);
        const b = text.charCodeAt(start + k + 1);
        const c = k + 2 >= len ? 0x23 : text.charCodeAt(start + k + 2);
        let t = Math.imul(TRIGRAM_SEED ^ a, FNV_PRIME);
        t = Math.imul(t ^ b, FNV_PRIME);
        t = Math.imul(t ^ c, FNV_PRIME);
        add(v, fmix(t), w);
      }
    }
    let sum = 0;
    for (let j = 0; j < DIMENSIONS; j++) {
      const x = v[j];
      const r = x < 0 ? -Math.sqrt(-x) : Math.sqrt(x);
      v[j] = r;
      sum += r * r;
    }
    if (sum > 0) {
      const inv = 1 / Math.sqrt(sum);
      for (let j = 0; j < DIMENSIONS; j++) v[j] *= inv;
    }
    return v;
  }
}

function add(v: Float32Array, h: number, weight: number): void {
  // The low bits pick the bucket, the top bit the sign.
  v[h % DIMENSIONS] += h & 0x80000000 ? -weight : weight;
}
