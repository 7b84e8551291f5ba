/**
 * The finish step of a run: its outcome priced (runs/pricing), counted (metrics, rate limits and
 * quotas), stored as its end, and its answer kept in the result cache. A run answered before its
 * row was committed (SQLite's intent log, runs/run-intents.ts) is stored meanwhile (endAhead).
 */
import type { Updateable } from 'kysely';
import type { RunTable } from '../db/schema.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import { nowIso } from '../db/ids.ts';
import type { Principal } from '../auth/principal.ts';
import { OrreryError } from '../util/errors.ts';
import type { Metrics } from '../http/metrics.ts';
import { costOf } from '../pricing/cost.ts';
import type { RunTrace } from '../telemetry/hooks.ts';
import { runEndOf } from '../telemetry/runs.ts';
import { docOf, tagsOf, toRun, type Run, type RunDoc, type RunError, type RunOutcome, type RunRow } from './model.ts';
import { newRunRow, type Plan } from './plan.ts';
import type { Outcome } from './call.ts';
import type { ResultCache } from './result-cache.ts';
import type { AheadWrite, RunWrites } from './run-writer.ts';
import type { RunSignals } from './run-signals.ts';
import type { RunsInFlight } from './in-flight.ts';
import * as store from './store.ts';

/** Told the tokens and cost of every run that called a provider once it ended (rate limits and quotas, src/limits). */
export type RunEndedListener = (run: {
  account: string;
  project: string;
  keyId: string | null;
  tokens: number;
  cost: number;
}) => void;

export interface RunFinisherDeps {
  dialect: OrreryDialect;
  writer: RunWrites;
  signals: RunSignals;
  metrics: Metrics;
  cache: ResultCache;
  inFlight: RunsInFlight;
  onRunEnded?: RunEndedListener;
}

/** How the outcome of a run is stored: see RunFinisher.finish. */
export interface FinishOptions {
  /** Whether the run was streamed. */
  streamed: boolean;
  /** How long the call took, in ms. */
  executionTime: number;
  claim?: Promise<boolean>;
  ahead?: AheadWrite;
}

/** What a run whose template failed records, from its request. */
export interface TemplateFailureAt {
  interaction: string;
  environment: string;
  model: string;
  parent?: string;
  tags: string[];
  now: string;
  stream: boolean;
  provider: string;
}

export class RunFinisher {
  constructor(private readonly deps: RunFinisherDeps) {}

