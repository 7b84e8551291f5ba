/**
 * Agents: `executeAsync({type: "conversation"})` runs a tool loop on the server. The agent's run is
 * an async run (runs/delegated-runs.ts) whose durable job (on the async runs' queue) is this one:
 * each iteration is a child run of the agent's run (`parent`), linked by `previous_run`; each tool
 * call is executed here and its result fed back, until the model answers, `max_iterations` is
 * reached or the agent is stopped. Every step is a row written before and after it (agents/store.ts)
 * and the next step is decided from those rows alone (agents/plan.ts), so a job taken over after
 * a crash resumes after the last completed step. Between steps: the stop asked for, the agent's
 * deadline. Each step is bounded by the step timeout (an unfinished step fails the agent).
 */

import type { Principal, Scope } from '../auth/principal.ts';
import { scopeOf } from '../auth/principal.ts';
import type { JobQueue } from '../jobs/queue.ts';
import { JobReleased, type Job } from '../jobs/model.ts';
import type { RunService, CallerInfo } from '../runs/service.ts';
import { Conflict, NotFound } from '../util/errors.ts';
import type { InteractionService } from '../interactions/interactions.ts';
import { readAgentPayload, type AgentSpec } from './spec.ts';
import type { AgentPrincipal, AgentStore, StepRow } from './store.ts';
import type { AgentTools } from './tools.ts';
import { nextStep, tokensOf, type ModelInput, type ModelOutput, type ToolOutput } from './plan.ts';
import type { ToolUse } from '../providers/driver.ts';
import { deliverMessage } from './deliver.ts';

const lastAnswer = (steps: readonly StepRow[]): ModelOutput | undefined =>
  [...steps].reverse().find((st) => st.kind === 'model')?.output as unknown as ModelOutput | undefined;

const AGENT_JOB = 'agent-run';
const CALLER: CallerInfo = { ip: '127.0.0.1', userAgent: 'orrery-agent' };

interface AgentJob {
  principal: AgentPrincipal;
}

export interface AgentRunnerDeps {
  store: AgentStore;
  tools: AgentTools;
  runs: RunService;
  interactions: InteractionService;
  queue: JobQueue;
  /** ORRERY_AGENT_STEP_TIMEOUT_SECONDS and ORRERY_AGENT_TIMEOUT_SECONDS, in ms. */
  stepTimeoutMs: number;
  agentTimeoutMs: number;
}

class StepTimeout extends Error {}

export class AgentRunner {
  constructor(private readonly deps: AgentRunnerDeps) {
    deps.queue.register<AgentJob>(AGENT_JOB, {
      run: (job, signal) => this.run(job, signal),
      giveUp: (job, err) => this.giveUp(job, err),
    });
  }

  /** POST /execute/async with type "conversation": the agent's run written with its job; its id. */
  async start(p: Principal, body: Record<string, unknown>, caller: CallerInfo): Promise<string> {
    const spec = readAgentPayload(body);
    const ix = await this.deps.interactions.resolveSelector(p, spec.interaction);
    spec.tools = await this.deps.tools.resolve(p, spec, ix.parent ?? ix.id);
    // The job carries what the agent was asked, so it can write the agent's row itself.
    const deadlineAt = new Date(Date.now() + this.deps.agentTimeoutMs).toISOString();
    const run = await this.deps.runs.executeAsync(
      p,
      {
        interaction: spec.interaction,
        ...(spec.data !== undefined ? { data: spec.data } : {}),
        ...(spec.config ? { config: spec.config } : {}),
        ...(spec.tags ? { tags: spec.tags } : {}),
      },
      caller,
      {
        notifyEndpoints: [],
        job: {
          kind: AGENT_JOB,
          payload: { spec, deadlineAt },
        },
      },
    );
    // The agent's row before the answer, so a user message right after it finds the agent; the
    // job writes it too, in case this process stopped between the two.
    const { account, project, keyId, role, via } = p;
    await this.deps.store.insertAgent(scopeOf(p), run.id, spec, deadlineAt, { account, project, keyId, role, via });
    return run.id;
  }

