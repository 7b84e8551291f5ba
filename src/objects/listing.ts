/**
 * Reading many objects: `GET /objects`, `POST /objects/find` and `/count`, and
 * `POST /objects/search` with facets. Everything is one SQL query per page (plus one for the
 * type and parent names of the page, and one for their vectors when `embeddings` is selected),
 * scoped to the caller's project and filtered in SQL.
 */
import { expressionBuilder, sql, type Expression, type Kysely, type RawBuilder, type SqlBool } from 'kysely';
import type { Database } from '../db/schema.ts';
import { jsonFindSql, jsonSql, type JsonFindSql, type JsonSql } from '../db/json-sql.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import { boundedRead, readCost } from '../db/read-budget.ts';
import { scopeOf, type Principal, type Scope } from '../auth/principal.ts';
import { BadRequest } from '../util/errors.ts';
import { setOwn } from '../util/own.ts';
import type { ObjectTypeService } from './types-service.ts';
import { columnsFor, decodeObject, objectNames, objectsIn } from './store.ts';
import { toRecord } from './dto.ts';
import { parseSelect, project, type Projection } from './projection.ts';
import { filterCondition, fullTextScore, type FilterContext, type ObjectFilters } from './filters.ts';
import { isoDate } from '../http/query.ts';
import { resolveObjectField } from './find-fields.ts';
import { locationOf } from './input.ts';
import type { EmbeddingMap, ObjectEmbeddingsReader } from './embeddings-hook.ts';
import type { HiddenField, ObjectRecord, ObjectRow } from './model.ts';

export interface Page {
  limit: number;
  offset: number;
}

interface SortSpec {
  field: string;
  order?: 'asc' | 'desc';
}

export interface FacetSpec {
  name: string;
  field: string;
}

export interface SearchInput extends ObjectFilters, Page {
  select?: string;
  sort?: SortSpec[];
  facets?: FacetSpec[];
}

export interface FacetBucket {
  _id: string | number | boolean | null;
  count: number;
  name?: string;
}

export interface SearchOutput {
  results: Partial<ObjectRecord>[];
  facets: Record<string, FacetBucket[] | number>;
}

const MAX_FACET_BUCKETS = 100;
const MAX_FACETS = 10;

type Eb = ReturnType<typeof expressionBuilder<Database, 'objects'>>;

