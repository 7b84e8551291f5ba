/**
 * The three ways to ask for runs, read into one shape (`RunQuery`): the GET /runs query string;
 * the interface's search body `{query: "<lucene>", defaultQueryPath, filters, facets, onlyMeta,
 * limit, offset}`; and the official client's `{query: {query, default_query_path, status, …},
 * limit, offset}` (also the `query` of POST /runs/facets). Every refusal is a 400 that says what
 * to fix; nothing here touches SQL.
 */
import { BadRequest, OrreryError } from '../util/errors.ts';
import { MAX_PAGE, listParam, pageOf } from '../http/query.ts';
import {
  LuceneSyntaxError,
  RUN_FIELD_LIST,
  UnknownFieldError,
  isRunField,
  parseInstant,
  parseDateInterval,
  parseLucene,
  runField,
  type QueryNode,
} from '../query/lucene/index.ts';
import { isoBound } from './lucene-sql/index.ts';
import { RUN_STATUSES } from './model.ts';
import type { BucketColumn, FacetColumn, FacetQuery, RunFilters, TimeBounds } from './search-store.ts';
import { table } from '../util/own.ts';

export interface RunQuery {
  readonly filters: RunFilters;
  /** The parsed Lucene query, or null for none. */
  readonly query: QueryNode | null;
  readonly defaultPath?: string;
  readonly limit: number;
  readonly offset: number;
}

export interface FacetSpec {
  readonly name: string;
  readonly sql: FacetQuery;
  /** number/date facets: the bucket ids (each bucket's lower boundary, as given). */
  readonly labels?: readonly (number | string)[];
  /** The bucket name for values outside every bucket. */
  readonly defaultName?: string;
}

export interface SearchRequest extends RunQuery {
  /** The interface's facets; undefined when none were asked for (or they came as an array). */
  readonly facets?: readonly FacetSpec[];
  readonly onlyMeta: boolean;
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

// ---- values ---------------------------------------------------------------------------------

/** A string or a list of strings (arrays, or comma-separated as the CLI sends them). */
function strings(value: unknown, what: string): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  const items = Array.isArray(value) ? value : [value];
  if (!items.every((v) => typeof v === 'string'))
    throw new BadRequest(`${what} must be a string or an array of strings`);
  return listParam(items, what);
}

function statuses(value: unknown, what: string): string[] | undefined {
  const list = strings(value, what);
  const bad = list?.find((s) => !(RUN_STATUSES as readonly string[]).includes(s));
  if (bad !== undefined) throw new BadRequest(`${what} must be one of ${RUN_STATUSES.join(', ')}, got "${bad}"`);
  return list;
}

function instant(value: unknown, what: string): number {
  const t = typeof value === 'string' ? parseInstant(value) : null;
  if (t === null) throw new BadRequest(`${what} must be an ISO 8601 date or date-time, got ${JSON.stringify(value)}`);
  return t;
}

function timeBounds(value: unknown, what: string): TimeBounds | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isObject(value)) throw new BadRequest(`${what} must be an object with lt, lte, gt and/or gte`);
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(value)) {
    if (!['lt', 'lte', 'gt', 'gte'].includes(k))
      throw new BadRequest(`${what} accepts lt, lte, gt and gte, not "${k}"`);
    out[k] = isoBound(instant(v, `${what}.${k}`));
  }
  if (!Object.keys(out).length) throw new BadRequest(`${what} needs at least one of lt, lte, gt, gte`);
  return out;
}

/** A run id, a list of them, or `false` (top-level runs only). */
function parentOf(value: unknown, what: string): string[] | false | undefined {
  if (value === false || value === 'false') return false;
  const list = strings(value, what);
  return list?.length === 1 && list[0] === 'false' ? false : list;
}

function bool(value: unknown): boolean {
  return value === true || value === 'true' || value === '1';
}

/** Orrery runs belong to no workflow, object or agent run: asking for one matches nothing. */
const nonEmpty = (value: unknown): boolean =>
  Array.isArray(value) ? value.length > 0 : value !== undefined && value !== null && value !== '';

// ---- the Lucene query -----------------------------------------------------------------------

