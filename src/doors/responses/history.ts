/**
 * `previous_response_id`: the conversation a response continues, read back from its run and the
 * runs it links (`previous_run`). Each run holds the messages its call added and its answer, so
 * the history is their concatenation, first run first. A response's instructions are in its run's
 * config, not its prompt: as OpenAI does, an earlier response's instructions are not carried over.
 */
import type { Principal } from '../../auth/principal.ts';
import type { ChatMessage } from '../../providers/driver.ts';
import { answerMessage } from '../../conversations/history.ts';
import type { Run } from '../../runs/model.ts';
import type { RunService } from '../../runs/service.ts';
import { OrreryError } from '../../util/errors.ts';
import { contentOf } from '../openai/answers.ts';
import { OpenAIRequestError } from '../openai/errors.ts';

/** The most runs one history is read back from. */
const MAX_CHAIN = 1000;
/** The most bytes of history (its JSON) one response continues from. */
const MAX_HISTORY_BYTES = 16 * 1024 * 1024;

export const responseId = (runId: string): string => `resp_${runId}`;

export interface History {
  runId: string;
  messages: ChatMessage[];
  /** The calls of the history's answers, for function_call_output items to answer. */
  calls: Set<string>;
}

const notFound = (id: string) =>
  new OpenAIRequestError(
    `Previous response with id '${id.slice(0, 80)}' not found.`,
    'previous_response_id',
    'previous_response_not_found',
    404,
  );

export async function historyOf(runs: RunService, p: Principal, id: unknown): Promise<History> {
  if (typeof id !== 'string' || !id.startsWith('resp_') || id.length > 200)
    throw new OpenAIRequestError(
      "Invalid 'previous_response_id': expected the id of a response ('resp_…').",
      'previous_response_id',
      'invalid_value',
    );
  const chain: Run[] = [];
  let next: string | undefined = id.slice('resp_'.length);
  let bytes = 0;
  while (next !== undefined) {
    if (chain.length >= MAX_CHAIN)
      throw new OpenAIRequestError(
        `Invalid 'previous_response_id': its conversation has more than ${MAX_CHAIN} responses; start a new one.`,
        'previous_response_id',
        'invalid_value',
      );
    let run: Run;
    try {
      run = await runs.get(p, next);
    } catch (err) {
      // Another project's run, a deleted one, or none: not found, whatever the id.
      if (err instanceof OrreryError && err.status === 404) throw notFound(chain.length ? responseId(next) : id);
      throw err;
    }
    if (chain.length === 0 && run.status !== 'completed')
      throw new OpenAIRequestError(
        `Invalid 'previous_response_id': response ${id} is ${run.status}; only a completed response continues.`,
        'previous_response_id',
        'invalid_value',
        409,
      );
    bytes += JSON.stringify(run.prompt).length + JSON.stringify(run.result).length;
    if (bytes > MAX_HISTORY_BYTES)
      throw new OpenAIRequestError(
        `Invalid 'previous_response_id': its conversation is larger than ${MAX_HISTORY_BYTES / 1024 / 1024} MiB; start a new one.`,
        'previous_response_id',
        'invalid_value',
        413,
      );
    chain.push(run);
    next = run.previous_run;
  }
  chain.reverse();
  const messages: ChatMessage[] = [];
  const calls = new Set<string>();
  for (const run of chain) {
    messages.push(...(run.prompt as ChatMessage[]));
    messages.push(answerMessage(contentOf(run.result), run.tool_use));
    for (const c of run.tool_use ?? []) calls.add(c.id);
  }
  return { runId: chain[chain.length - 1].id, messages, calls };
}
