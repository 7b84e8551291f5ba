/**
 * Similarity search of objects: `GET /objects?similarTo=<id>&embeddingType=text` and
 * `POST /objects/search` with `query.vector` (alone, or with `full_text`: hybrid).
 *
 * - Each embedding type searched gives a ranked list from its index, with the query's filters
 *   applied before the top k is cut (filtered-search.ts); `full_text` gives a ranked list from
 *   the objects listing (its relevance score). With two lists or more they are fused
 *   (fusion.ts: `rrf` by default, `rsf`), weighted by `weights`. Hybrid is a union: an object
 *   found by the vector or by the text, both filtered the same way.
 * - Results are list items (parent as {id, name}, projected by `select`) ordered by score, with
 *   `score` the cosine similarity (one list) or the fused score. A `sort` is refused (400, in the
 *   route): similarity orders. `facets` and `total` are computed over the objects matching the filters.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import { scopeOf, type Principal, type Scope } from '../auth/principal.ts';
import { BadRequest, Conflict, NotFound, OrreryError } from '../util/errors.ts';
import { filterCondition, type ObjectFilters } from './filters.ts';
import type { FacetSpec, ObjectListing, SearchOutput } from './listing.ts';
import { objectsIn } from './store.ts';
import { IN_LIST_CHUNK } from '../db/in-list.ts';
import type { ObjectRecord } from './model.ts';
import { isObjectEmbeddingType, OBJECT_EMBEDDING_TYPES, type ObjectEmbeddingType } from '../embeddings/embedder.ts';
import { filteredSearch, type CandidateFilter } from '../embeddings/filtered-search.ts';
import { fuse, type Aggregation, type RankedList } from '../embeddings/fusion.ts';
import type { EmbeddingService } from '../embeddings/service.ts';
import { isDisabled, type ResolvedEmbedder } from '../embeddings/settings.ts';
import { normalise } from '../embeddings/vectors.ts';

export interface VectorQuery {
  objectId?: string;
  values?: unknown;
  text?: string;
  image?: string;
  /** One type (as the interface shows it), or the client's `config: {text, image, properties}`. */
  type?: string;
  config?: Partial<Record<ObjectEmbeddingType, boolean>>;
}

export interface SimilarityInput {
  filters: ObjectFilters;
  vector: VectorQuery;
  /** Types to search when `vector` names none (`embeddingType`). */
  embeddingType?: string;
  fullText?: string;
  weights?: Record<string, unknown>;
  aggregation?: string;
  limit: number;
  offset: number;
  select?: string;
  facets?: FacetSpec[];
}

/** Lists are this many times longer than the page, so fusion sees what ranks near the page. */
const LIST_FACTOR = 2;
const MIN_LIST = 20;
const MAX_LIST = 2000;

