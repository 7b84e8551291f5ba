/**
 * The `test` provider: offline, deterministic models, so tests and a first run need no API key.
 *  - echo:  answers the last user message verbatim, streamed word by word.
 *  - json:  answers a JSON value that conforms to the request's result_schema.
 *  - error: always fails like a provider error (not worth a retry).
 *  - tools: with tools and a user turn last, calls each given tool once, in order, with arguments
 *           sampled from its input schema; with tool results last, answers with those results
 *           (`name: content` lines); without tools, answers as echo.
 * Fault models, to test retries, failover and timeouts offline (`name:arg`, like `flaky:2`); each
 * answers as `echo` when it does not fail:
 *  - slow:MS            waits MS ms (default 1000) before answering.
 *  - flaky:N            the first N calls (default 1) with the same prompt fail with a 503.
 *  - rate_limit:N:MS    the first N calls (default 1) with the same prompt fail with a 429 that asks
 *                       to retry after MS ms (default 1000).
 *  - error_mid_stream:K streams K chunks (default 1), then fails with a 502; a blocking call fails with it.
 *  - stall:K            streams K chunks (default 1), then sends nothing more: the connection's
 *                       timeout (config.timeout_ms) ends it as a provider that stopped sending.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ProviderError,
  type ChatMessage,
  type Completion,
  type CompletionChunk,
  type CompletionRequest,
  type ModelDriver,
  type ModelInfo,
  type ProviderConnection,
  type ToolUse,
  messageText,
} from './driver.ts';
import { sampleFromSchema } from './schema-sample.ts';
import { timeoutOf } from './provider-http.ts';

const TEST_MODELS: readonly ModelInfo[] = [
  {
    id: 'echo',
    name: 'Echo',
    description: 'Offline test model: answers the last user message verbatim, streamed word by word.',
  },
  {
    id: 'json',
    name: 'JSON',
    description: 'Offline test model: answers a deterministic JSON value that conforms to the result schema.',
  },
  { id: 'error', name: 'Error', description: 'Offline test model: always fails with a provider error.' },
  {
    id: 'tools',
    name: 'Tools',
    description:
      'Offline test model: calls each given tool once with arguments sampled from its schema, then answers with the results it was sent.',
  },
  { id: 'slow', name: 'Slow', description: 'Fault model: slow:MS waits MS ms (default 1000), then answers as echo.' },
  {
    id: 'flaky',
    name: 'Flaky',
    description: 'Fault model: flaky:N fails the first N calls with the same prompt (503), then answers as echo.',
  },
  {
    id: 'rate_limit',
    name: 'Rate limit',
    description:
      'Fault model: rate_limit:N:MS answers 429 (retry after MS ms) to the first N calls with the same prompt.',
  },
  {
    id: 'error_mid_stream',
    name: 'Error mid-stream',
    description: 'Fault model: error_mid_stream:K streams K chunks, then fails (502).',
  },
  {
    id: 'stall',
    name: 'Stall',
    description: 'Fault model: stall:K streams K chunks, then stops sending until the timeout.',
  },
];

/** Calls so far of the counting fault models, by model and prompt (bounded: the oldest go first). */
const calls = new Map<string, number>();
function callNumber(model: string, prompt: string): number {
  const key = `${model}\u0000${prompt}`;
  const n = (calls.get(key) ?? 0) + 1;
  calls.delete(key);
  calls.set(key, n);
  if (calls.size > 10_000) calls.delete(calls.keys().next().value!);
  return n;
}

interface Fault {
  kind: 'slow' | 'flaky' | 'rate_limit' | 'error_mid_stream' | 'stall';
  args: number[];
}

