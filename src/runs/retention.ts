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
import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import { scopeOf, type Principal, type Scope } from '../auth/principal.ts';
import { BadRequest, Conflict, NotFound } from '../util/errors.ts';
import type { AuditLog } from '../audit/log.ts';
import { NOT_IN_FLIGHT } from './run-arms.ts';

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
}

export interface SweepResult {
  expiredRuns: number;
  retainedRuns: number;
  expiredObjects: number;
}

export class RunRetention {
  private lastBatchMs = 0;

  constructor(private readonly deps: RunRetentionDeps) {}

  /** `DELETE /runs/:id`: the run and what hangs off it. A run still executing is a 409. */
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
    await this.deps.db.transaction().execute(async (trx) => {
      await deleteRunRows(trx, this.deps.dialect, s, [id]);
      await this.deps.audit?.write(trx, p, {
        action: 'delete',
        resourceType: 'run',
        resourceId: id,
        details: { interaction: run.interaction_id, status: run.status },
      });
    });
    return { id, count: 1 };
  }

  /** One pass of the sweeper: every expired run and object, and runs past their project's retention. */
  async sweep(now = new Date()): Promise<SweepResult> {
    const at = now.toISOString();
    const result: SweepResult = { expiredRuns: 0, retainedRuns: 0, expiredObjects: 0 };
    for (;;) {
      const rows = await this.deps.db
        .selectFrom('runs')
        .select(['id', 'account_id', 'project_id'])
        .where('expires_at', 'is not', null)
        .where('expires_at', '<=', at)
        .orderBy('expires_at')
        .limit(RETENTION_BATCH)
        .execute();
      result.expiredRuns += await this.deleteBatch(rows);
      if (rows.length < RETENTION_BATCH) break;
      await this.pause();
    }
    for (const project of await this.projectsWithRetention()) {
      const before = new Date(now.getTime() - project.days * DAY_MS).toISOString();
      for (;;) {
        // Oldest first along runs_recent_cover (project_id, updated_at, id), which holds no run in
        // flight (run-arms.ts: the term says so to SQLite); runs with a ttl follow it instead.
        const rows = await this.deps.db
          .selectFrom('runs')
          .select(['id', 'account_id', 'project_id'])
          .where('project_id', '=', project.id)
          .where('account_id', '=', project.account)
          .where('updated_at', '<', before)
          .where('expires_at', 'is', null)
          .where('status', 'in', ['completed', 'failed'])
          .where(NOT_IN_FLIGHT)
          .orderBy('updated_at')
          .limit(RETENTION_BATCH)
          .execute();
        result.retainedRuns += await this.deleteBatch(rows);
        if (rows.length < RETENTION_BATCH) break;
        await this.pause();
      }
    }
    if (this.deps.deleteObjects) {
      for (;;) {
        const rows = await this.deps.db
          .selectFrom('objects')
          .select(['id', 'account_id', 'project_id'])
          .where('expires_at', 'is not', null)
          .where('expires_at', '<=', at)
          .orderBy('expires_at')
          .limit(RETENTION_BATCH)
          .execute();
        for (const [s, ids] of byScope(rows)) await this.deps.deleteObjects(s, ids);
        result.expiredObjects += rows.length;
        if (rows.length < RETENTION_BATCH) break;
        await this.pause();
      }
    }
    return result;
  }

  private async deleteBatch(rows: Array<{ id: string; account_id: string; project_id: string }>): Promise<number> {
    let n = 0;
    const started = performance.now();
    for (const [s, ids] of byScope(rows)) {
      n += await this.deps.db.transaction().execute((trx) => deleteRunRows(trx, this.deps.dialect, s, ids));
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
    const rows = await this.deps.db.selectFrom('projects').select(['id', 'account_id', 'settings']).execute();
    return rows.flatMap((r) => {
      const settings = this.deps.dialect.fromJson<Record<string, unknown> | null>(r.settings) ?? {};
      const days = (settings.retention as RetentionSettings | undefined)?.runs_days;
      return typeof days === 'number' && days > 0 ? [{ id: r.id, account: r.account_id, days }] : [];
    });
  }
}

/** Deletes runs of one scope with their tags, chunks, full-text rows and cached answers; answers how many runs went. */
async function deleteRunRows(
  trx: Kysely<Database>,
  d: OrreryDialect,
  s: Scope,
  ids: readonly string[],
): Promise<number> {
  if (!ids.length) return 0;
  // The runs of the scope among the ids, read once: every other delete is then by key.
  // `search_rowid` keys the full-text row on SQLite; PostgreSQL has no such column (its tsvector is in the row).
  const columns = d.name === 'sqlite' ? (['id', 'search_rowid'] as const) : (['id'] as const);
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
  if (d.name === 'sqlite' && rowids.length)
    await sql`DELETE FROM runs_fts WHERE rowid IN (${sql.join(rowids)})`.execute(trx);
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

function byScope<R extends { id: string; account_id: string; project_id: string }>(
  rows: readonly R[],
): Map<Scope, string[]> {
  const groups = new Map<string, { s: Scope; ids: string[] }>();
  for (const r of rows) {
    const key = `${r.account_id}|${r.project_id}`;
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { s: { account: r.account_id, project: r.project_id }, ids: [] }));
    g.ids.push(r.id);
  }
  return new Map([...groups.values()].map((g) => [g.s, g.ids]));
}