  /**
   * Stores the outcome of a run; never throws for a provider or result failure. With `claim` (a
   * claim written meanwhile, runs/stream.ts): the outcome is stored only if the claim won, else
   * this throws and the run stays as stored. With `ahead` (an insert recorded in the intent log,
   * not yet known committed): see endAhead.
   */
  async finish(row: RunRow, doc: RunDoc, plan: Plan, outcome: Outcome, opts: FinishOptions): Promise<RunRow> {
    const { result, error, usage, finishReason, attempts, chunks, cost, cachedFrom, toolUse, thinking, invalid } =
      outcome;
    const { streamed, executionTime, claim, ahead } = opts;
    const { metrics, onRunEnded } = this.deps;
    const provider = doc.environment?.provider ?? 'unknown';
    // A cache hit made no provider call: it would only drag the provider's latency down.
    if (!cachedFrom)
      metrics.providerLatency.observe({ provider, outcome: error ? 'error' : 'ok' }, executionTime / 1000);
    metrics.runs.inc({ status: error ? 'failed' : 'completed', provider, mode: streamed ? 'stream' : 'blocking' });
    const runCost =
      cost !== undefined
        ? cost
        : costOf({ provider, model: plan.request.model, usage, prices: plan.connection.config?.prices });
    // A virtual run's usage is its children's, which are charged as they end.
    if (onRunEnded && plan.kind !== 'virtual' && !cachedFrom) {
      const createdBy =
        typeof doc.created_by === 'string' && doc.created_by.startsWith('apikey:')
          ? doc.created_by.slice('apikey:'.length)
          : null;
      const tokens = usage?.total ?? (usage?.prompt ?? 0) + (usage?.result ?? 0);
      onRunEnded({
        account: row.account_id,
        project: row.project_id,
        keyId: createdBy,
        tokens,
        cost: runCost?.total ?? 0,
      });
    }
    // The keys a run's end adds come before the document's (none of them is in it before its end):
    // keys added after a spread cost a hidden class per run (runs/search-index.ts, withColumns).
    const finalDoc: RunDoc = {
      cost: runCost,
      ...(error ? { error } : {}),
      ...(streamed ? { chunks } : {}),
      ...(attempts.length > 1 ? { attempts } : {}),
      ...(cachedFrom ? { cached: true, cached_from: cachedFrom } : {}),
      ...(toolUse ? { tool_use: toolUse } : {}),
      ...(thinking ? { thinking } : {}),
      ...(usage?.cache_read || usage?.cache_write
        ? { token_cache: { read: usage.cache_read ?? 0, write: usage.cache_write ?? 0 } }
        : {}),
      ...(invalid ? { result_validation: { valid: false as const, message: invalid } } : {}),
      ...doc,
      result,
    };
    const patch = {
      status: error ? 'failed' : 'completed',
      updated_at: nowIso(),
      finish_reason: finishReason ?? null,
      execution_time: executionTime,
      token_prompt: usage?.prompt ?? null,
      token_result: usage?.result ?? null,
      token_total:
        usage?.total ??
        (usage?.prompt !== undefined && usage?.result !== undefined ? usage.prompt + usage.result : null),
      doc: finalDoc,
      executor: null,
    } satisfies RunOutcome;
    // A provider's answer may go before its run is stored; not under a cache policy (a cache entry is written once its run is stored).
    if (ahead) await this.endAhead({ ...row, ...patch }, patch, ahead, plan.kind === 'provider' && !plan.cache);
    else await this.storeEnd(row.id, patch, streamed, claim);
    // An answer kept without matching result_schema (do_validate: false) answers no later run.
    if (plan.cache && !error && !cachedFrom && !invalid) {
      await this.deps.cache
        .store({ account: row.account_id, project: row.project_id }, plan.cache, row.id, result, finishReason)
        .catch(() => {
          // A cache that cannot be written costs a later hit, never this run.
        });
    }
    return { ...row, ...patch };
  }

  /**
   * A run whose template failed on its data: stored `failed` at once with the template's error
   * (template_error, template_timeout, template_memory, template_output_too_large), never sent to
   * the provider. A blocking request answers 422 with the run's id; a streamed run answers the
   * failed run, and its stream closes with it.
   */
  async failOnTemplate(
    p: Principal,
    doc: RunDoc,
    at: TemplateFailureAt,
    error: RunError,
    trace?: RunTrace,
  ): Promise<Run> {
    const row = newRunRow({
      account_id: p.account.id,
      project_id: p.project.id,
      interaction_id: at.interaction,
      environment_id: at.environment,
      model_id: at.model,
      status: 'failed',
      parent_id: at.parent ?? null,
      execution_time: 0,
      tags: at.tags,
      now: at.now,
      doc: { ...doc, error },
      executor: null,
      trace,
    });
    await this.deps.writer.insert(row, at.tags);
    trace?.end(runEndOf(row));
    this.deps.metrics.runs.inc({ status: 'failed', provider: at.provider, mode: at.stream ? 'stream' : 'blocking' });
    const run = forCreation(row);
    if (at.stream) return run;
    throw new OrreryError(
      error.code,
      422,
      `run ${row.id} failed: ${error.message}`,
      { run_id: row.id, ...(error.data ?? {}) },
      { id: row.id, run },
    );
  }

