/**
 * What a dotted path of a collection search's `match` means on the collections table, for the
 * `query/find` compiler: columns for the record fields, JSON paths under tags and properties.
 */
import type { FieldRef } from '../query/find/index.ts';
import { table } from '../util/own.ts';

const text = (column: string): FieldRef => ({ kind: 'column', column: `collections.${column}`, type: 'text' });

const COLUMNS: Record<string, FieldRef> = table({
  id: text('id'),
  name: text('name'),
  description: text('description'),
  status: text('status'),
  type: text('type_id'),
  'type.id': text('type_id'),
  created_by: text('created_by'),
  updated_by: text('updated_by'),
  created_at: text('created_at'),
  updated_at: text('updated_at'),
});

const JSON_COLUMNS = ['tags', 'properties'];

export const COLLECTION_FIND_FIELDS = [...Object.keys(COLUMNS), ...JSON_COLUMNS.map((c) => `${c}.*`)];

export function resolveCollectionField(path: string[]): FieldRef | null {
  if (!path.length) return null;
  const direct = COLUMNS[path.join('.')];
  if (direct) return direct;
  if (!JSON_COLUMNS.includes(path[0])) return null;
  const column = `collections.${path[0]}`;
  return path.length === 1 ? { kind: 'column', column, type: 'json' } : { kind: 'json', column, path: path.slice(1) };
}
