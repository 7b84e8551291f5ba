/**
 * Time buckets of a stored timestamp, in SQL, for both dialects (style D3). Timestamps are stored
 * as `Date#toISOString` text (`2026-11-25T14:05:09.123Z`, always UTC), so hour, day and month are
 * prefixes of the text on both databases; a week (starting Monday, ISO 8601) needs date arithmetic,
 * which differs. Every bucket is answered as the text of its first day or hour, and
 * `bucketStart` turns that text back into the full ISO instant.
 */
import { sql, type Expression, type RawBuilder } from 'kysely';
import type { DialectName } from './dialect.ts';

export const TIME_BUCKETS = ['hour', 'day', 'week', 'month'] as const;
export type TimeBucket = (typeof TIME_BUCKETS)[number];

/** The bucket of an ISO text timestamp column, as text: `2026-11-25T14` (hour), `2026-11-25` (day, week), `2026-11` (month). */
export function bucketOf(d: DialectName, unit: TimeBucket, col: Expression<unknown>): RawBuilder<string> {
  switch (unit) {
    case 'hour':
      return sql<string>`substr(${col}, 1, 13)`;
    case 'day':
      return sql<string>`substr(${col}, 1, 10)`;
    case 'month':
      return sql<string>`substr(${col}, 1, 7)`;
    case 'week':
      // SQLite: back 6 days, then forward to the next Monday (the same day when it is one).
      return d === 'sqlite'
        ? sql<string>`date(substr(${col}, 1, 10), '-6 days', 'weekday 1')`
        : sql<string>`to_char(date_trunc('week', CAST(substr(${col}, 1, 10) AS date)), 'YYYY-MM-DD')`;
  }
}

/** The ISO instant where a bucket (as `bucketOf` answers it) starts. */
export function bucketStart(unit: TimeBucket, key: string): string {
  if (unit === 'hour') return `${key}:00:00.000Z`;
  if (unit === 'month') return `${key}-01T00:00:00.000Z`;
  return `${key}T00:00:00.000Z`;
}

/** The start of the bucket holding `ms` (UTC), in epoch ms, computed as SQL does. */
export function floorToBucket(unit: TimeBucket, ms: number): number {
  const t = new Date(ms);
  switch (unit) {
    case 'hour':
      return Date.UTC(t.getUTCFullYear(), t.getUTCMonth(), t.getUTCDate(), t.getUTCHours());
    case 'day':
      return Date.UTC(t.getUTCFullYear(), t.getUTCMonth(), t.getUTCDate());
    case 'month':
      return Date.UTC(t.getUTCFullYear(), t.getUTCMonth(), 1);
    case 'week': {
      const day = Date.UTC(t.getUTCFullYear(), t.getUTCMonth(), t.getUTCDate());
      return day - ((t.getUTCDay() + 6) % 7) * 86_400_000;
    }
  }
}

/** The start of the bucket after the one starting at `start`. */
export function nextBucket(unit: TimeBucket, start: number): number {
  if (unit === 'hour') return start + 3_600_000;
  if (unit === 'day') return start + 86_400_000;
  if (unit === 'week') return start + 7 * 86_400_000;
  const t = new Date(start);
  return Date.UTC(t.getUTCFullYear(), t.getUTCMonth() + 1, 1);
}
