/**
 * What other features ask of runs inside their own queries, so that none of them names runs'
 * tables: conditions runs writes over its own table, for a caller's WHERE.
 */
import { sql, type RawBuilder, type SqlBool } from 'kysely';
import type { Scope } from '../auth/principal.ts';

/** True where the run whose id is in column `runId` (e.g. 'door_turns.run_id') is a completed run of the project. */
export const isCompletedRun = (s: Scope, runId: string): RawBuilder<SqlBool> =>
  sql<SqlBool>`EXISTS (SELECT 1 FROM runs WHERE runs.id = ${sql.ref(runId)} AND runs.project_id = ${s.project} AND runs.status = 'completed')`;

export { aggregateRunValues, type RunValueAggregate, type RunValueGroup } from './aggregates.ts';
