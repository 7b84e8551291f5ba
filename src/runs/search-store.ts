/**
 * SQL for listing, searching and faceting runs. Every statement starts from the caller's project;
 * filters and the compiled Lucene query are one condition (`where`), so GET /runs, POST
 * /runs/search and POST /runs/facets share a single code path and a single order: newest
 * `updated_at` first, ties by id descending (decisions.md), stable under offset paging.
 *
 * - A page selects ids first (an index-only walk of `runs_recent_cover` when the filters are on
 *   its columns), then reads the rows of that page only.
 * - Count and facets run as one statement over a materialised CTE of the matching runs (only the
 *   columns the facets need), so the filter and the full-text match are evaluated once, and each
 *   facet is a GROUP BY (string facets: most frequent first, ties by value; number and date
 *   facets: a CASE over the boundaries), never rows loaded into JavaScript.
 */
import { sql, type Expression, type RawBuilder, type SqlBool } from 'kysely';
import type { Scope } from '../auth/principal.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import { jsonMemberStrings, jsonString } from '../db/json-sql.ts';
import { compileRunQuery, FALSE, searchSql, TRUE, type Cond, type SearchPlan } from './lucene-sql/index.ts';
import type { QueryNode } from '../query/lucene/index.ts';
import { RUN_ROW_COLUMNS, type RunRow } from './model.ts';
import { decodeRun, type Db } from './store.ts';
import { armRows, runArms } from './run-arms.ts';
import { SCORE_COLUMNS, SCORE_VALUE_TEXT, joinLatestScore } from '../scores/table-conditions.ts';

/** Timestamp bounds, as stored ISO strings. */
export interface TimeBounds {
  readonly gt?: string;
  readonly gte?: string;
  readonly lt?: string;
  readonly lte?: string;
}

/** Structured filters (GET /runs, the `filters` of a search, the client's `query` object). Lists mean "any of". */
export interface RunFilters {
  readonly ids?: readonly string[];
  readonly interaction?: readonly string[];
  readonly interactionName?: readonly string[];
  readonly environment?: readonly string[];
  readonly model?: readonly string[];
  readonly status?: readonly string[];
  readonly finishReason?: readonly string[];
  readonly createdBy?: readonly string[];
  readonly tagsAny?: readonly string[];
  readonly tagsAll?: readonly string[];
  readonly tagsNone?: readonly string[];
  /** Children of these runs, or `false`: top-level runs only. */
  readonly parent?: readonly string[] | false;
  /** Continuations of these runs (`previous_run`), or `false`: runs that continue none. */
  readonly previousRun?: readonly string[] | false;
  readonly updated?: TimeBounds;
  readonly created?: TimeBounds;
  /** Async runs (POST /execute/async) by workflow run id, which is the run's id. */
  readonly workflowRunIds?: readonly string[];
  /** A filter no run can satisfy (runs here belong to no object or agent). */
  readonly none?: boolean;
  /** Conditions on latest scores (`scores.<name>` terms or ranges, parsed); every one holds. */
  readonly scores?: readonly QueryNode[];
}

export type FacetColumn =
  | 'status'
  | 'model_id'
  | 'finish_reason'
  | 'interaction_id'
  | 'environment_id'
  | 'updated_at'
  | 'execution_time'
  | 'cost_total'
  | 'tags'
  | 'tool_name'
  | 'score';
/** The columns a number or date facet buckets (`score`: the latest score of the facet's `score` name). */
export type BucketColumn = 'updated_at' | 'execution_time' | 'cost_total' | 'score';

/** One facet as SQL sees it: group by value, or count per [lower, upper) bucket. */
export type FacetQuery =
  | {
      readonly kind: 'values';
      readonly column: FacetColumn;
      readonly limit: number;
      readonly withNull: boolean;
      /** column `score`: the score's name. */
      readonly score?: string;
    }
  | {
      readonly kind: 'buckets';
      readonly column: BucketColumn;
      readonly boundaries: readonly (number | string)[];
      readonly score?: string;
    };

export interface FacetRow {
  /** The value (values), or the bucket index as text with -1 for "outside every bucket" (buckets). */
  readonly key: string | null;
  readonly count: number;
  /** For interaction / environment values: the name stored with the runs. */
  readonly name: string | null;
}

