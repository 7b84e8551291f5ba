/**
 * A run as the Responses API answers: a `response` object (blocking) or its streaming events,
 * whichever provider answered. Ids are the run's (`resp_<run id>`, `msg_<run id>`), so a response
 * leads back to its run and `previous_response_id` to the run it continues.
 */
import { toolInputText, type ToolUse } from '../../providers/driver.ts';
import type { ResultPart, TokenUse } from '../../runs/model.ts';
import { contentOf } from '../openai/answers.ts';
import { responseId } from './history.ts';

type Json = Record<string, unknown>;

/** What the door reads of a run to answer. */
export interface AnsweredRun {
  id: string;
  result: ResultPart[];
  finish_reason?: string;
  token_use: TokenUse;
  tool_use?: ToolUse[];
  error?: { code: string; message: string };
}

/** The request's fields a response echoes (OpenAI's response object repeats them). */
export interface Echo {
  model: string;
  created_at: number;
  instructions: string | null;
  previous_response_id: string | null;
  temperature: number | null;
  top_p: number | null;
  max_output_tokens: number | null;
  tools: unknown[];
  tool_choice: unknown;
  parallel_tool_calls: boolean;
  text: unknown;
  store: boolean;
  metadata: Record<string, string>;
  user: string | null;
}

const messageItemId = (runId: string) => `msg_${runId}`;
const callItemId = (callId: string) => `fc_${callId}`;

const usageOf = (use: TokenUse) => {
  const input = use.prompt ?? 0;
  const output = use.result ?? 0;
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: use.total ?? input + output,
  };
};

const textPart = (text: string) => ({ type: 'output_text' as const, text, annotations: [], logprobs: [] });

const messageItem = (runId: string, text: string, status: string) => ({
  type: 'message' as const,
  id: messageItemId(runId),
  status,
  role: 'assistant' as const,
  content: status === 'completed' ? [textPart(text)] : [],
});

const callItem = (c: ToolUse, status: string) => ({
  type: 'function_call' as const,
  id: callItemId(c.id),
  call_id: c.id,
  name: c.tool_name,
  arguments: status === 'completed' ? toolInputText(c) : '',
  status,
});

/** The response a run is, at its end (or in_progress, for the stream's first events). */
export function toResponse(
  run: AnsweredRun,
  echo: Echo,
  status: 'in_progress' | 'completed' | 'failed' | 'incomplete',
) {
  const text = contentOf(run.result);
  const calls = run.tool_use ?? [];
  const ended = status === 'completed' || status === 'incomplete';
  const output = ended
    ? [
        ...(text !== '' || !calls.length ? [messageItem(run.id, text, 'completed')] : []),
        ...calls.map((c) => callItem(c, 'completed')),
      ]
    : [];
  return {
    id: responseId(run.id),
    object: 'response' as const,
    created_at: echo.created_at,
    status,
    background: false,
    error:
      status === 'failed'
        ? { code: run.error?.code ?? 'server_error', message: run.error?.message ?? 'the run failed' }
        : null,
    incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    instructions: echo.instructions,
    max_output_tokens: echo.max_output_tokens,
    metadata: echo.metadata,
    model: echo.model,
    output,
    parallel_tool_calls: echo.parallel_tool_calls,
    previous_response_id: echo.previous_response_id,
    reasoning: { effort: null, summary: null },
    store: echo.store,
    temperature: echo.temperature,
    text: echo.text,
    tool_choice: echo.tool_choice,
    tools: echo.tools,
    top_p: echo.top_p,
    truncation: 'disabled' as const,
    usage: ended ? usageOf(run.token_use) : null,
    user: echo.user,
  };
}

/** Whether a run's answer was cut at its token bound (an incomplete response). */
export const statusOf = (run: AnsweredRun) =>
  run.finish_reason === 'length' || run.finish_reason === 'max_tokens'
    ? ('incomplete' as const)
    : ('completed' as const);

/** One event of the stream: its name and its data (with its `type` and `sequence_number`). */
export interface StreamEvent {
  event: string;
  data: string;
}

/**
 * Writes one run's events in OpenAI's order: response.created and response.in_progress; a
 * message item (output_item.added, content_part.added, output_text.delta…, output_text.done,
 * content_part.done, output_item.done) while text arrives; each function call item (its
 * arguments as one delta); then response.completed (or response.failed).
 */
export class ResponseEvents {
  private seq = 0;
  private text = '';
  private textOpen = false;

  constructor(
    private readonly runId: string,
    private readonly echo: Echo,
  ) {}

  private ev(type: string, fields: Json): StreamEvent {
    return { event: type, data: JSON.stringify({ type, sequence_number: this.seq++, ...fields }) };
  }

  start(): StreamEvent[] {
    const response = toResponse({ id: this.runId, result: [], token_use: {} }, this.echo, 'in_progress');
    return [this.ev('response.created', { response }), this.ev('response.in_progress', { response })];
  }

  delta(text: string): StreamEvent[] {
    const out = this.textOpen ? [] : this.openText();
    this.text += text;
    out.push(
      this.ev('response.output_text.delta', {
        item_id: messageItemId(this.runId),
        output_index: 0,
        content_index: 0,
        delta: text,
        logprobs: [],
      }),
    );
    return out;
  }

  private openText(): StreamEvent[] {
    this.textOpen = true;
    return [
      this.ev('response.output_item.added', { output_index: 0, item: messageItem(this.runId, '', 'in_progress') }),
      this.ev('response.content_part.added', {
        item_id: messageItemId(this.runId),
        output_index: 0,
        content_index: 0,
        part: textPart(''),
      }),
    ];
  }

  end(run: AnsweredRun): StreamEvent[] {
    const out: StreamEvent[] = [];
    const calls = run.tool_use ?? [];
    const text = contentOf(run.result);
    if (!this.textOpen && (text !== '' || !calls.length)) {
      // The run answered without chunks (a cached answer, a result schema's JSON): its text at once.
      out.push(...this.openText());
      if (text !== '') out.push(...this.delta(text));
    }
    if (this.textOpen) {
      const item = messageItemId(this.runId);
      out.push(
        this.ev('response.output_text.done', { item_id: item, output_index: 0, content_index: 0, text, logprobs: [] }),
        this.ev('response.content_part.done', {
          item_id: item,
          output_index: 0,
          content_index: 0,
          part: textPart(text),
        }),
        this.ev('response.output_item.done', { output_index: 0, item: messageItem(this.runId, text, 'completed') }),
      );
    }
    let index = this.textOpen ? 1 : 0;
    for (const c of calls) {
      const args = toolInputText(c);
      out.push(
        this.ev('response.output_item.added', { output_index: index, item: callItem(c, 'in_progress') }),
        this.ev('response.function_call_arguments.delta', {
          item_id: callItemId(c.id),
          output_index: index,
          delta: args,
        }),
        this.ev('response.function_call_arguments.done', {
          item_id: callItemId(c.id),
          output_index: index,
          name: c.tool_name,
          arguments: args,
        }),
        this.ev('response.output_item.done', { output_index: index, item: callItem(c, 'completed') }),
      );
      index++;
    }
    const status = statusOf(run);
    out.push(
      this.ev(status === 'incomplete' ? 'response.incomplete' : 'response.completed', {
        response: toResponse(run, this.echo, status),
      }),
    );
    return out;
  }

  /** A run that failed: response.failed, its error in the response. */
  failed(run: AnsweredRun): StreamEvent[] {
    return [this.ev('response.failed', { response: toResponse(run, this.echo, 'failed') })];
  }
}
