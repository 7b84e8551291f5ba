/**
 * Where an agent is, from its steps alone (agents/store.ts): the next step to run, or how it ends.
 * Pure, so a restarted server decides exactly as the one that stopped would have:
 *  - no step yet: the first model call;
 *  - a step `started` and not ended: in flight at a crash, run once more (at most twice in all),
 *    except a wait, which is an interactive agent waiting for its user;
 *  - a model call that asked for tools: their calls in order, one step each, then a model call
 *    with their results;
 *  - a model call that asked for none: the agent's answer, or (interactive) a wait for the user;
 *  - a wait that ended: a model call with the user's message.
 */
import type { ToolUse } from '../providers/driver.ts';
import type { AgentSpec } from './spec.ts';
import type { StepKind, StepRow } from './store.ts';

/** A step in flight at a crash runs at most this many times in all. */
const MAX_STEP_STARTS = 2;

export interface ModelOutput {
  run: string;
  tool_use: ToolUse[];
  result: unknown[];
  token_use?: { prompt?: number; result?: number; total?: number };
}

export interface ToolOutput {
  content: string;
  is_error?: boolean;
}

export type ModelInput =
  | { mode: 'first' }
  | { mode: 'results'; run: string; results: Array<{ tool_use_id: string; content: string; is_error: boolean }> }
  | { mode: 'message'; run: string; message: string };

export type Next =
  | { do: 'begin'; kind: StepKind; input: Record<string, unknown> }
  | { do: 'restart'; step: StepRow }
  | { do: 'finish'; last: ModelOutput }
  | { do: 'fail'; code: string; message: string }
  | { do: 'wait' };

export function nextStep(steps: readonly StepRow[], spec: AgentSpec): Next {
  const last = steps.at(-1);
  if (!last) return { do: 'begin', kind: 'model', input: { mode: 'first' } };
  if (last.kind === 'wait' && last.status === 'started') return { do: 'wait' };
  if (last.status === 'started') {
    if (last.attempts >= MAX_STEP_STARTS)
      return {
        do: 'fail',
        code: 'interrupted',
        message: `the server stopped during step ${last.seq} (${last.kind}) ${last.attempts} times; it is not run again: start the agent again`,
      };
    return { do: 'restart', step: last };
  }
  if (last.status === 'failed') {
    const error = (last.output?.error ?? {}) as { code?: string; message?: string };
    return { do: 'fail', code: error.code ?? 'step_failed', message: error.message ?? `step ${last.seq} failed` };
  }
  const m = lastModelIndex(steps);
  const model = steps[m]!.output as unknown as ModelOutput;
  if (last.kind === 'wait') {
    const message = String(last.output?.message ?? '');
    return { do: 'begin', kind: 'model', input: { mode: 'message', run: model.run, message } };
  }
  const calls = model.tool_use;
  if (calls.length === 0)
    return spec.interactive ? { do: 'begin', kind: 'wait', input: { run: model.run } } : { do: 'finish', last: model };
  const done = steps.slice(m + 1);
  if (done.length < calls.length) return { do: 'begin', kind: 'tool', input: { call: calls[done.length] } };
  const iterations = steps.filter((s) => s.kind === 'model').length;
  if (iterations >= spec.maxIterations)
    return {
      do: 'fail',
      code: 'max_iterations',
      message: `the agent made ${iterations} model calls (max_iterations) and the model still asks for tools: raise max_iterations or narrow the task`,
    };
  const results = done.map((s) => {
    const out = s.output as unknown as ToolOutput;
    return { tool_use_id: (s.input.call as ToolUse).id, content: out.content, is_error: out.is_error === true };
  });
  return { do: 'begin', kind: 'model', input: { mode: 'results', run: model.run, results } };
}

function lastModelIndex(steps: readonly StepRow[]): number {
  for (let i = steps.length - 1; i >= 0; i--) if (steps[i]!.kind === 'model') return i;
  throw new Error('an agent step before its first model call');
}

/** The tokens of the agent's model calls, summed. */
export function tokensOf(steps: readonly StepRow[]): { prompt: number; result: number; total: number } {
  const sum = { prompt: 0, result: 0, total: 0 };
  for (const s of steps) {
    const t = s.kind === 'model' && s.status === 'done' ? (s.output as unknown as ModelOutput).token_use : undefined;
    sum.prompt += t?.prompt ?? 0;
    sum.result += t?.result ?? 0;
    sum.total += t?.total ?? 0;
  }
  return sum;
}
