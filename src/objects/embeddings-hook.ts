/**
 * Where embeddings (src/embeddings) plug into objects. The `vectors` table is the only store of
 * an object's embeddings: objects tell embeddings about writes and deletions, ask it for the
 * `embeddings` field (a hidden field, read only when selected, one query per page), and hand it
 * a payload's `embeddings` to validate before the write and to store in the write's transaction.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import type { Scope } from '../auth/principal.ts';
import type { EmbeddingMap, PreparedEmbeddings } from '../embeddings/object-vectors.ts';
import type { StoredEmbeddings } from '../embeddings/service.ts';
import type { SourceFields } from '../embeddings/sources.ts';

export type { EmbeddingMap, PreparedEmbeddings, StoredEmbeddings };

export interface ObjectEmbeddingsHook {
  /** After an object's write committed (text, name, description or properties may have changed). */
  objectWritten(s: Scope, objectId: string): Promise<void>;
  /** After an object's deletion committed. */
  objectDeleted(s: Scope, objectId: string): Promise<void>;
  /** The `embeddings` field of these objects (absent from the map: none yet). */
  embeddingsOf(s: Scope, objectIds: readonly string[]): Promise<Map<string, EmbeddingMap>>;
  /** Validates a payload's `embeddings` (a 400 otherwise) before anything is written. */
  prepareEmbeddings(s: Scope, input: unknown): Promise<PreparedEmbeddings>;
  /** Stores them in the object's write transaction, for the sources the object has after it. */
  storeEmbeddings(
    trx: Kysely<Database>,
    s: Scope,
    objectId: string,
    prepared: PreparedEmbeddings,
    sources: SourceFields,
  ): Promise<StoredEmbeddings>;
  /** After that transaction committed. */
  embeddingsStored(s: Scope, stored: StoredEmbeddings): void;
}

/** The reading part, for listings and exports. */
export type ObjectEmbeddingsReader = Pick<ObjectEmbeddingsHook, 'embeddingsOf'>;
