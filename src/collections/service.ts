/**
 * Collections of content objects (`store.collections` of the official client). A static
 * collection's members are explicit rows (added and removed by id); a dynamic collection's
 * members are the objects of the project matching its stored `query`, so they change when the
 * objects do. Listing, searching and faceting members is the object listing (objects/listing.ts)
 * with one more filter: membership. Deleted objects leave every collection (their member rows go
 * with them). Collections nest: a collection may have several parents, and never itself above
 * itself.
 */
import { sql, type Expression, type ExpressionBuilder, type Kysely, type SqlBool } from 'kysely';
import type { Database } from '../db/schema.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import { escapeLike, jsonSql, type JsonSql } from '../db/json-sql.ts';
import { newId, nowIso } from '../db/ids.ts';
import { actorOf, scopeOf, type Principal, type Scope } from '../auth/principal.ts';
import { BadRequest, Conflict, NotFound, OrreryError } from '../util/errors.ts';
import { pageOf } from '../http/query.ts';
import { compileFind, FindQueryError } from '../query/find/index.ts';
import { setOwn } from '../util/own.ts';
import type { ObjectListing, SearchOutput } from '../objects/listing.ts';
import { filtersOf } from '../objects/listing.ts';
import { compiledMatch, type FilterContext, type ObjectFilters } from '../objects/filters.ts';
import type { ObjectRecord } from '../objects/model.ts';
import { checkLayout, type ColumnLayout, type ObjectTypeService } from '../objects/types-service.ts';
import type { ObjectSimilarity } from '../objects/similarity.ts';
import { inHistoryOf, typeIsOneOf, typesOfObjects } from '../objects/reads.ts';
import { COLLECTION_FIND_FIELDS, resolveCollectionField } from './fields.ts';
import { COLLECTION_STATUSES, DEFAULT_COLLECTION_PAGE, MAX_COLLECTIONS_CHECKED, MAX_IDS_PER_CALL } from './schemas.ts';
import {
  addChildren,
  addMembers,
  ancestorsOf,
  clearMembers,
  collectionsIn,
  decodeCollection,
  deleteCollection,
  existingCollections,
  getCollection,
  insertCollection,
  parentsOf,
  removeChildren,
  removeMemberHistories,
  removeMembers,
  setParents,
  updateCollection,
  type CollectionDoc,
  type CollectionRow,
} from './store.ts';

export interface CollectionServiceDeps {
  db: Kysely<Database>;
  dialect: OrreryDialect;
  listing: ObjectListing;
  types: ObjectTypeService;
  /** Similarity search inside a collection (`query.vector`); refused with a 400 when absent. */
  similarity?: ObjectSimilarity;
}

export interface CollectionInput {
  name?: string;
  description?: string | null;
  tags?: string[] | null;
  dynamic?: boolean;
  status?: string;
  type?: string | null;
  query?: Record<string, unknown> | null;
  properties?: Record<string, unknown> | null;
  parent?: string | null;
  table_layout?: unknown[] | null;
  allowed_types?: string[] | null;
  skip_head_sync?: boolean;
  shared_properties?: string[] | null;
  sensitivity?: number | null;
  compartments?: string[] | null;
}

export interface CollectionSearch {
  parent?: string | null;
  dynamic?: boolean;
  status?: string;
  name?: string;
  type?: string;
  types?: string[];
  match?: Record<string, unknown>;
  limit?: number;
  offset?: number;
}

export interface CollectionDto {
  id: string;
  name: string;
  description?: string;
  tags: string[];
  dynamic: boolean;
  status: string;
  type?: { id: string; name: string; ref_type: string };
  skip_head_sync: boolean;
  parents: string[];
  table_layout?: ColumnLayout[];
  allowed_types?: string[];
  properties: Record<string, unknown>;
  query?: Record<string, unknown>;
  shared_properties?: string[];
  sensitivity?: number;
  compartments?: string[];
  created_by: string;
  updated_by: string;
  created_at: string;
  updated_at: string;
}

export interface FacetSpec {
  name: string;
  field: string;
}

