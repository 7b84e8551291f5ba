/**
 * Runs on a virtual environment (issue 16): every attempt is a child run of the virtual run, on one
 * of the entries' environments; the virtual run holds the chosen answer.
 *  - `virtual_lb`: one entry picked by weight; with `failover`, an entry that fails (after its own
 *    retries) is skipped for a cooldown and the next one, by weight, is tried. A stream is not
 *    failed over once a chunk of it reached a subscriber.
 *  - `virtual_mediator`: the entries run at most `max_concurrent_requests` at once. Without
 *    mediators the first success wins (the others still finish, recorded). With mediators, every
 *    success is judged by the first mediator that answers, which scores each from 0 to 10 and
 *    picks one; each judged child records `evaluation {score, selected}`.
 * Cooldowns are per process: a replica learns about a failing entry from its own runs.
 */
import {
  messageText,
  toolInputText,
  type ChatMessage,
  type ThinkingPart,
  type TokenUsage,
  type ToolUse,
} from '../providers/driver.ts';
import type { VirtualConfig, VirtualEntry } from '../interactions/virtual-config.ts';
import type { ResultPart, RunError } from './model.ts';
import type { Attempt } from './retry.ts';

/** Where a run's text goes as it streams (a LiveRun, or a forwarder to the virtual run's). */
export interface ChunkSink {
  push(text: string): void;
  /** A signed reasoning block of the answer, whole, as soon as the provider closed it (before the text). */
  thinking?(block: ThinkingPart): void;
}

/** A finished child run, as the virtual run needs it. */
export interface ChildOutcome {
  id: string;
  entry: VirtualEntry;
  result: ResultPart[];
  error?: RunError;
  usage?: TokenUsage;
  finishReason?: string;
  /** The tool calls the entry's model asked for. */
  toolUse?: ToolUse[];
  durationMs: number;
}

export interface VirtualOutcome {
  chosen?: ChildOutcome;
  error?: RunError;
  /** One per child run, in the order they ended. */
  attempts: Attempt[];
}

export interface VirtualHooks {
  /** Creates and executes a child run on the entry; never throws for a provider failure. */
  runChild(entry: VirtualEntry, sink: ChunkSink | undefined): Promise<ChildOutcome>;
  /** Asks a mediator's model; resolves its JSON answer, validated against the schema given. */
  ask(mediator: VirtualEntry, messages: ChatMessage[], schema: Record<string, unknown>): Promise<unknown>;
  /** Records a judged child's evaluation. */
  evaluate(childId: string, evaluation: { score: number; selected: boolean }): Promise<void>;
}

export class VirtualRunner {
  /** Entry ref → until when it is skipped (failover balancers). */
  private readonly cooldowns = new Map<string, number>();

  constructor(
    private readonly now: () => number = Date.now,
    private readonly random: () => number = Math.random,
  ) {}

  run(
    config: VirtualConfig,
    prompt: ChatMessage[],
    sink: ChunkSink | undefined,
    hooks: VirtualHooks,
  ): Promise<VirtualOutcome> {
    return config.provider === 'virtual_lb'
      ? this.balance(config, sink, hooks)
      : this.mediate(config, prompt, sink, hooks);
  }

  private async balance(
    config: VirtualConfig,
    sink: ChunkSink | undefined,
    hooks: VirtualHooks,
  ): Promise<VirtualOutcome> {
    const attempts: Attempt[] = [];
    const tried = new Set<VirtualEntry>();
    for (;;) {
      const entry = this.pick(config, tried);
      if (!entry) break;
      tried.add(entry);
      let pushed = 0;
      const counting = sink && {
        push: (text: string) => {
          pushed++;
          sink.push(text);
        },
      };
      const child = await hooks.runChild(entry, counting);
      attempts.push(attemptOf(child));
      if (!child.error) return { chosen: child, attempts };
      if (!config.failover || pushed > 0) return { error: child.error, attempts };
      this.cooldowns.set(entry.ref, this.now() + config.cooldownMs);
    }
    return { error: allFailed(attempts), attempts };
  }

  /** An untried entry by weight, preferring those not cooling down; undefined when none is left. */
  private pick(config: VirtualConfig, tried: Set<VirtualEntry>): VirtualEntry | undefined {
    const open = config.entries.filter((e) => e.weight > 0 && !tried.has(e));
    if (open.length === 0) return undefined;
    const now = this.now();
    const warm = open.filter((e) => (this.cooldowns.get(e.ref) ?? 0) <= now);
    const pool = warm.length > 0 ? warm : open;
    const total = pool.reduce((sum, e) => sum + e.weight, 0);
    let at = this.random() * total;
    for (const e of pool) {
      at -= e.weight;
      if (at < 0) return e;
    }
    return pool[pool.length - 1];
  }