const RUN_COLUMNS = sql.raw(RUN_ROW_COLUMNS.map((c) => `runs.${c}`).join(', '));

const col = (c: string) => sql.ref(`runs.${c}`);
const list = (values: readonly unknown[]) => sql.join(values.map((v) => sql`${v}`));
const inList = (c: Expression<unknown>, values: readonly string[]): Cond =>
  values.length ? sql<SqlBool>`${c} IN (${list(values)})` : FALSE;
const and = (parts: Cond[]): Cond => (parts.length ? sql<SqlBool>`${sql.join(parts, sql` AND `)}` : TRUE);

const timeBounds = (c: Expression<unknown>, b: TimeBounds | undefined): Cond[] => [
  ...(b?.gt !== undefined ? [sql<SqlBool>`${c} > ${b.gt}`] : []),
  ...(b?.gte !== undefined ? [sql<SqlBool>`${c} >= ${b.gte}`] : []),
  ...(b?.lt !== undefined ? [sql<SqlBool>`${c} < ${b.lt}`] : []),
  ...(b?.lte !== undefined ? [sql<SqlBool>`${c} <= ${b.lte}`] : []),
];

/**
 * The scope, the filters and the query (already compiled for the same `plan`) as one condition.
 * The scope is the project alone: project ids are unique across accounts (so the account adds
 * nothing), and an account condition made SQLite prefer a full table scan over every
 * project-first index (measured at 1M runs).
 */
export function whereOf(
  d: OrreryDialect,
  scope: Scope,
  f: RunFilters,
  query: Cond | null,
  plan: SearchPlan = {},
): Cond {
  const s = searchSql(d.name, plan);
  const parts: Cond[] = [sql<SqlBool>`runs.project_id = ${scope.project}`];
  if (plan.purpose === 'count' && s.countHint) parts.push(s.countHint);
  if (f.none) parts.push(FALSE);
  if (f.ids) parts.push(inList(col('id'), f.ids));
  if (f.workflowRunIds)
    parts.push(
      f.workflowRunIds.length
        ? sql<SqlBool>`runs.id IN (SELECT async_runs.run_id FROM async_runs WHERE async_runs.run_id IN (${list(f.workflowRunIds)}))`
        : FALSE,
    );
  if (f.interaction) parts.push(inList(col('interaction_id'), f.interaction));
  if (f.interactionName) parts.push(inList(col('interaction_name'), f.interactionName));
  if (f.environment) parts.push(inList(col('environment_id'), f.environment));
  if (f.model) parts.push(inList(col('model_id'), f.model));
  if (f.status) parts.push(inList(col('status'), f.status));
  if (f.finishReason) parts.push(inList(col('finish_reason'), f.finishReason));
  if (f.createdBy) parts.push(inList(jsonString(d.name, col('doc'), ['created_by']), f.createdBy));
  if (f.tagsAny) parts.push(f.tagsAny.length ? s.hasAnyTag(f.tagsAny) : FALSE);
  for (const tag of f.tagsAll ?? []) parts.push(s.hasTag(tag));
  if (f.tagsNone?.length) parts.push(sql<SqlBool>`NOT ${s.hasAnyTag(f.tagsNone)}`);
  if (f.parent === false) parts.push(sql<SqlBool>`runs.parent_id IS NULL`);
  else if (f.parent) parts.push(inList(col('parent_id'), f.parent));
  if (f.previousRun === false) parts.push(sql<SqlBool>`runs.previous_run IS NULL`);
  else if (f.previousRun) parts.push(inList(col('previous_run'), f.previousRun));
  parts.push(...timeBounds(col('updated_at'), f.updated), ...timeBounds(col('created_at'), f.created));
  for (const node of f.scores ?? []) parts.push(compileRunQuery(node, { dialect: d.name, project: scope.project }));
  if (query) parts.push(query);
  return and(parts);
}

const ORDER = sql`runs.updated_at DESC, runs.id DESC`;

/** A word in more runs than this is walked past rather than looked up run by run (pages). */
const RARE_WORD_RUNS = 10_000;

/**
 * The plan of a page query: which full-text words are rare (SQLite keeps exact per-word run
 * counts in its FTS5 vocabulary; PostgreSQL estimates them in its statistics of the tsvector).
 */
