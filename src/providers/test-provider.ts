/**
 * The `test` provider: offline, deterministic models, so tests and a first run need no API key.
 *  - echo:  answers the last user message verbatim, streamed word by word.
 *  - json:  answers a JSON value that conforms to the request's result_schema.
 *  - error: always fails like a provider error.
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
} from './driver.ts';
import { sampleFromSchema } from './schema-sample.ts';

export const TEST_MODELS: readonly ModelInfo[] = [
  { id: 'echo', name: 'Echo', description: 'Offline test model: answers the last user message verbatim, streamed word by word.' },
  { id: 'json', name: 'JSON', description: 'Offline test model: answers a deterministic JSON value that conforms to the result schema.' },
  { id: 'error', name: 'Error', description: 'Offline test model: always fails with a provider error.' },
];

type Answer = { text: string; pieces: string[] };

export class TestProviderDriver implements ModelDriver {
  readonly provider = 'test';

  async complete(conn: ProviderConnection, req: CompletionRequest, signal?: AbortSignal): Promise<Completion> {
    signal?.throwIfAborted();
    const { text } = answer(req);
    return { text, finish_reason: 'stop', token_use: usage(req.messages, text) };
  }

  async *stream(conn: ProviderConnection, req: CompletionRequest, signal?: AbortSignal): AsyncGenerator<CompletionChunk> {
    signal?.throwIfAborted();
    const { text, pieces } = answer(req); // the error model throws here, before any chunk
    const delay = chunkDelay(conn);
    for (const [i, piece] of pieces.entries()) {
      if (delay > 0 && i > 0) await sleep(delay, undefined, { signal });
      signal?.throwIfAborted();
      yield { text: piece };
    }
    yield { finish_reason: 'stop', token_use: usage(req.messages, text) };
  }

  async listModels(): Promise<ModelInfo[]> {
    return TEST_MODELS.map((m) => ({ ...m }));
  }
}

function answer(req: CompletionRequest): Answer {
  switch (req.model) {
    case 'echo': {
      const text = lastUserText(req.messages);
      return { text, pieces: splitWords(text) };
    }
    case 'json': {
      const value = req.result_schema ? sampleFromSchema(req.result_schema) : { echo: lastUserText(req.messages) };
      const text = JSON.stringify(value);
      return { text, pieces: splitEvenly(text, 4) };
    }
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
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i].role === 'user') return messages[i].content;
  return '';
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
export const countWords = (text: string) => text.split(/\s+/).filter(Boolean).length;

function usage(messages: ChatMessage[], answerText: string) {
  const prompt = messages.reduce((n, m) => n + countWords(m.content), 0);
  const result = countWords(answerText);
  return { prompt, result, total: prompt + result };
}

function chunkDelay(conn: ProviderConnection): number {
  const d = conn.config?.chunk_delay_ms;
  return typeof d === 'number' && Number.isFinite(d) && d > 0 ? d : 0;
}