  private async mediate(
    config: VirtualConfig,
    prompt: ChatMessage[],
    sink: ChunkSink | undefined,
    hooks: VirtualHooks,
  ): Promise<VirtualOutcome> {
    const attempts: Attempt[] = [];
    const successes: ChildOutcome[] = [];
    let firstSuccess: (child: ChildOutcome) => void = () => {};
    const first = new Promise<ChildOutcome>((resolve) => (firstSuccess = resolve));
    const all = runLimited(config.entries, config.maxConcurrent, async (entry) => {
      const child = await hooks.runChild(entry, undefined);
      attempts.push(attemptOf(child));
      if (!child.error) {
        successes.push(child);
        firstSuccess(child);
      }
    });
    if (config.mediators.length === 0) {
      // The first success wins; the others finish in the background, recorded as child runs.
      const chosen = await Promise.race([first, all.then(() => undefined)]);
      if (!chosen) return { error: allFailed(attempts), attempts };
      sendWhole(sink, chosen);
      return { chosen, attempts: [...attempts] };
    }
    await all;
    if (successes.length === 0) return { error: allFailed(attempts), attempts };
    const chosen =
      successes.length === 1
        ? { child: successes[0], scores: [10] }
        : await this.judge(config, prompt, successes, hooks);
    await Promise.all(
      successes.map((c, i) => hooks.evaluate(c.id, { score: chosen.scores[i], selected: c === chosen.child })),
    );
    sendWhole(sink, chosen.child);
    return { chosen: chosen.child, attempts };
  }

  /** The first mediator that answers picks; when none does, the first success stands (score 0 each). */
  private async judge(
    config: VirtualConfig,
    prompt: ChatMessage[],
    answers: ChildOutcome[],
    hooks: VirtualHooks,
  ): Promise<{ child: ChildOutcome; scores: number[] }> {
    const n = answers.length;
    const schema = {
      type: 'object',
      required: ['best', 'scores'],
      properties: {
        best: { type: 'integer', minimum: 0, maximum: n - 1 },
        scores: { type: 'array', items: { type: 'number', minimum: 0, maximum: 10 }, minItems: n, maxItems: n },
      },
    };
    const messages = judgeMessages(prompt, answers);
    for (const mediator of config.mediators) {
      try {
        const verdict = (await hooks.ask(mediator, messages, schema)) as { best: number; scores: number[] };
        return { child: answers[verdict.best], scores: verdict.scores };
      } catch {
        // the next mediator, if any
      }
    }
    return { child: answers[0], scores: answers.map(() => 0) };
  }
}

const attemptOf = (child: ChildOutcome): Attempt => ({
  status: child.error ? 'failed' : 'completed',
  run: child.id,
  ...(child.error ? { error: { code: child.error.code, message: child.error.message } } : {}),
  duration_ms: child.durationMs,
});

function allFailed(attempts: Attempt[]): RunError {
  const last = [...attempts].reverse().find((a) => a.error);
  if (!last?.error) return { code: 'execution_error', message: 'the virtual environment has no entry to run' };
  return {
    code: last.error.code,
    message: `every entry of the virtual environment failed (${attempts.length}); the last: ${last.error.message}`,
  };
}

/** A mediated answer arrives whole: the stream gets it as one chunk. */
function sendWhole(sink: ChunkSink | undefined, child: ChildOutcome): void {
  const text = textOf(child.result);
  if (sink && text) sink.push(text);
}

export const textOf = (result: ResultPart[]): string =>
  result
    .filter((p) => p.type !== 'thoughts')
    .map((p) => (p.type === 'text' ? String(p.value) : JSON.stringify(p.value)))
    .join('');

/** A tool call as the mediator reads it: the tool's name and its arguments' JSON. */
const callLine = (t: ToolUse) => `[calls tool ${t.tool_name} with ${toolInputText(t)}]`;

/** A message of the request as the mediator reads it: its text, and the calls an assistant turn made. */
function describeMessage(m: ChatMessage): string {
  const calls = typeof m.content === 'string' ? [] : m.content.filter((p) => p.type === 'tool_use');
  return [messageText(m), ...calls.map(callLine)].filter((t) => t !== '').join('\n');
}

/**
 * The mediator's prompt: the request as the entries saw it (tool calls and results included), then
 * the numbered answers, each with the tool calls it asked for: calling a tool is an answer too.
 */
function judgeMessages(prompt: ChatMessage[], answers: ChildOutcome[]): ChatMessage[] {
  const request = prompt.map((m) => `[${m.role}]\n${describeMessage(m)}`).join('\n\n');
  const candidates = answers
    .map((a, i) =>
      [`--- answer ${i} ---`, textOf(a.result), ...(a.toolUse ?? []).map(callLine)].filter((t) => t !== '').join('\n'),
    )
    .join('\n\n');
  return [
    {
      role: 'system',
      content:
        'You judge answers that several models gave to the same request. Score each answer from 0 (useless) to 10 ' +
        '(correct, complete and well written), then name the best one by its number.',
    },
    { role: 'user', content: `The request:\n\n${request}\n\nThe answers:\n\n${candidates}` },
  ];
}

/** Runs `work` over the items, at most `limit` at once. */
async function runLimited<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await work(items[next++]);
  });
  await Promise.all(lanes);
}