export async function pagePlan(
  db: Db,
  d: OrreryDialect,
  words: readonly string[],
  rareRuns = RARE_WORD_RUNS,
): Promise<SearchPlan> {
  const asked = words.slice(0, 16);
  const query = searchSql(d.name).wordRuns(asked);
  if (!query) return { purpose: 'page' };
  const counts = new Map((await query.execute(db)).rows.map((r) => [r.term, Number(r.n)]));
  // A phrase matches no more runs than its rarest word (a word not in the index: none).
  return { purpose: 'page', isRare: (ws) => ws.some((w) => asked.includes(w) && (counts.get(w) ?? 0) <= rareRuns) };
}

/** One page of matching runs, newest first. */
export async function findRuns(
  db: Db,
  d: OrreryDialect,
  where: Cond,
  limit: number,
  offset: number,
): Promise<RunRow[]> {
  if (limit <= 0) return [];
  const key = searchSql(d.name).rowKey;
  const arms = runArms(d.name, where);
  // Two arms (run-arms.ts): each one's first offset + limit runs, merged, then the page of those.
  const page =
    arms.length === 1
      ? sql`SELECT ${key} FROM runs WHERE ${where} ORDER BY ${ORDER} LIMIT ${limit} OFFSET ${offset}`
      : sql`SELECT k FROM (${sql.join(
          arms.map(
            (w) => sql`SELECT * FROM (SELECT ${key} AS k, runs.updated_at AS u, runs.id AS i
        FROM runs WHERE ${w} ORDER BY ${ORDER} LIMIT ${offset + limit})`,
          ),
          sql` UNION ALL `,
        )}) ORDER BY u DESC, i DESC LIMIT ${limit} OFFSET ${offset}`;
  const { rows } =
    await sql<RunRow>`SELECT ${RUN_COLUMNS} FROM runs WHERE ${key} IN (${page}) ORDER BY ${ORDER}`.execute(db);
  return rows.map((r) => decodeRun(d, r));
}

/** The columns each facet reads from the matching runs (all in the covering indexes). */
const FACET_SOURCE: Record<FacetColumn, string[]> = {
  status: ['status'],
  model_id: ['model_id'],
  finish_reason: ['finish_reason'],
  interaction_id: ['interaction_id', 'interaction_name'],
  environment_id: ['environment_id', 'environment_name'],
  updated_at: ['updated_at'],
  execution_time: ['execution_time'],
  cost_total: ['cost_total'],
  tags: [],
  tool_name: [],
  score: ['id'],
};
const NAME_COLUMN: Partial<Record<FacetColumn, string>> = {
  interaction_id: 'interaction_name',
  environment_id: 'environment_name',
};