  /** The end of a run whose row is known written: stored (and signalled to followers of a streamed run). */
  private async storeEnd(
    id: string,
    patch: Updateable<RunTable>,
    streamed: boolean,
    claim: Promise<boolean> | undefined,
  ): Promise<void> {
    const { writer, signals, dialect, inFlight } = this.deps;
    const storeOutcome = () =>
      streamed && signals.crossProcess
        ? // The end of a streamed run: stored and signalled; its chunks stay a while for late followers.
          writer.run(async (trx) => {
            const ok = await store.updateRun(trx, dialect, id, patch);
            await signals.ended(id, trx);
            return ok;
          })
        : writer.update(id, patch);
    try {
      if (claim && !(await claim))
        throw new Error(`run ${id} left 'created' before this process's claim was written; its stored state stands`);
      // Once more if the first write was lost (a writer thread that stopped, a dropped connection):
      // the same outcome, so writing it twice is harmless.
      await storeOutcome().catch(storeOutcome);
    } finally {
      // Stored, left as another write made it, or orphaned for the lost-run sweep to fail.
      inFlight.executing.delete(id);
    }
  }

  /**
   * The end of a run whose insert was recorded ahead. Its update is sent at once: the writer
   * applies it after the insert. When `answerFirst` and the intent log takes the run as it ended,
   * this resolves at once and the run is stored meanwhile: reads of this process wait for that
   * (whenStored, runs/read-barrier.ts), and a crash leaves the entry for the lost-run sweep of the
   * next process, which stores the run as it was answered. Else this resolves once it is stored.
   */
  private endAhead(ended: RunRow, patch: Updateable<RunTable>, ahead: AheadWrite, answerFirst: boolean): Promise<void> {
    const { writer, inFlight } = this.deps;
    const end = answerFirst && writer.updateAhead ? writer.updateAhead(ended, patch) : undefined;
    const update = () => writer.update(ended.id, patch);
    const stored = this.storeAhead(ended, ahead, end?.committed ?? update(), update);
    if (!end?.recorded) {
      // Stored, or orphaned for the lost-run sweep to fail (storage_error).
      return stored.finally(() => inFlight.executing.delete(ended.id));
    }
    const done = stored.then(
      () => {
        end.stored();
        inFlight.executing.delete(ended.id);
      },
      // Answered, so never failed as storage_error: the run stays executing here, and each lost-run
      // sweep tries to store it from its entry until one does (runs/sweep.ts).
      () =>
        void inFlight.unstored.set(ended.id, {
          kind: 'end',
          row: ended,
          doc: docOf(ended),
          stored: () => (ahead.stored(), end.stored()),
        }),
    );
    inFlight.track(done);
    return Promise.resolve();
  }

  /**
   * The outcome of a run whose insert was recorded ahead, once `update` (sent after the insert)
   * and the insert are done. If the update failed, it is tried once more. If the insert failed (or
   * its answer was lost with a writer thread that stopped), the update found the row if it was
   * committed after all, and else the run is inserted whole, as it ended, and its start entry is
   * settled. If that fails too, the entry stays, and the lost-run sweep of the next process
   * restores the run.
   */
  private async storeAhead(
    ended: RunRow,
    ahead: AheadWrite,
    update: Promise<boolean>,
    retry: () => Promise<boolean>,
  ): Promise<void> {
    const updated = update.catch(retry).then(
      (ok) => ({ ok }),
      (err: unknown) => ({ ok: false, err }),
    );
    const inserted = await ahead.committed.then(
      () => true,
      () => false,
    );
    const outcome = await updated;
    if (inserted) {
      if ('err' in outcome) throw outcome.err;
      return;
    }
    if (!outcome.ok) await this.deps.writer.insert(ended, tagsOf(ended));
    ahead.stored();
  }
}

/** The POST /runs answer: account, project and interaction as id strings (the client's InteractionExecutionResult). */
export function forCreation(row: RunRow): Run {
  const run = toRun(row);
  const doc = docOf(row);
  return {
    ...run,
    account: doc.account.id,
    project: doc.project.id,
    interaction: doc.interaction.id,
    environment: doc.environment ? { id: doc.environment.id, name: doc.environment.name } : null,
  };
}
