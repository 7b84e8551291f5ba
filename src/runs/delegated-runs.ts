/**
 * Runs whose work another feature does (an agent, src/agents): the run's row is written `created`
 * by POST /execute/async with that feature's job (runs/async.ts, AsyncExtras.job), then claimed
 * `processing` by the job and ended here with the outcome the feature reports. These rows have an
 * `async_runs` checkpoint, so the sweeps of streamed and lost runs leave them to their job.
 */
import type { OrreryDialect } from '../db/dialect.ts';
import { nowIso } from '../db/ids.ts';
import type { Scope } from '../auth/principal.ts';
import { docOf, hasEnded, type ResultPart, type RunError, type RunRow, type TokenUse } from './model.ts';
import type { RunWrites } from './run-writer.ts';
import type { RunSignals } from './run-signals.ts';
import type { StreamHub } from './stream-hub.ts';
import { forCreation } from './finish.ts';
import { getAsyncRun } from './async-store.ts';
import * as store from './store.ts';

/** How a delegated run ended. */
export interface DelegatedOutcome {
  status: 'completed' | 'failed';
  result?: ResultPart[];
  error?: RunError;
  finish_reason?: string;
  token_use?: TokenUse;
  execution_time?: number;
}

export interface DelegatedRunsDeps {
  db: store.Db;
  dialect: OrreryDialect;
  writer: RunWrites;
  signals: RunSignals;
  hub: StreamHub;
  replicaId: string;
}

export class DelegatedRuns {
  constructor(private readonly deps: DelegatedRunsDeps) {}

  /** The run, if it is the scope's; undefined when it is gone (its project deleted). */
  row(s: Scope, id: string): Promise<RunRow | undefined> {
    return store.getRun(this.deps.db, this.deps.dialect, s, id);
  }

  /** Whether a cancellation of the run was asked for (its async checkpoint). */
  async cancelRequested(id: string): Promise<boolean> {
    return Number((await getAsyncRun(this.deps.db, id))?.cancel_requested ?? 0) === 1;
  }

  /** Claims the run `processing` for this replica (again, after a crash); false when it ended or is gone. */
  async claim(s: Scope, id: string): Promise<boolean> {
    const row = await this.row(s, id);
    if (!row || hasEnded(row.status)) return false;
    const patch = { status: 'processing', updated_at: nowIso(), executor: this.deps.replicaId };
    return this.deps.writer.update(id, patch, row.status);
  }

  /** Stores the run's end, once: false when it had already ended. Followers of its stream get the run. */
  async end(s: Scope, id: string, outcome: DelegatedOutcome): Promise<boolean> {
    const { dialect, writer, signals, hub } = this.deps;
    const row = await this.row(s, id);
    if (!row || hasEnded(row.status)) return false;
    const doc = {
      ...docOf(row),
      result: outcome.result ?? [],
      ...(outcome.error ? { error: outcome.error } : {}),
    };
    const patch = {
      status: outcome.status,
      updated_at: nowIso(),
      executor: null,
      finish_reason: outcome.finish_reason ?? (outcome.status === 'completed' ? 'stop' : null),
      execution_time: outcome.execution_time ?? null,
      token_prompt: outcome.token_use?.prompt ?? null,
      token_result: outcome.token_use?.result ?? null,
      token_total: outcome.token_use?.total ?? null,
      doc,
    };
    const ended = await writer.run(async (trx) => {
      const ok = await store.updateRun(trx, dialect, id, patch, row.status);
      if (ok) await signals.ended(id, trx);
      return ok;
    });
    if (ended) hub.close(id, forCreation({ ...row, ...patch }));
    return ended;
  }
}
