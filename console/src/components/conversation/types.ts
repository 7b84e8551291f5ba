/**
 * The shapes of a conversation as the API answers them (providers/driver.ts on the server): a
 * message is text or a list of parts; an assistant's answer is a run's result and its tool_use.
 * Everything here comes from the network, so every field is checked before it is read.
 */
export interface ToolCall {
  id: string;
  tool_name: string;
  tool_input: Record<string, unknown> | null;
  tool_input_text?: string;
  tool_input_invalid?: true;
}

export type Part =
  | { type: 'text'; text: string }
  | ({ type: 'tool_use' } & ToolCall)
  | { type: 'tool_result'; tool_use_id: string; content: string; is_error?: boolean }
  | { type: 'thinking'; text: string }
  | { type: 'image' | 'document'; url: string; name?: string; media_type?: string }
  | { type: string; [k: string]: unknown };

export interface Message {
  role: string;
  content: string | Part[];
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

/** A message from the network, or undefined when it has no role and no content to show. */
export function asMessage(v: unknown): Message | undefined {
  if (!isObject(v)) return undefined;
  const role = typeof v.role === 'string' ? v.role : 'message';
  if (typeof v.content === 'string') return { role, content: v.content };
  if (Array.isArray(v.content)) return { role, content: v.content.filter(isObject) as Part[] };
  return undefined;
}

/** The tool calls of a run (`tool_use`), the malformed entries dropped. */
export function toolCallsOf(v: unknown): ToolCall[] {
  if (!Array.isArray(v)) return [];
  return v.filter((c): c is ToolCall => isObject(c) && typeof c.id === 'string' && typeof c.tool_name === 'string');
}

/** The text of a run's result parts (text parts as they are, JSON parts pretty-printed). */
export function resultText(result: unknown): string {
  if (!Array.isArray(result)) return '';
  return result
    .filter(isObject)
    .map((p) => (p.type === 'text' && typeof p.value === 'string' ? p.value : JSON.stringify(p.value, null, 2)))
    .filter((t) => t !== undefined && t !== '')
    .join('\n');
}

/** A run's answer as an assistant message: its text, then its tool calls; none when it has neither. */
export function answerMessage(run: { result?: unknown; tool_use?: unknown }): Message | undefined {
  const text = resultText(run.result);
  const calls = toolCallsOf(run.tool_use);
  if (!calls.length) return text ? { role: 'assistant', content: text } : undefined;
  const parts: Part[] = text ? [{ type: 'text', text }] : [];
  for (const c of calls) parts.push({ type: 'tool_use', ...c });
  return { role: 'assistant', content: parts };
}
