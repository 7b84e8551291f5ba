import { BadRequest } from '../util/errors.ts';

/** Values of one list filter (ids, tags, statuses, models…): each is a bound SQL value. */
const MAX_LIST_VALUES = 1000;

/**
 * Query-string helpers: the official client repeats keys, CLI 1.4.1 comma-joins them; accept both.
 * More than MAX_LIST_VALUES distinct values is a 400 (`what` names the parameter).
 */
export function listParam(value: unknown, what = 'a list filter'): string[] | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  const items = (Array.isArray(value) ? value : [value])
    .flatMap((v) => String(v).split(','))
    .map((s) => s.trim())
    .filter(Boolean);
  if (!items.length) return undefined;
  const unique = [...new Set(items)];
  if (unique.length > MAX_LIST_VALUES)
    throw new BadRequest(`${what} takes at most ${MAX_LIST_VALUES} values, got ${unique.length}`);
  return unique;
}

export const MAX_PAGE = 1000;
/**
 * Deepest `offset` of any list, find or search: the database walks every skipped row, so deeper
 * pages cost more and more (Elasticsearch stops at 10,000). Walk further with filters instead
 * (for runs, `anchorDate`).
 */
export const MAX_OFFSET = 100_000;

/** `limit` defaults to 100 and is clamped to 1,000 (decisions.md); `offset` is 0 to MAX_OFFSET. */
export function pageOf(q: { limit?: unknown; offset?: unknown }, fallback = 100): { limit: number; offset: number } {
  const limit = q.limit === undefined || q.limit === null || q.limit === '' ? fallback : Number(q.limit);
  const offset = q.offset === undefined || q.offset === null || q.offset === '' ? 0 : Number(q.offset);
  if (!Number.isInteger(offset) || offset < 0 || offset > MAX_OFFSET) {
    throw new BadRequest(
      `offset must be an integer from 0 to ${MAX_OFFSET}, got ${JSON.stringify(q.offset)}; to go deeper, narrow the query with filters`,
    );
  }
  return { limit: Math.min(Math.max(Number.isFinite(limit) ? Math.trunc(limit) : fallback, 0), MAX_PAGE), offset };
}

/** A date parameter (`from`, `createdTo`, …) as ISO 8601 UTC; 400 when it is not a date. */
export function isoDate(field: string, value: string): string {
  const t = Date.parse(value);
  if (Number.isNaN(t)) throw new BadRequest(`${field} must be an ISO 8601 date, got ${JSON.stringify(value)}`);
  return new Date(t).toISOString();
}