export class ObjectSimilarity {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly listing: ObjectListing,
    private readonly embeddings: EmbeddingService,
    private readonly exactLimit: number,
  ) {}

  /** `GET /objects?similarTo=`: the most similar objects, without the object itself. */
  async similarTo(
    p: Principal,
    objectId: string,
    embeddingType: string | undefined,
    rest: { filters: ObjectFilters; limit: number; offset: number; select?: string },
  ): Promise<Partial<ObjectRecord>[]> {
    const out = await this.search(p, { ...rest, vector: { objectId }, embeddingType: embeddingType ?? 'text' }, false);
    return out.results;
  }

  async search(p: Principal, q: SimilarityInput, withFacets = true): Promise<SearchOutput> {
    const s = scopeOf(p);
    const types = typesOf(q.vector, q.embeddingType);
    const resolved = await this.embeddings.resolve(s);
    const off = types.find((t) => isDisabled(resolved.settings, t));
    if (off)
      throw new Conflict(
        `${off} embeddings are disabled in this project: turn them on with embeddings.activate("${off}", …) (POST /embeddings/${off}/enable)`,
      );
    const aggregation = aggregationOf(q.aggregation);
    const weights = weightsOf(q.weights);
    const window = Math.min(MAX_LIST, Math.max(MIN_LIST, (q.offset + q.limit) * LIST_FACTOR));
    const { filters } = q;
    const filter = this.candidateFilter(s, filters);

    if (q.vector.objectId !== undefined && !(await this.embeddings.objectExists(s, String(q.vector.objectId)))) {
      throw new NotFound('object', String(q.vector.objectId));
    }
    const lists: RankedList[] = [];
    const queryVector = await this.sharedQueryVector(s, q.vector, resolved);
    for (const type of types) {
      if (type === 'image' && !resolved.embedder.supportsImages) {
        throw new BadRequest(
          `the project's embedding model ${resolved.settings.model} does not embed images: search with type text or properties`,
        );
      }
      const weight = weights[type] ?? 1;
      if (weight <= 0) continue;
      const vector =
        queryVector ??
        (q.vector.objectId !== undefined
          ? await this.embeddings.objectVector(s, String(q.vector.objectId), type, resolved)
          : null);
      if (!vector) continue;
      const index = await this.embeddings.index(s, 'object', type, resolved.settings);
      if (!index) {
        lists.push({ name: type, weight, hits: [] });
        continue;
      }
      const found = await filteredSearch({
        index,
        query: vector,
        k: window,
        exclude: q.vector.objectId,
        filter,
        exactLimit: this.exactLimit,
      });
      lists.push({ name: type, weight, hits: found.hits.map((h) => ({ id: h.ownerId, score: h.score })) });
    }
    const fullText = q.fullText?.trim();
    if (fullText && (weights.full_text ?? 1) > 0) {
      const page = await this.listing.search(p, { ...filters, fullText, limit: window, offset: 0, select: 'id score' });
      lists.push({
        name: 'full_text',
        weight: weights.full_text ?? 1,
        hits: page.results.map((r) => ({ id: r.id!, score: Number(r.score ?? 0) })),
      });
    }
    const ranked = lists.length ? fuse(lists, aggregation) : [];
    const pageHits = ranked.slice(q.offset, q.offset + q.limit);
    const results = await this.hydrate(p, pageHits, q.select);
    const facets: SearchOutput['facets'] = {};
    if (withFacets) {
      const counted = await this.listing.search(p, { ...filters, limit: 0, offset: 0, facets: q.facets });
      Object.assign(facets, counted.facets);
    }
    return { results, facets };
  }

  /** The query vector when it does not depend on the type: given values, or embedded text. */
  private async sharedQueryVector(s: Scope, v: VectorQuery, resolved: ResolvedEmbedder): Promise<Float32Array | null> {
    const given = [
      v.objectId !== undefined,
      v.values !== undefined,
      v.text !== undefined,
      v.image !== undefined,
    ].filter(Boolean).length;
    if (given === 0) throw new BadRequest('query.vector needs one of objectId, values or text');
    if (given > 1) throw new BadRequest('query.vector takes one of objectId, values, text or image, not several');
    if (v.image !== undefined) {
      throw new BadRequest(
        `the project's embedding model ${resolved.settings.model} does not embed images: query with text, values or objectId`,
      );
    }
    if (v.values !== undefined) {
      if (!Array.isArray(v.values) || !v.values.every((x) => typeof x === 'number' && Number.isFinite(x))) {
        throw new BadRequest('query.vector.values must be an array of numbers');
      }
      if (v.values.length !== resolved.settings.dimensions) {
        throw new OrreryError(
          'dimension_mismatch',
          400,
          `query.vector.values has ${v.values.length} dimensions; the project's embedding model ${resolved.settings.model} has ${resolved.settings.dimensions}`,
          { expected: resolved.settings.dimensions, got: v.values.length, model: resolved.settings.model },
        );
      }
      const vector = Float32Array.from(v.values as number[]);
      if (!normalise(vector))
        throw new BadRequest('query.vector.values is a zero vector: it has no direction to compare');
      return vector;
    }
    if (v.text !== undefined) {
      if (typeof v.text !== 'string' || !v.text.trim())
        throw new BadRequest('query.vector.text must be a non-empty string');
      const vector = await this.embeddings.textVector(s, v.text, resolved);
      if (!vector) throw new BadRequest('query.vector.text has no words to compare');
      return vector;
    }
    if (typeof v.objectId !== 'string' || !v.objectId)
      throw new BadRequest('query.vector.objectId must be an object id');
    return null;
  }

  /** The filters as SQL over the objects table (scope always; the rest when given). */
  private candidateFilter(s: Scope, f: ObjectFilters): CandidateFilter {
    const ctx = this.listing.context(s);
    const filtered = hasFilters(f);
    return {
      all: filtered
        ? async (limit) => {
            const rows = await objectsIn(this.db, s)
              .select('objects.id')
              .where((eb) => filterCondition(eb, f, ctx))
              .limit(limit + 1)
              .execute();
            return rows.length > limit ? null : rows.map((r) => r.id);
          }
        : undefined,
      accept: async (ids) => {
        const ok = new Set<string>();
        for (let i = 0; i < ids.length; i += IN_LIST_CHUNK) {
          // Always through the filters: with none given, they still keep earlier revisions out.
          const q = objectsIn(this.db, s)
            .select('objects.id')
            .where('objects.id', 'in', ids.slice(i, i + IN_LIST_CHUNK))
            .where((eb) => filterCondition(eb, f, ctx));
          for (const r of await q.execute()) ok.add(r.id);
        }
        return ok;
      },
    };
  }

  /** List items of the page, in score order, each with its score. */
  private async hydrate(
    p: Principal,
    hits: Array<{ id: string; score: number }>,
    select?: string,
  ): Promise<Partial<ObjectRecord>[]> {
    if (!hits.length) return [];
    const items = await this.listing.list(p, { ids: hits.map((h) => h.id), limit: hits.length, offset: 0, select });
    const byId = new Map(items.map((i) => [i.id, i]));
    return hits.filter((h) => byId.has(h.id)).map((h) => ({ ...byId.get(h.id)!, score: round(h.score) }));
  }
}

