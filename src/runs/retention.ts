/**
 * Forgetting runs (issue 18): `DELETE /runs/:id`, and the retention sweeper that deletes runs
 * whose `ttl` has passed (`expires_at`, 0019) and runs older than their project's retention
 * (`PUT /projects/:id {retention: {runs_days}}`), then objects whose `ttl` has passed.
 *
 * A run goes with everything that hangs off it: tags, chunks, its full-text row (SQLite) and the
 * cached answers it made (a run's vectors are only ever in the answer of its creation, never stored).
 * The sweeper works in batches of RETENTION_BATCH rows, each in
 * its own short transaction, found through indexes (the partial `runs_expiry` index, the
 * newest-first `runs_recent` index read from its old end), and yields between batches so run
 * writes go on meanwhile.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import { deleteFullTextRows } from '../db/full-text-rows.ts';
import { authReads } from '../auth/reads.ts';
import { expiredObjects } from '../objects/reads.ts';
import { scopeOf, type Principal, type Scope } from '../auth/principal.ts';
import { BadRequest, Conflict, NotFound } from '../util/errors.ts';
import type { AuditLog } from '../audit/log.ts';
import { NOT_IN_FLIGHT } from './run-arms.ts';
import { hasEnded } from './model.ts';
import { CONVERSATION_RUNS_MAX, continuedAmong, conversationRuns, type ChainRun } from './conversation-chain.ts';

/** Rows per batch: one short transaction each. */
const RETENTION_BATCH = 200;
/** The longest project retention: 100 years. */
const MAX_RETENTION_DAYS = 36_500;
const DAY_MS = 86_400_000;

export interface RetentionSettings {
  /** Runs without a ttl of their own are deleted this many days after they last changed; none: kept. */
  runs_days?: number;
}

export interface RunRetentionDeps {
  db: Kysely<Database>;
  dialect: OrreryDialect;
  /** Deletes expired objects of a project (ObjectService.bulkDelete, as the system). */
  deleteObjects?: (s: Scope, ids: string[]) => Promise<unknown>;
  audit?: AuditLog;
  /** Resolves once the runs this process answered before their commit are stored (runs/read-barrier.ts). */
  whenStored?: () => Promise<void> | undefined;
}

export interface SweepResult {
  expiredRuns: number;
  retainedRuns: number;
  expiredObjects: number;
}

/** Deletes a feature's rows that hang off runs of one scope, inside the runs' deletion (the door's turns). */
export type RunRowsDeleter = (trx: Kysely<Database>, s: Scope, runIds: readonly string[]) => Promise<unknown>;

type Candidate = { id: string; account_id: string; project_id: string; previous_run?: string | null };
/** Whether a run of a conversation may go: it has ended, and its ttl or its project's retention has passed. */
type Due = (r: ChainRun, projectKey: string) => boolean;

const keyOf = (account: string, project: string) => `${account}|${project}`;

export class RunRetention {
  private lastBatchMs = 0;
  private readonly runRowOwners: RunRowsDeleter[] = [];

  constructor(private readonly deps: RunRetentionDeps) {}

  /** A feature whose rows hang off runs: they go in the same transaction as their runs. */
  ownsRunRows(deleteRows: RunRowsDeleter): void {
    this.runRowOwners.push(deleteRows);
  }

  /**
   * `DELETE /runs/:id`: the run and what hangs off it; a run of a conversation goes with every run
   * of that conversation (the turns before it and every continuation, forks included), so no
   * history is left with a lost turn. A run still executing among them is a 409, as is a
   * conversation of more than CONVERSATION_RUNS_MAX runs.
   */
  async delete(p: Principal, id: string): Promise<{ id: string; count: number }> {
    const s = scopeOf(p);
    const run = await this.deps.db
      .selectFrom('runs')
      .select(['id', 'status', 'interaction_id'])
      .where('account_id', '=', s.account)
      .where('project_id', '=', s.project)
      .where('id', '=', id)
      .executeTakeFirst();
    if (!run) throw new NotFound('run', id);
    if (run.status === 'created' || run.status === 'processing') {
      throw new Conflict(`run ${id} is still ${run.status}: delete it once it has completed or failed`);
    }
    const members = await conversationRuns(this.deps.db, s, id);
    if (members.length > CONVERSATION_RUNS_MAX) {
      throw new Conflict(
        `run ${id} is part of a conversation of more than ${CONVERSATION_RUNS_MAX} runs, more than one deletion takes`,
      );
    }
    const busy = members.find((m) => !hasEnded(m.status));
    if (busy) {
      throw new Conflict(
        `run ${id} is part of a conversation whose run ${busy.id} is still ${busy.status}: delete it once that run has completed or failed`,
      );
    }
    const ids = members.length ? members.map((m) => m.id) : [id];
    const count = await this.deps.db.transaction().execute(async (trx) => {
      const n = await deleteRunRows(trx, this.deps.dialect, s, ids, this.runRowOwners);
      await this.deps.audit?.write(trx, p, {
        action: 'delete',
        resourceType: 'run',
        resourceId: id,
        details: {
          interaction: run.interaction_id,
          status: run.status,
          ...(ids.length > 1 ? { conversation_runs: ids } : {}),
        },
      });
      return n;
    });
    return { id, count };
  }

