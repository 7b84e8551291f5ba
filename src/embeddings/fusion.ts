/**
 * Combining ranked lists (one per embedding type searched, plus full text) into one order:
 *
 * - `rrf`, Reciprocal Rank Fusion (the default): score = Σ wᵢ / (60 + rankᵢ), rank from 1; an
 *   object absent from a list gets nothing from it. Robust to lists whose scores are on
 *   different scales (cosine similarity vs. full-text relevance).
 * - `rsf`, Relative Score Fusion: each list's scores are scaled to [0, 1] (min–max; a list of one
 *   gives 1), then score = Σ wᵢ · scaledᵢ / Σ wᵢ. Keeps how much better one hit is than the next.
 * - `smart` (the client's own upstream algorithm) is answered as `rrf`.
 *
 * `weights` default to 1 per list; a weight of 0 drops that list. With one list only, there is
 * nothing to fuse and the list's own score (cosine similarity) is the score.
 */
export type Aggregation = 'rrf' | 'rsf';

export interface RankedList {
  name: string;
  weight: number;
  /** Best first. */
  hits: Array<{ id: string; score: number }>;
}

const RRF_K = 60;

export function fuse(lists: RankedList[], aggregation: Aggregation): Array<{ id: string; score: number }> {
  const live = lists.filter((l) => l.weight > 0);
  if (live.length === 1) return live[0].hits.map((h) => ({ id: h.id, score: h.score }));
  const scores = new Map<string, number>();
  const firstSeen = new Map<string, number>();
  let order = 0;
  const weightSum = live.reduce((s, l) => s + l.weight, 0) || 1;
  for (const list of live) {
    const max = Math.max(...list.hits.map((h) => h.score));
    const min = Math.min(...list.hits.map((h) => h.score));
    list.hits.forEach((h, rank) => {
      if (!firstSeen.has(h.id)) firstSeen.set(h.id, order++);
      const part =
        aggregation === 'rrf'
          ? list.weight / (RRF_K + rank + 1)
          : (list.weight * (max > min ? (h.score - min) / (max - min) : 1)) / weightSum;
      scores.set(h.id, (scores.get(h.id) ?? 0) + part);
    });
  }
  return [...scores.entries()]
    .map(([id, score]) => ({ id, score }))
    .sort((a, b) => b.score - a.score || firstSeen.get(a.id)! - firstSeen.get(b.id)!);
}
