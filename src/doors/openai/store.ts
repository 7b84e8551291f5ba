/**
 * SQL for door turns (migration 0026). The table is declared here, with the slice of it this
 * feature uses (style K3), so the shared schema stays untouched. Every query is scoped by project.
 */
import type { Kysely } from 'kysely';
import type { Scope } from '../../auth/principal.ts';
import type { ProjectScope } from '../../db/project-rows.ts';
import { isCompletedRun } from '../../runs/reads.ts';

interface DoorTurnTable {
  account_id: string;
  project_id: string;
  hash: string;
  run_id: string;
  length: number;
  created_at: string;
}

export interface TurnsDb {
  door_turns: DoorTurnTable;
}

export const turnsOf = (db: object) => db as Kysely<TurnsDb>;

/** The longest stored conversation among `hashes` whose run still exists (retention may have deleted it). */
export async function longestTurn(
  db: Kysely<TurnsDb>,
  s: Scope,
  hashes: string[],
): Promise<{ run_id: string; length: number } | undefined> {
  return (
    db
      .selectFrom('door_turns')
      .select(['door_turns.run_id', 'door_turns.length'])
      .where('door_turns.project_id', '=', s.project)
      .where('door_turns.account_id', '=', s.account)
      .where('door_turns.hash', 'in', hashes)
      // The run is runs' row: runs writes the condition.
      .where(isCompletedRun(s, 'door_turns.run_id'))
      .orderBy('door_turns.length', 'desc')
      .limit(1)
      .executeTakeFirst()
  );
}

/** Records a conversation's hash (the first run that answered it keeps it). */
export async function putTurn(
  db: Kysely<TurnsDb>,
  s: Scope,
  turn: { hash: string; run_id: string; length: number },
): Promise<void> {
  await db
    .insertInto('door_turns')
    .values({ account_id: s.account, project_id: s.project, ...turn, created_at: new Date().toISOString() })
    .onConflict((oc) => oc.columns(['project_id', 'hash']).doNothing())
    .execute();
}

/** The turns recorded by runs of one scope (inside those runs' deletion: DELETE /runs/:id, retention). */
export async function deleteRunTurns(db: Kysely<TurnsDb>, s: Scope, runIds: readonly string[]): Promise<void> {
  if (!runIds.length) return;
  await db
    .deleteFrom('door_turns')
    .where('project_id', '=', s.project)
    .where('account_id', '=', s.account)
    .where('run_id', 'in', runIds)
    .execute();
}

/** A project's turns (inside its deletion); how many went. */
export async function deleteProjectTurns(db: Kysely<TurnsDb>, s: ProjectScope): Promise<Record<string, number>> {
  const r = await db
    .deleteFrom('door_turns')
    .where('project_id', '=', s.project)
    .where('account_id', '=', s.account)
    .executeTakeFirst();
  return { door_turns: Number(r.numDeletedRows) };
}
