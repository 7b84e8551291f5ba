/**
 * SQL of agents (0031): the agent's row and its steps. A step is inserted `started` (its
 * attempts counted) before it runs and updated `done` or `failed` with its output after, so the
 * steps of an agent say where it is after any crash (agents/runner.ts).
 */
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import { nowIso } from '../db/ids.ts';
import type { Principal, Scope } from '../auth/principal.ts';
import type { AgentSpec } from './spec.ts';

type Db = Kysely<Database>;

export type AgentState = 'running' | 'waiting' | 'ended';
export type StepKind = 'model' | 'tool' | 'wait';
type StepStatus = 'started' | 'done' | 'failed';

/** Who started the agent: its steps run as them. */
export type AgentPrincipal = Pick<Principal, 'account' | 'project' | 'keyId' | 'role' | 'via'>;

interface StoredSpec {
  spec: AgentSpec;
  principal: AgentPrincipal;
}

export interface AgentRow {
  runId: string;
  scope: Scope;
  spec: AgentSpec;
  principal: AgentPrincipal;
  state: AgentState;
  stopRequested: boolean;
  deadlineAt: string;
}

export interface StepRow {
  seq: number;
  kind: StepKind;
  status: StepStatus;
  attempts: number;
  key: string;
  input: Record<string, unknown>;
  output: Record<string, unknown> | null;
}

export class AgentStore {
  constructor(
    private readonly db: Db,
    private readonly d: OrreryDialect,
  ) {}

  async insertAgent(
    s: Scope,
    runId: string,
    spec: AgentSpec,
    deadlineAt: string,
    principal: AgentPrincipal,
  ): Promise<void> {
    const now = nowIso();
    await this.db
      .insertInto('agent_runs')
      .values({
        run_id: runId,
        account_id: s.account,
        project_id: s.project,
        spec: this.d.toJson({ spec, principal } satisfies StoredSpec),
        state: 'running',
        stop_requested: 0,
        deadline_at: deadlineAt,
        created_at: now,
        updated_at: now,
      })
      // Written by the start and, if that did not get to it, by the agent's first job.
      .onConflict((oc) => oc.column('run_id').doNothing())
      .execute();
  }

  async agent(s: Scope, runId: string): Promise<AgentRow | undefined> {
    const r = await this.db
      .selectFrom('agent_runs')
      .selectAll()
      .where('run_id', '=', runId)
      .where('account_id', '=', s.account)
      .where('project_id', '=', s.project)
      .executeTakeFirst();
    if (!r) return undefined;
    const stored = this.d.fromJson<StoredSpec>(r.spec);
    return {
      runId: r.run_id,
      scope: { account: r.account_id, project: r.project_id },
      spec: stored.spec,
      principal: stored.principal,
      state: r.state as AgentState,
      stopRequested: Number(r.stop_requested) === 1,
      deadlineAt: r.deadline_at,
    };
  }

  /** Moves the agent from `from` to `to`; false when it was not in `from`. */
  async setState(runId: string, from: AgentState, to: AgentState): Promise<boolean> {
    const r = await this.db
      .updateTable('agent_runs')
      .set({ state: to, updated_at: nowIso() })
      .where('run_id', '=', runId)
      .where('state', '=', from)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  async requestStop(s: Scope, runId: string): Promise<boolean> {
    const r = await this.db
      .updateTable('agent_runs')
      .set({ stop_requested: 1, updated_at: nowIso() })
      .where('run_id', '=', runId)
      .where('account_id', '=', s.account)
      .where('project_id', '=', s.project)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  async steps(runId: string): Promise<StepRow[]> {
    const rows = await this.db
      .selectFrom('agent_steps')
      .selectAll()
      .where('run_id', '=', runId)
      .orderBy('seq')
      .execute();
    return rows.map((r) => ({
      seq: Number(r.seq),
      kind: r.kind as StepKind,
      status: r.status as StepStatus,
      attempts: Number(r.attempts),
      key: r.idempotency_key,
      input: this.d.fromJson<Record<string, unknown>>(r.input),
      output: r.output === null ? null : this.d.fromJson<Record<string, unknown>>(r.output),
    }));
  }

  /** The checkpoint before a step: a new step, started once. Throws on a duplicate seq (another worker). */
  async begin(s: Scope, runId: string, seq: number, kind: StepKind, input: Record<string, unknown>): Promise<StepRow> {
    const key = `${runId}:${seq}`;
    await this.db
      .insertInto('agent_steps')
      .values({
        run_id: runId,
        seq,
        account_id: s.account,
        project_id: s.project,
        kind,
        status: 'started',
        attempts: 1,
        idempotency_key: key,
        input: this.d.toJson(input) as string,
        output: null,
        started_at: nowIso(),
        ended_at: null,
      })
      .execute();
    return { seq, kind, status: 'started', attempts: 1, key, input, output: null };
  }

  /** A step in flight at a crash, started once more; false when it changed meanwhile. */
  async restart(runId: string, step: StepRow): Promise<boolean> {
    const r = await this.db
      .updateTable('agent_steps')
      .set({ attempts: step.attempts + 1, started_at: nowIso() })
      .where('run_id', '=', runId)
      .where('seq', '=', step.seq)
      .where('status', '=', 'started')
      .where('attempts', '=', step.attempts)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  /** The checkpoint after a step: its outcome; false when the step had already ended. */
  async finish(
    runId: string,
    seq: number,
    status: 'done' | 'failed',
    output: Record<string, unknown>,
  ): Promise<boolean> {
    const r = await this.db
      .updateTable('agent_steps')
      .set({ status, output: this.d.toJson(output) as string, ended_at: nowIso() })
      .where('run_id', '=', runId)
      .where('seq', '=', seq)
      .where('status', '=', 'started')
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }
}
