/**
 * The settled value of a revision counter that concurrent writers draw from (PostgreSQL): a
 * sequence hands numbers out in call order, not commit order, so each writer holds a shared
 * transaction-level advisory lock while it writes (a trigger of the writing migration), and the
 * reader takes it exclusively for an instant to wait for the writers in flight. Afterwards every
 * number up to the sequence's last value is committed.
 */
import { sql, type Kysely } from 'kysely';

export async function settledSequenceValue(db: Kysely<any>, sequence: string, writersLock: number): Promise<number> {
  return db.transaction().execute(async (trx) => {
    await sql`SELECT pg_advisory_xact_lock(${writersLock})`.execute(trx);
    const r = await sql<{
      v: string;
    }>`SELECT CASE WHEN is_called THEN last_value ELSE 0 END AS v FROM ${sql.table(sequence)}`.execute(trx);
    return Number(r.rows[0].v);
  });
}