export class ObjectListing {
  private readonly json: JsonSql;
  private readonly order: JsonFindSql;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: OrreryDialect,
    private readonly types: ObjectTypeService,
    /** The `embeddings` field (src/embeddings); without it the field is always `{}`. */
    private readonly embeddings?: ObjectEmbeddingsReader,
    /** Budget of one find or count on PostgreSQL (config.queryTimeoutMs). */
    private readonly queryTimeoutMs = 5000,
  ) {
    this.json = jsonSql(dialect.name);
    this.order = jsonFindSql(dialect.name);
  }

  context(s: Scope): FilterContext {
    return { scope: s, json: this.json };
  }

  /** The vectors of a page of rows when the hidden field `embeddings` is asked for (one query per 500 rows). */
  /** The root of the object's revision history (itself when it has none); undefined: no such object. */
  async revisionRoot(s: Scope, objectId: string): Promise<string | undefined> {
    const row = await objectsIn(this.db, s)
      .select(['objects.id', 'objects.revision_root'])
      .where('objects.id', '=', objectId)
      .executeTakeFirst();
    return row ? (row.revision_root ?? row.id) : undefined;
  }

  /** The ids of a history's revisions, as a subquery for another feature's query (a collection's members). */
  revisionIds(s: Scope, root: string) {
    return objectsIn(this.db, s).select('objects.id').where('objects.revision_root', '=', root);
  }

  /** Whether the object passes these filters (a dynamic collection's query, a membership). */
  async matches(s: Scope, objectId: string, filters: ObjectFilters): Promise<boolean> {
    const hit = await objectsIn(this.db, s)
      .select('objects.id')
      .where('objects.id', '=', objectId)
      .where((eb) => filterCondition(eb, filters, this.context(s)))
      .executeTakeFirst();
    return hit !== undefined;
  }

  async embeddingsOf(
    s: Scope,
    rows: readonly Pick<ObjectRow, 'id'>[],
    hidden: ReadonlySet<HiddenField>,
  ): Promise<Map<string, EmbeddingMap> | undefined> {
    if (!hidden.has('embeddings') || !this.embeddings || !rows.length) return undefined;
    return this.embeddings.embeddingsOf(
      s,
      rows.map((r) => r.id),
    );
  }

  /** `GET /objects`: items newest `updated_at` first, ties by id. */
  async list(p: Principal, f: ObjectFilters & Page & { select?: string }): Promise<Partial<ObjectRecord>[]> {
    const s = scopeOf(p);
    const projection = parseSelect(f.select);
    // With a match (a dynamic collection's members) or a membership condition, a listing may read every document.
    const heavy = !!(f.match || f.within);
    const rows = await this.bounded(s, heavy, (db) =>
      objectsIn(db, s)
        .select(columnsFor(projection.hidden))
        .where(this.cost(heavy))
        .where((eb) => filterCondition(eb, f, this.context(s)))
        .orderBy('objects.updated_at', 'desc')
        .orderBy('objects.id', 'desc')
        .limit(f.limit)
        .offset(f.offset)
        .execute(),
    );
    return this.items(
      s,
      rows.map((r) => ({ row: decodeObject(this.dialect, r), score: 1 })),
      projection,
    );
  }

  /** `POST /objects/find`: full records (projected), newest first. */
  async find(
    p: Principal,
    q: { query: Record<string, unknown> } & Page & { select?: string } & Pick<
        ObjectFilters,
        'allRevisions' | 'fromRoot'
      >,
  ): Promise<Partial<ObjectRecord>[]> {
    const s = scopeOf(p);
    const projection = parseSelect(q.select);
    const rows = await this.bounded(s, true, (db) =>
      objectsIn(db, s)
        .select(columnsFor(projection.hidden))
        .where(this.cost(true))
        .where((eb) =>
          filterCondition(
            eb,
            { match: queryOf(q.query), allRevisions: q.allRevisions, fromRoot: q.fromRoot },
            this.context(s),
          ),
        )
        .orderBy('objects.updated_at', 'desc')
        .orderBy('objects.id', 'desc')
        .limit(q.limit)
        .offset(q.offset)
        .execute(),
    );
    const decoded = rows.map((r) => decodeObject(this.dialect, r));
    const [types, embeddings] = await Promise.all([
      this.types.refs(s, typeIds(decoded)),
      this.embeddingsOf(s, decoded, projection.hidden),
    ]);
    return decoded.map(
      (row) =>
        project(
          toRecord(row, { types, embeddings }, projection.hidden) as unknown as Record<string, unknown>,
          projection,
        ) as Partial<ObjectRecord>,
    );
  }

  async count(p: Principal, q: { query: Record<string, unknown> }): Promise<{ count: number }> {
    const s = scopeOf(p);
    const r = await this.bounded(s, true, (db) =>
      objectsIn(db, s)
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where(this.cost(true))
        .where((eb) => filterCondition(eb, { match: queryOf(q.query) }, this.context(s)))
        .executeTakeFirstOrThrow(),
    );
    return { count: Number(r.n) };
  }

  /** `POST /objects/search`: `{results, facets}`, with a relevance `score` when full_text is given. */
  async search(p: Principal, q: SearchInput): Promise<SearchOutput> {
    const s = scopeOf(p);
    const ctx = this.context(s);
    const projection = parseSelect(q.select);
    if ((q.facets?.length ?? 0) > MAX_FACETS) throw new BadRequest(`at most ${MAX_FACETS} facets per search`);
    for (const f of q.facets ?? [])
      if (f.name === 'total') throw new BadRequest('facet name "total" is reserved for the match count');
    let query = objectsIn(this.db, s)
      .select(columnsFor(projection.hidden))
      .select((eb) => fullTextScore(eb, q.fullText, ctx).as('score'))
      .where(this.cost(true))
      .where((eb) => filterCondition(eb, q, ctx));
    const sort = q.sort?.length ? q.sort : q.fullText?.trim() ? [{ field: 'score', order: 'desc' as const }] : [];
    for (const spec of sort) {
      const dir = spec.order === 'asc' ? 'asc' : 'desc';
      for (const expr of this.sortExpressions(spec.field))
        query = query.orderBy(expr, (ob) => (dir === 'asc' ? ob.asc() : ob.desc()).nullsLast());
    }
    query = query.orderBy('objects.updated_at', 'desc').orderBy('objects.id', 'desc').limit(q.limit).offset(q.offset);
    const rows = await this.bounded(s, true, (db) => db.executeQuery(query.compile()).then((r) => r.rows));
    const results = await this.items(
      s,
      rows.map((r) => ({
        row: decodeObject(this.dialect, r),
        score: Number((r as unknown as { score: unknown }).score),
      })),
      projection,
    );
    return { results, facets: await this.facetsOf(s, q, q.facets ?? []) };
  }

  /**
   * `POST /objects/facets` (the client's computeFacets): the buckets of each facet over the
   * objects matching the filters, and `total`, their number. No results.
   */
  async facets(p: Principal, q: ObjectFilters & { facets: FacetSpec[] }): Promise<SearchOutput['facets']> {
    const s = scopeOf(p);
    if (q.facets.length === 0) throw new BadRequest('facets must name at least one facet: [{name, field}]');
    if (q.facets.length > MAX_FACETS) throw new BadRequest(`at most ${MAX_FACETS} facets per request`);
    for (const f of q.facets)
      if (f.name === 'total') throw new BadRequest('facet name "total" is reserved for the match count');
    return this.facetsOf(s, q, q.facets);
  }

  /** Each facet's buckets under its caller-given name (a data key, even "__proto__"), then `total`. */
  private async facetsOf(s: Scope, q: ObjectFilters, specs: readonly FacetSpec[]): Promise<SearchOutput['facets']> {
    const facets: SearchOutput['facets'] = {};
    for (const spec of specs) setOwn(facets, spec.name, await this.facet(s, q, spec));
    facets.total = await this.total(s, q);
    return facets;
  }

  private async total(s: Scope, f: ObjectFilters): Promise<number> {
    const r = await this.bounded(s, true, (db) =>
      objectsIn(db, s)
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where(this.cost(true))
        .where((eb) => filterCondition(eb, f, this.context(s)))
        .executeTakeFirstOrThrow(),
    );
    return Number(r.n);
  }

  /** Buckets `{_id, count}` of one field over the matching objects, largest first. */
  private async facet(s: Scope, f: ObjectFilters, spec: FacetSpec): Promise<FacetBucket[]> {
    const eb = expressionBuilder<Database, 'objects'>();
    const where = sql<SqlBool>`objects.account_id = ${s.account} AND objects.project_id = ${s.project} AND ${this.cost(true)} AND ${filterCondition(eb, f, this.context(s))}`;
    let rows: { _id: unknown; count: unknown }[];
    if (spec.field === 'tags') {
      const elements = this.json.elementsFrom(sql.ref('objects.tags'), 'facet');
      rows = await this.buckets(
        s,
        sql`SELECT facet.value AS _id, count(*) AS count FROM objects, ${elements} WHERE ${where} GROUP BY facet.value`,
      );
    } else {
      const value = this.facetExpression(eb, spec.field);
      rows = await this.buckets(
        s,
        sql`SELECT ${value} AS _id, count(*) AS count FROM objects WHERE ${where} GROUP BY 1`,
      );
    }
    // Largest first, ties by value in code-point order, null last: the same on both databases.
    const buckets: FacetBucket[] = rows
      .map((r) => ({ _id: (r._id ?? null) as FacetBucket['_id'], count: Number(r.count) }))
      .sort(
        (a, b) =>
          b.count - a.count ||
          (a._id === null
            ? 1
            : b._id === null
              ? -1
              : String(a._id) < String(b._id)
                ? -1
                : String(a._id) > String(b._id)
                  ? 1
                  : 0),
      );
    if (spec.field === 'type' || spec.field === 'type.id') {
      const names = await this.types.refs(
        s,
        buckets.map((b) => b._id).filter((x): x is string => typeof x === 'string'),
      );
      for (const b of buckets) if (typeof b._id === 'string') b.name = names.get(b._id)?.name;
    }
    return buckets;
  }

  /** The largest groups of a `SELECT _id, count … GROUP BY` query. */
  private async buckets(s: Scope, grouped: RawBuilder<unknown>): Promise<{ _id: unknown; count: unknown }[]> {
    const q = sql<{ _id: unknown; count: unknown }>`SELECT g._id AS _id, g.count AS count FROM (${grouped}) AS g
      ORDER BY g.count DESC, ${this.order.byteOrder(sql`g._id`)} NULLS LAST LIMIT ${MAX_FACET_BUCKETS}`;
    return this.bounded(s, true, async (db) => (await q.execute(db)).rows);
  }

  /**
   * A read of many objects under the budget of heavy reads (db/read-budget.ts): a reader thread on
   * SQLite, statement_timeout on PostgreSQL, its project's turn. A light one (`heavy` false) runs
   * on the database itself.
   */
  private bounded<T>(s: Scope, heavy: boolean, read: (db: Kysely<Database>) => Promise<T>): Promise<T> {
    return heavy
      ? boundedRead(this.db, this.dialect, this.queryTimeoutMs, read, { project: s.project })
      : read(this.db);
  }

  /** The read-budget term of a heavy read's WHERE (db/read-budget.ts `readCost`): the documents a row holds. */
  private cost(heavy: boolean): Expression<SqlBool> {
    return heavy ? readCost(this.dialect, sql.ref('objects.properties'), sql.ref('objects.text')) : sql<SqlBool>`TRUE`;
  }

  private facetExpression(eb: Eb, field: string): Expression<unknown> {
    const ref = resolveObjectField(field.split('.'));
    if (!ref || field === 'text' || (ref.kind === 'column' && ref.type === 'json')) {
      throw new BadRequest(
        `cannot compute a facet on ${JSON.stringify(field)}: use a record field (status, type, location, parent, tags, …) or a path under properties, metadata or content`,
      );
    }
    if (ref.kind === 'column') return eb.ref(ref.column as never);
    return this.json.text(eb.ref(ref.column as never), ref.path);
  }

  private sortExpressions(field: string): Expression<unknown>[] {
    const eb = expressionBuilder<Database, 'objects'>();
    if (field === 'score') return [sql.ref('score')];
    const ref = resolveObjectField(field.split('.'));
    if (!ref || field === 'text' || (ref.kind === 'column' && ref.type === 'json')) {
      throw new BadRequest(
        `cannot sort on ${JSON.stringify(field)}: use a record field or a path under properties, metadata or content`,
      );
    }
    // Text in code-point order on both databases (PostgreSQL's collation would differ).
    if (ref.kind === 'column') return [this.order.byteOrder(eb.ref(ref.column as never))];
    // JSON values: numbers in numeric order, then the rest as text.
    const col = eb.ref(ref.column as never);
    return [this.json.number(col, ref.path), this.order.byteOrder(this.json.text(col, ref.path))];
  }

  /** List and search items: `parent` as `{id, name}`, a score, projected. */
  private async items(
    s: Scope,
    rows: { row: ObjectRow; score: number }[],
    projection: Projection,
  ): Promise<Partial<ObjectRecord>[]> {
    const decoded = rows.map((r) => r.row);
    const [types, parents, embeddings] = await Promise.all([
      this.types.refs(s, typeIds(decoded)),
      objectNames(this.db, s, [...new Set(decoded.map((r) => r.parent_id).filter((x): x is string => !!x))]),
      this.embeddingsOf(s, decoded, projection.hidden),
    ]);
    return rows.map(
      ({ row, score }) =>
        project(
          toRecord(row, { types, parents, embeddings }, projection.hidden, { score }) as unknown as Record<
            string,
            unknown
          >,
          projection,
        ) as Partial<ObjectRecord>,
    );
  }
}

