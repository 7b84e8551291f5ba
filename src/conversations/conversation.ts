/**
 * The `conversation` value of the interface, as Orrery answers it: an opaque, versioned object
 * `{orrery_conversation: 1, run, turns, messages?}`. `run` is the conversation's latest run, the
 * one a continuation names; `turns` counts its turns; `messages` is the whole history, sent only
 * while it fits the byte bound (the server keeps the history either way, run by run).
 */
import type { ChatMessage } from '../providers/driver.ts';
import { ConversationMismatch, ConversationTooLong, InvalidConversation } from './errors.ts';
import { checkMessages, jsonBytes } from './messages.ts';

const CONVERSATION_VERSION = 1;

export interface Conversation {
  orrery_conversation: typeof CONVERSATION_VERSION;
  run: string;
  turns: number;
  messages?: ChatMessage[];
}

export interface ConversationBounds {
  /** ORRERY_CONVERSATION_MAX_TURNS */
  maxTurns: number;
  /** ORRERY_CONVERSATION_MAX_BYTES, counted on the history's JSON. */
  maxBytes: number;
}

/**
 * What a request's `conversation` asks for. `true` starts one (the answer carries it); absent,
 * null or false keeps none; an object is a conversation passed back, checked and bounded here.
 */
export type ConversationRequest =
  { kind: 'none' } | { kind: 'start' } | { kind: 'continue'; conversation: Conversation };

export function readConversation(value: unknown, bounds: ConversationBounds): ConversationRequest {
  if (value === undefined || value === null || value === false) return { kind: 'none' };
  if (value === true) return { kind: 'start' };
  const bad = (what: string) =>
    new InvalidConversation(
      `conversation ${what}; pass true to start one, or the conversation object a previous answer carried`,
    );
  if (typeof value !== 'object' || Array.isArray(value)) throw bad('must be true or an object');
  const c = value as Record<string, unknown>;
  if (c.orrery_conversation !== CONVERSATION_VERSION) {
    throw bad(
      c.orrery_conversation === undefined
        ? 'is not one this server made (no orrery_conversation version)'
        : `has version ${JSON.stringify(c.orrery_conversation)}; this server reads version ${CONVERSATION_VERSION}`,
    );
  }
  if (typeof c.run !== 'string' || c.run === '') throw bad('needs run: the id of its latest run');
  if (!Number.isInteger(c.turns) || (c.turns as number) < 1) throw bad('needs turns: a whole number from 1');
  checkTurns(c.turns as number, bounds);
  const out: Conversation = { orrery_conversation: CONVERSATION_VERSION, run: c.run, turns: c.turns as number };
  if (c.messages !== undefined) {
    const messages = checkMessages(c.messages, 'conversation.messages');
    checkBytes(jsonBytes(messages), bounds);
    out.messages = messages;
  }
  return { kind: 'continue', conversation: out };
}

/** A request that names a run and passes a conversation: both must be the same conversation's latest run. */
export function assertSameRun(conversation: Conversation, runId: string): void {
  if (conversation.run !== runId) {
    throw new ConversationMismatch(
      `conversation.run is ${conversation.run} but the request continues run ${runId}; pass the conversation of run ${runId}'s answer, or leave conversation out`,
    );
  }
}

export function checkTurns(turns: number, bounds: ConversationBounds): void {
  if (turns > bounds.maxTurns) {
    throw new ConversationTooLong(
      `the conversation has ${turns} turns, past the limit of ${bounds.maxTurns} (ORRERY_CONVERSATION_MAX_TURNS); start a new conversation`,
    );
  }
}

export function checkBytes(bytes: number, bounds: ConversationBounds): void {
  if (bytes > bounds.maxBytes) {
    throw new ConversationTooLong(
      `the conversation's history is ${bytes} bytes, past the limit of ${bounds.maxBytes} (ORRERY_CONVERSATION_MAX_BYTES); start a new conversation or strip it (strip_options)`,
    );
  }
}

/** The object an answer carries: with the history while it fits the byte bound. */
export function conversationOf(
  run: string,
  turns: number,
  history: ChatMessage[],
  bounds: ConversationBounds,
): Conversation {
  const out: Conversation = { orrery_conversation: CONVERSATION_VERSION, run, turns };
  if (jsonBytes(history) <= bounds.maxBytes) out.messages = history;
  return out;
}

/** The object a streamed run's creation answers: the run and its turn, without messages (it has no answer yet). */
export const conversationRef = (run: string, turns: number): Conversation => ({
  orrery_conversation: CONVERSATION_VERSION,
  run,
  turns,
});