const round = (x: number) => Math.round(x * 1e6) / 1e6;

function hasFilters(f: ObjectFilters): boolean {
  return Object.entries(f).some(
    ([k, v]) => k !== 'fullText' && v !== undefined && !(k === 'match' && v && !Object.keys(v as object).length),
  );
}

function typesOf(v: VectorQuery, embeddingType?: string): ObjectEmbeddingType[] {
  if (v.config && typeof v.config === 'object') {
    const on = OBJECT_EMBEDDING_TYPES.filter((t) => v.config![t] === true);
    if (on.length) return on;
  }
  const one = v.type ?? embeddingType ?? 'text';
  if (!isObjectEmbeddingType(one))
    throw new BadRequest(
      `embedding type must be one of ${OBJECT_EMBEDDING_TYPES.join(', ')}, got ${JSON.stringify(one)}`,
    );
  return [one];
}

function aggregationOf(a: string | undefined): Aggregation {
  if (a === undefined || a === 'rrf' || a === 'smart') return 'rrf';
  if (a === 'rsf') return 'rsf';
  throw new BadRequest(`score_aggregation must be rrf, rsf or smart, got ${JSON.stringify(a)}`);
}

function weightsOf(w: Record<string, unknown> | undefined): Record<string, number> {
  if (w === undefined || w === null) return {};
  if (typeof w !== 'object' || Array.isArray(w))
    throw new BadRequest('weights must be an object {text, image, properties, full_text} of numbers');
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(w)) {
    if (![...OBJECT_EMBEDDING_TYPES, 'full_text'].includes(k))
      throw new BadRequest(`weights.${k} is not a search type; use text, image, properties or full_text`);
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0)
      throw new BadRequest(`weights.${k} must be a number, 0 or more`);
    out[k] = v;
  }
  return out;
}
