/**
 * The arms of a read of runs. On SQLite the read indexes of runs leave out the runs in flight
 * (`processing`, migration 0023), and SQLite walks a partial index only for a statement that holds
 * its condition as a term. So a read that walks one is made of two arms that split the runs: those
 * not in flight, through the read indexes, and those in flight (as many as are executing), through
 * `runs_status` (project, status, updated_at). Every run is in exactly one arm: `status` is never
 * NULL. On PostgreSQL a read is its one condition, as before.
 */
import { sql, type RawBuilder, type SqlBool } from 'kysely';
import { capsOf, type DialectName } from '../db/dialect.ts';

type Cond = RawBuilder<SqlBool>;

/** The runs the read indexes hold; literal text, as SQLite matches it against the indexes' own condition. */
export const NOT_IN_FLIGHT: Cond = sql<SqlBool>`runs.status <> 'processing'`;
const IN_FLIGHT: Cond = sql<SqlBool>`runs.status = 'processing'`;

/**
 * `where` once per arm: two conditions on SQLite (the runs not in flight, then those in flight),
 * `where` itself on PostgreSQL. `where` is parenthesised, so an OR in it stays within its arm.
 */
export const runArms = (d: DialectName, where: Cond): Cond[] =>
  capsOf(d).partialIndexNeedsItsTerm
    ? [sql<SqlBool>`(${where}) AND ${NOT_IN_FLIGHT}`, sql<SqlBool>`(${where}) AND ${IN_FLIGHT}`]
    : [where];

/** `SELECT ${columns} FROM runs` of each arm, as one `UNION ALL`. */
export const armRows = (d: DialectName, columns: RawBuilder<unknown>, where: Cond): RawBuilder<unknown> =>
  sql.join(
    runArms(d, where).map((w) => sql`SELECT ${columns} FROM runs WHERE ${w}`),
    sql` UNION ALL `,
  );
