/**
 * Orrery's messages, tools and tool calls in the Chat Completions wire form, and back: the part of
 * the OpenAI-shaped drivers (OpenAI, Azure OpenAI, compatible servers, Groq, Together, Mistral, xAI)
 * that knows about parts.
 */
import {
  ProviderError,
  toolInputOf,
  toolInputText,
  type ChatMessage,
  type ContentPart,
  type ToolChoice,
  type ToolDefinition,
  type ToolUse,
} from './driver.ts';

type WireMessage = Record<string, unknown>;

/**
 * One Orrery message can be several wire messages: tool results are each their own `tool` message
 * (Chat Completions answers a call with a message per call). A string stays `{role, content}` as
 * it always was, byte for byte.
 */
export function toOpenAIMessages(
  messages: ChatMessage[],
  label: string,
  /** `detail` of every image part (`model_options.image_detail`); absent leaves it to the provider. */
  imageDetail?: 'low' | 'high' | 'auto',
): WireMessage[] {
  const out: WireMessage[] = [];
  for (const m of messages) {
    if (typeof m.content === 'string') {
      if (m.role === 'tool') {
        throw new ProviderError('provider_bad_request', `a tool message needs a tool_result part naming its call`);
      }
      out.push({ role: m.role, content: m.content });
      continue;
    }
    const results = m.content.filter((p) => p.type === 'tool_result');
    for (const r of results) out.push({ role: 'tool', tool_call_id: r.tool_use_id, content: resultText(r) });
    const rest = m.content.filter((p) => p.type !== 'tool_result' && p.type !== 'thinking');
    if (m.role === 'assistant') {
      const calls = rest.filter((p) => p.type === 'tool_use');
      const text = rest
        .filter((p) => p.type === 'text')
        .map((p) => p.text)
        .join('');
      if (calls.length === 0 && text === '' && results.length > 0) continue;
      const wire: WireMessage = { role: 'assistant', content: calls.length > 0 && text === '' ? null : text };
      if (calls.length > 0) {
        wire.tool_calls = calls.map((c) => ({
          id: c.id,
          type: 'function',
          function: { name: c.tool_name, arguments: toolInputText(c) },
        }));
      }
      out.push(wire);
      continue;
    }
    if (rest.length === 0) continue; // a message of tool results only
    const role = m.role === 'tool' ? 'user' : m.role;
    // System messages take text parts only; a user message may carry media.
    out.push({ role, content: rest.map((p) => userPart(p, label, imageDetail)) });
  }
  return out;
}

/** A tool message has no error flag on this wire: a failed tool's result says so in its text. */
const resultText = (r: Extract<ContentPart, { type: 'tool_result' }>) =>
  r.is_error ? `Error: ${r.content}` : r.content;

function userPart(p: ContentPart, label: string, imageDetail?: string): Record<string, unknown> {
  switch (p.type) {
    case 'text':
      return { type: 'text', text: p.text };
    case 'image':
      return { type: 'image_url', image_url: imageDetail ? { url: p.url, detail: imageDetail } : { url: p.url } };
    case 'document':
      // Chat Completions takes a PDF as a `file` part carrying its bytes as a data URL.
      if (!p.url.startsWith('data:'))
        throw new ProviderError(
          'provider_bad_request',
          `${label} takes a document on Chat Completions as its bytes (a stored object or a data: URL), not a link`,
        );
      return { type: 'file', file: { filename: p.name ?? 'document.pdf', file_data: p.url } };
    default:
      throw new ProviderError('provider_bad_request', `a ${p.type} part belongs in an assistant message`);
  }
}

/** `tools` as Chat Completions takes them: functions with a JSON Schema of parameters. */
export const toOpenAITools = (tools: ToolDefinition[]) =>
  tools.map((t) => ({
    type: 'function',
    function: {
      name: t.name,
      ...(t.description !== undefined ? { description: t.description } : {}),
      parameters: t.input_schema,
    },
  }));

/** OpenAI has auto, none and required; Mistral's own `any` is the same as required. */
export function toOpenAIToolChoice(choice: ToolChoice, provider: string): string {
  if (choice === 'any' || choice === 'required') return provider === 'mistralai' ? 'any' : 'required';
  return choice;
}

export interface WireToolCall {
  id?: string | null;
  type?: string | null;
  function?: { name?: string | null; arguments?: string | null } | null;
}

/** `message.tool_calls` → ToolUse, in the model's order; non-function calls are not Orrery's to run. */
export function fromOpenAIToolCalls(calls: WireToolCall[] | null | undefined): ToolUse[] | undefined {
  if (!Array.isArray(calls)) return undefined;
  const out = calls
    .filter((c) => c && (c.type === undefined || c.type === null || c.type === 'function'))
    .map((c) => ({
      id: c.id ?? '',
      tool_name: c.function?.name ?? '',
      ...toolInputOf(c.function?.arguments ?? undefined),
    }));
  return out.length > 0 ? out : undefined;
}

export interface WireToolCallDelta extends WireToolCall {
  index?: number;
}

/**
 * Streamed calls come as deltas keyed by `index`: the first names the id and function, later
 * ones append pieces of the arguments' JSON text. Whole calls are read once the stream ends.
 */
export class ToolCallAssembler {
  private readonly calls = new Map<number, { id: string; name: string; args: string }>();

  push(deltas: WireToolCallDelta[] | null | undefined): void {
    if (!Array.isArray(deltas)) return;
    for (const [position, d] of deltas.entries()) {
      const index = typeof d.index === 'number' ? d.index : position;
      const call = this.calls.get(index) ?? { id: '', name: '', args: '' };
      if (d.id) call.id = d.id;
      if (d.function?.name) call.name += d.function.name;
      if (d.function?.arguments) call.args += d.function.arguments;
      this.calls.set(index, call);
    }
  }

  result(): ToolUse[] | undefined {
    if (this.calls.size === 0) return undefined;
    return [...this.calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, c]) => ({ id: c.id, tool_name: c.name, ...toolInputOf(c.args) }));
  }
}

/** llumiverse's normalisation: any answer with calls, or `tool_calls`, finishes as `tool_use`. */
export function openAIFinish(reason: string | null | undefined, hasCalls: boolean): string | undefined {
  if (hasCalls || reason === 'tool_calls' || reason === 'function_call') return 'tool_use';
  return reason || undefined;
}
