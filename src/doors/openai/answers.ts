/**
 * A run as OpenAI answers: a `chat.completion` (blocking) or `chat.completion.chunk`s (streamed),
 * whichever provider answered. Ids are the run's (`chatcmpl-<run id>`), so an answer leads back
 * to its run; finish reasons are OpenAI's (`stop`, `length`, `tool_calls`, `content_filter`).
 */
import { toolInputText, type ToolUse } from '../../providers/driver.ts';
import type { ResultPart, TokenUse } from '../../runs/model.ts';

/** What the door reads of a run to answer. */
export interface AnsweredRun {
  id: string;
  result: ResultPart[];
  finish_reason?: string;
  token_use: TokenUse;
  tool_use?: ToolUse[];
}

const completionId = (runId: string): string => `chatcmpl-${runId}`;

/** Orrery's normalised finish reasons in OpenAI's words. */
function finishReasonOf(run: Pick<AnsweredRun, 'finish_reason' | 'tool_use'>): string {
  if (run.tool_use?.length) return 'tool_calls';
  switch (run.finish_reason) {
    case 'length':
    case 'max_tokens':
      return 'length';
    case 'content_filter':
    case 'safety':
      return 'content_filter';
    case 'tool_use':
      return 'tool_calls';
    default:
      return 'stop';
  }
}

/** The answer's text: text parts as they are, JSON parts (a result schema's answer) as JSON text. */
export function contentOf(result: ResultPart[]): string {
  let text = '';
  for (const part of result)
    if (part.type !== 'thoughts') text += part.type === 'text' ? part.value : JSON.stringify(part.value);
  return text;
}

const toolCallsOf = (calls: ToolUse[]) =>
  calls.map((c) => ({
    id: c.id,
    type: 'function' as const,
    function: { name: c.tool_name, arguments: toolInputText(c) },
  }));

function usageOf(use: TokenUse) {
  const prompt = use.prompt ?? 0;
  const completion = use.result ?? 0;
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: use.total ?? prompt + completion,
    prompt_tokens_details: { cached_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 0 },
  };
}

export function toCompletion(run: AnsweredRun, model: string, created: number) {
  const calls = run.tool_use?.length ? toolCallsOf(run.tool_use) : undefined;
  const text = contentOf(run.result);
  return {
    id: completionId(run.id),
    object: 'chat.completion' as const,
    created,
    model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant' as const,
          content: calls && text === '' ? null : text,
          refusal: null,
          ...(calls ? { tool_calls: calls } : {}),
        },
        logprobs: null,
        finish_reason: finishReasonOf(run),
      },
    ],
    usage: usageOf(run.token_use),
    system_fingerprint: null,
  };
}

/** Writes one run's chunks: a head, then text deltas, then tool calls, the finish and the usage. */
export class ChunkWriter {
  private readonly prefix: string;
  private readonly suffix: string;

  constructor(
    runId: string,
    model: string,
    created: number,
    private readonly includeUsage: boolean,
  ) {
    // Every chunk has the same head: written once, the delta spliced in.
    this.prefix = `{"id":${JSON.stringify(completionId(runId))},"object":"chat.completion.chunk","created":${created},"model":${JSON.stringify(model)},"system_fingerprint":null,"choices":[{"index":0,"delta":`;
    this.suffix = includeUsage ? ',"usage":null}' : '}';
  }

  private choice(delta: string, finish: string | null): string {
    return `${this.prefix}${delta},"logprobs":null,"finish_reason":${finish === null ? 'null' : JSON.stringify(finish)}}]${this.suffix}`;
  }

  head(): string {
    return this.choice('{"role":"assistant","content":"","refusal":null}', null);
  }

  text(text: string): string {
    return this.choice(`{"content":${JSON.stringify(text)}}`, null);
  }

  toolCalls(calls: ToolUse[]): string {
    const deltas = toolCallsOf(calls).map((c, index) => ({ index, ...c }));
    return this.choice(JSON.stringify({ tool_calls: deltas }), null);
  }

  finish(run: AnsweredRun): string {
    return this.choice('{}', finishReasonOf(run));
  }

  /** The last chunk of `stream_options.include_usage`: no choices, the usage. */
  usage(run: AnsweredRun): string | undefined {
    if (!this.includeUsage) return undefined;
    const head = this.prefix.slice(0, this.prefix.indexOf('"choices":'));
    return `${head}"choices":[],"usage":${JSON.stringify(usageOf(run.token_use))}}`;
  }
}
