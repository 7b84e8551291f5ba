/**
 * Messages that come from outside (a `conversation` passed back by a caller) checked part by part,
 * so a history the server did not build is held to the same shapes as one it did.
 */
import type { ChatMessage, ContentPart } from '../providers/driver.ts';
import { InvalidConversation } from './errors.ts';

const ROLES = new Set(['system', 'user', 'assistant', 'tool']);

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const str = (v: unknown) => typeof v === 'string';

function checkPart(p: unknown, where: string): ContentPart {
  const bad = (what: string) => new InvalidConversation(`${where} ${what}`);
  if (!isObject(p) || !str(p.type)) throw bad('must be a part {type, …}');
  switch (p.type) {
    case 'text':
      if (!str(p.text)) throw bad('(text) needs text: string');
      return { type: 'text', text: p.text as string };
    case 'image':
    case 'document':
      if (!str(p.url)) throw bad(`(${p.type}) needs url: string`);
      return p as unknown as ContentPart;
    case 'tool_use':
      if (!str(p.id) || !str(p.tool_name)) throw bad('(tool_use) needs id and tool_name strings');
      if (p.tool_input !== null && !isObject(p.tool_input))
        throw bad('(tool_use) tool_input must be an object or null');
      return p as unknown as ContentPart;
    case 'tool_result':
      if (!str(p.tool_use_id) || !str(p.content)) throw bad('(tool_result) needs tool_use_id and content strings');
      if (p.is_error !== undefined && typeof p.is_error !== 'boolean')
        throw bad('(tool_result) is_error must be a boolean');
      return p as unknown as ContentPart;
    case 'thinking':
      if (!str(p.text)) throw bad('(thinking) needs text: string');
      return p as unknown as ContentPart;
    default:
      throw bad(`has type ${JSON.stringify(p.type)}; parts are text, image, document, tool_use, tool_result, thinking`);
  }
}

/** A message's list of parts, each checked; `where` names the message (`data.chat[2]`). */
export const checkParts = (parts: unknown[], where: string): ContentPart[] =>
  parts.map((p, j) => checkPart(p, `${where}.content[${j}]`));

/** A list of messages as Orrery stores them, or a 400 naming the first thing wrong. */
export function checkMessages(value: unknown, where: string): ChatMessage[] {
  if (!Array.isArray(value)) throw new InvalidConversation(`${where} must be a list of messages`);
  return value.map((m, i) => {
    const at = `${where}[${i}]`;
    if (!isObject(m) || !str(m.role) || !ROLES.has(m.role as string)) {
      throw new InvalidConversation(`${at} must be a message whose role is system, user, assistant or tool`);
    }
    if (str(m.content)) return { role: m.role, content: m.content } as ChatMessage;
    if (!Array.isArray(m.content)) throw new InvalidConversation(`${at}.content must be a string or a list of parts`);
    return {
      role: m.role,
      content: checkParts(m.content, at),
    } as ChatMessage;
  });
}

/** Bytes of the JSON text of a value: what the bounds count. */
export const jsonBytes = (v: unknown): number => Buffer.byteLength(JSON.stringify(v) ?? '');
