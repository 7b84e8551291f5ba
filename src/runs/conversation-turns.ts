/**
 * A run as a turn of its conversation (conversations/history.ts): its prompt is the messages the
 * turn added, its result and tool calls its answer, `previous_run` the turn before it. So a
 * conversation is stored run by run, and nothing is stored twice.
 */
import type { Scope } from '../auth/principal.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import type { ChatMessage } from '../providers/driver.ts';
import { answerMessage, type StoredTurn, type TurnLoader } from '../conversations/history.ts';
import { docOf, type RunRow } from './model.ts';
import { textOf } from './virtual.ts';
import * as store from './store.ts';

/** The turn a run is: 1 for a run that continues none. */
export const turnNumberOf = (row: RunRow): number => docOf(row).conversation?.turn ?? 1;

/** The answer of a run as the assistant message the next turn's history holds; none while it has none. */
export function answerOf(row: RunRow): ChatMessage | undefined {
  const doc = docOf(row);
  if (row.status !== 'completed') return undefined;
  return answerMessage(textOf(doc.result), doc.tool_use, doc.thinking);
}

function turnOf(row: RunRow): StoredTurn {
  const doc = docOf(row);
  const answer = answerOf(row);
  return {
    id: row.id,
    ...(doc.previous_run ? { previous_run: doc.previous_run } : {}),
    turn: turnNumberOf(row),
    input: doc.prompt as ChatMessage[],
    ...(answer ? { answer } : {}),
  };
}

/**
 * Reads the turns of the caller's project. A run of a restricted conversation does not hold the
 * history before it, so a chain that reaches one is cut there (a lost turn, 409).
 */
export function turnLoader(db: store.Db, dialect: OrreryDialect, scope: Scope, last: string): TurnLoader {
  return async (id) => {
    const row = await store.getRun(db, dialect, scope, id);
    if (!row) return undefined;
    if (id !== last && docOf(row).conversation?.restricted) return undefined;
    return turnOf(row);
  };
}