/** The body of a members' search: `POST /objects/search`'s. */
export interface MemberSearch {
  query?: Record<string, unknown>;
  limit?: number;
  offset?: number;
  select?: string;
  sort?: { field: string; order?: 'asc' | 'desc' }[];
  facets?: FacetSpec[];
}

type CollectionsEb = ExpressionBuilder<Database, 'collections'>;
type ObjectsEb = ExpressionBuilder<Database, 'objects'>;

/** Fields `computeListFacets` groups collections by. */
const FACET_COLUMNS = {
  status: 'collections.status',
  dynamic: 'collections.dynamic',
  type: 'collections.type_id',
  'type.id': 'collections.type_id',
} as const;
const MAX_FACETS = 10;
const MAX_FACET_BUCKETS = 100;
const MAX_ANCESTORS = 10_000;
/** better-sqlite3 and pg codes of a foreign-key violation. */
const FOREIGN_KEY_VIOLATION = new Set(['SQLITE_CONSTRAINT_FOREIGNKEY', '23503']);

const DOC_FIELDS = ['table_layout', 'allowed_types', 'shared_properties', 'sensitivity', 'compartments'] as const;

export class CollectionService {
  private readonly db: Kysely<Database>;
  private readonly dialect: OrreryDialect;
  private readonly json: JsonSql;

  constructor(private readonly deps: CollectionServiceDeps) {
    this.db = deps.db;
    this.dialect = deps.dialect;
    this.json = jsonSql(deps.dialect.name);
  }

  async create(p: Principal, input: CollectionInput): Promise<CollectionDto> {
    const s = scopeOf(p);
    const name = input.name?.trim();
    if (!name) throw new BadRequest('name must be a non-empty string');
    if (typeof input.dynamic !== 'boolean')
      throw new BadRequest(
        'dynamic must be true (members are the objects matching query) or false (members are added by id)',
      );
    const query = this.queryFor(s, input.dynamic, input.query);
    const typeId = input.type ? (await this.deps.types.resolve(s, input.type)).id : null;
    const doc = await this.docOf(s, {}, input);
    if (input.parent) await this.mustExist(s, input.parent);
    const now = nowIso();
    const row: CollectionRow = {
      id: newId(),
      account_id: s.account,
      project_id: s.project,
      name,
      description: input.description ?? null,
      status: this.statusOf(input.status) ?? 'active',
      dynamic: input.dynamic,
      type_id: typeId,
      query,
      tags: [...new Set(input.tags ?? [])],
      properties: input.properties ?? {},
      doc,
      created_by: actorOf(p),
      updated_by: actorOf(p),
      created_at: now,
      updated_at: now,
    };
    await this.write(`parent collection ${input.parent}`, () =>
      this.db.transaction().execute(async (trx) => {
        await insertCollection(trx, this.dialect, row);
        if (input.parent) await addChildren(trx, s, input.parent, [row.id], now);
      }),
    );
    return this.dto(s, row);
  }

  async get(p: Principal, id: string): Promise<CollectionDto> {
    const s = scopeOf(p);
    return this.dto(s, await this.mustExist(s, id));
  }