  /** Asks a running or waiting agent to stop: it ends `failed` (cancelled) before its next step. */
  async stop(p: Principal, runId: string): Promise<{ id: string; stop_requested: true }> {
    const s = scopeOf(p);
    const agent = await this.deps.store.agent(s, runId);
    if (!agent) throw new NotFound('agent', runId);
    if (agent.state === 'ended') throw new Conflict(`agent ${runId} has ended; there is nothing to stop`);
    await this.deps.store.requestStop(s, runId);
    await this.enqueue(s, runId, agent.principal);
    return { id: runId, stop_requested: true };
  }

  /** POST /runs/user-message: delivered to the agent its `run` names, if it is one (agents/deliver.ts). */
  async deliver(p: Principal, body: Record<string, unknown>): Promise<string | undefined> {
    return deliverMessage(this.deps.store, p, body, async (runId) => {
      const agent = await this.deps.store.agent(scopeOf(p), runId);
      if (agent) await this.enqueue(agent.scope, runId, agent.principal);
    });
  }

  private enqueue(s: Scope, runId: string, principal: AgentJob['principal'], delayMs?: number): Promise<void> {
    return this.deps.queue.enqueue<AgentJob>({
      kind: AGENT_JOB,
      scope: s,
      subject: runId,
      payload: { principal },
      ...(delayMs ? { delayMs } : {}),
    });
  }

  private async run(job: Job<AgentJob & { spec?: AgentSpec; deadlineAt?: string }>, signal: AbortSignal) {
    const { store, runs } = this.deps;
    const id = job.subject;
    const s = job.scope;
    const p = job.payload.principal as Principal;
    let agent = await store.agent(s, id);
    if (!agent && job.payload.spec && job.payload.deadlineAt) {
      // The first run of the job: the agent's row, from what its start recorded with the job.
      if (!(await runs.delegated.row(s, id))) return;
      await store.insertAgent(s, id, job.payload.spec, job.payload.deadlineAt, job.payload.principal);
      agent = await store.agent(s, id);
    }
    if (!agent || agent.state === 'ended') return;
    if (!(await runs.delegated.claim(s, id))) return void (await store.setState(id, agent.state, 'ended'));
    const steps = await store.steps(id);
    for (;;) {
      if (signal.aborted) throw new JobReleased();
      const fresh = await store.agent(s, id);
      if (!fresh) return;
      if (fresh.stopRequested || (await runs.delegated.cancelRequested(id))) {
        // An interactive agent stopped while it waits for its user has ended its chat: completed.
        const waiting = steps.at(-1)?.kind === 'wait' && steps.at(-1)?.status === 'started';
        if (waiting) return this.end(s, id, steps, undefined, lastAnswer(steps));
        return this.end(s, id, steps, { code: 'cancelled', message: 'the agent was stopped between its steps' });
      }
      const left = Date.parse(fresh.deadlineAt) - Date.now();
      if (left <= 0)
        return this.end(s, id, steps, {
          code: 'agent_timeout',
          message: 'the agent ran past its time (ORRERY_AGENT_TIMEOUT_SECONDS)',
        });
      const next = nextStep(steps, fresh.spec);
      switch (next.do) {
        case 'finish':
          return this.end(s, id, steps, undefined, next.last);
        case 'fail':
          return this.end(s, id, steps, { code: next.code, message: next.message });
        case 'wait':
          // An interactive agent between turns: no job until its user writes, or its deadline. The
          // deadline's job is queued before the agent is seen waiting: a message delivered in between
          // would queue its job first, and this one, refreshing it, would push it to the deadline.
          await this.enqueue(s, id, job.payload.principal, left);
          await store.setState(id, 'running', 'waiting');
          return;
        case 'begin': {
          const step = await store.begin(s, id, steps.length + 1, next.kind, next.input);
          steps.push(step);
          if (next.kind === 'wait') continue;
          await this.execute(p, id, fresh.spec, step, Math.min(left, this.deps.stepTimeoutMs), signal);
          break;
        }
        case 'restart':
          if (!(await store.restart(id, next.step))) throw new Error(`agent ${id}: step ${next.step.seq} changed`);
          next.step.attempts++;
          await this.execute(p, id, fresh.spec, next.step, Math.min(left, this.deps.stepTimeoutMs), signal);
          break;
      }
    }
  }

