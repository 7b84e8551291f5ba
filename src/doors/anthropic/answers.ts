/**
 * A run as Anthropic answers: a `message` (blocking) or the Messages stream's events, whichever
 * provider answered. Ids are the run's (`msg_<run id>`), so an answer leads back to its run; stop
 * reasons are Anthropic's (`end_turn`, `max_tokens`, `tool_use`, `refusal`).
 */
import type { ThinkingPart, ToolUse } from '../../providers/driver.ts';
import type { ResultPart, TokenUse } from '../../runs/model.ts';
import { contentOf } from '../openai/answers.ts';

/** What the door reads of a run to answer. */
export interface AnsweredRun {
  id: string;
  result: ResultPart[];
  finish_reason?: string;
  token_use: TokenUse;
  tool_use?: ToolUse[];
  thinking?: ThinkingPart[];
}

const messageId = (runId: string): string => `msg_${runId}`;

/** Orrery's normalised finish reasons in Anthropic's words. */
function stopReasonOf(run: Pick<AnsweredRun, 'finish_reason' | 'tool_use'>): string {
  if (run.tool_use?.length) return 'tool_use';
  switch (run.finish_reason) {
    case 'length':
    case 'max_tokens':
      return 'max_tokens';
    case 'content_filter':
    case 'safety':
      return 'refusal';
    case 'tool_use':
      return 'tool_use';
    default:
      return 'end_turn';
  }
}

const toolBlock = (c: ToolUse) => ({
  type: 'tool_use' as const,
  id: c.id,
  name: c.tool_name,
  // Arguments the model wrote that never parsed as an object go back as an empty one (the wire takes an object).
  input: c.tool_input ?? {},
});

/** A reasoning block as Anthropic wrote it: signed thinking, or redacted data. */
const thinkingBlock = (b: ThinkingPart) =>
  b.redacted !== undefined
    ? { type: 'redacted_thinking' as const, data: b.redacted }
    : { type: 'thinking' as const, thinking: b.text, signature: b.signature ?? '' };

/** Anthropic's usage: input_tokens leaves out the tokens read from and written to the cache. */
function usageOf(use: TokenUse) {
  const read = use.cache_read ?? 0;
  const write = use.cache_write ?? 0;
  return {
    input_tokens: Math.max(0, (use.prompt ?? 0) - read - write),
    output_tokens: use.result ?? 0,
    cache_creation_input_tokens: write,
    cache_read_input_tokens: read,
  };
}

export function toMessage(run: AnsweredRun, model: string) {
  const text = contentOf(run.result);
  const calls = run.tool_use ?? [];
  return {
    id: messageId(run.id),
    type: 'message' as const,
    role: 'assistant' as const,
    model,
    content: [
      ...(run.thinking ?? []).map(thinkingBlock),
      ...(text !== '' || !calls.length ? [{ type: 'text' as const, text }] : []),
      ...calls.map(toolBlock),
    ],
    stop_reason: stopReasonOf(run),
    stop_sequence: null,
    usage: usageOf(run.token_use),
  };
}

/** One event of the stream: its name and its data (the data's `type` is the name, as Anthropic sends it). */
export interface StreamEvent {
  event: string;
  data: string;
}

const ev = (data: Record<string, unknown> & { type: string }): StreamEvent => ({
  event: data.type,
  data: JSON.stringify(data),
});

/**
 * Writes one run's events in Anthropic's order: message_start, ping, each reasoning block
 * (content_block_start, thinking_delta, signature_delta, content_block_stop; a redacted block whole
 * in its start), a text block
 * (content_block_start, its text_delta events, content_block_stop) while text arrives, then each
 * tool_use block (its input as one input_json_delta), message_delta with the stop reason and the
 * usage (input_tokens too: the run knows its usage only at its end), message_stop.
 */
export class StreamWriter {
  private textOpen = false;
  private textIndex = 0;
  private blocks = 0;
  /** Blocks written, so that the end does not write again those the live stream wrote. */
  private thinkingWritten = 0;

  constructor(
    private readonly runId: string,
    private readonly model: string,
  ) {}

  start(): StreamEvent[] {
    return [
      ev({
        type: 'message_start',
        message: {
          id: messageId(this.runId),
          type: 'message',
          role: 'assistant',
          model: this.model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: 0, output_tokens: 0 },
        },
      }),
      ev({ type: 'ping' }),
    ];
  }

  /** A whole reasoning block; Claude closes every one before its text, so it comes before the text block. */
  thinking(block: ThinkingPart): StreamEvent[] {
    if (this.textOpen) return []; // cannot happen with Claude; the block is still in the run
    const index = this.blocks++;
    this.thinkingWritten++;
    if (block.redacted !== undefined)
      return [
        ev({ type: 'content_block_start', index, content_block: thinkingBlock(block) }),
        ev({ type: 'content_block_stop', index }),
      ];
    return [
      ev({ type: 'content_block_start', index, content_block: { type: 'thinking', thinking: '', signature: '' } }),
      ev({ type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking: block.text } }),
      ev({ type: 'content_block_delta', index, delta: { type: 'signature_delta', signature: block.signature ?? '' } }),
      ev({ type: 'content_block_stop', index }),
    ];
  }

  text(text: string): StreamEvent[] {
    const out: StreamEvent[] = [];
    if (!this.textOpen) out.push(...this.openText());
    out.push(ev({ type: 'content_block_delta', index: this.textIndex, delta: { type: 'text_delta', text } }));
    return out;
  }

  private openText(): StreamEvent[] {
    this.textOpen = true;
    this.textIndex = this.blocks++;
    return [ev({ type: 'content_block_start', index: this.textIndex, content_block: { type: 'text', text: '' } })];
  }

  end(run: AnsweredRun): StreamEvent[] {
    const out: StreamEvent[] = [];
    const calls = run.tool_use ?? [];
    const text = contentOf(run.result);
    // Blocks the live stream did not carry (a run followed after its end, a blocking call's cache).
    for (const b of (run.thinking ?? []).slice(this.thinkingWritten)) out.push(...this.thinking(b));
    // A run that answered without chunks (a cached answer) gives its text at once; an answer with
    // neither text nor calls is still one (empty) text block, as a blocking answer is.
    if (!this.textOpen && (text !== '' || !calls.length)) {
      out.push(...this.openText());
      if (text !== '')
        out.push(ev({ type: 'content_block_delta', index: this.textIndex, delta: { type: 'text_delta', text } }));
    }
    if (this.textOpen) out.push(ev({ type: 'content_block_stop', index: this.textIndex }));
    for (const c of calls) {
      const index = this.blocks++;
      out.push(ev({ type: 'content_block_start', index, content_block: { ...toolBlock(c), input: {} } }));
      out.push(
        ev({
          type: 'content_block_delta',
          index,
          delta: { type: 'input_json_delta', partial_json: JSON.stringify(c.tool_input ?? {}) },
        }),
      );
      out.push(ev({ type: 'content_block_stop', index }));
    }
    out.push(
      ev({
        type: 'message_delta',
        delta: { stop_reason: stopReasonOf(run), stop_sequence: null },
        usage: usageOf(run.token_use),
      }),
    );
    out.push(ev({ type: 'message_stop' }));
    return out;
  }

  /** A run that failed mid-stream: Anthropic's `error` event. */
  static error(type: string, message: string): StreamEvent {
    return ev({ type: 'error', error: { type, message } });
  }
}
