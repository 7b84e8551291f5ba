/**
 * A conversation's runs, found from any one of them through `previous_run` (0028, indexed by
 * project): the first run, reached by walking back, then every run that continues it, forks
 * included. Retention and deletion (runs/retention.ts) act on these runs together, so no
 * continuation is left whose history lost a turn. Two recursive queries, the same SQL on SQLite and
 * PostgreSQL, each bounded.
 */
import { sql } from 'kysely';
import type { Scope } from '../auth/principal.ts';
import type { Db } from './store.ts';

/** The most runs one conversation deletion takes; a larger conversation is refused by name. */
export const CONVERSATION_RUNS_MAX = 10_000;
/** The longest chain walked back (ORRERY_CONVERSATION_MAX_TURNS is at most 100,000). */
const MAX_DEPTH = 100_001;

export interface ChainRun {
  id: string;
  status: string;
  updated_at: string;
  expires_at: string | null;
}

/** The first run of the conversation of run `id` still stored (the run itself when it continues none); undefined when `id` is not there. */
async function firstRunOf(db: Db, s: Scope, id: string): Promise<string | undefined> {
  const r = await sql<{ id: string }>`
    WITH RECURSIVE up(id, previous_run, depth) AS (
      SELECT id, previous_run, 0 FROM runs WHERE account_id = ${s.account} AND project_id = ${s.project} AND id = ${id}
      UNION ALL
      SELECT r.id, r.previous_run, up.depth + 1 FROM runs r JOIN up ON r.id = up.previous_run
      WHERE r.account_id = ${s.account} AND r.project_id = ${s.project} AND up.depth < ${MAX_DEPTH}
    )
    SELECT id FROM up ORDER BY depth DESC LIMIT 1`.execute(db);
  return r.rows[0]?.id;
}

/**
 * The runs of the conversation of run `id` (the run alone when it is in none), at most `max` + 1
 * of them: more than `max` says the conversation is larger. Empty when `id` is not there.
 */
export async function conversationRuns(db: Db, s: Scope, id: string, max = CONVERSATION_RUNS_MAX): Promise<ChainRun[]> {
  const first = await firstRunOf(db, s, id);
  if (first === undefined) return [];
  const r = await sql<ChainRun>`
    WITH RECURSIVE down(id, depth) AS (
      SELECT CAST(${first} AS text), 0
      UNION ALL
      SELECT r.id, down.depth + 1 FROM runs r JOIN down ON r.previous_run = down.id
      WHERE r.project_id = ${s.project} AND r.account_id = ${s.account} AND r.previous_run IS NOT NULL
        AND down.depth < ${MAX_DEPTH}
    )
    SELECT runs.id, runs.status, runs.updated_at, runs.expires_at FROM down JOIN runs ON runs.id = down.id
    LIMIT ${max + 1}`.execute(db);
  return r.rows;
}

/** Which of `ids` (runs of one scope) some run continues: those are in a conversation, with the runs that continue no run. */
export async function continuedAmong(db: Db, s: Scope, ids: readonly string[]): Promise<Set<string>> {
  if (!ids.length) return new Set();
  const rows = await db
    .selectFrom('runs')
    .select('previous_run')
    .distinct()
    .where('project_id', '=', s.project)
    .where('account_id', '=', s.account)
    .where('previous_run', 'in', ids)
    .execute();
  return new Set(rows.map((r) => r.previous_run!));
}
