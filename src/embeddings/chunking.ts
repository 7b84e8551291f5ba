/**
 * Long texts: split into chunks the provider accepts, embed each, and combine them into one vector
 * per object (length-weighted mean, re-normalised): the "combined" strategy. One vector per object
 * and type keeps similarity a single nearest-neighbour query and matches the one
 * `embeddings.text` the client expects per object. Chunks end at a paragraph, a sentence end or a
 * space when one is near the limit. At most MAX_CHUNKS chunks are embedded; the rest of a
 * longer text does not contribute (it is cut, and the README says so).
 */
import type { Embedder } from './embedder.ts';
import { combine } from './vectors.ts';

const MAX_CHUNKS = 64;

export function chunkText(text: string, maxChars: number, maxChunks = MAX_CHUNKS): string[] {
  const chunks: string[] = [];
  let at = 0;
  while (at < text.length && chunks.length < maxChunks) {
    let end = Math.min(text.length, at + maxChars);
    if (end < text.length) {
      const window = text.slice(at, end);
      // Prefer a paragraph break, then a sentence end, then a space, in the last 30% of the chunk.
      const floor = Math.floor(window.length * 0.7);
      const cut = [window.lastIndexOf('\n\n'), lastSentenceEnd(window), window.lastIndexOf(' ')].find(
        (i) => i >= floor,
      );
      if (cut !== undefined) end = at + cut + 1;
    }
    const piece = text.slice(at, end).trim();
    if (piece) chunks.push(piece);
    at = end;
  }
  return chunks;
}

function lastSentenceEnd(s: string): number {
  for (let i = s.length - 2; i >= 0; i--) {
    const c = s[i];
    if ((c === '.' || c === '!' || c === '?') && (s[i + 1] === ' ' || s[i + 1] === '\n')) return i + 1;
  }
  return -1;
}

/** Chunks per provider call: one request stays well under every provider's input-count limit. */
const BATCH = 32;

/** One normalised vector for each text (null for a text with nothing to embed). */
export async function embedLong(
  embedder: Embedder,
  texts: string[],
  signal?: AbortSignal,
): Promise<(Float32Array | null)[]> {
  const pieces: { owner: number; text: string }[] = [];
  texts.forEach((t, owner) => {
    for (const text of chunkText(t, embedder.maxInputChars)) pieces.push({ owner, text });
  });
  const vectors: Float32Array[] = [];
  for (let i = 0; i < pieces.length; i += BATCH) {
    vectors.push(
      ...(await embedder.embed(
        pieces.slice(i, i + BATCH).map((p) => p.text),
        signal,
      )),
    );
  }
  return texts.map((_, owner) => {
    const mine = pieces.map((p, i) => ({ p, v: vectors[i] })).filter((x) => x.p.owner === owner);
    return combine(
      mine.map((x) => x.v),
      mine.map((x) => x.p.text.length),
    );
  });
}
