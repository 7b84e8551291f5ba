/**
 * Orrery's messages, tools and tool calls as Anthropic Messages content blocks, and back.
 */
import {
  ProviderError,
  toolInputOf,
  type ChatMessage,
  type ContentPart,
  type ThinkingPart,
  type ToolChoice,
  type ToolDefinition,
  type ToolUse,
} from './driver.ts';

type Block = Record<string, unknown>;
export type AnthropicTurn = { role: 'user' | 'assistant'; content: string | Block[] };

/**
 * Consecutive turns of one role become one turn (templates often render several user segments,
 * and tool results are user turns). Plain strings join with a blank line, as they always have;
 * once a turn has parts it is a block list, with tool results first as the API requires.
 */
export function toAnthropicTurns(messages: ChatMessage[]): AnthropicTurn[] {
  const out: AnthropicTurn[] = [];
  for (const m of messages) {
    const role = m.role === 'assistant' ? 'assistant' : 'user';
    if (typeof m.content !== 'string' && m.content.length === 0) continue;
    const prev = out[out.length - 1];
    if (!prev || prev.role !== role) {
      out.push({ role, content: typeof m.content === 'string' ? m.content : m.content.flatMap(toBlock) });
      continue;
    }
    if (typeof prev.content === 'string' && typeof m.content === 'string') {
      prev.content = `${prev.content}\n\n${m.content}`;
      continue;
    }
    const before = typeof prev.content === 'string' ? [textBlock(prev.content)] : prev.content;
    const added = typeof m.content === 'string' ? [textBlock(m.content)] : m.content.flatMap(toBlock);
    const blocks = [...before, ...added];
    prev.content = role === 'user' ? resultsFirst(blocks) : blocks;
  }
  return out;
}

const textBlock = (text: string): Block => ({ type: 'text', text });

const resultsFirst = (blocks: Block[]) => [
  ...blocks.filter((b) => b.type === 'tool_result'),
  ...blocks.filter((b) => b.type !== 'tool_result'),
];

/** A part's cache breakpoint goes on the block it became. */
function toBlock(p: ContentPart): Block[] {
  const blocks = toBlocks(p);
  if (p.type !== 'thinking' && p.cache_control && blocks.length > 0)
    blocks[blocks.length - 1] = { ...blocks[blocks.length - 1], cache_control: p.cache_control };
  return blocks;
}

function toBlocks(p: ContentPart): Block[] {
  switch (p.type) {
    case 'text':
      return p.text === '' ? [] : [{ type: 'text', text: p.text }];
    case 'image':
      return [{ type: 'image', source: mediaSource(p.url, p.media_type) }];
    case 'document':
      return [{ type: 'document', source: mediaSource(p.url, p.media_type) }];
    case 'tool_use':
      // The API takes an object; arguments that never parsed go back as an empty one.
      return [{ type: 'tool_use', id: p.id, name: p.tool_name, input: p.tool_input ?? {} }];
    case 'tool_result':
      return [
        {
          type: 'tool_result',
          tool_use_id: p.tool_use_id,
          content: p.content,
          ...(p.is_error ? { is_error: true } : {}),
        },
      ];
    case 'thinking':
      // Thinking goes back unchanged and only with its signature (the API refuses unsigned blocks);
      // a redacted block goes back as the data it came with.
      if (p.redacted !== undefined) return [{ type: 'redacted_thinking', data: p.redacted }];
      return p.signature ? [{ type: 'thinking', thinking: p.text, signature: p.signature }] : [];
  }
}

