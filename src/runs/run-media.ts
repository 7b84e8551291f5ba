/**
 * Media inputs on the run path (the media feature, src/media, implements the hook): the parts a
 * run's data carries join its prompt's last user message, and the stored references are read into
 * the bytes a provider is sent before the run's row is written, so every 4xx comes first.
 */
import type { Principal } from '../auth/principal.ts';
import type { ChatMessage, ContentPart } from '../providers/driver.ts';

/** The model a run's media go to: what it takes decides their form (src/media/capabilities.ts). */
export interface MediaTarget {
  provider: string;
  /** The environment's name, for messages. */
  name: string;
  config?: Record<string, unknown> | null;
  model: string;
}

export const mediaTargetOf = (
  env: { name: string; provider: string; config?: Record<string, unknown> | null },
  model: string,
): MediaTarget => ({ provider: env.provider, name: env.name, config: env.config, model });

export interface RunMediaHook {
  /** The media inputs of `data` (by the input schema) as stored parts, and the parts to send for them. */
  inputs(
    p: Principal,
    schema: unknown,
    data: unknown,
    target: MediaTarget,
  ): Promise<{ parts: ContentPart[]; sent: Map<string, ContentPart> }>;
  /** The messages as a provider is sent them: stored media references replaced by their bytes (or a fallback). */
  materialize(
    p: Principal,
    messages: ChatMessage[],
    sent: Map<string, ContentPart> | undefined,
    target: MediaTarget,
  ): Promise<ChatMessage[]>;
}

/** The prompt with the media parts after the text of its last user message (a new one when it has none). */
export function withMedia(messages: ChatMessage[], parts: ContentPart[]): ChatMessage[] {
  if (parts.length === 0) return messages;
  const at = messages.findLastIndex((m) => m.role === 'user');
  if (at < 0) return [...messages, { role: 'user', content: parts }];
  const m = messages[at]!;
  const before: ContentPart[] = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content;
  return messages.map((x, i) => (i === at ? { role: x.role, content: [...before, ...parts] } : x));
}

/** The ids of the content objects the messages' media parts name, each once. */
export function mediaObjectsOf(messages: ChatMessage[]): string[] {
  const ids = new Set<string>();
  for (const m of messages) {
    if (typeof m.content === 'string') continue;
    for (const part of m.content)
      if ((part.type === 'image' || part.type === 'document') && part.object?.id) ids.add(part.object.id);
  }
  return [...ids];
}