/** The number of matching runs and the rows of each facet (in the order of `facets`). */
export async function countAndFacets(
  db: Db,
  d: OrreryDialect,
  where: Cond,
  facets: readonly FacetQuery[],
): Promise<{ total: number; facets: FacetRow[][] }> {
  if (!facets.length) {
    const arms = runArms(d.name, where);
    const count =
      arms.length === 1
        ? sql<{ n: number }>`SELECT count(*) AS n FROM runs WHERE ${where}`
        : sql<{ n: number }>`SELECT ${sql.join(
            arms.map((w) => sql`(SELECT count(*) FROM runs WHERE ${w})`),
            sql` + `,
          )} AS n`;
    const { rows } = await count.execute(db);
    return { total: Number(rows[0].n), facets: [] };
  }
  const s = searchSql(d.name);
  // Only what the facets read, so an index covers it.
  const needs = new Set<string>();
  for (const f of facets) for (const c of FACET_SOURCE[f.column]) needs.add(c);
  if (facets.some((f) => f.column === 'tags')) needs.add(s.tagFacetColumn);
  const m = sql.join([sql`${s.rowKey} AS k0`, ...[...needs].map((c) => sql.ref(`runs.${c}`))]);
  const mc = (c: string) => sql.ref(`m.${c}`);
  const byValue = sql`ORDER BY n DESC, (k IS NULL), ${s.orderText(sql.ref('k'))}`;

  // A score facet reads the latest score of its name of each matching run (run_scores_run).
  const branches: RawBuilder<unknown>[] = facets.map((f, i) => {
    if (f.kind === 'buckets') {
      const c = f.column === 'score' ? SCORE_COLUMNS.num : mc(f.column);
      const from = f.column === 'score' ? sql`m ${joinLatestScore('left', mc('id'), f.score!, true)}` : sql`m`;
      const cases = f.boundaries
        .slice(1)
        .map(
          (upper, b) =>
            sql`WHEN ${typeof upper === 'number' ? s.compareNumber(c, '<', upper) : sql`${c} < ${upper}`} THEN ${sql.raw(String(b))}`,
        );
      const first = f.boundaries[0];
      const below = typeof first === 'number' ? s.compareNumber(c, '<', first) : sql`${c} < ${first}`;
      const bucket = sql`(CASE WHEN ${c} IS NULL THEN -1 WHEN ${below} THEN -1 ${sql.join(cases, sql` `)} ELSE -1 END)`;
      return sql`SELECT ${sql.raw(String(i))} AS f, CAST(bucket AS TEXT) AS k, n, CAST(NULL AS TEXT) AS name FROM
        (SELECT ${bucket} AS bucket, count(*) AS n FROM ${from} GROUP BY 1) AS b${sql.raw(String(i))}`;
    }
    const nulls = f.withNull ? sql`` : sql`WHERE k IS NOT NULL`;
    if (f.column === 'score') {
      // The value as text (numbers as the database writes them; search.ts turns them back), its kind as the name.
      return sql`SELECT * FROM (SELECT ${sql.raw(String(i))} AS f, k, count(*) AS n, max(kind) AS name FROM
        (SELECT ${SCORE_VALUE_TEXT} AS k, ${SCORE_COLUMNS.kind} AS kind FROM m ${joinLatestScore('inner', mc('id'), f.score!)}) AS u
        GROUP BY k ${byValue} LIMIT ${f.limit}) AS f${sql.raw(String(i))}`;
    }
    if (f.column === 'tags') {
      return sql`SELECT * FROM (SELECT ${sql.raw(String(i))} AS f, k, n, CAST(NULL AS TEXT) AS name FROM (${s.tagCounts()}) AS t
        ${byValue} LIMIT ${f.limit}) AS f${sql.raw(String(i))}`;
    }
    if (f.column === 'tool_name') {
      // Runs by the name of a tool they called (a run calling one tool twice counts once), read
      // from the document of each matching run (not in an index).
      const tool = jsonMemberStrings(d.name, sql.ref('runs.doc'), ['tool_use'], 'tool_name');
      return sql`SELECT * FROM (SELECT ${sql.raw(String(i))} AS f, k, count(*) AS n, CAST(NULL AS TEXT) AS name FROM
        (SELECT DISTINCT m.k0 AS r, ${tool.value} AS k FROM m JOIN runs ON ${s.rowKey} = m.k0 ${tool.from} WHERE ${tool.where}) AS u
        GROUP BY k ${byValue} LIMIT ${f.limit}) AS f${sql.raw(String(i))}`;
    }
    const name = NAME_COLUMN[f.column];
    return sql`SELECT * FROM (SELECT ${sql.raw(String(i))} AS f, k, n, name FROM (SELECT CAST(${mc(f.column)} AS TEXT) AS k, count(*) AS n,
        ${name ? sql`max(${mc(name)})` : sql`CAST(NULL AS TEXT)`} AS name FROM m GROUP BY ${mc(f.column)}) AS g
        ${nulls} ${byValue} LIMIT ${f.limit}) AS f${sql.raw(String(i))}`;
  });
  const { rows } = await sql<{ f: number; k: string | null; n: number; name: string | null }>`WITH m AS MATERIALIZED
    (${armRows(d.name, m, where)})
    SELECT -1 AS f, CAST(NULL AS TEXT) AS k, count(*) AS n, CAST(NULL AS TEXT) AS name FROM m
    ${sql.join(
      branches.map((b) => sql`UNION ALL ${b}`),
      sql` `,
    )}`.execute(db);
  const out: FacetRow[][] = facets.map(() => []);
  let total = 0;
  for (const r of rows) {
    if (Number(r.f) === -1) total = Number(r.n);
    else out[Number(r.f)].push({ key: r.k === null ? null : String(r.k), count: Number(r.n), name: r.name });
  }
  return { total, facets: out };
}
