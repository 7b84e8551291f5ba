/**
 * Aggregates over the runs table for the usage analytics (src/analytics holds their rules):
 * COUNT, SUM, GROUP BY in SQL, never rows loaded into JavaScript. Every statement starts from the
 * caller's project, or from the given projects of its account for the account-wide cost views. The range is on `created_at`
 * (`from` inclusive, `to` exclusive, as stored ISO text); the columns read are all in
 * `runs_analytics` (migration 0016), so the aggregates walk that index and not the wide rows.
 */
import { sql, type QueryExecutorProvider, type RawBuilder, type SqlBool } from 'kysely';
import type { DialectName, OrreryDialect } from '../db/dialect.ts';
import type { Scope } from '../auth/principal.ts';
import { jsonSql } from '../db/json-sql.ts';
import { bucketOf, type TimeBucket } from '../db/time-buckets.ts';
import { indexedBy } from '../db/index-hint.ts';
import type { Db } from './store.ts';
import { runArms } from './run-arms.ts';

/** Whose runs: one project, or the projects of an account (auth knows them; the caller asks it). */
export type AnalyticsScope = { readonly project: string } | { readonly projects: readonly string[] };

export interface RunFilter {
  readonly scope: AnalyticsScope;
  /** ISO bounds on created_at: from inclusive, to exclusive. */
  readonly from?: string;
  readonly to?: string;
  readonly environment?: string;
  readonly model?: string;
  readonly interaction?: string;
  readonly project?: string;
  /** A run and its children (virtual runs' members). */
  readonly run?: string;
  /** The API key that started the runs (`source.principal_id`; read from the document, not the index). */
  readonly principal?: string;
}

/** The columns a cost view can group by. */
export type GroupColumn = 'model_id' | 'environment_id' | 'interaction_id' | 'project_id' | 'account_id';
const LABEL: Partial<Record<GroupColumn, string>> = {
  environment_id: 'environment_name',
  interaction_id: 'interaction_name',
};

const c = (name: string) => sql.ref(`runs.${name}`);

/**
 * An aggregate over the runs `where` selects: `select(from, where)` once per arm of
 * runs/run-arms.ts, in one statement (one snapshot), the first arm read through the covering index
 * of migration 0016 (db/index-hint.ts says why SQLite is told) unless `hinted` is false. Each arm
 * aggregates straight off its index, as the one statement of PostgreSQL does; the rows of the
 * second (runs in flight: few, often none) are added here into those of the first with the same
 * `key`, by `add`. Re-aggregating both arms' rows in SQL instead cost 3-42 ms of a sorter per
 * statement on thousands of groups. `order` ends the statement.
 */
async function aggregate<R>(
  db: Db,
  d: OrreryDialect,
  where: RawBuilder<SqlBool>,
  select: (from: RawBuilder<unknown>, where: RawBuilder<SqlBool>) => RawBuilder<unknown>,
  {
    key,
    add,
    hinted = true,
    order = sql``,
  }: { key: (r: R) => string; add: (into: R, r: R) => void; hinted?: boolean; order?: RawBuilder<unknown> },
): Promise<R[]> {
  const [first, ...rest] = runArms(d.name, where);
  const arms = [
    select(hinted ? sql`runs ${indexedBy(d.name, 'runs_analytics')}` : sql`runs`, first),
    ...rest.map((w) => select(sql`runs`, w)),
  ];
  const { rows } = await sql<R>`${sql.join(arms, sql` UNION ALL `)} ${order}`.execute(db);
  if (arms.length === 1) return rows;
  const byKey = new Map<string, R>();
  for (const r of rows) {
    const k = key(r);
    const seen = byKey.get(k);
    if (seen) add(seen, r);
    else byKey.set(k, r);
  }
  return [...byKey.values()];
}

/** Sums as SQL adds them: NULL is no value, and only NULLs are NULL. */
const plus = (a: number | null, b: number | null): number | null =>
  a === null ? b : b === null ? a : Number(a) + Number(b);

/**
 * `table`'s runs in the scope. Account-wide: the account's projects, so each one is a range on the
 * project-first indexes. Not `indexed`: the column as an expression (`|| ''`), which no index
 * answers, so that the database does not walk that range.
 */
