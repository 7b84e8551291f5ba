/**
 * What Orrery needs from an embedding provider (style K3: the slice we use, declared here). The
 * built-in offline embedder and the OpenAI-compatible client implement it; search, objects and
 * runs never see a provider.
 */

/**
 * The embedding kinds of an object (official client: SupportedEmbeddingTypes). Only objects own
 * stored vectors (the `vectors` table's owner_kind); a run's vectors are answered, not stored.
 */
export const OBJECT_EMBEDDING_TYPES = ['text', 'image', 'properties'] as const;
export type ObjectEmbeddingType = (typeof OBJECT_EMBEDDING_TYPES)[number];
export type EmbeddingType = ObjectEmbeddingType;
export type OwnerKind = 'object';

export const isObjectEmbeddingType = (t: unknown): t is ObjectEmbeddingType =>
  typeof t === 'string' && (OBJECT_EMBEDDING_TYPES as readonly string[]).includes(t);

export interface Embedder {
  /** Recorded with every vector; vectors of different models are never compared. */
  readonly model: string;
  readonly dimensions: number;
  /** Whether `embedImages` exists (image embeddings of objects). */
  readonly supportsImages: boolean;
  /** Longest input, in characters, sent in one piece; longer texts are chunked (chunking.ts). */
  readonly maxInputChars: number;
  /** One vector per text, L2-normalised, `dimensions` long. Throws a ProviderError on provider failures. */
  embed(texts: string[], signal?: AbortSignal): Promise<Float32Array[]>;
  /** The same, synchronously, when the embedder needs no I/O (the built-in one: the run hot path). */
  embedNow?(text: string): Float32Array;
  embedImages?(images: Uint8Array[], signal?: AbortSignal): Promise<Float32Array[]>;
}