  /** Applies the fields the body carries; null clears a field. Answers the updated collection. */
  async update(p: Principal, id: string, input: CollectionInput): Promise<CollectionDto> {
    const s = scopeOf(p);
    const current = await this.mustExist(s, id);
    const patch: Partial<CollectionRow> = { updated_by: actorOf(p), updated_at: nowIso() };
    if (input.name !== undefined) {
      const name = input.name.trim();
      if (!name) throw new BadRequest('name must be a non-empty string');
      patch.name = name;
    }
    if (input.description !== undefined) patch.description = input.description;
    if (input.tags !== undefined) patch.tags = [...new Set(input.tags ?? [])];
    if (input.properties !== undefined) patch.properties = input.properties ?? {};
    if (input.status !== undefined) patch.status = this.statusOf(input.status);
    if (input.type !== undefined) patch.type_id = input.type ? (await this.deps.types.resolve(s, input.type)).id : null;
    const dynamic = input.dynamic ?? current.dynamic;
    if (input.dynamic !== undefined) patch.dynamic = dynamic;
    if (input.query !== undefined) patch.query = this.queryFor(s, dynamic, input.query);
    else if (!dynamic && current.dynamic) patch.query = null;
    else if (dynamic && !current.dynamic) patch.query = {};
    if ([...DOC_FIELDS, 'skip_head_sync' as const].some((f) => input[f] !== undefined))
      patch.doc = await this.docOf(s, current.doc, input);
    // `parent` replaces the parents: the collection moves under that one (null: to the top level).
    let parents: string[] | undefined;
    if (input.parent !== undefined) {
      parents = input.parent ? [input.parent] : [];
      if (input.parent) await this.checkNesting(s, input.parent, [id]);
    }
    await this.write(`collection ${id} or its new parent`, () =>
      this.db.transaction().execute(async (trx) => {
        await updateCollection(trx, this.dialect, s, id, patch);
        // A static collection turned dynamic: its members are now its query's, not the rows.
        if (dynamic && !current.dynamic) await clearMembers(trx, s, id);
        if (parents) await setParents(trx, s, id, parents, patch.updated_at!);
      }),
    );
    return this.dto(s, await this.mustExist(s, id));
  }

  /** Deletes the collection, never its member objects; its children stay (without this parent). */
  async delete(p: Principal, id: string): Promise<{ id: string; count: number }> {
    const s = scopeOf(p);
    await this.mustExist(s, id);
    const count = await this.db.transaction().execute((trx) => deleteCollection(trx, s, id));
    return { id, count };
  }

  /**
   * `GET /objects/:id/collections` (the client's `objects.getCollections`): the collections that
   * list the object as a member, static and dynamic, newest first. Membership is what the
   * members' listing would show (a revised member is its history's head; a pinned one, exactly
   * itself). At most MAX_COLLECTIONS_CHECKED dynamic collections are looked at.
   */
  async containing(p: Principal, objectId: string): Promise<CollectionDto[]> {
    const s = scopeOf(p);
    const { listing } = this.deps;
    const root = await listing.revisionRoot(s, objectId);
    if (root === undefined) throw new NotFound('object', objectId);
    const history = listing.revisionIds(s, root);
    const rows = await collectionsIn(this.db, s)
      .selectAll()
      .where((eb) =>
        eb.or([
          eb('collections.dynamic', '=', 1),
          eb(
            'collections.id',
            'in',
            eb
              .selectFrom('collection_members')
              .select('collection_members.collection_id')
              .where('collection_members.project_id', '=', s.project)
              .where('collection_members.object_id', 'in', history),
          ),
        ]),
      )
      .orderBy('collections.updated_at', 'desc')
      .orderBy('collections.id', 'desc')
      .limit(MAX_COLLECTIONS_CHECKED)
      .execute();
    const found: CollectionRow[] = [];
    for (const c of rows.map((r) => decodeCollection(this.dialect, r))) {
      const filters: ObjectFilters = {
        within: membership(c),
        ...(c.dynamic || !c.doc.skip_head_sync ? {} : { allRevisions: true }),
      };
      if (await listing.matches(s, objectId, filters)) found.push(c);
    }
    return this.dtos(s, found);
  }

  /** `POST /collections/search`: newest `updated_at` first, ties by id. */
  async search(p: Principal, q: CollectionSearch): Promise<CollectionDto[]> {
    const s = scopeOf(p);
    const page = pageOf(q, DEFAULT_COLLECTION_PAGE);
    const rows = await collectionsIn(this.db, s)
      .selectAll()
      .where((eb) => this.condition(eb, s, q))
      .orderBy('collections.updated_at', 'desc')
      .orderBy('collections.id', 'desc')
      .limit(page.limit)
      .offset(page.offset)
      .execute();
    return this.dtos(
      s,
      rows.map((r) => decodeCollection(this.dialect, r)),
    );
  }

