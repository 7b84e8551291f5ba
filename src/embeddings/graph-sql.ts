/**
 * SQL behind persisted graphs (0021): the vector revision counter, the changes of a partition
 * after a revision (rows written and tombstones), and the build lease of a partition.
 */
import type { Kysely } from 'kysely';
import { capsOf, type DialectName } from '../db/dialect.ts';
import { settledSequenceValue } from '../db/revision-counter.ts';
import type { Db, PartitionKey } from './store.ts';

/** The advisory lock key vector writers take shared on PostgreSQL (0021). */
const WRITERS_LOCK = 7_020_021;

// 0021's tables are not in the application's schema type: this module is their only reader.
const anyDb = (db: Db) => db as unknown as Kysely<any>;

/**
 * The highest vector revision such that every write of a revision up to it is committed (and
 * every later write gets a higher one). On PostgreSQL the sequence hands numbers out in call
 * order, so in-flight writers (holding the shared lock) are waited for first, for an instant.
 */
export async function settledRevision(db: Db, dialect: DialectName): Promise<number> {
  // One writer at a time: the counter row is exact. Several: the sequence, after the writers in flight.
  if (!capsOf(dialect).concurrentWriters) {
    const r = await anyDb(db)
      .selectFrom('vector_clock')
      .select('revision')
      .where('id', '=', 1)
      .executeTakeFirstOrThrow();
    return Number(r.revision);
  }
  return settledSequenceValue(db, 'vector_revision_seq', WRITERS_LOCK);
}

/** The lowest revision whose tombstones are all kept: a graph saved before it cannot be replayed. */
export async function tombstonesFrom(db: Db): Promise<number> {
  const r = await anyDb(db)
    .selectFrom('vector_clock')
    .select('tombstones_from')
    .where('id', '=', 1)
    .executeTakeFirstOrThrow();
  return Number(r.tombstones_from);
}

const inPartition = (db: Db, table: 'vectors' | 'vector_tombstones', k: PartitionKey) =>
  anyDb(db)
    .selectFrom(table)
    .where('project_id', '=', k.scope.project)
    .where('owner_kind', '=', k.kind)
    .where('type', '=', k.type)
    .where('model', '=', k.model);

/** Owners of a partition written or deleted after `revision` (their current rows are read back by the caller). */
export async function changedSince(db: Db, k: PartitionKey, revision: number): Promise<string[]> {
  const written = await inPartition(db, 'vectors', k).where('revision', '>', revision).select('owner_id').execute();
  const deleted = await inPartition(db, 'vector_tombstones', k)
    .where('revision', '>', revision)
    .select('owner_id')
    .execute();
  return [...new Set([...written, ...deleted].map((r: { owner_id: string }) => r.owner_id))];
}

/** Drops tombstones older than `before` (ISO) and moves `tombstones_from` past them. */
export async function pruneTombstones(db: Db, before: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const t = anyDb(trx);
    const r = await t
      .selectFrom('vector_tombstones')
      .select((eb) => eb.fn.max('revision').as('m'))
      .where('deleted_at', '<', before)
      .executeTakeFirst();
    if (r?.m === null || r?.m === undefined) return;
    const max = Number(r.m);
    await t.deleteFrom('vector_tombstones').where('revision', '<=', max).execute();
    await t
      .updateTable('vector_clock')
      .set({ tombstones_from: max + 1 })
      .where('id', '=', 1)
      .where('tombstones_from', '<=', max)
      .execute();
  });
}

/**
 * Takes (or renews) the build lease of a partition for `holder` until `ms` from now; true when
 * held. A lease another holder let expire is taken over.
 */
export async function acquireLease(db: Db, partition: string, holder: string, ms: number): Promise<boolean> {
  const now = new Date();
  const expires = new Date(now.getTime() + ms).toISOString();
  const rows = await anyDb(db)
    .insertInto('vector_graph_leases')
    .values({ partition_id: partition, holder, expires_at: expires })
    .onConflict((oc) =>
      oc
        .column('partition_id')
        .doUpdateSet({ holder, expires_at: expires })
        .where((eb) =>
          eb.or([
            eb('vector_graph_leases.holder', '=', holder),
            eb('vector_graph_leases.expires_at', '<', now.toISOString()),
          ]),
        ),
    )
    .returning('holder')
    .execute();
  return rows.length === 1 && rows[0].holder === holder;
}

export async function releaseLease(db: Db, partition: string, holder: string): Promise<void> {
  await anyDb(db)
    .deleteFrom('vector_graph_leases')
    .where('partition_id', '=', partition)
    .where('holder', '=', holder)
    .execute();
}

/** Who holds the lease of a partition now (null: nobody, or it expired). */
export async function leaseHolder(db: Db, partition: string): Promise<string | null> {
  const r = await anyDb(db)
    .selectFrom('vector_graph_leases')
    .select(['holder', 'expires_at'])
    .where('partition_id', '=', partition)
    .executeTakeFirst();
  return r && r.expires_at > new Date().toISOString() ? r.holder : null;
}
