/**
 * The one row mapper of content objects (style I3/K7): storage columns never reach the wire
 * except through here. A full record (retrieve, create, update, find) has `root` and `parent`
 * as an id; a list or search item has `parent` as `{id, name}`, a `score` and no `root`.
 */
import type { EmbeddingMap } from './embeddings-hook.ts';
import type { HiddenField, ObjectRecord, ObjectRow, TypeRef } from './model.ts';

export interface RecordRefs {
  types: Map<string, TypeRef>;
  /** Parent names, for items. */
  parents?: Map<string, string>;
  /** The objects' vectors, when `embeddings` is selected (an object absent here has none). */
  embeddings?: Map<string, EmbeddingMap>;
}

export function toRecord(
  row: ObjectRow,
  refs: RecordRefs,
  hidden: ReadonlySet<HiddenField>,
  item?: { score: number },
): ObjectRecord {
  const type = row.type_id ? refs.types.get(row.type_id) : undefined;
  const rec: ObjectRecord = {
    id: row.id,
    name: row.name,
    description: row.description,
    tags: (row.tags as string[] | null) ?? [],
    status: row.status,
    location: row.location,
    ...(row.parent_id
      ? { parent: item ? { id: row.parent_id, name: refs.parents?.get(row.parent_id) ?? '' } : row.parent_id }
      : {}),
    ...(item ? {} : { root: rootOf(row) }),
    ...(type ? { type } : {}),
    ...(row.content ? { content: row.content as ObjectRecord['content'] } : {}),
    external_id: row.external_id,
    properties: (row.properties as Record<string, unknown> | null) ?? {},
    ...(row.metadata ? { metadata: row.metadata as Record<string, unknown> } : {}),
    tokens: (row.tokens as ObjectRecord['tokens']) ?? null,
    run: row.run_id,
    ...(row.error ? { error: row.error as ObjectRecord['error'] } : {}),
    revision: revisionOf(row),
    ...(row.expires_at ? { expires_at: row.expires_at } : {}),
    ...(item ? { score: item.score } : {}),
    created_by: row.created_by,
    updated_by: row.updated_by,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
  if (hidden.has('text')) {
    if (row.text !== null && row.text !== undefined) rec.text = row.text;
    if (row.text_etag) rec.text_etag = row.text_etag;
  }
  if (hidden.has('embeddings')) rec.embeddings = refs.embeddings?.get(row.id) ?? {};
  if (hidden.has('parts') && row.parts) rec.parts = row.parts as string[];
  if (hidden.has('transcript') && row.transcript) rec.transcript = row.transcript as Record<string, unknown>;
  return rec;
}

const rootOf = (row: ObjectRow): string => row.revision_root ?? row.id;

/** `revision: {root, head, parent?, label?}`: where the object stands in its history of revisions. */
function revisionOf(row: ObjectRow): ObjectRecord['revision'] {
  return {
    root: rootOf(row),
    head: Number(row.revision_head ?? 1) !== 0,
    ...(row.revision_parent ? { parent: row.revision_parent } : {}),
    ...(row.revision_label ? { label: row.revision_label } : {}),
  };
}