  /** `POST /collections/facets`: `{<name>: [{_id, count}], total}` over the collections matching `query`. */
  async facets(
    p: Principal,
    body: { facets: FacetSpec[]; query?: CollectionSearch },
  ): Promise<Record<string, unknown>> {
    const s = scopeOf(p);
    const q = body.query ?? {};
    if (!body.facets.length) throw new BadRequest('facets must name at least one facet: [{name, field}]');
    if (body.facets.length > MAX_FACETS) throw new BadRequest(`at most ${MAX_FACETS} facets per request`);
    const out: Record<string, unknown> = {};
    for (const spec of body.facets) {
      if (spec.name === 'total') throw new BadRequest('facet name "total" is reserved for the match count');
      const column = Object.hasOwn(FACET_COLUMNS, spec.field)
        ? FACET_COLUMNS[spec.field as keyof typeof FACET_COLUMNS]
        : undefined;
      if (!column)
        throw new BadRequest(
          `cannot compute a collection facet on ${JSON.stringify(spec.field)}: use status, dynamic or type`,
        );
      const rows = await collectionsIn(this.db, s)
        .select((eb) => [eb.ref(column).as('_id'), eb.fn.countAll<number>().as('count')])
        .where((eb) => this.condition(eb, s, q))
        .groupBy(column)
        .execute();
      const buckets = rows
        .map((r) => ({
          _id: column === 'collections.dynamic' ? Number(r._id) === 1 : ((r._id ?? null) as string | boolean | null),
          count: Number(r.count),
        }))
        .sort(
          (a, b) => b.count - a.count || (String(a._id) < String(b._id) ? -1 : String(a._id) > String(b._id) ? 1 : 0),
        )
        .slice(0, MAX_FACET_BUCKETS) as Array<{ _id: string | boolean | null; count: number; name?: string }>;
      if (column === 'collections.type_id') {
        const names = await this.deps.types.refs(
          s,
          buckets.map((b) => b._id).filter((x): x is string => typeof x === 'string'),
        );
        for (const b of buckets) if (typeof b._id === 'string') b.name = names.get(b._id)?.name;
      }
      setOwn(out, spec.name, buckets);
    }
    const total = await collectionsIn(this.db, s)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where((eb) => this.condition(eb, s, q))
      .executeTakeFirstOrThrow();
    out.total = Number(total.n);
    return out;
  }

  /** Adds or removes members of a static collection (at most MAX_IDS_PER_CALL ids, all or nothing). */
  async updateMembers(
    p: Principal,
    id: string,
    action: 'add' | 'delete',
    members: readonly string[],
  ): Promise<{ id: string }> {
    checkIdCount('members', members.length);
    const s = scopeOf(p);
    const c = await this.mustExist(s, id);
    if (c.dynamic) {
      throw new BadRequest(
        `collection ${id} is dynamic: its members are the objects matching its query; change the query (collections.update) instead of adding or removing members`,
      );
    }
    const ids = [...new Set(members)];
    const now = nowIso();
    if (action === 'add') {
      const found = await typesOfObjects(this.db, s, ids);
      const missing = ids.filter((x) => !found.has(x));
      if (missing.length) {
        throw new OrreryError(
          'not_found',
          404,
          `${missing.length} of the ids are not objects of this project: ${missing
            .slice(0, 10)
            .map((x) => JSON.stringify(x))
            .join(', ')}${missing.length > 10 ? ', …' : ''}`,
          { missing: missing.slice(0, 100) },
        );
      }
      await this.checkAllowedTypes(s, c, found);
    }
    await this.write(`collection ${id} or one of the objects`, () =>
      this.db.transaction().execute(async (trx) => {
        if (action === 'add') await addMembers(trx, s, id, ids, now);
        else if (c.doc.skip_head_sync) await removeMembers(trx, s, id, ids);
        else await removeMemberHistories(trx, s, id, ids);
        await updateCollection(trx, this.dialect, s, id, { updated_at: now, updated_by: actorOf(p) });
      }),
    );
    return { id };
  }

  /** `GET /collections/:id/members`: list items, newest `updated_at` first. */
  async listMembers(
    p: Principal,
    id: string,
    q: { limit?: number; offset?: number; status?: string; type?: string; select?: string },
  ): Promise<Partial<ObjectRecord>[]> {
    const filters = await this.memberFilters(p, id, { status: q.status, type: q.type });
    return this.deps.listing.list(p, { ...filters, ...pageOf(q), select: q.select });
  }