  /** Runs one step and stores its outcome (the checkpoint after it); the step row is updated in place. */
  private async execute(
    p: Principal,
    id: string,
    spec: AgentSpec,
    step: StepRow,
    timeoutMs: number,
    signal: AbortSignal,
  ): Promise<void> {
    const abort = new AbortController();
    const onAbort = () => abort.abort();
    signal.addEventListener('abort', onAbort, { once: true });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        abort.abort();
        reject(new StepTimeout());
      }, timeoutMs);
    });
    let output: Record<string, unknown>;
    let status: 'done' | 'failed' = 'done';
    try {
      const work =
        step.kind === 'model'
          ? this.callModel(p, id, spec, step.input as unknown as ModelInput)
          : this.callTool(p, id, spec, step, abort.signal);
      output = (await Promise.race([work, timeout])) as unknown as Record<string, unknown>;
    } catch (err) {
      if (signal.aborted) throw new JobReleased();
      status = 'failed';
      output = {
        error:
          err instanceof StepTimeout
            ? {
                code: 'step_timeout',
                message: `step ${step.seq} (${step.kind}) took longer than ${Math.round(timeoutMs / 1000)} s (ORRERY_AGENT_STEP_TIMEOUT_SECONDS)`,
              }
            : {
                code: String((err as { code?: unknown }).code ?? 'step_failed'),
                message: err instanceof Error ? err.message : String(err),
              },
      };
    } finally {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
    }
    await this.deps.store.finish(id, step.seq, status, output);
    step.status = status;
    step.output = output;
  }

  private async callModel(p: Principal, id: string, spec: AgentSpec, input: ModelInput): Promise<ModelOutput> {
    const { runs } = this.deps;
    const defs = spec.tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.input_schema }));
    const strip = spec.stripOptions ? { strip_options: spec.stripOptions } : {};
    const run =
      input.mode === 'first'
        ? await runs.executeByName(
            p,
            {
              interaction: spec.interaction,
              ...(spec.data !== undefined ? { data: spec.data } : {}),
              ...(spec.config ? { config: spec.config } : {}),
              ...(spec.tags ? { tags: spec.tags } : {}),
              ...(defs.length ? { tool_definitions: defs } : {}),
              conversation: true,
              parent: id,
            },
            CALLER,
          )
        : input.mode === 'results'
          ? await runs.continueRun(p, 'tool-results', { run: input.run, results: input.results, ...strip }, CALLER, id)
          : await runs.continueRun(p, 'user-message', { run: input.run, message: input.message, ...strip }, CALLER, id);
    return {
      run: run.id,
      tool_use: (run.tool_use ?? []) as ToolUse[],
      result: run.result ?? [],
      ...(run.token_use ? { token_use: run.token_use } : {}),
    };
  }

  private async callTool(
    p: Principal,
    id: string,
    spec: AgentSpec,
    step: StepRow,
    signal: AbortSignal,
  ): Promise<ToolOutput> {
    const call = step.input.call as ToolUse;
    const tool = spec.tools.find((t) => t.name === call.tool_name);
    if (!tool) return { content: `there is no tool named ${call.tool_name}`, is_error: true };
    const input =
      call.tool_input && typeof call.tool_input === 'object' ? (call.tool_input as Record<string, unknown>) : {};
    const answer = await this.deps.tools.call(tool, input, { p, agentRunId: id, key: step.key, signal });
    return { content: answer.content, ...(answer.is_error ? { is_error: true } : {}) };
  }

  /** The agent's end: its run completed with the last answer, or failed; then its row `ended`. */
  private async end(
    s: Scope,
    id: string,
    steps: readonly StepRow[],
    error: { code: string; message: string } | undefined,
    last?: ModelOutput,
  ): Promise<void> {
    const iterations = steps.filter((st) => st.kind === 'model').length;
    await this.deps.runs.delegated.end(s, id, {
      status: error ? 'failed' : 'completed',
      result: (last?.result ?? []) as never,
      ...(error ? { error: { ...error, data: { iterations } } } : {}),
      token_use: tokensOf(steps),
      ...(error ? {} : { finish_reason: 'stop' }),
    });
    const agent = await this.deps.store.agent(s, id);
    if (agent && agent.state !== 'ended') await this.deps.store.setState(id, agent.state, 'ended');
  }

  private async giveUp(job: Job<AgentJob>, err: unknown): Promise<void> {
    const message = err instanceof Error ? err.message : String(err);
    const steps = await this.deps.store.steps(job.subject);
    await this.end(job.scope, job.subject, steps, {
      code: 'agent_failed',
      message: `the agent could not go on: ${message}`,
    });
  }
}