const inScope = (table: string, scope: AnalyticsScope, indexed = true) => {
  const column = sql.ref(`${table}.project_id`);
  const project = indexed ? column : sql`(${column} || '')`;
  if ('project' in scope) return sql<SqlBool>`${project} = ${scope.project}`;
  return scope.projects.length ? sql<SqlBool>`${project} IN (${sql.join(scope.projects)})` : sql<SqlBool>`1 = 0`;
};

function whereOf(f: RunFilter, d?: OrreryDialect): RawBuilder<SqlBool> {
  // One run: its tree is found by id (below), and the scope only checked.
  const parts: RawBuilder<SqlBool>[] = [inScope('runs', f.scope, f.run === undefined)];
  if (f.from !== undefined) parts.push(sql<SqlBool>`runs.created_at >= ${f.from}`);
  if (f.to !== undefined) parts.push(sql<SqlBool>`runs.created_at < ${f.to}`);
  if (f.environment !== undefined) parts.push(sql<SqlBool>`runs.environment_id = ${f.environment}`);
  if (f.model !== undefined) parts.push(sql<SqlBool>`runs.model_id = ${f.model}`);
  if (f.interaction !== undefined) parts.push(sql<SqlBool>`runs.interaction_id = ${f.interaction}`);
  if (f.project !== undefined) parts.push(sql<SqlBool>`runs.project_id = ${f.project}`);
  // A run and its children, as ids looked up by key: as `id = ? OR parent_id = ?` beside the
  // project's term, SQLite walked the project's range of an index instead, unless statistics told
  // it better (no ANALYZE is run).
  if (f.run !== undefined) {
    parts.push(
      sql<SqlBool>`runs.id IN (SELECT CAST(${f.run} AS TEXT) UNION ALL SELECT child.id FROM runs AS child WHERE ${inScope('child', f.scope)} AND child.parent_id = ${f.run})`,
    );
  }
  if (f.principal !== undefined && d)
    parts.push(sql<SqlBool>`${jsonSql(d.name).text(c('doc'), ['source', 'principal_id'])} = ${f.principal}`);
  return sql<SqlBool>`${sql.join(parts, sql` AND `)}`;
}

export interface StatusCountRow {
  environment_id: string | null;
  environment_name: string | null;
  interaction_id: string;
  interaction_name: string | null;
  status: string;
  n: number;
}

/** Runs per (environment, interaction, status): the summary is rolled up from these few rows. */
export async function statusCounts(db: Db, d: OrreryDialect, f: RunFilter): Promise<StatusCountRow[]> {
  const rows = await aggregate<StatusCountRow>(
    db,
    d,
    whereOf(f),
    (from, where) => sql`SELECT runs.environment_id, max(runs.environment_name) AS environment_name,
        runs.interaction_id, max(runs.interaction_name) AS interaction_name, runs.status, count(*) AS n
      FROM ${from} WHERE ${where} GROUP BY runs.environment_id, runs.interaction_id, runs.status`,
    {
      key: (r) => JSON.stringify([r.environment_id, r.interaction_id, r.status]),
      add: (into, r) => {
        into.n = Number(into.n) + Number(r.n);
        into.environment_name ??= r.environment_name;
        into.interaction_name ??= r.interaction_name;
      },
    },
  );
  return rows.map((r) => ({ ...r, n: Number(r.n) }));
}

export interface BucketCountRow {
  bucket: string;
  n: number;
}

/** Runs per time bucket of created_at, in order. */
export async function bucketCounts(
  db: Db,
  d: OrreryDialect,
  f: RunFilter,
  unit: TimeBucket,
): Promise<BucketCountRow[]> {
  const b = bucketOf(d.name, unit, c('created_at'));
  const rows = await aggregate<BucketCountRow>(
    db,
    d,
    whereOf(f),
    (from, where) => sql`SELECT ${b} AS bucket, count(*) AS n FROM ${from} WHERE ${where} GROUP BY 1`,
    {
      key: (r) => String(r.bucket),
      add: (into, r) => void (into.n = Number(into.n) + Number(r.n)),
      order: sql`ORDER BY 1`,
    },
  );
  // In order: ORDER BY sorts both arms' rows together, and the merge keeps each bucket's first place.
  return rows.map((r) => ({ bucket: String(r.bucket), n: Number(r.n) }));
}

