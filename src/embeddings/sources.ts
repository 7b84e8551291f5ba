/**
 * What each embedding of an object is computed from, and its ETag (a hash of that source, so a
 * change is noticed without recomputing the vector):
 *
 * - `text`: the object's text (extracted by content processing, or given by the caller); an
 *   object with no text uses its name and description, so every object can be compared.
 * - `properties`: the properties as `path: value` lines, keys sorted (so key order does not matter).
 * - `image`: needs an embedder that embeds images; neither built-in provider does yet.
 */
import { createHash } from 'node:crypto';

export interface ObjectSources {
  text: string | null;
  properties: string | null;
}

export interface SourceFields {
  name?: string | null;
  description?: string | null;
  text?: string | null;
  properties?: unknown;
}

export function objectSources(o: SourceFields): ObjectSources {
  const text = o.text?.trim()
    ? o.text
    : [o.name, o.description].filter((x) => typeof x === 'string' && x.trim()).join('\n') || null;
  const lines: string[] = [];
  flatten(o.properties, '', lines, 0);
  return { text, properties: lines.length ? lines.join('\n') : null };
}

/** The ETag of a source for a model: a vector is current when both match. */
export const sourceEtag = (source: string): string =>
  createHash('sha256').update(source).digest('base64url').slice(0, 27);

/**
 * The stamp of the source an object's vector of `type` describes now: what a vector the caller
 * sets is stored with, so the automatic embedder keeps it until that source changes. An empty
 * source (no properties; `image`, which has no built-in source) has a stamp too, the hash of ''.
 */
export function sourceStamp(o: SourceFields, type: string): string {
  const sources = objectSources(o);
  return sourceEtag((type === 'text' || type === 'properties' ? sources[type] : null) ?? '');
}

const MAX_LINES = 2000;

function flatten(v: unknown, path: string, out: string[], depth: number): void {
  if (out.length >= MAX_LINES || v === undefined || v === null || depth > 8) return;
  if (Array.isArray(v)) {
    if (v.every((x) => x === null || typeof x !== 'object')) {
      const items = v.filter((x) => x !== null && x !== '').map(String);
      if (items.length) out.push(`${path}: ${items.join(', ')}`);
    } else {
      for (const x of v) flatten(x, path, out, depth + 1);
    }
    return;
  }
  if (typeof v === 'object') {
    for (const k of Object.keys(v as object).sort())
      flatten((v as Record<string, unknown>)[k], path ? `${path}.${k}` : k, out, depth + 1);
    return;
  }
  const s = String(v);
  if (s !== '') out.push(path ? `${path}: ${s}` : s);
}