  /** `POST /collections/:id/search`: `POST /objects/search` over the members. */
  async searchMembers(p: Principal, id: string, b: MemberSearch): Promise<SearchOutput> {
    const q = (b.query ?? {}) as Record<string, unknown>;
    const vector = q.vector as Record<string, unknown> | undefined;
    const page = pageOf({ limit: b.limit ?? q.limit, offset: b.offset ?? q.offset });
    const { fullText, ...filters } = await this.memberFilters(p, id, q);
    if (vector && ['objectId', 'values', 'text', 'image'].some((k) => vector[k] !== undefined)) {
      if (!this.deps.similarity) throw new BadRequest('similarity search is not enabled on this server');
      return this.deps.similarity.search(p, {
        filters,
        vector,
        fullText,
        embeddingType: q.embeddingType as string | undefined,
        weights: q.weights as Record<string, unknown> | undefined,
        aggregation: q.score_aggregation as string | undefined,
        ...page,
        select: b.select,
        facets: b.facets,
      });
    }
    return this.deps.listing.search(p, {
      ...filters,
      fullText,
      ...page,
      select: b.select,
      sort: b.sort,
      facets: b.facets,
    });
  }

  /** `POST /collections/:id/facets`: `POST /objects/facets` over the members. */
  async memberFacets(
    p: Principal,
    id: string,
    b: { facets: FacetSpec[]; query?: Record<string, unknown> },
  ): Promise<SearchOutput['facets']> {
    const { vector, ...q } = (b.query ?? {}) as Record<string, unknown>;
    if (vector !== undefined)
      throw new BadRequest('facets cannot be computed over a similarity query: leave query.vector out');
    return this.deps.listing.facets(p, { ...(await this.memberFilters(p, id, q)), facets: b.facets });
  }

  /** Nests collections under this one, or takes them out (at most MAX_IDS_PER_CALL ids); answers the links made or removed. */
  async updateChildren(
    p: Principal,
    id: string,
    action: 'add' | 'delete',
    children: readonly string[],
  ): Promise<{ count: number }> {
    checkIdCount('children', children.length);
    const s = scopeOf(p);
    await this.mustExist(s, id);
    const ids = [...new Set(children)];
    const now = nowIso();
    if (action === 'delete') {
      const count = await this.db.transaction().execute((trx) => removeChildren(trx, s, id, ids));
      return { count };
    }
    const found = await existingCollections(this.db, s, ids);
    const missing = ids.filter((x) => !found.has(x));
    if (missing.length) {
      throw new OrreryError(
        'not_found',
        404,
        `${missing.length} of the ids are not collections of this project: ${missing
          .slice(0, 10)
          .map((x) => JSON.stringify(x))
          .join(', ')}${missing.length > 10 ? ', …' : ''}`,
        { missing: missing.slice(0, 100) },
      );
    }
    await this.checkNesting(s, id, ids);
    const count = await this.write(`collection ${id} or one of its children`, () =>
      this.db.transaction().execute((trx) => addChildren(trx, s, id, ids, now)),
    );
    return { count };
  }

  /** `POST /collections/:id/children/search`: the collections nested directly under this one. */
  async searchChildren(p: Principal, id: string, q: CollectionSearch): Promise<CollectionDto[]> {
    await this.mustExist(scopeOf(p), id);
    return this.search(p, { ...q, parent: id });
  }

  // -- helpers -------------------------------------------------------------------------------

