/**
 * Orrery's messages, tools and tool calls as Gemini (Vertex AI) contents, and back: `functionCall`
 * parts in `model` turns, `functionResponse` parts in `user` turns, `tools[].functionDeclarations`
 * and `toolConfig.functionCallingConfig`.
 *
 * Gemini may give a call no id (it pairs a response with its call by function name and order), so
 * a call without one gets an id Orrery makes: stable (the same answer to the same history gets the
 * same id) and unique per call (the history's length and the call's position are in it). A result
 * names its call by that id; the response goes back under the call's function name, with the id
 * only when Gemini gave one.
 */
import { createHash } from 'node:crypto';
import {
  ProviderError,
  messageText,
  type ChatMessage,
  type ToolChoice,
  type ToolDefinition,
  type ToolUse,
} from './driver.ts';

type Part = Record<string, unknown>;
export interface GeminiContent {
  role: 'user' | 'model';
  parts: Part[];
}

/** Ids Orrery made for calls Gemini gave none; they are never sent back as Gemini's own. */
const MADE_ID = 'orrery_fc_';

/**
 * The non-system messages as contents: consecutive turns of one role merged into one content,
 * a plain string one text part as before, tool calls and results as function parts.
 */
export function toGeminiContents(messages: ChatMessage[]): GeminiContent[] {
  const callNames = new Map<string, string>();
  for (const m of messages)
    if (typeof m.content !== 'string')
      for (const p of m.content) if (p.type === 'tool_use') callNames.set(p.id, p.tool_name);
  const out: GeminiContent[] = [];
  for (const m of messages) {
    const role = m.role === 'assistant' ? 'model' : 'user';
    const parts = typeof m.content === 'string' ? [{ text: m.content }] : partsOf(m, callNames);
    if (parts.length === 0) continue;
    const prev = out[out.length - 1];
    if (prev && prev.role === role) prev.parts.push(...parts);
    else out.push({ role, parts });
  }
  return out;
}

function partsOf(m: ChatMessage, callNames: Map<string, string>): Part[] {
  const out: Part[] = [];
  if (typeof m.content === 'string') return out;
  for (const p of m.content) {
    if (p.type === 'text' && p.text !== '') out.push({ text: p.text });
    else if (p.type === 'tool_use') {
      out.push({
        functionCall: { name: p.tool_name, args: p.tool_input ?? {}, ...(providerId(p.id) ? { id: p.id } : {}) },
        ...(p.thought_signature ? { thoughtSignature: p.thought_signature } : {}),
      });
    } else if (p.type === 'tool_result') {
      const name = callNames.get(p.tool_use_id);
      if (name === undefined) {
        throw new ProviderError(
          'provider_bad_request',
          `a tool_result answers call "${p.tool_use_id}", which no assistant message of the history made; Gemini answers a call under its function name, so the call must be in the history`,
        );
      }
      out.push({
        functionResponse: {
          name,
          response: responseOf(p.content, p.is_error === true),
          ...(providerId(p.tool_use_id) ? { id: p.tool_use_id } : {}),
        },
      });
    } else if (p.type === 'image' || p.type === 'document') {
      out.push({ inlineData: inlineBytes(p.url, p.media_type, 'Gemini') });
    }
    // Thinking has no Gemini part here.
  }
  return out;
}

const providerId = (id: string) => id !== '' && !id.startsWith(MADE_ID);

/**
 * Gemini's FunctionResponse.response is a JSON object: `output` holds the result and `error` a
 * failure, as Google documents; a result that is itself a JSON object goes as it is (llumiverse's rule).
 */
function responseOf(content: string, isError: boolean): Record<string, unknown> {
  if (isError) return { error: content };
  const text = content.trim();
  if (text.startsWith('{') && text.endsWith('}')) {
    try {
      const v: unknown = JSON.parse(text);
      if (v !== null && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
    } catch {
      // sent as output below
    }
  }
  return { output: content };
}

/** All the run's tools as one Tool of function declarations, their JSON Schema as `parametersJsonSchema`. */
export const toGeminiTools = (tools: ToolDefinition[]) => [
  {
    functionDeclarations: tools.map((t) => ({
      name: t.name,
      ...(t.description !== undefined ? { description: t.description } : {}),
      parametersJsonSchema: t.input_schema,
    })),
  },
];

/** Gemini's modes are AUTO, ANY and NONE; `required` is its ANY. */
export const toGeminiToolConfig = (choice: ToolChoice) => ({
  functionCallingConfig: { mode: choice === 'none' ? 'NONE' : choice === 'auto' ? 'AUTO' : 'ANY' },
});

export interface GeminiPart {
  text?: string;
  thought?: boolean;
  thoughtSignature?: string;
  functionCall?: { id?: string; name?: string; args?: unknown };
}

/**
 * The calls of an answer, in order, across the pieces of a stream (Gemini sends each call whole in
 * one piece). `seed` ties the made ids to the history they answer.
 */
export class GeminiCallCollector {
  private readonly calls: ToolUse[] = [];

  constructor(private readonly seed: string) {}

  push(parts: GeminiPart[]): void {
    for (const p of parts) {
      const call = p?.functionCall;
      if (!call || typeof call !== 'object') continue;
      const name = typeof call.name === 'string' ? call.name : '';
      const args = call.args;
      const index = this.calls.length;
      const input =
        args === undefined || args === null
          ? { tool_input: {} }
          : typeof args === 'object' && !Array.isArray(args)
            ? { tool_input: args as Record<string, unknown> }
            : { tool_input: null, tool_input_text: JSON.stringify(args), tool_input_invalid: true as const };
      const id =
        typeof call.id === 'string' && call.id !== ''
          ? call.id
          : `${MADE_ID}${createHash('sha256')
              .update(`${this.seed}\0${index}\0${name}\0${JSON.stringify(args ?? {})}`)
              .digest('hex')
              .slice(0, 20)}`;
      this.calls.push({
        id,
        tool_name: name,
        ...input,
        ...(typeof p.thoughtSignature === 'string' && p.thoughtSignature
          ? { thought_signature: p.thoughtSignature }
          : {}),
      });
    }
  }

  result(): ToolUse[] | undefined {
    return this.calls.length > 0 ? this.calls : undefined;
  }
}

/** What the made ids of an answer depend on: the history it answers (its messages, in order). */
export const callSeedOf = (messages: ChatMessage[]): string =>
  `${messages.length}\0${createHash('sha256')
    .update(messages.map((m) => `${m.role}\0${messageText(m)}`).join('\0'))
    .digest('hex')
    .slice(0, 16)}`;

/** A media part's bytes (a data URL, as the run path makes of stored objects) as Gemini's inline data. */
function inlineBytes(url: string, mediaType: string | undefined, label: string): { mimeType: string; data: string } {
  const data = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  if (!data)
    throw new ProviderError(
      'provider_bad_request',
      `${label} takes media as its bytes (a stored object or a data: URL), not a link: ${url.slice(0, 40)}`,
    );
  return { mimeType: mediaType ?? data[1]!, data: data[2]! };
}
