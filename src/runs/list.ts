/**
 * GET /runs: the interface's filters over real columns, newest `updated_at` first with the id as
 * tie-breaker, so offset paging is stable (decisions.md).
 */
import type { Scope } from '../auth/principal.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import type { RunRow } from './model.ts';
import { decodeRun, runsIn, type Db } from './store.ts';

export interface RunListFilters {
  limit: number;
  offset: number;
  interaction?: string[];
  model?: string[];
  environment?: string[];
  status?: string[];
  tag?: string[];
  anchorDate?: string;
  anchorDateDirection?: 'before' | 'after';
  /** A run id (its children) or `false` (top-level runs only). */
  parent?: string[] | false;
}

export async function listRuns(db: Db, d: OrreryDialect, scope: Scope, f: RunListFilters): Promise<RunRow[]> {
  let q = runsIn(db, scope).selectAll('runs');
  if (f.interaction) q = q.where('runs.interaction_id', 'in', f.interaction);
  if (f.model) q = q.where('runs.model_id', 'in', f.model);
  if (f.environment) q = q.where('runs.environment_id', 'in', f.environment);
  if (f.status) q = q.where('runs.status', 'in', f.status);
  if (f.tag) {
    const tags = f.tag;
    q = q.where((eb) => eb.exists(eb.selectFrom('run_tags').select('run_tags.run_id').whereRef('run_tags.run_id', '=', 'runs.id').where('run_tags.tag', 'in', tags)));
  }
  if (f.anchorDate) q = q.where('runs.updated_at', f.anchorDateDirection === 'before' ? '<' : '>=', f.anchorDate);
  if (f.parent === false) q = q.where('runs.parent_id', 'is', null);
  else if (f.parent) q = q.where('runs.parent_id', 'in', f.parent);
  const rows = await q.orderBy('runs.updated_at', 'desc').orderBy('runs.id', 'desc').limit(f.limit).offset(f.offset).execute();
  return rows.map((r) => decodeRun(d, r));
}