export interface TokenRow {
  environment_id: string | null;
  environment_name: string | null;
  runs: number;
  prompt: number | null;
  result: number | null;
  total: number | null;
  cost: number | null;
}

/** Token sums per environment. `total` counts prompt + result where a run has no total of its own. */
export async function tokenSums(db: Db, d: OrreryDialect, f: RunFilter): Promise<TokenRow[]> {
  const rows = await aggregate<TokenRow>(
    db,
    d,
    whereOf(f),
    (from, where) => sql`SELECT runs.environment_id, max(runs.environment_name) AS environment_name, count(*) AS runs,
        sum(runs.token_prompt) AS prompt, sum(runs.token_result) AS result,
        sum(COALESCE(runs.token_total, COALESCE(runs.token_prompt, 0) + COALESCE(runs.token_result, 0))) AS total,
        sum(runs.cost_total) AS cost
      FROM ${from} WHERE ${where} GROUP BY runs.environment_id`,
    {
      key: (r) => JSON.stringify(r.environment_id),
      add: (into, r) => {
        into.runs = Number(into.runs) + Number(r.runs);
        into.prompt = plus(into.prompt, r.prompt);
        into.result = plus(into.result, r.result);
        into.total = plus(into.total, r.total);
        into.cost = plus(into.cost, r.cost);
        into.environment_name ??= r.environment_name;
      },
    },
  );
  const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));
  return rows.map((r) => ({
    ...r,
    runs: Number(r.runs),
    prompt: num(r.prompt),
    result: num(r.result),
    total: num(r.total),
    cost: num(r.cost),
  }));
}

export interface CostRow {
  /** The group's value; with `alsoEnvironment`, the model (environment in `environment_id`). */
  key: string | null;
  label: string | null;
  environment_id: string | null;
  bucket: string | null;
  calls: number;
  priced: number;
  cost: number;
  input: number;
  output: number;
  duration: number;
}

/**
 * Cost, tokens, calls and duration per group and time bucket. With `byEnvironment`, the rows are
 * also split by environment (so the service can map environments to providers).
 */
export async function costRows(
  db: Db,
  d: OrreryDialect,
  f: RunFilter,
  group: GroupColumn,
  unit: TimeBucket | null,
  byEnvironment: boolean,
): Promise<CostRow[]> {
  const label = LABEL[group];
  const b = unit ? bucketOf(d.name, unit, c('created_at')) : sql`CAST(NULL AS TEXT)`;
  const env = byEnvironment && group !== 'environment_id';
  const keys = [c(group), ...(env ? [c('environment_id')] : []), ...(unit ? [b] : [])];
  const rows = await aggregate<CostRow>(
    db,
    d,
    whereOf(f, d),
    (from, where) => sql`SELECT ${c(group)} AS key, ${label ? sql`max(${c(label)})` : sql`CAST(NULL AS TEXT)`} AS label,
        ${env ? c('environment_id') : group === 'environment_id' ? c('environment_id') : sql`CAST(NULL AS TEXT)`} AS environment_id,
        ${b} AS bucket, count(*) AS calls, count(runs.cost_total) AS priced, COALESCE(sum(runs.cost_total), 0) AS cost,
        COALESCE(sum(runs.token_prompt), 0) AS input, COALESCE(sum(runs.token_result), 0) AS output, COALESCE(sum(runs.execution_time), 0) AS duration
      FROM ${from} WHERE ${where} GROUP BY ${sql.join(keys)}`,
    {
      key: (r) => JSON.stringify([r.key, r.environment_id, r.bucket === null ? null : String(r.bucket)]),
      add: (into, r) => {
        for (const k of ['calls', 'priced', 'cost', 'input', 'output', 'duration'] as const)
          into[k] = Number(into[k]) + Number(r[k]);
        into.label ??= r.label;
      },
      // One run and its children: by id, not along the project's range.
      hinted: f.run === undefined,
    },
  );
  return rows.map((r) => ({
    key: r.key === null ? null : String(r.key),
    label: r.label,
    environment_id: r.environment_id,
    bucket: r.bucket === null ? null : String(r.bucket),
    calls: Number(r.calls),
    priced: Number(r.priced),
    cost: Number(r.cost),
    input: Number(r.input),
    output: Number(r.output),
    duration: Number(r.duration),
  }));
}