  /**
   * A write whose rows reference collections or objects checked a moment before: one deleted in
   * between fails the foreign key, which is a 409 to retry, not a 500.
   */
  private async write<T>(what: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      if (typeof code === 'string' && FOREIGN_KEY_VIOLATION.has(code))
        throw new Conflict(
          `${what} was deleted while this request was being written: nothing was changed; check the ids and retry`,
        );
      throw err;
    }
  }

  private async mustExist(s: Scope, id: string): Promise<CollectionRow> {
    const row = await getCollection(this.db, this.dialect, s, id);
    if (!row) throw new NotFound('collection', id);
    return row;
  }

  /** The object filters of a members' list, search or facets: the caller's, plus membership. */
  private async memberFilters(p: Principal, id: string, q: Record<string, unknown>): Promise<ObjectFilters> {
    const s = scopeOf(p);
    const c = await this.mustExist(s, id);
    // Pinned to revisions (skip_head_sync): the members are the very revisions added, head or not.
    return {
      ...filtersOf(q),
      within: membership(c),
      ...(c.dynamic || !c.doc.skip_head_sync ? {} : { allRevisions: true }),
    };
  }

  private statusOf(status: string | undefined): string | undefined {
    if (status === undefined) return undefined;
    if (!(COLLECTION_STATUSES as readonly string[]).includes(status))
      throw new BadRequest(`status must be one of ${COLLECTION_STATUSES.join(', ')}, got ${JSON.stringify(status)}`);
    return status;
  }

  /** A dynamic collection's query, compiled once to refuse a bad one when it is saved. */
  private queryFor(
    s: Scope,
    dynamic: boolean,
    query: Record<string, unknown> | null | undefined,
  ): Record<string, unknown> | null {
    const q = query ?? null;
    if (!dynamic) {
      if (q && Object.keys(q).length)
        throw new BadRequest(
          'query is only for dynamic collections: set dynamic to true, or leave query out and add members by id',
        );
      return null;
    }
    if (q && Object.keys(q).length) compiledMatch(q, this.deps.listing.context(s));
    return q ?? {};
  }

  private async docOf(s: Scope, base: CollectionDoc, input: CollectionInput): Promise<CollectionDoc> {
    const doc: Record<string, unknown> = { ...base };
    for (const f of DOC_FIELDS) {
      if (input[f] === undefined) continue;
      if (input[f] === null) delete doc[f];
      else doc[f] = input[f];
    }
    if (input.skip_head_sync !== undefined) doc.skip_head_sync = input.skip_head_sync;
    if (doc.table_layout) checkLayout(doc.table_layout);
    if (input.allowed_types) for (const t of input.allowed_types) await this.deps.types.resolve(s, t);
    return doc as CollectionDoc;
  }

  /** Refuses objects whose type is not one of the collection's allowed_types (when it has some). */
  private async checkAllowedTypes(s: Scope, c: CollectionRow, objects: Map<string, string | null>): Promise<void> {
    const allowed = c.doc.allowed_types ?? [];
    if (!allowed.length) return;
    const ids = new Set<string>();
    for (const t of allowed) {
      try {
        ids.add((await this.deps.types.resolve(s, t)).id);
      } catch (err) {
        if (!(err instanceof NotFound)) throw err; // a type deleted since: it allows nothing
      }
    }
    const bad = [...objects].filter(([, type]) => !type || !ids.has(type)).map(([id]) => id);
    if (bad.length) {
      throw new BadRequest(
        `collection ${c.id} accepts only objects of the types ${allowed.map((t) => JSON.stringify(t)).join(', ')}; these are not: ${bad
          .slice(0, 10)
          .map((x) => JSON.stringify(x))
          .join(', ')}${bad.length > 10 ? ', …' : ''}`,
      );
    }
  }

  /** Nesting `children` under `parent` must not put a collection above itself. */
  private async checkNesting(s: Scope, parent: string, children: readonly string[]): Promise<void> {
    await this.mustExist(s, parent);
    const above = await ancestorsOf(this.db, s, parent, MAX_ANCESTORS);
    above.add(parent);
    const loop = children.find((c) => above.has(c));
    if (loop)
      throw new BadRequest(
        `collection ${loop} cannot be nested under ${parent}: ${loop === parent ? 'a collection cannot contain itself' : `${loop} is already above ${parent}`}`,
      );
  }

  /** The search filters of collections as one condition. */
  private condition(eb: CollectionsEb, s: Scope, q: CollectionSearch): Expression<SqlBool> {
    const all: Expression<SqlBool>[] = [];
    const links = () =>
      eb
        .selectFrom('collection_parents')
        .where('collection_parents.account_id', '=', s.account)
        .where('collection_parents.project_id', '=', s.project);
    if (q.parent === null)
      all.push(
        eb.not(
          eb.exists(
            links()
              .select('collection_parents.child_id')
              .whereRef('collection_parents.child_id', '=', 'collections.id'),
          ),
        ),
      );
    else if (q.parent !== undefined)
      all.push(
        eb(
          'collections.id',
          'in',
          links().select('collection_parents.child_id').where('collection_parents.parent_id', '=', q.parent),
        ),
      );
    if (q.dynamic !== undefined) all.push(eb('collections.dynamic', '=', q.dynamic ? 1 : 0));
    if (q.status !== undefined) all.push(eb('collections.status', '=', this.statusOf(q.status)!));
    if (q.name) all.push(this.json.likeCaseInsensitive(eb.ref('collections.name'), `%${escapeLike(q.name)}%`));
    const types = [...(q.types ?? []), ...(q.type ? [q.type] : [])];
    if (types.length) {
      all.push(typeIsOneOf(eb, eb.ref('collections.type_id'), s, types));
    }
    if (q.match && Object.keys(q.match).length) {
      try {
        all.push(compileFind(q.match, resolveCollectionField, this.json, COLLECTION_FIND_FIELDS));
      } catch (err) {
        if (err instanceof FindQueryError)
          throw new OrreryError(err.code, err.status, err.message, err.at ? { at: err.at } : undefined);
        throw err;
      }
    }
    return all.length ? eb.and(all) : sql<SqlBool>`1 = 1`;
  }

  private async dto(s: Scope, row: CollectionRow): Promise<CollectionDto> {
    return (await this.dtos(s, [row]))[0];
  }

  private async dtos(s: Scope, rows: CollectionRow[]): Promise<CollectionDto[]> {
    const [types, parents] = await Promise.all([
      this.deps.types.refs(
        s,
        rows.map((r) => r.type_id).filter((x): x is string => !!x),
      ),
      parentsOf(
        this.db,
        s,
        rows.map((r) => r.id),
      ),
    ]);
    return rows.map((r) => {
      const d: CollectionDto = {
        id: r.id,
        name: r.name,
        tags: r.tags,
        dynamic: r.dynamic,
        status: r.status,
        skip_head_sync: r.doc.skip_head_sync ?? false,
        parents: parents.get(r.id) ?? [],
        properties: r.properties,
        created_by: r.created_by,
        updated_by: r.updated_by,
        created_at: r.created_at,
        updated_at: r.updated_at,
      };
      if (r.description !== null) d.description = r.description;
      const type = r.type_id ? types.get(r.type_id) : undefined;
      if (type) d.type = { id: type.id, name: type.name, ref_type: 'stored' };
      if (r.dynamic) d.query = r.query ?? {};
      for (const f of DOC_FIELDS)
        if (r.doc[f] !== undefined && r.doc[f] !== null) (d as unknown as Record<string, unknown>)[f] = r.doc[f];
      return d;
    });
  }
}