/** Parses a Lucene query and its default path; syntax errors and unknown fields are 400s. */
export function luceneOf(text: unknown, defaultPath: unknown): { query: QueryNode | null; defaultPath?: string } {
  if (defaultPath !== undefined && defaultPath !== null && defaultPath !== '') {
    if (typeof defaultPath !== 'string') throw new BadRequest('defaultQueryPath must be a string');
    if (runField(defaultPath) === null) throw unknownField(new UnknownFieldError(defaultPath, RUN_FIELD_LIST));
  }
  const path = typeof defaultPath === 'string' && defaultPath !== '' ? defaultPath : undefined;
  if (text === undefined || text === null) return { query: null, defaultPath: path };
  if (typeof text !== 'string') throw new BadRequest('query must be a Lucene query string');
  try {
    return { query: parseLucene(text, { isField: isRunField, fieldList: RUN_FIELD_LIST }), defaultPath: path };
  } catch (err) {
    if (err instanceof LuceneSyntaxError) {
      throw new OrreryError('invalid_query', 400, err.message, {
        position: err.position,
        line: err.line,
        column: err.column,
        detail: err.detail,
      });
    }
    if (err instanceof UnknownFieldError) throw unknownField(err);
    throw err;
  }
}

const unknownField = (err: UnknownFieldError) =>
  new OrreryError('unknown_field', 400, err.message, {
    field: err.field,
    searchable: err.searchable,
    ...(err.position === null ? {} : { position: err.position }),
  });

// ---- the three request shapes ---------------------------------------------------------------

/** GET /runs: the interface's query parameters, plus what the official client sends. */
export function listRequest(q: Json): RunQuery {
  let anchor: string | undefined;
  if (q.anchorDate !== undefined && q.anchorDate !== '') {
    const t = typeof q.anchorDate === 'string' ? Date.parse(q.anchorDate) : NaN;
    if (Number.isNaN(t))
      throw new BadRequest(`anchorDate must be an ISO 8601 date, got ${JSON.stringify(q.anchorDate)}`);
    anchor = isoBound(t);
  }
  const direction = q.anchorDateDirection ?? 'after';
  if (direction !== 'after' && direction !== 'before')
    throw new BadRequest('anchorDateDirection must be before or after');
  const parent = parentOf(q.parent, 'parent');
  return {
    ...pageOf(q),
    query: null,
    filters: {
      interaction: strings(q.interaction, 'interaction'),
      model: strings(q.model, 'model'),
      environment: strings(q.environment, 'environment'),
      status: statuses(q.status, 'status'),
      tagsAny: strings(q.tag, 'tag'),
      parent: bool(q.is_root) ? false : parent,
      previousRun: parentOf(q.previous_run, 'previous_run'),
      updated: anchor === undefined ? undefined : direction === 'before' ? { lt: anchor } : { gte: anchor },
      workflowRunIds: workflowRuns(
        strings(q.workflow_run_ids, 'workflow_run_ids'),
        strings(q.workflow_ids, 'workflow_ids'),
      ),
      none: (bool(q.is_root) && Array.isArray(parent) && parent.length > 0) || undefined,
      scores: scoreFilters(q.score),
    },
  };
}

/** Conditions on a score per `score` parameter: `<name>:<value>` or `<name>:[<low> TO <high>]`. */
const MAX_SCORE_FILTERS = 16;
function scoreFilters(value: unknown): QueryNode[] | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  const list = Array.isArray(value) ? value : [value];
  if (list.length > MAX_SCORE_FILTERS)
    throw new BadRequest(`score is given at most ${MAX_SCORE_FILTERS} times, got ${list.length}`);
  return list.map((v) => {
    const shape = 'score is <name>:<value> or <name>:[<low> TO <high>] (e.g. quality:[0.8 TO *])';
    if (typeof v !== 'string' || !/^[\p{L}\p{N}_-]+:./u.test(v))
      throw new BadRequest(`${shape}, got ${JSON.stringify(v)}`);
    const { query } = luceneOf(`scores.${v}`, undefined);
    const field = v.slice(0, v.indexOf(':'));
    if (
      !query ||
      !['term', 'range', 'exists'].includes(query.kind) ||
      (query as { field?: unknown }).field !== `scores.${field}`
    )
      throw new BadRequest(`${shape}: one condition per parameter, got ${JSON.stringify(v)}`);
    return query;
  });
}