function mediaSource(url: string, mediaType: string | undefined): Block {
  const data = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  if (data) return { type: 'base64', media_type: mediaType ?? data[1], data: data[2] };
  if (/^https?:\/\//.test(url)) return { type: 'url', url };
  throw new ProviderError(
    'provider_bad_request',
    `Anthropic takes media as an https or data URL, not ${url.slice(0, 40)}`,
  );
}

export const toAnthropicTools = (tools: ToolDefinition[]) =>
  tools.map((t) => ({
    name: t.name,
    ...(t.description !== undefined ? { description: t.description } : {}),
    input_schema: t.input_schema,
    ...(t.cache_control ? { cache_control: t.cache_control } : {}),
  }));

/**
 * The system prompt: one string, or text blocks when a part carries a cache breakpoint (the
 * blocks keep it; Anthropic caches the prompt up to the block).
 */
export function toAnthropicSystem(system: ChatMessage[], extra: string[]): string | Block[] | undefined {
  const parts = system.flatMap((m) =>
    typeof m.content === 'string' ? [{ type: 'text' as const, text: m.content }] : m.content,
  );
  const texts = parts.filter((p) => p.type === 'text' && p.text !== '') as Array<{
    type: 'text';
    text: string;
    cache_control?: Block;
  }>;
  if (texts.some((t) => t.cache_control)) {
    const blocks: Block[] = texts.map((t) => ({
      type: 'text',
      text: t.text,
      ...(t.cache_control ? { cache_control: t.cache_control } : {}),
    }));
    for (const e of extra) blocks.push({ type: 'text', text: e });
    return blocks;
  }
  const joined = [...texts.map((t) => t.text), ...extra];
  return joined.length > 0 ? joined.join('\n\n') : undefined;
}

/** Anthropic has auto, any and none; `required` is its `any`. */
export const toAnthropicToolChoice = (choice: ToolChoice) => ({
  type: choice === 'required' ? 'any' : choice,
});

export interface AnthropicBlock {
  type?: string;
  text?: string;
  /** A `thinking` block's reasoning, and its signature. */
  thinking?: string;
  signature?: string;
  /** A `redacted_thinking` block's encrypted reasoning. */
  data?: string;
  id?: string;
  name?: string;
  input?: unknown;
}

/** The `tool_use` blocks of an answer, in order. */
export function fromAnthropicBlocks(blocks: AnthropicBlock[]): ToolUse[] | undefined {
  const out: ToolUse[] = [];
  for (const b of blocks) {
    if (!b || b.type !== 'tool_use') continue;
    const input = b.input;
    out.push({
      id: b.id ?? '',
      tool_name: b.name ?? '',
      ...(input !== null && typeof input === 'object' && !Array.isArray(input)
        ? { tool_input: input as Record<string, unknown> }
        : toolInputOf(JSON.stringify(input ?? null))),
    });
  }
  return out.length > 0 ? out : undefined;
}

/** A `thinking` or `redacted_thinking` block as the part that keeps it; undefined for other blocks. */
function thinkingPartOf(b: AnthropicBlock | undefined): ThinkingPart | undefined {
  if (b?.type === 'redacted_thinking' && typeof b.data === 'string')
    return { type: 'thinking', text: '', redacted: b.data };
  if (b?.type !== 'thinking' || typeof b.thinking !== 'string') return undefined;
  return { type: 'thinking', text: b.thinking, ...(typeof b.signature === 'string' ? { signature: b.signature } : {}) };
}

/** The reasoning blocks of an answer, in order. */
export function thinkingOf(blocks: AnthropicBlock[]): ThinkingPart[] | undefined {
  const out = blocks.map(thinkingPartOf).filter((p) => p !== undefined);
  return out.length > 0 ? out : undefined;
}

/**
 * Streamed reasoning blocks: content_block_start opens one (a redacted block comes whole in it),
 * `thinking_delta` and `signature_delta` events fill it, content_block_stop closes it.
 */
export class ThinkingBlockAssembler {
  private readonly open = new Map<number, ThinkingPart>();

  start(index: number, block: AnthropicBlock | undefined): void {
    const part = thinkingPartOf(block);
    if (part) this.open.set(index, part);
  }

  thinking(index: number, text: string): void {
    const p = this.open.get(index);
    if (p && p.redacted === undefined) p.text += text;
  }

  signature(index: number, signature: string): void {
    const p = this.open.get(index);
    if (p && p.redacted === undefined) p.signature = (p.signature ?? '') + signature;
  }

  /** The block closed at `index`, whole; undefined when it was no reasoning block. */
  stop(index: number): ThinkingPart | undefined {
    const p = this.open.get(index);
    this.open.delete(index);
    return p;
  }
}

/**
 * A streamed `tool_use` block: content_block_start names id and tool (its `input` is `{}`), then
 * `input_json_delta` events carry pieces of the arguments' JSON text, keyed by block index.
 */
export class ToolBlockAssembler {
  private readonly blocks = new Map<number, { id: string; name: string; json: string }>();

  start(index: number, block: AnthropicBlock | undefined): void {
    if (block?.type === 'tool_use') this.blocks.set(index, { id: block.id ?? '', name: block.name ?? '', json: '' });
  }

  delta(index: number, partialJson: string): void {
    const b = this.blocks.get(index);
    if (b) b.json += partialJson;
  }

  result(): ToolUse[] | undefined {
    if (this.blocks.size === 0) return undefined;
    return [...this.blocks.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, b]) => ({ id: b.id, tool_name: b.name, ...toolInputOf(b.json) }));
  }
}