const typeIds = (rows: ObjectRow[]) => rows.map((r) => r.type_id).filter((x): x is string => !!x);

function queryOf(query: unknown): Record<string, unknown> {
  if (query === undefined || query === null) return {};
  if (typeof query !== 'object' || Array.isArray(query))
    throw new BadRequest('query must be an object of {path: condition}');
  return query as Record<string, unknown>;
}

/** `ComplexSearchQuery` (and the list query) → filters. */
export function filtersOf(q: Record<string, unknown> | undefined): ObjectFilters {
  if (!q) return {};
  const list = (v: unknown): string[] | undefined => {
    if (v === undefined || v === null || v === '') return undefined;
    const items = (Array.isArray(v) ? v : [v])
      .flatMap((x) => String(x).split(','))
      .map((x) => x.trim())
      .filter(Boolean);
    return items.length ? [...new Set(items)] : undefined;
  };
  const str = (v: unknown): string | undefined =>
    typeof v === 'string' && v !== '' ? v : v === undefined || v === null || v === '' ? undefined : String(v);
  const ids = [...(list(q.ids) ?? []), ...(list(q.id) ?? [])];
  const types = [...(list(q.types) ?? []), ...(list(q.type) ?? [])];
  const f: ObjectFilters = {
    ids: ids.length ? ids : undefined,
    status: list(q.status),
    types: types.length ? types : undefined,
    parent: str(q.parent),
    location:
      q.location === undefined || q.location === null || q.location === '' ? undefined : locationOf(String(q.location)),
    name: str(q.name),
    createdFrom: str(q.createdFrom),
    createdTo: str(q.createdTo),
    updatedFrom: str(q.updatedFrom),
    updatedTo: str(q.updatedTo),
    fullText: str(q.full_text),
    allRevisions: q.all_revisions === true || q.all_revisions === 'true' || undefined,
    fromRoot: str(q.from_root),
  };
  for (const k of ['createdFrom', 'createdTo', 'updatedFrom', 'updatedTo'] as const) if (f[k]) isoDate(k, f[k]);
  if (q.match !== undefined && q.match !== null) f.match = queryOf(q.match);
  return f;
}
