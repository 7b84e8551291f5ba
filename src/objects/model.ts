/** Content objects: the row as services hold it (JSON decoded), the inputs and the wire records. */
import type { Selectable } from 'kysely';
import type { ObjectTable } from '../db/schema.ts';
import type { EmbeddingMap } from './embeddings-hook.ts';

export const OBJECT_STATUSES = ['created', 'processing', 'ready', 'completed', 'failed', 'archived'] as const;

/** Fields left out of a record unless `select` asks for them with `+field` (decisions.md). */
export const HIDDEN_FIELDS = ['text', 'embeddings', 'parts', 'transcript'] as const;
export type HiddenField = (typeof HIDDEN_FIELDS)[number];

/** The columns each hidden field needs (`embeddings` are the object's `vectors` rows, read apart). */
export const HIDDEN_COLUMNS: Record<HiddenField, readonly (keyof ObjectTable)[]> = {
  text: ['text', 'text_etag'],
  embeddings: [],
  parts: ['parts'],
  transcript: ['transcript'],
};

/** JSON columns: encoded by the store on the way in, decoded on the way out (style K7). */
export const OBJECT_JSON_COLUMNS = [
  'content',
  'tags',
  'properties',
  'metadata',
  'tokens',
  'parts',
  'transcript',
  'error',
] as const;

export type ObjectRow = Selectable<ObjectTable>;

export interface ContentSource {
  source?: string;
  type?: string;
  name?: string;
  etag?: string;
}

export interface Tokens {
  count?: number;
  encoding?: string;
  etag?: string;
}

/** `CreateContentObjectPayload` / `UpdateContentObjectPayload`: every field optional. */
export interface ObjectInput {
  id?: string;
  name?: string;
  description?: string | null;
  tags?: string[] | null;
  type?: string | null;
  content?: ContentSource | null;
  external_id?: string | null;
  properties?: Record<string, unknown> | null;
  metadata?: Record<string, unknown> | null;
  tokens?: Tokens | null;
  run?: string | null;
  parent?: string | null;
  location?: string | null;
  status?: string;
  text?: string | null;
  text_etag?: string | null;
  /** Vectors the caller sets: `{text: {model?, values, etag?} | null, …}` (src/embeddings/object-vectors.ts). */
  embeddings?: Record<string, unknown> | null;
  parts?: string[] | null;
  parts_etag?: string | null;
  transcript?: Record<string, unknown> | null;
  /** Seconds to keep the object from this write on (retention); 0 or null: forever. */
  ttl?: number | null;
}

export interface TypeRef {
  id: string;
  name: string;
  ref_type: 'stored';
}

/** The full record (retrieve, create, update, find); list and search items differ (see dto.ts). */
export interface ObjectRecord {
  id: string;
  name: string;
  description: string | null;
  tags: string[];
  created_by: string;
  updated_by: string;
  created_at: string;
  updated_at: string;
  root?: string;
  parent?: string | { id: string; name: string };
  location: string;
  status: string;
  type?: TypeRef;
  content?: ContentSource;
  external_id: string | null;
  properties: Record<string, unknown>;
  metadata?: Record<string, unknown>;
  tokens: Tokens | null;
  run: string | null;
  /** Why content processing failed (status `failed`): `{code, message, step}` (decisions.md). */
  error?: { code: string; message: string; step: string };
  /** Where the object stands in its history: the first object's id, whether it is the newest, what it was made from. */
  revision: { root: string; head: boolean; parent?: string; label?: string };
  /** When the retention sweeper deletes the object (it was written with a ttl). */
  expires_at?: string;
  score?: number;
  text?: string;
  text_etag?: string;
  /** The object's vectors, per type: `{model, values, etag}`. */
  embeddings?: EmbeddingMap;
  parts?: string[];
  transcript?: Record<string, unknown>;
}
