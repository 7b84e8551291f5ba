/**
 * Naming the index a statement must read, where the planner needs telling (style D3). SQLite's
 * planner prefers an index that orders rows for a GROUP BY (and then reads every wide row) over a
 * covering index that holds every column the statement reads but in another order, so the run
 * analytics read every wide row of a project even for a day's range (bench/runs-analytics.ts:
 * 1.1-2.4× slower over a year at 100,000 and 1,000,000 runs). `INDEXED BY` is SQLite's;
 * PostgreSQL costs the covering index itself and gets nothing.
 */
import { sql, type RawBuilder } from 'kysely';
import type { DialectName } from './dialect.ts';

export const indexedBy = (d: DialectName, index: string): RawBuilder<unknown> =>
  d === 'sqlite' ? sql.raw(`INDEXED BY ${index}`) : sql``;