function faultOf(model: string): Fault | undefined {
  const [kind, ...rest] = model.split(':');
  if (!['slow', 'flaky', 'rate_limit', 'error_mid_stream', 'stall'].includes(kind)) return undefined;
  const args = rest.map(Number);
  if (args.some((n) => !Number.isFinite(n) || n < 0)) {
    throw new ProviderError(
      'provider_bad_request',
      `test provider: ${JSON.stringify(model)} takes non-negative numbers after its name (${kind}:N)`,
      400,
    );
  }
  return { kind: kind as Fault['kind'], args };
}

/**
 * A timer counts from the event loop's cached time, which can be a little behind the clock: it may
 * fire a millisecond before `ms` have passed since the call. Wait until they really have.
 */
async function waitAtLeast(ms: number, signal?: AbortSignal): Promise<void> {
  const until = performance.now() + ms;
  for (let left = ms; left > 0; left = until - performance.now()) await sleep(Math.ceil(left), undefined, { signal });
}

/** Before anything is answered: the waits and failures of the fault models. */
async function beforeAnswer(fault: Fault | undefined, req: CompletionRequest, signal?: AbortSignal): Promise<void> {
  if (!fault) return;
  const [a, b] = fault.args;
  if (fault.kind === 'slow') await waitAtLeast(a ?? 1000, signal);
  if (fault.kind === 'flaky' && callNumber(req.model, lastUserText(req.messages)) <= (a ?? 1)) {
    throw new ProviderError('provider_error', 'test provider: the flaky model failed this call (503)', 503, true);
  }
  if (fault.kind === 'rate_limit' && callNumber(req.model, lastUserText(req.messages)) <= (a ?? 1)) {
    throw new ProviderError('provider_rate_limited', 'test provider: rate limited (429)', 429, true, b ?? 1000);
  }
}

type Answer = { text: string; pieces: string[]; tool_use?: ToolUse[] };

export class TestProviderDriver implements ModelDriver {
  readonly provider = 'test';

  async complete(conn: ProviderConnection, req: CompletionRequest, signal?: AbortSignal): Promise<Completion> {
    signal?.throwIfAborted();
    const fault = faultOf(req.model);
    await beforeAnswer(fault, req, signal);
    if (fault?.kind === 'error_mid_stream') throw midStream();
    if (fault?.kind === 'stall') {
      await sleep(timeoutOf(conn), undefined, { signal });
      throw stopped(conn);
    }
    const { text, tool_use } = answer(req);
    const out: Completion = {
      text,
      finish_reason: tool_use ? 'tool_use' : 'stop',
      token_use: usage(req.messages, text),
    };
    if (tool_use) out.tool_use = tool_use;
    return out;
  }

  async *stream(
    conn: ProviderConnection,
    req: CompletionRequest,
    signal?: AbortSignal,
  ): AsyncGenerator<CompletionChunk> {
    signal?.throwIfAborted();
    const fault = faultOf(req.model);
    await beforeAnswer(fault, req, signal);
    const { text, pieces, tool_use } = answer(req); // the error model throws here, before any chunk
    const delay = chunkDelay(conn);
    const cut =
      fault && (fault.kind === 'error_mid_stream' || fault.kind === 'stall') ? (fault.args[0] ?? 1) : Infinity;
    for (const [i, piece] of pieces.entries()) {
      if (i >= cut) {
        if (fault!.kind === 'error_mid_stream') throw midStream();
        await sleep(timeoutOf(conn), undefined, { signal });
        throw stopped(conn);
      }
      if (delay > 0 && i > 0) await sleep(delay, undefined, { signal });
      signal?.throwIfAborted();
      yield { text: piece };
    }
    const last: CompletionChunk = {
      finish_reason: tool_use ? 'tool_use' : 'stop',
      token_use: usage(req.messages, text),
    };
    if (tool_use) last.tool_use = tool_use;
    yield last;
  }

  async listModels(): Promise<ModelInfo[]> {
    return TEST_MODELS.map((m) => ({ ...m }));
  }
}

