/**
 * An object's `embeddings` field (the official client's `Partial<Record<'text' | 'image' |
 * 'properties', {model, values, etag?}>>`), in both directions, with the `vectors` table as its
 * only store:
 *
 * - read: the object's vectors, whatever made them (Orrery's embedder or the caller), each with
 *   its model, its values and its etag (the caller's etag, or else the source stamp);
 * - write: a vector the caller sets (`embeddings` in a create or update payload, or
 *   `PUT /objects/:id/embeddings/:type`) is validated here: a known type, a non-empty array of
 *   finite numbers of the dimensions of the project's model, no other model. It is stored
 *   L2-normalised (cosine similarity ignores length) under the project's model, so it is
 *   searched with the vectors Orrery computes.
 */
import { BadRequest, OrreryError } from '../util/errors.ts';
import { isObjectEmbeddingType, OBJECT_EMBEDDING_TYPES, type ObjectEmbeddingType } from './embedder.ts';
import type { ResolvedEmbedder } from './settings.ts';
import type { VectorRow } from './store.ts';
import { normalise, toWire } from './vectors.ts';

export interface Embedding {
  model: string;
  values: number[];
  etag?: string;
}

export type EmbeddingMap = Partial<Record<ObjectEmbeddingType, Embedding>>;

/** A vector the caller set, validated. */
export interface CallerVector {
  type: ObjectEmbeddingType;
  vector: Float32Array;
  callerEtag: string | null;
}

/** The `embeddings` of a create or update payload, validated before anything is written. */
export interface PreparedEmbeddings {
  model: string;
  set: CallerVector[];
  /** Types given as null: the stored vector is forgotten and Orrery computes it again. */
  reset: ObjectEmbeddingType[];
}

const MAX_ETAG = 256;

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

/** `embeddings: {text: {model?, values, etag?} | null, …}` (null alone: forget every type). */
export function prepareEmbeddingMap(input: unknown, resolved: ResolvedEmbedder): PreparedEmbeddings {
  const out: PreparedEmbeddings = { model: resolved.settings.model, set: [], reset: [] };
  if (input === null) {
    out.reset = [...OBJECT_EMBEDDING_TYPES];
    return out;
  }
  if (!isPlainObject(input))
    throw new BadRequest('embeddings must be an object {text, properties}: each {model?, values, etag?}, or null');
  for (const [type, value] of Object.entries(input)) {
    if (value === undefined) continue;
    if (!isObjectEmbeddingType(type))
      throw new BadRequest(`embeddings.${type} is not an embedding type; use ${OBJECT_EMBEDDING_TYPES.join(', ')}`);
    if (value === null) out.reset.push(type);
    else out.set.push(prepareEmbedding(type, value, resolved, `embeddings.${type}`));
  }
  return out;
}

/** One embedding `{model?, values, etag?}` of a type; `where` names it in messages. */
export function prepareEmbedding(
  type: unknown,
  input: unknown,
  resolved: ResolvedEmbedder,
  where: string,
): CallerVector {
  if (!isObjectEmbeddingType(type))
    throw new BadRequest(
      `embedding type must be one of ${OBJECT_EMBEDDING_TYPES.join(', ')}, got ${JSON.stringify(type)}`,
    );
  const { model, dimensions } = resolved.settings;
  if (type === 'image' && !resolved.embedder.supportsImages) {
    throw new BadRequest(
      `the project's embedding model ${model} does not embed images, so an image vector could never be searched: set text or properties embeddings`,
    );
  }
  if (!isPlainObject(input)) throw new BadRequest(`${where} must be an object {model?, values, etag?}`);
  if (input.model !== undefined && input.model !== null && input.model !== model) {
    throw new OrreryError(
      'model_mismatch',
      400,
      `${where}.model is ${JSON.stringify(input.model)}, but the project's embedding model is ${model}: vectors of different models are never compared, so omit model or pass ${model} (PUT /projects/:id {embeddings} changes the project's model)`,
      { expected: model, got: input.model },
    );
  }
  const values = input.values;
  if (!Array.isArray(values) || values.length === 0)
    throw new BadRequest(`${where}.values must be a non-empty array of numbers`);
  const bad = values.findIndex((x) => typeof x !== 'number' || !Number.isFinite(x));
  if (bad >= 0)
    throw new BadRequest(`${where}.values[${bad}] is ${JSON.stringify(values[bad])}: values must be finite numbers`);
  if (values.length !== dimensions) {
    throw new OrreryError(
      'dimension_mismatch',
      400,
      `${where}.values has ${values.length} dimensions; the project's embedding model ${model} has ${dimensions}`,
      { expected: dimensions, got: values.length, model },
    );
  }
  const vector = Float32Array.from(values as number[]);
  if (!normalise(vector))
    throw new BadRequest(`${where}.values is a zero vector (or too large for float32): it has no direction to compare`);
  const etag = input.etag;
  if (etag !== undefined && etag !== null && (typeof etag !== 'string' || etag.length > MAX_ETAG)) {
    throw new BadRequest(`${where}.etag must be a string of at most ${MAX_ETAG} characters`);
  }
  return { type, vector, callerEtag: typeof etag === 'string' && etag !== '' ? etag : null };
}

/** A stored vector as the record's `embeddings.<type>`. */
export const toEmbedding = (r: Pick<VectorRow, 'model' | 'etag' | 'callerEtag' | 'vector'>): Embedding => ({
  model: r.model,
  values: toWire(r.vector),
  etag: r.callerEtag ?? r.etag,
});

/** Owner id → its embeddings, types in the client's order (text, image, properties). */
export function embeddingMaps(rows: readonly VectorRow[]): Map<string, EmbeddingMap> {
  const out = new Map<string, EmbeddingMap>();
  const order = (t: string) => (OBJECT_EMBEDDING_TYPES as readonly string[]).indexOf(t);
  for (const r of [...rows].sort((a, b) => order(a.type) - order(b.type))) {
    if (!isObjectEmbeddingType(r.type)) continue;
    let map = out.get(r.ownerId);
    if (!map) out.set(r.ownerId, (map = {}));
    map[r.type] = toEmbedding(r);
  }
  return out;
}
