/**
 * Orrery's messages, tools and tool calls as Bedrock Converse content blocks, and back: `toolUse`
 * blocks in assistant turns, `toolResult` blocks in user turns, `toolConfig` for the tools, and the
 * streamed `contentBlockStart` / `contentBlockDelta` tool events assembled into whole calls.
 */
import {
  ProviderError,
  toolInputOf,
  type ChatMessage,
  type ContentPart,
  type ToolChoice,
  type ToolDefinition,
  type ToolUse,
} from './driver.ts';

type Block = Record<string, unknown>;
export interface ConverseTurn {
  role: 'user' | 'assistant';
  content: Block[];
}

/**
 * Consecutive turns of one role become one turn: Converse requires user and assistant to alternate
 * (tool results are user turns). Plain strings join with a blank line into one text block, as they
 * always have; a user turn keeps its tool results first, as Claude on Bedrock requires.
 */
export function toConverseTurns(messages: ChatMessage[]): ConverseTurn[] {
  const out: ConverseTurn[] = [];
  for (const m of messages) {
    const role = m.role === 'assistant' ? 'assistant' : 'user';
    const blocks = typeof m.content === 'string' ? [{ text: m.content }] : m.content.flatMap(toBlock);
    if (blocks.length === 0) continue;
    const prev = out[out.length - 1];
    if (!prev || prev.role !== role) {
      out.push({ role, content: blocks });
      continue;
    }
    const last = prev.content[prev.content.length - 1];
    if (typeof m.content === 'string' && prev.content.length === 1 && typeof last.text === 'string') {
      last.text = `${last.text}\n\n${m.content}`;
      continue;
    }
    prev.content = role === 'user' ? resultsFirst([...prev.content, ...blocks]) : [...prev.content, ...blocks];
  }
  return out;
}

const resultsFirst = (blocks: Block[]) => [
  ...blocks.filter((b) => b.toolResult),
  ...blocks.filter((b) => !b.toolResult),
];

function toBlock(p: ContentPart): Block[] {
  switch (p.type) {
    case 'text':
      return p.text === '' ? [] : [{ text: p.text }];
    case 'tool_use':
      // Converse takes the input as a JSON object; arguments that never parsed go back as an empty one.
      return [{ toolUse: { toolUseId: p.id, name: p.tool_name, input: p.tool_input ?? {} } }];
    case 'tool_result':
      return [
        {
          toolResult: {
            toolUseId: p.tool_use_id,
            // Converse refuses an empty content list or an empty text.
            content: [{ text: p.content === '' ? '[No output]' : p.content }],
            ...(p.is_error ? { status: 'error' } : {}),
          },
        },
      ];
    case 'image': {
      const { format, bytes } = converseBytes(p.url, p.media_type);
      return [{ image: { format, source: { bytes } } }];
    }
    case 'document': {
      const { bytes } = converseBytes(p.url, p.media_type);
      return [{ document: { format: 'pdf', name: documentName(p.name), source: { bytes } } }];
    }
    default:
      // Thinking has no Converse block here.
      return [];
  }
}

/** True when a history carries tool blocks: Converse then requires `toolConfig` on the request. */
export const hasToolBlocks = (turns: ConverseTurn[]) =>
  turns.some((t) => t.content.some((b) => b.toolUse !== undefined || b.toolResult !== undefined));

/**
 * `toolConfig`: each tool a `toolSpec` with its JSON Schema under `inputSchema.json`. Converse has
 * `auto`, `any` and `tool`, no `none`: a `none` run sends its tools only when the history already
 * has tool blocks (Converse refuses them otherwise), without a choice.
 */
export function toConverseToolConfig(
  tools: ToolDefinition[],
  choice: ToolChoice | undefined,
  historyHasTools: boolean,
): Record<string, unknown> | undefined {
  if (choice === 'none' && !historyHasTools) return undefined;
  const config: Record<string, unknown> = {
    tools: tools.map((t) => ({
      toolSpec: {
        name: t.name,
        ...(t.description !== undefined ? { description: t.description } : {}),
        inputSchema: { json: t.input_schema },
      },
    })),
  };
  if (choice === 'auto') config.toolChoice = { auto: {} };
  else if (choice === 'any' || choice === 'required') config.toolChoice = { any: {} };
  return config;
}

interface ConverseToolUse {
  toolUseId?: string;
  name?: string;
  input?: unknown;
}

/** The `toolUse` blocks of an answer's content, in order. */
export function fromConverseContent(content: unknown[]): ToolUse[] | undefined {
  const out: ToolUse[] = [];
  for (const b of content) {
    const use = (b as { toolUse?: ConverseToolUse } | null)?.toolUse;
    if (!use || typeof use !== 'object') continue;
    const input = use.input;
    out.push({
      id: use.toolUseId ?? '',
      tool_name: use.name ?? '',
      ...(input !== null && typeof input === 'object' && !Array.isArray(input)
        ? { tool_input: input as Record<string, unknown> }
        : toolInputOf(typeof input === 'string' ? input : JSON.stringify(input ?? null))),
    });
  }
  return out.length > 0 ? out : undefined;
}

/**
 * ConverseStream's tool calls: `contentBlockStart` names the call (`start.toolUse`) at a block
 * index, then `contentBlockDelta` events carry pieces of its input's JSON text (`delta.toolUse.input`).
 */
export class ConverseToolAssembler {
  private readonly blocks = new Map<number, { id: string; name: string; json: string }>();

  start(index: number, start: { toolUse?: ConverseToolUse } | undefined): void {
    const use = start?.toolUse;
    if (use) this.blocks.set(index, { id: use.toolUseId ?? '', name: use.name ?? '', json: '' });
  }

  delta(index: number, input: unknown): void {
    const b = this.blocks.get(index);
    if (b && typeof input === 'string') b.json += input;
  }

  result(): ToolUse[] | undefined {
    if (this.blocks.size === 0) return undefined;
    return [...this.blocks.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, b]) => ({ id: b.id, tool_name: b.name, ...toolInputOf(b.json) }));
  }
}

/** A media part's bytes (a data URL, as the run path makes of stored objects) as Converse takes them: base64 in JSON. */
function converseBytes(url: string, mediaType: string | undefined): { format: string; bytes: string } {
  const data = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  if (!data)
    throw new ProviderError(
      'provider_bad_request',
      `Bedrock takes media as its bytes (a stored object or a data: URL), not a link: ${url.slice(0, 40)}`,
    );
  const type = (mediaType ?? data[1]!).toLowerCase();
  return { format: type.slice(type.indexOf('/') + 1).replace('jpg', 'jpeg'), bytes: data[2]! };
}

/** Converse names a document with letters, digits, spaces, hyphens, parentheses and brackets only. */
const documentName = (name: string | undefined): string =>
  (name ?? 'document')
    .replace(/\.pdf$/i, '')
    .replace(/[^A-Za-z0-9 ()[\]-]+/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 200) || 'document';
