/** Query-string helpers: the official client repeats keys, CLI 1.4.1 comma-joins them; accept both. */
export function listParam(value: unknown): string[] | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  const items = (Array.isArray(value) ? value : [value])
    .flatMap((v) => String(v).split(','))
    .map((s) => s.trim())
    .filter(Boolean);
  return items.length ? [...new Set(items)] : undefined;
}

export const MAX_PAGE = 1000;

/** `limit` defaults to 100 and is clamped to 1,000 (decisions.md). */
export function pageOf(q: { limit?: unknown; offset?: unknown }, fallback = 100): { limit: number; offset: number } {
  const limit = q.limit === undefined || q.limit === null || q.limit === '' ? fallback : Number(q.limit);
  const offset = q.offset === undefined || q.offset === null || q.offset === '' ? 0 : Number(q.offset);
  return {
    limit: Math.min(Math.max(Number.isFinite(limit) ? Math.trunc(limit) : fallback, 0), MAX_PAGE),
    offset: Math.max(Number.isFinite(offset) ? Math.trunc(offset) : 0, 0),
  };
}