/** The official client's `RunSearchQuery` (POST /runs/search `query`, POST /runs/facets `query`). */
function clientQuery(q: Json, page: { limit?: unknown; offset?: unknown }): RunQuery {
  const lucene = luceneOf(q.query === '' ? undefined : q.query, q.default_query_path);
  const created: Record<string, string> = {};
  // `start`/`end`: when the run was created; each covers its precision (`end: 2024-03-31` includes that day).
  if (q.start !== undefined && q.start !== null) created.gte = isoBound(interval(q.start, 'query.start').from);
  if (q.end !== undefined && q.end !== null) created.lt = isoBound(interval(q.end, 'query.end').to);
  const parent = parentOf(q.parent, 'query.parent');
  return {
    ...pageOf({ limit: page.limit ?? q.limit, offset: page.offset ?? q.offset }),
    ...lucene,
    filters: {
      ids: strings(q.run_ids, 'query.run_ids'),
      workflowRunIds: workflowRuns(
        strings(q.workflow_run_ids, 'query.workflow_run_ids'),
        strings(q.workflow_ids, 'query.workflow_ids'),
      ),
      status: statuses(q.status, 'query.status'),
      interaction: strings(q.interaction, 'query.interaction'),
      interactionName: strings(q.name, 'query.name'),
      environment: strings(q.environment, 'query.environment'),
      model: strings(q.model, 'query.model'),
      finishReason: strings(q.finish_reason, 'query.finish_reason'),
      createdBy: strings(q.created_by, 'query.created_by'),
      tagsAll: strings(q.tags, 'query.tags'),
      tagsNone: strings(q.exclude_tags, 'query.exclude_tags'),
      parent: q.is_root === true ? false : parent,
      created: Object.keys(created).length ? created : undefined,
      // is_root with parent ids: no run is both top-level and a child.
      none:
        (q.is_root === true && Array.isArray(parent) && parent.length > 0) ||
        nonEmpty(q.object) ||
        q.is_agent === true ||
        undefined,
    },
  };
}

/**
 * An async run's workflow run id and workflow id are its own id (runs/async.ts): both lists name
 * runs, and a run must be named by each list given.
 */
function workflowRuns(
  runIds: readonly string[] | undefined,
  workflowIds: readonly string[] | undefined,
): readonly string[] | undefined {
  // An empty list filters nothing, as an absent one.
  if (!runIds?.length) return workflowIds?.length ? workflowIds : undefined;
  if (!workflowIds?.length) return runIds;
  const both = new Set(workflowIds);
  return runIds.filter((id) => both.has(id));
}

function interval(value: unknown, what: string) {
  const span = typeof value === 'string' ? parseDateInterval(value) : null;
  if (span === null)
    throw new BadRequest(`${what} must be an ISO 8601 date or date-time, got ${JSON.stringify(value)}`);
  return span;
}

/** The filter keys of the interface's search body (with `environemnt` spelled as there). */
const FILTER_KEYS = [
  'interaction',
  'environemnt',
  'environment',
  'parent',
  'previous_run',
  'status',
  'tags',
  'modelId',
  'model',
  'finish_reason',
  'updated_at',
  'created_at',
] as const;

function interfaceFilters(value: unknown): RunFilters {
  if (value === undefined || value === null) return {};
  if (!isObject(value)) throw new BadRequest('filters must be an object');
  const unknown = Object.keys(value).find((k) => !(FILTER_KEYS as readonly string[]).includes(k));
  if (unknown !== undefined) throw new BadRequest(`unknown filter "${unknown}"; filters are ${FILTER_KEYS.join(', ')}`);
  const env = [
    ...(strings(value.environemnt, 'filters.environemnt') ?? []),
    ...(strings(value.environment, 'filters.environment') ?? []),
  ];
  const model = [
    ...(strings(value.modelId, 'filters.modelId') ?? []),
    ...(strings(value.model, 'filters.model') ?? []),
  ];
  return {
    interaction: strings(value.interaction, 'filters.interaction'),
    environment: value.environemnt !== undefined || value.environment !== undefined ? env : undefined,
    model: value.modelId !== undefined || value.model !== undefined ? model : undefined,
    status: statuses(value.status, 'filters.status'),
    finishReason: strings(value.finish_reason, 'filters.finish_reason'),
    tagsAll: strings(value.tags, 'filters.tags'),
    parent: parentOf(value.parent, 'filters.parent'),
    previousRun: parentOf(value.previous_run, 'filters.previous_run'),
    updated: timeBounds(value.updated_at, 'filters.updated_at'),
    created: timeBounds(value.created_at, 'filters.created_at'),
  };
}