const midStream = () => new ProviderError('provider_error', 'test provider: the stream broke off (502)', 502, true);
const stopped = (conn: ProviderConnection) =>
  new ProviderError(
    'provider_unreachable',
    `test provider stopped sending within ${timeoutOf(conn)} ms`,
    undefined,
    true,
  );

function answer(req: CompletionRequest): Answer {
  const model = faultOf(req.model) ? 'echo' : req.model;
  switch (model) {
    case 'echo': {
      const text = lastUserText(req.messages);
      return { text, pieces: splitWords(text) };
    }
    case 'json': {
      const value = req.result_schema ? sampleFromSchema(req.result_schema) : { echo: lastUserText(req.messages) };
      const text = JSON.stringify(value);
      return { text, pieces: splitEvenly(text, 4) };
    }
    case 'tools':
      return toolsAnswer(req);
    case 'error':
      throw new ProviderError('provider_error', 'test provider: the error model always fails', 500);
    default:
      throw new ProviderError(
        'provider_bad_request',
        `test provider has no model ${JSON.stringify(req.model)}; its models are ${TEST_MODELS.map((m) => m.id).join(', ')}`,
        404,
      );
  }
}

function lastUserText(messages: ChatMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i].role === 'user') return messageText(messages[i]);
  return '';
}

/**
 * The `tools` model. Results after the last assistant turn are answered, each as `name: content`
 * (`name failed: content` for an error); otherwise every tool is called once. Call ids count the
 * assistant turns before, so they are deterministic and unique within a conversation.
 */
function toolsAnswer(req: CompletionRequest): Answer {
  const { messages } = req;
  let lastAssistant = -1;
  for (let i = messages.length - 1; i >= 0 && lastAssistant < 0; i--)
    if (messages[i].role === 'assistant') lastAssistant = i;
  const names = new Map<string, string>();
  for (const m of messages)
    if (typeof m.content !== 'string')
      for (const p of m.content) if (p.type === 'tool_use') names.set(p.id, p.tool_name);
  const results = messages
    .slice(lastAssistant + 1)
    .flatMap((m) => (typeof m.content === 'string' ? [] : m.content))
    .filter((p) => p.type === 'tool_result');
  if (results.length > 0) {
    const text = results
      .map((r) => `${names.get(r.tool_use_id) ?? r.tool_use_id}${r.is_error ? ' failed' : ''}: ${r.content}`)
      .join('\n');
    return { text, pieces: splitWords(text) };
  }
  if (!req.tools?.length || req.tool_choice === 'none') {
    const text = lastUserText(messages);
    return { text, pieces: splitWords(text) };
  }
  const turn = messages.filter((m) => m.role === 'assistant').length + 1;
  const tool_use = req.tools.map((t, i) => ({
    id: `toolu_test_${turn}_${i + 1}`,
    tool_name: t.name,
    tool_input: sampledInput(t.input_schema),
  }));
  return { text: '', pieces: [], tool_use };
}

function sampledInput(schema: Record<string, unknown>): Record<string, unknown> {
  const v = sampleFromSchema(schema);
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

/** Pieces that each end after a word's trailing spaces; joined with '' they give `text` back exactly. */
export function splitWords(text: string): string[] {
  if (text === '') return [];
  return text.split(/(?<=\s)(?=\S)/);
}

function splitEvenly(text: string, parts: number): string[] {
  const size = Math.max(1, Math.ceil(text.length / parts));
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

/** Whitespace-separated words: deterministic, and close enough to tokens for tests. */
const countWords = (text: string) => text.split(/\s+/).filter(Boolean).length;

function usage(messages: ChatMessage[], answerText: string) {
  const prompt = messages.reduce((n, m) => n + countWords(messageText(m)), 0);
  const result = countWords(answerText);
  return { prompt, result, total: prompt + result };
}

function chunkDelay(conn: ProviderConnection): number {
  const d = conn.config?.chunk_delay_ms;
  return typeof d === 'number' && Number.isFinite(d) && d > 0 ? d : 0;
}
