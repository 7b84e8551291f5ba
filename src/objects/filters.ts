/**
 * The filters of `GET /objects`, `POST /objects/search` and exports, as one SQL condition over
 * the objects table: real columns for status, type, parent, location, dates and ids; the `find`
 * compiler for `match`; LIKE over name, description, property values and text for `full_text`.
 * Values are always bound parameters.
 */
import { sql, type Expression, type ExpressionBuilder, type RawBuilder, type SqlBool } from 'kysely';
import type { Database } from '../db/schema.ts';
import { escapeLike, jsonScalarsText, type JsonSql } from '../db/json-sql.ts';
import type { Scope } from '../auth/principal.ts';
import { BadRequest, OrreryError } from '../util/errors.ts';
import { isoDate } from '../http/query.ts';
import { compileFindReadingOnce, FindQueryError } from '../query/find/index.ts';
import { OBJECT_STATUSES } from './model.ts';
import { FIND_FIELDS, resolveObjectField } from './find-fields.ts';
import { typeIsOneOf } from './table-conditions.ts';

export interface ObjectFilters {
  ids?: string[];
  status?: string[];
  /** Type ids or names. */
  types?: string[];
  parent?: string;
  location?: string;
  /** Case-insensitive substring of the name. */
  name?: string;
  createdFrom?: string;
  createdTo?: string;
  updatedFrom?: string;
  updatedTo?: string;
  /** A Mongo-style match object, compiled by `query/find`. */
  match?: Record<string, unknown>;
  fullText?: string;
  /** Earlier revisions too; by default only the head of each history (or the objects named by `ids`). */
  allRevisions?: boolean;
  /** Every revision of the history whose first object has this id. */
  fromRoot?: string;
  /** A further condition its caller builds over the objects table (collections: the members of one collection). */
  within?: (eb: Eb, ctx: FilterContext) => Expression<SqlBool>;
}

export interface FilterContext {
  scope: Scope;
  json: JsonSql;
}

type Eb = ExpressionBuilder<Database, 'objects'>;

const MAX_TERMS = 12;

/** The words of a full-text query (at most 12, each at most 200 characters). */
const fullTextTerms = (q: string | undefined): string[] =>
  (q ?? '')
    .split(/\s+/)
    .map((t) => t.trim())
    .filter(Boolean)
    .slice(0, MAX_TERMS)
    .map((t) => t.slice(0, 200));

export function filterCondition(eb: Eb, f: ObjectFilters, ctx: FilterContext): Expression<SqlBool> {
  const all: Expression<SqlBool>[] = [];
  if (f.ids) all.push(f.ids.length ? eb('objects.id', 'in', f.ids) : sql<SqlBool>`1 = 0`);
  if (f.fromRoot !== undefined) all.push(eb('objects.revision_root', '=', f.fromRoot));
  else if (!f.allRevisions && !f.ids) all.push(eb('objects.revision_head', '=', 1));
  if (f.status?.length) {
    const bad = f.status.find((s) => !(OBJECT_STATUSES as readonly string[]).includes(s));
    if (bad) throw new BadRequest(`status must be one of ${OBJECT_STATUSES.join(', ')}, got ${JSON.stringify(bad)}`);
    all.push(eb('objects.status', 'in', f.status));
  }
  if (f.types?.length) {
    // An id, or the name of a type of the project.
    all.push(typeIsOneOf(eb, eb.ref('objects.type_id'), ctx.scope, f.types));
  }
  if (f.parent !== undefined) all.push(eb('objects.parent_id', '=', f.parent));
  if (f.location !== undefined) all.push(eb('objects.location', '=', f.location));
  if (f.name) all.push(ctx.json.likeCaseInsensitive(eb.ref('objects.name'), `%${escapeLike(f.name)}%`));
  if (f.createdFrom) all.push(eb('objects.created_at', '>=', isoDate('createdFrom', f.createdFrom)));
  if (f.createdTo) all.push(eb('objects.created_at', '<=', isoDate('createdTo', f.createdTo)));
  if (f.updatedFrom) all.push(eb('objects.updated_at', '>=', isoDate('updatedFrom', f.updatedFrom)));
  if (f.updatedTo) all.push(eb('objects.updated_at', '<=', isoDate('updatedTo', f.updatedTo)));
  if (f.match && Object.keys(f.match).length) all.push(compiledMatch(f.match, ctx));
  if (f.within) all.push(f.within(eb, ctx));
  for (const term of fullTextTerms(f.fullText)) {
    const like = `%${escapeLike(term)}%`;
    all.push(eb.or(textSources(eb, ctx).map((src) => ctx.json.likeCaseInsensitive(src, like))));
  }
  return all.length ? eb.and(all) : sql<SqlBool>`1 = 1`;
}

/**
 * Relevance of a full-text match: per term, 3 for the name, 2 for the description, 1 for a
 * property value or the text. 1 when there is no full-text query (a plain listing).
 */
export function fullTextScore(eb: Eb, q: string | undefined, ctx: FilterContext): RawBuilder<number> {
  const terms = fullTextTerms(q);
  if (!terms.length) return sql<number>`1`;
  const weights = [3, 2, 1, 1];
  const parts = terms.flatMap((term) => {
    const like = `%${escapeLike(term)}%`;
    return textSources(eb, ctx).map(
      (src, i) =>
        sql<number>`(CASE WHEN ${ctx.json.likeCaseInsensitive(src, like)} THEN ${sql.lit(weights[i])} ELSE 0 END)`,
    );
  });
  return sql<number>`(${sql.join(parts, sql` + `)})`;
}

const textSources = (eb: Eb, ctx: FilterContext): Expression<unknown>[] => [
  eb.ref('objects.name'),
  eb.ref('objects.description'),
  jsonScalarsText(ctx.json.dialect, eb.ref('objects.properties')),
  eb.ref('objects.text'),
];

/** A Mongo-style match (query/find); a query the caller must fix is a 400 `invalid_query`. */
export function compiledMatch(match: Record<string, unknown>, ctx: FilterContext): Expression<SqlBool> {
  if (match === null || typeof match !== 'object' || Array.isArray(match))
    throw new BadRequest('query must be an object of {path: condition}');
  try {
    // `properties` is the large document (up to ORRERY_MAX_INLINE_JSON): read once per row.
    return compileFindReadingOnce(
      match,
      resolveObjectField,
      ctx.json,
      FIND_FIELDS,
      'objects.properties',
      '_object_props',
    );
  } catch (err) {
    if (err instanceof FindQueryError)
      throw new OrreryError(err.code, err.status, err.message, err.at ? { at: err.at } : undefined);
    throw err;
  }
}
