/**
 * The official client's run reads beyond list and search (issue 24):
 *
 * - `POST /runs/find` (`runs.find`): a Mongo-style `query` on run fields (query/find), `limit`,
 *   `offset` and `select` (a projection, as on objects). Items are stored runs with their
 *   references as ids (the client's `FindRunResult`): `interaction`, `environment`, `account`
 *   and `project` are id strings. Newest `updated_at` first, ties by id (decisions.md).
 * - `GET /runs/filter-options/:field` (`runs.filterOptions`): the distinct values of one field
 *   among the runs that match the list filters of `GET /runs`, as `[{id, name, count}]`, most
 *   frequent first, ties by value, at most 1,000. The filters are applied as given, the asked
 *   field's own filter included.
 * - `GET /runs/:id?populate=false`: the run with its interaction and environment as stored
 *   (`{id, name, …}`), without reading them; absent or `true` expands them (RunService.get).
 */
import { sql, type SqlBool } from 'kysely';
import type { Scope } from '../auth/principal.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import { jsonSql, type JsonSql } from '../db/json-sql.ts';
import { boundedRead, readCost } from '../db/read-budget.ts';
import { BadRequest, NotFound, OrreryError } from '../util/errors.ts';
import { MAX_PAGE, pageOf } from '../http/query.ts';
import { parseSelect, project } from '../objects/projection.ts';
import { compileFindReadingOnce, FindQueryError, type FieldRef, type FieldResolver } from '../query/find/index.ts';
import type { Cond } from './lucene-sql/index.ts';
import { table } from '../util/own.ts';
import { docOf, toRun, type Run, type RunRow } from './model.ts';
import { listRequest } from './search-request.ts';
import { countAndFacets, findRuns, whereOf, type FacetColumn } from './search-store.ts';
import * as store from './store.ts';

const text = (c: string): FieldRef => ({ kind: 'column', column: `runs.${c}`, type: 'text' });
const number = (c: string): FieldRef => ({ kind: 'column', column: `runs.${c}`, type: 'number' });

/** Run fields with a column of their own (some under another name). */
const COLUMNS: Readonly<Record<string, FieldRef>> = table({
  id: text('id'),
  status: text('status'),
  modelId: text('model_id'),
  model: text('model_id'),
  interaction: text('interaction_id'),
  'interaction.id': text('interaction_id'),
  'interaction.name': text('interaction_name'),
  environment: text('environment_id'),
  'environment.id': text('environment_id'),
  'environment.name': text('environment_name'),
  parent: text('parent_id'),
  previous_run: text('previous_run'),
  finish_reason: text('finish_reason'),
  execution_time: number('execution_time'),
  'token_use.prompt': number('token_prompt'),
  'token_use.result': number('token_result'),
  'token_use.total': number('token_total'),
  'cost.total': number('cost_total'),
  created_at: text('created_at'),
  updated_at: text('updated_at'),
  tags: { kind: 'column', column: 'runs.tags', type: 'json' },
});

/** Run fields kept in the `doc` JSON column: the path continues inside it. */
const DOC_FIELDS = [
  'parameters',
  'config',
  'source',
  'error',
  'result',
  'prompt',
  'ttl',
  'created_by',
  'evaluation',
  'result_schema',
  'chunks',
  'cached',
  'cached_from',
  'cost',
  'tool_use',
];

const RUN_FIND_FIELDS = [...Object.keys(COLUMNS), 'updated_by', ...DOC_FIELDS.map((f) => `${f}.*`)];

const DOC = 'runs.doc';

const resolveRunField: FieldResolver = (path) => {
  if (!path.length) return null;
  const direct = COLUMNS[path.join('.')];
  if (direct) return direct;
  if (path.length === 1 && path[0] === 'updated_by') return { kind: 'json', column: DOC, path: ['created_by'] };
  if (!DOC_FIELDS.includes(path[0])) return null;
  return { kind: 'json', column: DOC, path };
};

/** The condition of a find, the run's document read once per row (query/find `compileFindReadingOnce`). */
function findCondition(match: Record<string, unknown>, json: JsonSql): Cond {
  return compileFindReadingOnce(match, resolveRunField, json, RUN_FIND_FIELDS, DOC, '_run_doc') as unknown as Cond;
}

