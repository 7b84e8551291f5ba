/**
 * Facets of interactions and prompt templates (the official client's `computeFacets`): counted in
 * memory over a project's rows, which are few (an interaction is authored by hand). The answer is
 * the runs' shape, `{<name>: [{_id, count}], total}`: most frequent first, ties by value, a missing
 * value in the `_id: null` bucket, a list field (tags) counted once per element.
 */
import { BadRequest } from '../util/errors.ts';
import { setOwn } from '../util/own.ts';

export interface FacetSpec {
  name: string;
  field: string;
}

/** At most this many buckets a facet (the rest are the least frequent). */
const MAX_BUCKETS = 1000;

export function computeFacets<R>(
  rows: readonly R[],
  specs: readonly FacetSpec[],
  fields: Record<string, (r: R) => unknown>,
  what: string,
): Record<string, unknown> & { total: number } {
  if (!Array.isArray(specs) || specs.length === 0)
    throw new BadRequest('facets must be a non-empty array of {name, field}');
  const seen = new Set<string>();
  for (const [i, f] of specs.entries()) {
    if (f.name === 'total')
      throw new BadRequest(`facets[${i}].name "total" is reserved for the match count; choose another name`);
    if (seen.has(f.name)) throw new BadRequest(`facets[${i}].name "${f.name}" is used twice; facet names must differ`);
    seen.add(f.name);
    if (!Object.hasOwn(fields, f.field)) {
      throw new BadRequest(
        `facets[${i}].field "${f.field}" cannot be faceted on ${what}; use one of ${Object.keys(fields).join(', ')}`,
      );
    }
  }
  const out: Record<string, unknown> & { total: number } = { total: rows.length };
  for (const f of specs) {
    const counts = new Map<string | number | null, number>();
    for (const r of rows) {
      const v = fields[f.field](r);
      const values = Array.isArray(v) ? [...new Set(v)] : [v];
      for (const x of values) {
        const key = x === undefined || x === null || x === '' ? null : typeof x === 'number' ? x : String(x);
        counts.set(key, (counts.get(key) ?? 0) + 1);
      }
    }
    // A caller's name is a data key, even "__proto__" (util/own.ts).
    setOwn(
      out,
      f.name,
      [...counts]
        .map(([_id, count]) => ({ _id, count }))
        .sort((a, b) => b.count - a.count || String(a._id ?? '').localeCompare(String(b._id ?? '')))
        .slice(0, MAX_BUCKETS),
    );
  }
  return out;
}