  /**
   * One pass of the sweeper: every expired run and object, and runs past their project's retention.
   * A run of a conversation goes only with the whole conversation, once every run of it has ended
   * and is due (its ttl passed, or without one its project's retention), so a conversation still in
   * use keeps its history.
   */
  async sweep(now = new Date()): Promise<SweepResult> {
    // A continuation answered but not stored yet is not in the chain the sweep reads: its
    // conversation would look expired and go without it.
    await this.deps.whenStored?.();
    const at = now.toISOString();
    const result: SweepResult = { expiredRuns: 0, retainedRuns: 0, expiredObjects: 0 };
    const projects = await this.projectsWithRetention();
    const before = new Map(
      projects.map((pr) => [keyOf(pr.account, pr.id), new Date(now.getTime() - pr.days * DAY_MS).toISOString()]),
    );
    const due: Due = (r, key) => {
      if (!hasEnded(r.status)) return false;
      if (r.expires_at !== null) return r.expires_at <= at;
      const cutoff = before.get(key);
      return cutoff !== undefined && r.updated_at < cutoff;
    };
    // Both loops read on from the last row they saw (a conversation not yet due is left behind).
    let after: { at: string; id: string } | undefined;
    for (;;) {
      let q = this.deps.db
        .selectFrom('runs')
        .select(['id', 'account_id', 'project_id', 'previous_run', 'expires_at'])
        .where('expires_at', 'is not', null)
        .where('expires_at', '<=', at);
      if (after) {
        const a = after;
        q = q
          .where('expires_at', '>=', a.at)
          .where((eb) => eb.not(eb.and([eb('expires_at', '=', a.at), eb('id', '<=', a.id)])));
      }
      const rows = await q.orderBy('expires_at').orderBy('id').limit(RETENTION_BATCH).execute();
      result.expiredRuns += await this.deleteBatch(rows, due);
      if (rows.length < RETENTION_BATCH) break;
      const last = rows[rows.length - 1];
      after = { at: last.expires_at!, id: last.id };
      await this.pause();
    }
    for (const project of projects) {
      const cutoff = before.get(keyOf(project.account, project.id))!;
      let from: { at: string; id: string } | undefined;
      for (;;) {
        // Oldest first along runs_recent_cover (project_id, updated_at, id), which holds no run in
        // flight (run-arms.ts: the term says so to SQLite); runs with a ttl follow it instead.
        let q = this.deps.db
          .selectFrom('runs')
          .select(['id', 'account_id', 'project_id', 'previous_run', 'updated_at'])
          .where('project_id', '=', project.id)
          .where('account_id', '=', project.account)
          .where('updated_at', '<', cutoff)
          .where('expires_at', 'is', null)
          .where('status', 'in', ['completed', 'failed'])
          .where(NOT_IN_FLIGHT);
        if (from) {
          const a = from;
          q = q
            .where('updated_at', '>=', a.at)
            .where((eb) => eb.not(eb.and([eb('updated_at', '=', a.at), eb('id', '<=', a.id)])));
        }
        const rows = await q.orderBy('updated_at').orderBy('id').limit(RETENTION_BATCH).execute();
        result.retainedRuns += await this.deleteBatch(rows, due);
        if (rows.length < RETENTION_BATCH) break;
        const last = rows[rows.length - 1];
        from = { at: last.updated_at, id: last.id };
        await this.pause();
      }
    }
    if (this.deps.deleteObjects) {
      for (;;) {
        const rows = await expiredObjects(this.deps.db, at, RETENTION_BATCH);
        for (const [s, group] of byScope(rows))
          await this.deps.deleteObjects(
            s,
            group.map((r) => r.id),
          );
        result.expiredObjects += rows.length;
        if (rows.length < RETENTION_BATCH) break;
        await this.pause();
      }
    }
    return result;
  }

  /**
   * Deletes the runs of a batch that are in no conversation (they continue no run and none
   * continues them), and the conversations of the others whose every run is due.
   */
  private async deleteBatch(rows: readonly Candidate[], due: Due): Promise<number> {
    let n = 0;
    const started = performance.now();
    for (const [s, batch] of byScope(rows)) {
      const continued = await continuedAmong(
        this.deps.db,
        s,
        batch.map((r) => r.id),
      );
      const alone = (r: Candidate) => !r.previous_run && !continued.has(r.id);
      const lone = batch.filter(alone).map((r) => r.id);
      n += await this.deps.db
        .transaction()
        .execute((trx) => deleteRunRows(trx, this.deps.dialect, s, lone, this.runRowOwners));
      const seen = new Set<string>();
      const key = keyOf(s.account, s.project);
      for (const r of batch) {
        if (seen.has(r.id) || alone(r)) continue;
        const members = await conversationRuns(this.deps.db, s, r.id);
        for (const m of members) seen.add(m.id);
        if (!members.length || members.length > CONVERSATION_RUNS_MAX || !members.every((m) => due(m, key))) continue;
        const ids = members.map((m) => m.id);
        n += await this.deps.db
          .transaction()
          .execute((trx) => deleteRunRows(trx, this.deps.dialect, s, ids, this.runRowOwners));
      }
    }
    this.lastBatchMs = performance.now() - started;
    return n;
  }