/** Membership of one collection as a condition over the objects table. */
function membership(c: CollectionRow): (eb: ObjectsEb, ctx: FilterContext) => Expression<SqlBool> {
  if (c.dynamic) {
    const query = c.query ?? {};
    return (_eb, ctx) => (Object.keys(query).length ? compiledMatch(query, ctx) : sql<SqlBool>`1 = 1`);
  }
  const rows = (eb: ObjectsEb) =>
    eb
      .selectFrom('collection_members')
      .where('collection_members.project_id', '=', c.project_id)
      .where('collection_members.collection_id', '=', c.id);
  if (c.doc.skip_head_sync) return (eb) => eb('objects.id', 'in', rows(eb).select('collection_members.object_id'));
  // Members follow their history (skip_head_sync false, the default): a member revised since it
  // was added is listed as the head of its history (the listing shows heads only).
  return (eb) => inHistoryOf(eb, rows(eb).select('collection_members.object_id'));
}

function checkIdCount(what: string, n: number): void {
  if (n > MAX_IDS_PER_CALL)
    throw new BadRequest(
      `at most ${MAX_IDS_PER_CALL} ${what} per call, got ${n}: send them in batches of ${MAX_IDS_PER_CALL}`,
    );
  if (n === 0) throw new BadRequest(`${what} must name at least one id`);
}