/** POST /runs/search, in either shape (told apart by `query` being an object or not). */
export function searchRequest(body: Json): SearchRequest {
  if (isObject(body.query)) return { ...clientQuery(body.query, body), onlyMeta: false };
  const lucene = luceneOf(body.query === '' ? undefined : body.query, body.defaultQueryPath);
  if (body.onlyMeta !== undefined && typeof body.onlyMeta !== 'boolean')
    throw new BadRequest('onlyMeta must be a boolean');
  return {
    ...pageOf(body),
    ...lucene,
    filters: interfaceFilters(body.filters),
    // decisions.md: the client's facets (an array) are ignored here; they go to POST /runs/facets.
    facets: isObject(body.facets) ? interfaceFacets(body.facets) : undefined,
    onlyMeta: body.onlyMeta === true,
  };
}

// ---- facets ---------------------------------------------------------------------------------

type FacetType = 'string' | 'number' | 'date';

/** The facetable fields: their column and their natural facet type. */
const FACET_FIELDS: Readonly<Record<string, { column: FacetColumn; type: FacetType }>> = table({
  modelId: { column: 'model_id', type: 'string' },
  status: { column: 'status', type: 'string' },
  tags: { column: 'tags', type: 'string' },
  updated_at: { column: 'updated_at', type: 'date' },
  execution_time: { column: 'execution_time', type: 'number' },
  environment: { column: 'environment_id', type: 'string' },
  interaction: { column: 'interaction_id', type: 'string' },
  finish_reason: { column: 'finish_reason', type: 'string' },
  'cost.total': { column: 'cost_total', type: 'number' },
  'tool_use.tool_name': { column: 'tool_name', type: 'string' },
});
const FACETABLE = [...Object.keys(FACET_FIELDS), 'scores.<name>'].join(', ');
/** Fields with any number of values per run: a run without one is in no bucket (no null bucket). */
const MULTI_VALUED: ReadonlySet<FacetColumn> = new Set(['tags', 'tool_name', 'score']);

/** More facets than this in one request is refused (each one is a GROUP BY over the matching runs). */
const MAX_FACETS = 25;
/** Boundaries of one number or date facet (a year of days fits): each is a bound SQL value. */
const MAX_BOUNDARIES = 400;
const DEFAULT_BUCKETS = 10;

/** `scores.<name>`: the latest score of that name, by value (string) or in buckets (number). */
function scoreFacet(value: unknown): { column: FacetColumn; type: FacetType; score: string } | null {
  if (typeof value !== 'string' || !value.startsWith('scores.')) return null;
  const spec = runField(value);
  return spec?.score === undefined ? null : { column: 'score', type: 'string', score: spec.score };
}

function facetField(value: unknown, what: string): { column: FacetColumn; type: FacetType; score?: string } {
  const score = scoreFacet(value);
  if (score) return score;
  if (typeof value !== 'string' || !Object.hasOwn(FACET_FIELDS, value)) {
    throw new BadRequest(`${what} must be one of the facetable fields: ${FACETABLE}`, {
      field: value,
      facetable: [...Object.keys(FACET_FIELDS), 'scores.<name>'],
    });
  }
  return FACET_FIELDS[value];
}