  /**
   * Between batches the sweeper waits at least as long as the last batch took (and 10 ms at
   * least): it never holds the database's write side more than half of the time, so run writes,
   * which wait for it on SQLite, keep going while a backlog is deleted.
   */
  private pause(): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, Math.max(10, Math.min(1000, this.lastBatchMs))));
  }

  private async projectsWithRetention(): Promise<Array<{ id: string; account: string; days: number }>> {
    // Projects are auth's: their settings are read through it.
    const rows = await authReads(this.deps.db, this.deps.dialect).allProjectSettings();
    return rows.flatMap((r) => {
      const days = (r.settings.retention as RetentionSettings | undefined)?.runs_days;
      return typeof days === 'number' && days > 0 ? [{ id: r.id, account: r.account, days }] : [];
    });
  }
}

/** Ids per statement of a deletion: well under both databases' bound values. */
const IDS_PER_DELETE = 500;

/**
 * Deletes runs of one scope with their tags, chunks, full-text rows, cached answers and the rows
 * features hang off them (`owners`); answers how many runs went.
 */
async function deleteRunRows(
  trx: Kysely<Database>,
  d: OrreryDialect,
  s: Scope,
  ids: readonly string[],
  owners: readonly RunRowsDeleter[],
): Promise<number> {
  let n = 0;
  for (let i = 0; i < ids.length; i += IDS_PER_DELETE)
    n += await deleteSomeRunRows(trx, d, s, ids.slice(i, i + IDS_PER_DELETE), owners);
  return n;
}

async function deleteSomeRunRows(
  trx: Kysely<Database>,
  d: OrreryDialect,
  s: Scope,
  ids: readonly string[],
  owners: readonly RunRowsDeleter[],
): Promise<number> {
  if (!ids.length) return 0;
  // The runs of the scope among the ids, read once: every other delete is then by key.
  // `search_rowid` keys the full-text row where it is a side table; otherwise there is no such column (the full text is in the row).
  const columns = d.caps.fullTextSideTable ? (['id', 'search_rowid'] as const) : (['id'] as const);
  const mine: Array<{ id: string; search_rowid?: number | null }> = await trx
    .selectFrom('runs')
    .select([...columns])
    .where('account_id', '=', s.account)
    .where('project_id', '=', s.project)
    .where('id', 'in', ids)
    .execute();
  if (!mine.length) return 0;
  const runIds = mine.map((r) => r.id);
  await trx.deleteFrom('run_tags').where('run_id', 'in', runIds).execute();
  await trx.deleteFrom('run_chunks').where('run_id', 'in', runIds).execute();
  const rowids = mine.map((r) => r.search_rowid).filter((x): x is number => typeof x === 'number');
  await deleteFullTextRows(trx, d, 'runs_fts', rowids);
  for (const owner of owners) await owner(trx, s, runIds);
  await trx.deleteFrom('run_cache').where('run_id', 'in', runIds).where('project_id', '=', s.project).execute();
  const r = await trx.deleteFrom('runs').where('id', 'in', runIds).executeTakeFirst();
  return Number(r.numDeletedRows);
}

/** `PUT /projects/:id {retention}`: `{runs_days}` (a whole number of days, 1 to 36,500) or null (keep runs). */
export function retentionSettingsOf(value: unknown): RetentionSettings | null {
  if (value === null) return null;
  if (typeof value !== 'object' || Array.isArray(value))
    throw new BadRequest('retention must be an object {runs_days} or null');
  const { runs_days: days, ...rest } = value as Record<string, unknown>;
  const extra = Object.keys(rest)[0];
  if (extra !== undefined) throw new BadRequest(`retention.${extra} is not a setting; use runs_days`);
  if (days === null || days === undefined) return {};
  if (typeof days !== 'number' || !Number.isInteger(days) || days < 1 || days > MAX_RETENTION_DAYS) {
    throw new BadRequest(
      `retention.runs_days must be a whole number of days from 1 to ${MAX_RETENTION_DAYS}, or null to keep runs`,
    );
  }
  return { runs_days: days };
}

function byScope<R extends { account_id: string; project_id: string }>(rows: readonly R[]): Map<Scope, R[]> {
  const groups = new Map<string, { s: Scope; rows: R[] }>();
  for (const r of rows) {
    const key = keyOf(r.account_id, r.project_id);
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { s: { account: r.account_id, project: r.project_id }, rows: [] }));
    g.rows.push(r);
  }
  return new Map([...groups.values()].map((g) => [g.s, g.rows]));
}
