/**
 * A conversation's history rebuilt from its runs. Each run stores only its own turn (the messages
 * it added, and its answer) and the id of the run before it, so storage grows with the turn and
 * not with the history; the server walks the chain back to the first run.
 */
import type { ChatMessage, ThinkingPart, ToolUse } from '../providers/driver.ts';
import { checkBytes, checkTurns, type ConversationBounds } from './conversation.ts';
import { ConversationTurnLost } from './errors.ts';
import { jsonBytes } from './messages.ts';

/** What one run of a conversation keeps of it. */
export interface StoredTurn {
  id: string;
  /** The run this one continues; absent on the first. */
  previous_run?: string;
  /** 1 for the first run, then one more per continuation. */
  turn: number;
  /** The messages this turn added: the rendered prompt on the first, the results or user message after. */
  input: ChatMessage[];
  /** The model's answer (text and tool calls), absent while the run has none. */
  answer?: ChatMessage;
}

/** Finds a run of the caller's project; undefined when it is not there (deleted, expired, another project's). */
export type TurnLoader = (runId: string) => Promise<StoredTurn | undefined>;

export interface History {
  /** The turns, first to last. */
  turns: StoredTurn[];
  /** Their messages in order, as the provider receives them. */
  messages: ChatMessage[];
  bytes: number;
}

/**
 * The history up to and including run `lastId`. A run missing on the way is a lost turn (409): the
 * history cannot be trusted whole. Bounds are checked while walking, so an over-long chain stops early.
 */
export async function rebuildHistory(lastId: string, load: TurnLoader, bounds: ConversationBounds): Promise<History> {
  const turns: StoredTurn[] = [];
  let bytes = 0;
  let id: string | undefined = lastId;
  let expected: number | undefined;
  while (id !== undefined) {
    const turn = await load(id);
    if (!turn) {
      const after = turns[turns.length - 1];
      throw new ConversationTurnLost(
        after
          ? `the history of run ${lastId} lost turn ${after.turn - 1}: run ${id}, which run ${after.id} continues, no longer exists`
          : `run ${id} no longer exists`,
      );
    }
    if (expected !== undefined && turn.turn !== expected) {
      throw new ConversationTurnLost(
        `the history of run ${lastId} is broken at run ${turn.id}: it is turn ${turn.turn} where turn ${expected} was expected`,
      );
    }
    checkTurns(turns.length + 1, bounds);
    bytes += jsonBytes(turn.input) + (turn.answer ? jsonBytes(turn.answer) : 0);
    checkBytes(bytes, bounds);
    turns.push(turn);
    expected = turn.turn - 1;
    id = turn.previous_run;
  }
  if (turns[turns.length - 1].turn !== 1) {
    const first = turns[turns.length - 1];
    throw new ConversationTurnLost(
      `the history of run ${lastId} lost its start: run ${first.id} is turn ${first.turn} and continues no run`,
    );
  }
  turns.reverse();
  const messages = turns.flatMap((t) => (t.answer ? [...t.input, t.answer] : t.input));
  return { turns, messages, bytes };
}

/**
 * The assistant message of an answer: its signed reasoning blocks (sent back unchanged, as
 * Anthropic requires with thinking and tools), its text and its calls, in that order.
 */
export function answerMessage(
  text: string,
  toolUse: ToolUse[] | undefined,
  thinking: ThinkingPart[] = [],
): ChatMessage {
  if ((!toolUse || toolUse.length === 0) && thinking.length === 0) return { role: 'assistant', content: text };
  return {
    role: 'assistant',
    content: [
      ...thinking,
      ...(text !== '' ? [{ type: 'text' as const, text }] : []),
      ...(toolUse ?? []).map((t) => ({ type: 'tool_use' as const, ...t })),
    ],
  };
}