function interfaceFacets(facets: Json): FacetSpec[] {
  const entries = Object.entries(facets);
  if (entries.length > MAX_FACETS)
    throw new BadRequest(`at most ${MAX_FACETS} facets per request, got ${entries.length}`);
  return entries.map(([name, spec]) => {
    const what = `facets.${name}`;
    if (!isObject(spec)) throw new BadRequest(`${what} must be an object with type and path`);
    const field = facetField(spec.path, `${what}.path`);
    const type = spec.type ?? field.type;
    if (type !== 'string' && type !== 'number' && type !== 'date')
      throw new BadRequest(`${what}.type must be string, number or date`);
    if (type === 'string') {
      if (spec.boundaries !== undefined) throw new BadRequest(`${what}.boundaries apply to number and date facets`);
      const n = spec.numBuckets ?? DEFAULT_BUCKETS;
      if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > MAX_PAGE)
        throw new BadRequest(`${what}.numBuckets must be an integer from 1 to ${MAX_PAGE}`);
      return { name, sql: { kind: 'values', column: field.column, limit: n, withNull: false, score: field.score } };
    }
    // A score facet buckets numbers (a number score); its values are of any kind.
    if (field.type !== type && !(field.score !== undefined && type === 'number'))
      throw new BadRequest(
        `${what}: a ${type} facet needs a ${type} field (${type === 'number' ? 'execution_time, cost.total' : 'updated_at'}), not ${String(spec.path)}`,
      );
    if (spec.default !== undefined && typeof spec.default !== 'string')
      throw new BadRequest(
        `${what}.default must be a string (the name of the bucket for values outside the boundaries)`,
      );
    const b = spec.boundaries;
    if (!Array.isArray(b) || b.length < 2)
      throw new BadRequest(
        `${what}.boundaries must be an array of at least two ${type === 'number' ? 'numbers' : 'ISO 8601 dates'}, ascending`,
      );
    if (b.length > MAX_BOUNDARIES)
      throw new BadRequest(`${what}.boundaries has ${b.length} values; at most ${MAX_BOUNDARIES}`);
    const values = b.map((x, i) => {
      if (type === 'number') {
        if (typeof x !== 'number' || !Number.isFinite(x))
          throw new BadRequest(`${what}.boundaries[${i}] must be a finite number`);
        return x;
      }
      return isoBound(instant(x, `${what}.boundaries[${i}]`));
    });
    for (let i = 1; i < values.length; i++) {
      if (!(values[i] > values[i - 1]))
        throw new BadRequest(
          `${what}.boundaries must be strictly ascending: ${JSON.stringify(b[i])} does not come after ${JSON.stringify(b[i - 1])}`,
        );
    }
    return {
      name,
      sql: { kind: 'buckets', column: field.column as BucketColumn, boundaries: values, score: field.score },
      labels: b as (number | string)[],
      ...(spec.default !== undefined ? { defaultName: spec.default as string } : {}),
    };
  });
}

/** POST /runs/facets: `{facets: [{name, field}], query?}` (the official client's ComputeRunFacetPayload). */
export function facetsRequest(body: Json): { facets: FacetSpec[]; run: RunQuery } {
  const list = body.facets;
  if (!Array.isArray(list)) throw new BadRequest('facets must be an array of {name, field}');
  if (list.length > MAX_FACETS) throw new BadRequest(`at most ${MAX_FACETS} facets per request, got ${list.length}`);
  const names = new Set<string>();
  const facets = list.map((f, i): FacetSpec => {
    if (!isObject(f) || typeof f.name !== 'string' || f.name === '')
      throw new BadRequest(`facets[${i}] must be {name, field} with a non-empty name`);
    if (f.name === 'total')
      throw new BadRequest(`facets[${i}].name "total" is reserved for the number of matching runs`);
    if (names.has(f.name)) throw new BadRequest(`facets[${i}].name "${f.name}" is used twice`);
    names.add(f.name);
    const field = facetField(f.field, `facets[${i}].field`);
    return {
      name: f.name,
      sql: {
        kind: 'values',
        column: field.column,
        limit: MAX_PAGE,
        withNull: !MULTI_VALUED.has(field.column),
        score: field.score,
      },
    };
  });
  if (body.query !== undefined && body.query !== null && !isObject(body.query))
    throw new BadRequest('query must be an object (RunSearchQuery)');
  return { facets, run: clientQuery(isObject(body.query) ? body.query : {}, {}) };
}
