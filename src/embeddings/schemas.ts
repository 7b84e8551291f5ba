import { Type } from '@sinclair/typebox';
import { OpenObject } from '../http/schemas.ts';

export const EmbeddingTypeParams = Type.Object({ type: Type.String({ description: 'text, image or properties' }) });

export const EmbeddingsStatusSchema = OpenObject({
  status: Type.String({ description: 'ready, processing (embedding work queued or running), or disabled (image: the model embeds no images)' }),
  embeddingRunsInProgress: Type.Integer({ description: 'Embedding and content jobs of the project queued or running' }),
  totalIndexableObjects: Type.Integer(),
  embeddingsModels: Type.Array(Type.String()),
  objectsWithEmbeddings: Type.Integer({ description: 'Objects with a vector of this type for the current model' }),
  model: Type.String(),
  dimensions: Type.Integer(),
  environment: Type.Union([Type.String(), Type.Null()], { description: 'null: the built-in orrery-hashed-ngrams-384 embedder' }),
  runs: Type.Boolean({ description: 'input_embedding / result_embedding on runs' }),
  vectorIndex: OpenObject({ status: Type.String({ description: 'READY, PENDING (HNSW graph being built; queries are exact meanwhile) or ABSENT' }), name: Type.String(), type: Type.String() }),
});

export const EmbeddingSettingsBody = Type.Object({
  environment: Type.Optional(Type.Union([Type.String(), Type.Null()], { description: 'An openai or openai_compatible environment id; null for the built-in embedder' })),
  model: Type.Optional(Type.String({ description: 'The embedding model (required with an environment)' })),
  runs: Type.Optional(Type.Boolean({ description: 'Compute input_embedding / result_embedding of runs (default true)' })),
}, { additionalProperties: true });