/** The provider each environment's runs were executed with (one indexed lookup per environment). */
export async function providersOf(
  db: Db,
  d: OrreryDialect,
  scope: AnalyticsScope,
  environments: readonly string[],
): Promise<Map<string, string>> {
  const json = jsonSql(d.name);
  const out = new Map<string, string>();
  for (const id of environments) {
    // One arm after the other (runs/run-arms.ts): most environments have a run that ended.
    for (const where of runArms(d.name, sql<SqlBool>`${whereOf({ scope })} AND runs.environment_id = ${id}`)) {
      const { rows } = await sql<{
        provider: string | null;
      }>`SELECT ${json.text(c('doc'), ['environment', 'provider'])} AS provider
        FROM runs WHERE ${where} LIMIT 1`.execute(db);
      if (rows[0]?.provider) {
        out.set(id, rows[0].provider);
        break;
      }
    }
  }
  return out;
}

/** Whether a run exists in the scope. */
export async function runExists(db: Db, scope: AnalyticsScope, id: string): Promise<boolean> {
  const { rows } = await sql<{
    one: number;
  }>`SELECT 1 AS one FROM runs WHERE ${whereOf({ scope })} AND runs.id = ${id}`.execute(db);
  return rows.length > 0;
}

/** How values given to runs are grouped by their runs. */
export type RunValueGroup = 'interaction_version' | 'model' | 'day';

export interface RunValueAggregate {
  key: string;
  interaction: string | null;
  version: number | null;
  mean: number;
  min: number;
  max: number;
  count: number;
}

/**
 * Mean, min, max and count of `values` (a statement of `run_id, value` rows, one per run, e.g. the
 * latest scores of a name) per group of their runs of the project created in [from, to): one GROUP
 * BY over the values joined to the runs by id. Ordered by key.
 */
export async function aggregateRunValues(
  db: QueryExecutorProvider,
  d: DialectName,
  s: Scope,
  values: RawBuilder<{ run_id: string; value: number }>,
  q: { group: RunValueGroup; from?: string; to?: string; interaction?: string },
): Promise<RunValueAggregate[]> {
  const version = jsonSql(d).number(sql.ref('runs.doc'), ['interaction', 'version']);
  const key =
    q.group === 'model'
      ? sql`COALESCE(runs.model_id, '')`
      : q.group === 'day'
        ? sql`substr(runs.created_at, 1, 10)`
        : sql`runs.interaction_id`;
  const where = [
    sql`runs.project_id = ${s.project}`,
    ...(q.from ? [sql`runs.created_at >= ${q.from}`] : []),
    ...(q.to ? [sql`runs.created_at < ${q.to}`] : []),
    ...(q.interaction ? [sql`runs.interaction_id = ${q.interaction}`] : []),
  ];
  const byVersion = q.group === 'interaction_version';
  const { rows } = await sql<{ k: string; v: number | null; mean: number; mn: number; mx: number; n: number }>`
    SELECT ${key} AS k, ${byVersion ? version : sql`NULL`} AS v, avg(vals.value) AS mean, min(vals.value) AS mn,
      max(vals.value) AS mx, count(*) AS n
    FROM (${values}) AS vals JOIN runs ON runs.id = vals.run_id
    WHERE ${sql.join(where, sql` AND `)}
    GROUP BY 1, 2 ORDER BY 1, 2`.execute(db);
  return rows.map((r) => {
    const v = r.v === null || r.v === undefined ? null : Number(r.v);
    return {
      key: byVersion ? `${r.k}@${v ?? ''}` : String(r.k),
      interaction: byVersion ? String(r.k) : null,
      version: v,
      mean: Number(r.mean),
      min: Number(r.mn),
      max: Number(r.mx),
      count: Number(r.n),
    };
  });
}
