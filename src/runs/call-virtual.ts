/**
 * The call step of a run on a virtual environment: its entries run as child runs (parent = the
 * virtual run) through the whole run path (call, then finish), and mediators are asked to choose
 * (runs/virtual.ts); the virtual run keeps the chosen child's answer.
 */
import { getDriver } from '../providers/registry.ts';
import type { InteractionDto } from '../interactions/interactions.ts';
import type { VirtualEntry } from '../interactions/virtual-config.ts';
import type { RunCost } from '../pricing/cost.ts';
import { docOf, tagsOf, type RunDoc, type RunRow } from './model.ts';
import { modelOptions, newRunRow, type ProviderPlan, type VirtualPlan } from './plan.ts';
import { buildRequest, type Outcome } from './call.ts';
import { parseResult } from './result-schema.ts';
import { VirtualRunner, type ChildOutcome, type ChunkSink } from './virtual.ts';
import type { RunWrites } from './run-writer.ts';
import type { RunSignals } from './run-signals.ts';
import type { RunsInFlight } from './in-flight.ts';
import type { RunTrace, Telemetry } from '../telemetry/hooks.ts';
import { runStartOf } from '../telemetry/runs.ts';

export interface VirtualCallerDeps {
  writer: RunWrites;
  signals: RunSignals;
  inFlight: RunsInFlight;
  /** This replica's id: child runs execute here. */
  replicaId: string;
  /** Spans of the child runs, children of the virtual run's. */
  telemetry: Telemetry;
  /** A child run's whole path (call, then finish) under its span: the run as it ended. */
  execute(row: RunRow, doc: RunDoc, plan: ProviderPlan, live: ChunkSink | undefined, trace: RunTrace): Promise<RunRow>;
}

export class VirtualCaller {
  private readonly runner = new VirtualRunner();

  constructor(private readonly deps: VirtualCallerDeps) {}

  /** A virtual run: its entries run as child runs (runs/virtual.ts); it keeps the chosen one's answer. */
  async call(row: RunRow, doc: RunDoc, plan: VirtualPlan, live: ChunkSink | undefined): Promise<Outcome> {
    let chunks = 0;
    const sink = live && {
      push: (text: string) => {
        chunks++;
        live.push(text);
        this.deps.signals.chunk(row.id, chunks, text);
      },
    };
    const childDocs = new Map<string, RunDoc>();
    const outcome = await this.runner.run(plan.config, plan.request.messages, sink, {
      runChild: async (entry, childSink) => {
        const child = await this.runChild(row, doc, plan, entry, childSink);
        childDocs.set(child.id, child.doc);
        return child.outcome;
      },
      ask: async (mediator, messages, schema) => {
        const target = plan.targets.get(mediator.environment)!;
        const options = modelOptions({ model_options: plan.config.modelOptions } as unknown as InteractionDto, {
          temperature: plan.config.modelOptions.temperature ?? 0,
        });
        const answer = await getDriver(target.dto.provider).complete(
          target.connection,
          buildRequest({ model: mediator.model, messages, options, resultSchema: schema }),
        );
        return parseResult(answer.text, schema).value;
      },
      evaluate: async (childId, evaluation) => {
        await this.deps.writer.update(childId, { doc: { ...childDocs.get(childId)!, evaluation } });
      },
    });
    const chosen = outcome.chosen;
    return {
      result: chosen?.result ?? [],
      ...(outcome.error ? { error: outcome.error } : {}),
      ...(chosen?.usage ? { usage: chosen.usage } : {}),
      ...(chosen?.finishReason ? { finishReason: chosen.finishReason } : {}),
      ...(chosen?.toolUse ? { toolUse: chosen.toolUse } : {}),
      attempts: outcome.attempts,
      chunks,
      cost: sumCosts(outcome.attempts.map((a) => (a.run ? childDocs.get(a.run)?.cost : null))),
    };
  }

  /** One attempt of a virtual run: a child run (parent = the virtual run) on the entry's environment and model. */
  private async runChild(
    parent: RunRow,
    parentDoc: RunDoc,
    plan: VirtualPlan,
    entry: VirtualEntry,
    sink: ChunkSink | undefined,
  ): Promise<{ id: string; doc: RunDoc; outcome: ChildOutcome }> {
    const target = plan.targets.get(entry.environment)!;
    const tags = tagsOf(parent);
    const doc: RunDoc = {
      ...parentDoc,
      result: [],
      stream: sink !== undefined,
      config: { ...parentDoc.config, environment: target.dto.id, model: entry.model },
      environment: { id: target.dto.id, name: target.dto.name, provider: target.dto.provider },
    };
    const trace = this.deps.telemetry.startRun(runStartOf(doc, parent.id));
    const row = newRunRow({
      account_id: parent.account_id,
      project_id: parent.project_id,
      interaction_id: parent.interaction_id,
      environment_id: target.dto.id,
      model_id: entry.model,
      status: 'processing',
      parent_id: parent.id,
      tags,
      doc,
      executor: this.deps.replicaId,
      trace,
    });
    this.deps.inFlight.executing.add(row.id);
    try {
      await this.deps.writer.insert(row, tags);
    } catch (err) {
      this.deps.inFlight.executing.delete(row.id);
      const message = (err as Error)?.message ?? String(err);
      return {
        id: row.id,
        doc,
        outcome: {
          id: row.id,
          entry,
          result: [],
          error: { code: 'storage_error', message: `the child run could not be stored: ${message}` },
          durationMs: 0,
        },
      };
    }
    const started = performance.now();
    const childPlan: ProviderPlan = {
      kind: 'provider',
      driver: getDriver(target.dto.provider),
      connection: target.connection,
      request: { ...plan.request, model: entry.model },
    };
    const final = await this.deps.execute(row, doc, childPlan, sink, trace);
    const finalDoc = docOf(final);
    const usage = {
      prompt: final.token_prompt ?? undefined,
      result: final.token_result ?? undefined,
      total: final.token_total ?? undefined,
    };
    return {
      id: row.id,
      doc: finalDoc,
      outcome: {
        id: row.id,
        entry,
        result: finalDoc.result,
        ...(finalDoc.error ? { error: finalDoc.error } : {}),
        ...(final.token_total !== null || final.token_prompt !== null ? { usage } : {}),
        ...(final.finish_reason ? { finishReason: final.finish_reason } : {}),
        ...(finalDoc.tool_use ? { toolUse: finalDoc.tool_use } : {}),
        durationMs: Math.round(performance.now() - started),
      },
    };
  }
}

/** A virtual run's cost: what its child runs cost together; unknown when any of theirs is. */
function sumCosts(costs: Array<RunCost | null | undefined>): RunCost | null {
  if (costs.length === 0 || costs.some((c) => !c)) return null;
  const known = costs as RunCost[];
  const add = (k: 'input' | 'output' | 'cache_read' | 'cache_write' | 'reasoning' | 'total') =>
    Math.round(known.reduce((t, c) => t + c[k], 0) * 1e9) / 1e9;
  const tables = [...new Set(known.map((c) => c.price_table))];
  return {
    input: add('input'),
    output: add('output'),
    cache_read: add('cache_read'),
    cache_write: add('cache_write'),
    reasoning: add('reasoning'),
    total: add('total'),
    currency: 'USD',
    price_table: tables.join(', '),
  };
}