/** `field` of filter-options → the column whose distinct values are counted. */
const OPTION_FIELDS: Readonly<Record<string, FacetColumn>> = table({
  interaction: 'interaction_id',
  environment: 'environment_id',
  model: 'model_id',
  modelId: 'model_id',
  status: 'status',
  tags: 'tags',
  tag: 'tags',
  finish_reason: 'finish_reason',
  'tool_use.tool_name': 'tool_name',
});
const FILTER_OPTION_FIELDS = Object.keys(OPTION_FIELDS);

export interface FilterOption {
  id: string;
  name: string;
  count: number;
}

export interface FindInput {
  query: unknown;
  limit?: number;
  offset?: number;
  select?: string;
}

export class RunFinder {
  private readonly json: JsonSql;

  constructor(
    private readonly db: store.Db,
    private readonly dialect: OrreryDialect,
    /** Budget of one find on PostgreSQL (config.queryTimeoutMs). */
    private readonly queryTimeoutMs = 5000,
  ) {
    this.json = jsonSql(dialect.name);
  }

  /** POST /runs/find. */
  async find(scope: Scope, input: FindInput): Promise<Array<{ id: string } & Record<string, unknown>>> {
    const match = input.query;
    if (match === null || typeof match !== 'object' || Array.isArray(match)) {
      throw new BadRequest(
        'query must be an object of {field: condition}, e.g. {"status": "completed", "tags": {"$in": ["a"]}}',
      );
    }
    let condition: Cond;
    try {
      condition = findCondition(match as Record<string, unknown>, this.json);
    } catch (err) {
      if (err instanceof FindQueryError)
        throw new OrreryError(err.code, err.status, err.message, err.at ? { at: err.at } : undefined);
      throw err;
    }
    const projection = parseSelect(input.select);
    const { limit, offset } = pageOf(input);
    const cost = readCost(this.dialect, sql.ref('runs.doc'));
    const where = whereOf(this.dialect, scope, {}, sql<SqlBool>`(${cost} AND ${condition})`);
    const rows = await boundedRead(
      this.db,
      this.dialect,
      this.queryTimeoutMs,
      (db) => findRuns(db, this.dialect, where, limit, offset),
      { project: scope.project },
    );
    return rows.map(
      (row) =>
        project(storedRun(row) as unknown as Record<string, unknown>, projection) as { id: string } & Record<
          string,
          unknown
        >,
    );
  }

  /** GET /runs/filter-options/:field with the list filters of GET /runs. */
  async filterOptions(scope: Scope, field: string, query: Record<string, unknown>): Promise<FilterOption[]> {
    const column = Object.hasOwn(OPTION_FIELDS, field) ? OPTION_FIELDS[field] : undefined;
    if (!column)
      throw new BadRequest(
        `filter options exist for ${FILTER_OPTION_FIELDS.join(', ')}; got ${JSON.stringify(field)}`,
        { field, fields: FILTER_OPTION_FIELDS },
      );
    const { filters } = listRequest(query);
    const where = whereOf(this.dialect, scope, filters, null, { purpose: 'count' });
    const meta = await countAndFacets(this.db, this.dialect, where, [
      { kind: 'values', column, limit: MAX_PAGE, withNull: false },
    ]);
    return meta.facets[0]
      .filter((r) => r.key !== null)
      .map((r) => ({ id: String(r.key), name: r.name ?? String(r.key), count: Number(r.count) }));
  }

  /** GET /runs/:id?populate=false: the run with its references as stored. */
  async stored(scope: Scope, id: string): Promise<Run> {
    const row = await store.getRun(this.db, this.dialect, scope, id);
    if (!row) throw new NotFound('run', id);
    return toRun(row);
  }
}

/** A stored run as `find` answers it: references as ids (the client's FindRunResult). */
function storedRun(row: RunRow): Run {
  const doc = docOf(row);
  return {
    ...toRun(row),
    interaction: doc.interaction.id,
    environment: doc.environment?.id ?? null,
    account: doc.account.id,
    project: doc.project.id,
  };
}

/** `populate` of GET /runs/:id: absent, empty, `true` or `1` expand; `false` or `0` do not. */
export function populateOf(value: unknown): boolean {
  if (value === undefined || value === '' || value === 'true' || value === '1' || value === true) return true;
  if (value === 'false' || value === '0' || value === false) return false;
  throw new BadRequest(`populate must be true or false, got ${JSON.stringify(String(value).slice(0, 50))}`);
}
