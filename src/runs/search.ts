/**
 * Listing, searching and faceting runs (issue 4). Requests are read by search-request.ts, the
 * Lucene query is compiled by lucene-sql/, and search-store.ts runs the SQL; this file holds
 * the rules of the answers:
 *
 * - GET /runs and a search without facets answer an array of run references;
 * - a search with `facets` (an object, the interface's form) answers `{count: {total}, facet:
 *   {<name>: {buckets: [{_id, count}]}}}` with `onlyMeta: true`, else `{results, count, facet}`;
 * - POST /runs/facets answers `{<name>: [{_id, count, name?}], total}` (the official client).
 *
 * Buckets: string facets count runs per value, most frequent first, ties by value, at most
 * `numBuckets` (runs without a value are in no bucket, except on POST /runs/facets where they are
 * the `_id: null` bucket, as the client expects); number and date facets have one bucket per pair of
 * boundaries, `_id` = its lower boundary as given, in order, empty ones included, then the `default`
 * bucket (runs outside every bucket, or without a value) when a default name is given.
 */
import type { Scope } from '../auth/principal.ts';
import { sql, type SqlBool } from 'kysely';
import type { OrreryDialect } from '../db/dialect.ts';
import { boundedRead, readCost } from '../db/read-budget.ts';
import { compileRunQuery, fullTextWords, readsColumnsOnly, type SearchPlan } from './lucene-sql/index.ts';
import { toRunRef, type RunRef } from './model.ts';
import { facetsRequest, listRequest, searchRequest, type FacetSpec, type RunQuery } from './search-request.ts';
import { countAndFacets, findRuns, pagePlan, whereOf, type FacetRow } from './search-store.ts';
import type { Db } from './store.ts';

interface Bucket {
  _id: string | number | boolean | null;
  count: number;
  name?: string;
}

interface SearchMeta {
  count: { total: number };
  facet: Record<string, { buckets: Bucket[] }>;
}

/** POST /runs/facets: buckets by facet name, and the number of matching runs. */
export type FacetsAnswer = { total: number; [name: string]: Bucket[] | number };

export type SearchAnswer = RunRef[] | SearchMeta | (SearchMeta & { results: RunRef[] });

type Json = Record<string, unknown>;

export class RunSearch {
  constructor(
    private readonly db: Db,
    private readonly dialect: OrreryDialect,
    /** Time budget of a search; undefined: the database's (ORRERY_QUERY_TIMEOUT, db/read-budget.ts). */
    private readonly queryTimeoutMs?: number,
  ) {}

  /** A read under the budget of heavy reads: a reader thread on SQLite, statement_timeout on PostgreSQL. */
  private bounded<T>(scope: Scope, read: (db: Db) => Promise<T>): Promise<T> {
    return boundedRead(this.db, this.dialect, this.queryTimeoutMs, read, { project: scope.project });
  }

  /** GET /runs with its query parameters. */
  list(scope: Scope, query: Json): Promise<RunRef[]> {
    return this.page(scope, listRequest(query));
  }

  /** POST /runs/search, in the interface's shape or the official client's. */
  async search(scope: Scope, body: Json): Promise<SearchAnswer> {
    const req = searchRequest(body);
    if (!req.facets) return this.page(scope, req);
    const [meta, results] = await Promise.all([
      this.bounded(scope, (db) =>
        countAndFacets(
          db,
          this.dialect,
          this.where(scope, req, { purpose: 'count' }),
          req.facets!.map((f) => f.sql),
        ),
      ),
      req.onlyMeta ? Promise.resolve(undefined) : this.page(scope, req),
    ]);
    const answer: SearchMeta = {
      count: { total: meta.total },
      facet: Object.fromEntries(req.facets.map((f, i) => [f.name, { buckets: bucketsOf(f, meta.facets[i]) }])),
    };
    return results ? { results, ...answer } : answer;
  }

  /** POST /runs/facets (the official client's computeFacets). */
  async facets(scope: Scope, body: Json): Promise<FacetsAnswer> {
    const { facets, run } = facetsRequest(body);
    const meta = await this.bounded(scope, (db) =>
      countAndFacets(
        db,
        this.dialect,
        this.where(scope, run, { purpose: 'count' }),
        facets.map((f) => f.sql),
      ),
    );
    return {
      ...Object.fromEntries(facets.map((f, i) => [f.name, bucketsOf(f, meta.facets[i], true)])),
      total: meta.total,
    } as FacetsAnswer;
  }

  /** The condition of a request, shaped for its use (SQLite plans pages and counts differently). */
  private where(scope: Scope, req: RunQuery, plan: SearchPlan) {
    const query =
      req.query &&
      compileRunQuery(req.query, {
        dialect: this.dialect.name,
        defaultPath: req.defaultPath,
        plan,
        project: scope.project,
      });
    // A query on the run's fields reads each run's search document: its rows count against the read
    // budget. One on columns alone walks an index and keeps it covering.
    const costed =
      query &&
      (readsColumnsOnly(req.query!, req.defaultPath)
        ? query
        : sql<SqlBool>`(${readCost(this.dialect, sql.ref('runs.search_fields'))} AND ${query})`);
    return whereOf(this.dialect, scope, req.filters, costed, plan);
  }

  private async page(scope: Scope, req: RunQuery): Promise<RunRef[]> {
    if (req.limit <= 0) return [];
    // A plain listing is an index walk; a query may read every run's document.
    if (!req.query)
      return (
        await findRuns(this.db, this.dialect, this.where(scope, req, { purpose: 'page' }), req.limit, req.offset)
      ).map(toRunRef);
    const rows = await this.bounded(scope, async (db) => {
      const plan = await pagePlan(db, this.dialect, fullTextWords(req.query!, req.defaultPath));
      return findRuns(db, this.dialect, this.where(scope, req, plan), req.limit, req.offset);
    });
    return rows.map(toRunRef);
  }
}

/** A score facet's value as the score holds it: its kind came as the row's name (search-store.ts). */
const scoreValue = (r: FacetRow): string | number | boolean | null =>
  r.key === null ? null : r.name === 'number' ? Number(r.key) : r.name === 'boolean' ? r.key === 'true' : r.key;

function bucketsOf(f: FacetSpec, rows: FacetRow[], withNames = false): Bucket[] {
  if (f.sql.kind === 'values' && f.sql.column === 'score')
    return rows.map((r) => ({ _id: scoreValue(r), count: r.count }));
  if (f.sql.kind === 'values') {
    return rows.map((r) => ({ _id: r.key, count: r.count, ...(withNames && r.name !== null ? { name: r.name } : {}) }));
  }
  const counts = new Map(rows.map((r) => [Number(r.key), r.count]));
  const labels = f.labels ?? [];
  const buckets: Bucket[] = labels.slice(0, -1).map((label, i) => ({ _id: label, count: counts.get(i) ?? 0 }));
  if (f.defaultName !== undefined) buckets.push({ _id: f.defaultName, count: counts.get(-1) ?? 0 });
  return buckets;
}
