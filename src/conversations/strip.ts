/**
 * `strip_options` as Vertesia defines them (ConversationStripOptions), applied to the turns before
 * the one being sent, by their age (how many turns ago they were):
 *  - images_after_turns (default 5): images and documents older than N turns become a placeholder
 *    (0: gone from the history after their own turn). Counted per part, from the turn that sent
 *    it, as packages/common documents it ("keep images for N turns before stripping"); the
 *    llumiverse drivers Vertesia's workflow passes it to count the conversation's turns instead
 *    (everything goes once the conversation has N), which drops a late image at once.
 *  - text_max_tokens (default none): text and tool results of earlier turns longer than N tokens
 *    (about 4 characters each) are cut, with a marker.
 *  - heartbeats_after_turns (default 1, keep only the most recent): a text that is one
 *    `<heartbeat>…</heartbeat>` status older than N turns becomes a placeholder.
 * The stored turns are never changed: stripping shapes what the provider is sent.
 */
import type { ChatMessage, ContentPart } from '../providers/driver.ts';
import { InvalidConversation } from './errors.ts';
import type { StoredTurn } from './history.ts';

export interface StripOptions {
  images_after_turns?: number;
  text_max_tokens?: number;
  heartbeats_after_turns?: number;
}

const IMAGE_PLACEHOLDER = '[Image removed from conversation history]';
const DOCUMENT_PLACEHOLDER = '[Document removed from conversation history]';
const HEARTBEAT_PLACEHOLDER = '[Heartbeat removed from conversation history]';
const TRUNCATED = '\n\n[Content truncated - exceeded token limit]';
const CHARS_PER_TOKEN = 4;

/** The options of a request, or a 400 naming the field: each a number from 0 (a huge one means never). */
export function readStripOptions(value: unknown): StripOptions | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value))
    throw new InvalidConversation('strip_options must be an object');
  const out: StripOptions = {};
  for (const [k, v] of Object.entries(value)) {
    if (k !== 'images_after_turns' && k !== 'text_max_tokens' && k !== 'heartbeats_after_turns') {
      throw new InvalidConversation(
        `strip_options.${k} is not an option; they are images_after_turns, text_max_tokens, heartbeats_after_turns`,
      );
    }
    if (typeof v !== 'number' || Number.isNaN(v) || v < 0) {
      throw new InvalidConversation(`strip_options.${k} must be a number from 0`);
    }
    out[k] = v;
  }
  return out;
}

/** The history's messages with each earlier turn stripped by its age; `currentTurn` is the turn being sent. */
export function stripHistory(
  turns: StoredTurn[],
  currentTurn: number,
  options: StripOptions | undefined,
): ChatMessage[] {
  const messagesOf = (t: StoredTurn) => (t.answer ? [...t.input, t.answer] : t.input);
  if (!options) return turns.flatMap(messagesOf);
  const images = options.images_after_turns ?? 5;
  const heartbeats = options.heartbeats_after_turns ?? 1;
  const maxChars = options.text_max_tokens ? options.text_max_tokens * CHARS_PER_TOKEN : undefined;
  return turns.flatMap((t) => {
    const age = currentTurn - t.turn;
    if (age <= 0) return messagesOf(t);
    const rule = { stripMedia: age > images, stripHeartbeats: age > heartbeats, maxChars };
    return messagesOf(t).map((m) => stripMessage(m, rule));
  });
}

interface Rule {
  stripMedia: boolean;
  stripHeartbeats: boolean;
  maxChars?: number;
}

function stripMessage(m: ChatMessage, rule: Rule): ChatMessage {
  if (typeof m.content === 'string') return { role: m.role, content: stripText(m.content, rule) };
  return { role: m.role, content: m.content.map((p) => stripPart(p, rule)) };
}

function stripPart(p: ContentPart, rule: Rule): ContentPart {
  if (p.type === 'image' && rule.stripMedia) return { type: 'text', text: IMAGE_PLACEHOLDER };
  if (p.type === 'document' && rule.stripMedia) return { type: 'text', text: DOCUMENT_PLACEHOLDER };
  if (p.type === 'text') return { type: 'text', text: stripText(p.text, rule) };
  if (p.type === 'tool_result') return { ...p, content: stripText(p.content, rule) };
  return p;
}

function stripText(text: string, rule: Rule): string {
  if (rule.stripHeartbeats && text.startsWith('<heartbeat>') && text.endsWith('</heartbeat>'))
    return HEARTBEAT_PLACEHOLDER;
  if (rule.maxChars === undefined || text.length <= rule.maxChars) return text;
  let end = rule.maxChars;
  // Never cut a surrogate pair in half: a lone half is not valid Unicode, and strict JSON parsers refuse it.
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return text.slice(0, end) + TRUNCATED;
}
