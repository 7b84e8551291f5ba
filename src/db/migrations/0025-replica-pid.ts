/**
 * 0025: where each replica's process is: its pid namespace and pid on its host. A replica on this host whose process is gone is known to be
 * dead at once (cluster/replicas.ts), so a restarted single node fails the runs its previous
 * process left `processing` at start instead of after ORRERY_REPLICA_TIMEOUT. Frozen (style K7).
 */
import type { Kysely } from 'kysely';
import type { DialectName } from '../dialect.ts';

export async function up(db: Kysely<any>, _d: DialectName): Promise<void> {
  await db.schema.alterTable('replicas').addColumn('process', 'text').execute();
}
