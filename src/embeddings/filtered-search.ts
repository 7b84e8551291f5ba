/**
 * Nearest neighbours that satisfy filters, with the filters applied before the top k is cut.
 *
 * 1. **Small candidate set: exact.** When the filters match at most `exactLimit` owners (found
 *    with one `SELECT id … LIMIT exactLimit + 1`), their vectors are scored exactly and the best
 *    k answered: exact and complete, whatever the index.
 * 2. **Otherwise: widen and post-filter.** Ask the index for the w nearest (w starts at 2k + 16),
 *    keep those the filters accept (one `SELECT id … WHERE id IN (…)`), and while fewer than k
 *    passed and the index holds more than w, multiply w by 4 and ask again. The answer is the k
 *    best, in the index's order, of the owners that pass: a filter never drops a result that
 *    should be there. As the filters match more than `exactLimit` owners, at least that share of
 *    the index passes, so few rounds are needed; in the worst case w grows to the whole index,
 *    which is then scanned exactly.
 *
 * Unfiltered searches still check that the owners exist (an owner deleted on another replica may
 * linger in this process's index until its signal arrives).
 */
import type { Hit, PartitionIndex } from './vector-index.ts';

export interface CandidateFilter {
  /** Every owner matching the filters, or null when more than `limit` match. Absent: no filters besides existence. */
  all?(limit: number): Promise<string[] | null>;
  /** Which of these owners exist and match the filters. */
  accept(ownerIds: string[]): Promise<Set<string>>;
}

export interface FilteredSearchInput {
  index: PartitionIndex;
  query: Float32Array;
  k: number;
  exclude?: string;
  filter: CandidateFilter;
  exactLimit: number;
}

export interface FilteredSearchResult {
  hits: Hit[];
  /** How the answer was found (logged by tests and benchmarks). */
  strategy: 'exact-candidates' | 'index-widening' | 'exact-scan';
  rounds: number;
}

export async function filteredSearch(i: FilteredSearchInput): Promise<FilteredSearchResult> {
  const { index, query, k, exclude, filter } = i;
  if (k <= 0 || index.size === 0) return { hits: [], strategy: 'exact-candidates', rounds: 0 };
  if (filter.all) {
    const candidates = await filter.all(i.exactLimit);
    if (candidates) {
      const owners = exclude ? candidates.filter((c) => c !== exclude) : candidates;
      return { hits: index.exactAmong(query, owners, k), strategy: 'exact-candidates', rounds: 1 };
    }
  }
  const want = k + (exclude ? 1 : 0);
  let width = Math.max(2 * want + 16, want);
  for (let round = 1; ; round++) {
    const whole = width >= index.size;
    // Past half the index a graph search costs more than a scan, and a scan is exact.
    const found =
      whole || (index.mode === 'hnsw' && width * 2 >= index.size)
        ? index.scan(query, Math.min(width, index.size))
        : await index.nearest(query, width);
    const ids = found.map((h) => h.ownerId).filter((id) => id !== exclude);
    const accepted = await filter.accept(ids);
    const hits = found.filter((h) => h.ownerId !== exclude && accepted.has(h.ownerId));
    if (hits.length >= k || whole) {
      return { hits: hits.slice(0, k), strategy: whole ? 'exact-scan' : 'index-widening', rounds: round };
    }
    width *= 4;
  }
}
