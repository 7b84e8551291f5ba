/**
 * What a dotted path of a `find` query (or `search`'s `match`, a facet, a sort) means on the
 * objects table: a real column for what is indexed, a JSON path into a JSON column for the
 * rest. The compiler in `query/find` turns `{path: condition}` into SQL with these; an unknown
 * path is a 400. Columns are qualified: the compiled SQL has subqueries of its own.
 */
import type { FieldRef } from '../query/find/index.ts';
import { table } from '../util/own.ts';

export type { FieldRef };

const text = (column: string): FieldRef => ({ kind: 'column', column: `objects.${column}`, type: 'text' });

/** Record fields stored in a column of their own (some under another name). */
const COLUMNS: Record<string, FieldRef> = table({
  id: text('id'),
  name: text('name'),
  description: text('description'),
  status: text('status'),
  location: text('location'),
  external_id: text('external_id'),
  created_by: text('created_by'),
  updated_by: text('updated_by'),
  created_at: text('created_at'),
  updated_at: text('updated_at'),
  text: text('text'),
  type: text('type_id'),
  'type.id': text('type_id'),
  parent: text('parent_id'),
  'parent.id': text('parent_id'),
  root: text('revision_root'),
  'revision.root': text('revision_root'),
  'revision.parent': text('revision_parent'),
  'revision.label': text('revision_label'),
  run: text('run_id'),
  'content.source': text('content_source'),
});

/** Record fields kept as JSON: the path continues inside the document (`embeddings` are vectors, not queryable). */
const JSON_COLUMNS = ['properties', 'metadata', 'content', 'tokens', 'tags', 'parts', 'transcript'];

/** For messages: what a query may name. */
export const FIND_FIELDS = [...Object.keys(COLUMNS), ...JSON_COLUMNS.map((c) => `${c}.*`)];

export function resolveObjectField(path: string[]): FieldRef | null {
  if (!path.length) return null;
  const direct = COLUMNS[path.join('.')];
  if (direct) return direct;
  if (!JSON_COLUMNS.includes(path[0])) return null;
  const column = `objects.${path[0]}`;
  return path.length === 1 ? { kind: 'column', column, type: 'json' } : { kind: 'json', column, path: path.slice(1) };
}
