import { Type } from '@sinclair/typebox';
import { OpenObject } from '../http/schemas.ts';

export const EmbeddingTypeParams = Type.Object({ type: Type.String({ description: 'text, image or properties' }) });

/** An object's embedding as the record shows it (the client's `Embedding`); optional fields, since `select` may project any away. */
const EmbeddingSchema = OpenObject({
  model: Type.Optional(
    Type.String({ description: 'The model the vector belongs to: vectors of different models are never compared' }),
  ),
  values: Type.Optional(Type.Array(Type.Number(), { description: 'The vector, L2-normalised, float32 precision' })),
  etag: Type.Optional(
    Type.String({
      description: 'The etag the caller gave with the vector, or else the hash of the source it describes',
    }),
  ),
});

/** The record's `embeddings` field (`select=+embeddings`): the object's vectors, from the vectors table. */
export const EmbeddingMapSchema = OpenObject(
  {
    text: Type.Optional(EmbeddingSchema),
    image: Type.Optional(EmbeddingSchema),
    properties: Type.Optional(EmbeddingSchema),
  },
  {
    description: "The object's vectors per type (hidden: select +embeddings), computed by Orrery or set by the caller",
  },
);

/** A vector the caller sets. */
export const EmbeddingInputSchema = OpenObject({
  model: Type.Optional(
    Type.String({
      description: "Default and only accepted value: the project's embedding model (another is a 400 model_mismatch)",
    }),
  ),
  values: Type.Array(Type.Number(), {
    minItems: 1,
    description: "Exactly the project model's dimensions (else a 400 dimension_mismatch); stored L2-normalised",
  }),
  etag: Type.Optional(
    Type.String({
      maxLength: 256,
      description: "Answered back as the embedding's etag (e.g. the text_etag the vector was computed from)",
    }),
  ),
});

/** `embeddings` in a create or update payload. */
export const EmbeddingMapInputSchema = OpenObject(
  {
    text: Type.Optional(Type.Union([EmbeddingInputSchema, Type.Null()])),
    image: Type.Optional(
      Type.Union([EmbeddingInputSchema, Type.Null()], {
        description: "Refused (400) while the project's model embeds no images",
      }),
    ),
    properties: Type.Optional(Type.Union([EmbeddingInputSchema, Type.Null()])),
  },
  {
    description:
      'Vectors to store for the object; a type set to null (or embeddings: null for every type) forgets the stored vector, and Orrery computes it again. Other keys are a 400',
  },
);

export const EmbeddingsStatusSchema = OpenObject({
  status: Type.String({
    description:
      'ready, processing (embedding work queued or running), or disabled (turned off with embeddings.disable, or image while the model embeds no images)',
  }),
  enabled: Type.Optional(Type.Boolean({ description: 'false after embeddings.disable(type)' })),
  embeddingRunsInProgress: Type.Integer({ description: 'Embedding and content jobs of the project queued or running' }),
  totalIndexableObjects: Type.Integer(),
  embeddingsModels: Type.Array(Type.String()),
  objectsWithEmbeddings: Type.Integer({ description: 'Objects with a vector of this type for the current model' }),
  model: Type.String(),
  dimensions: Type.Integer(),
  environment: Type.Union([Type.String(), Type.Null()], {
    description: 'null: the built-in orrery-hashed-ngrams-384 embedder',
  }),
  runs: Type.Boolean({ description: 'input_embedding / result_embedding on runs' }),
  vectorIndex: OpenObject({
    status: Type.String({
      description: 'READY, PENDING (HNSW graph being built; queries are exact meanwhile) or ABSENT',
    }),
    name: Type.String(),
    type: Type.String(),
  }),
});

export const EmbeddingEnableBody = Type.Object(
  {
    environment: Type.String({
      minLength: 1,
      description: 'An openai or openai_compatible environment id, or "builtin" for the built-in embedder',
    }),
    model: Type.Optional(
      Type.String({
        minLength: 1,
        description: "The embedding model (required with an environment, unless it is already the project's)",
      }),
    ),
    max_tokens: Type.Optional(
      Type.Number({ description: "Accepted for compatibility; long texts are split by the embedder's own bound" }),
    ),
    dimensions: Type.Optional(
      Type.Number({ description: 'Accepted for compatibility; the model answers its own dimensions' }),
    ),
  },
  { additionalProperties: false },
);

export const CommandResponseSchema = OpenObject({
  status: Type.String(),
  message: Type.String(),
  details: Type.Optional(Type.Unknown()),
});
