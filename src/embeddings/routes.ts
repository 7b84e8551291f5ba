/**
 * `GET /embeddings/:type/status`: what the official client's `embeddings.status(type)` reads;
 * `PUT /objects/:id/embeddings/:type`: the client's `objects.setEmbedding(id, type, embedding)`.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../http/auth-hook.ts';
import { errorResponses } from '../http/schemas.ts';
import { scopeOf } from '../auth/principal.ts';
import type { EmbeddingService } from './service.ts';
import { EmbeddingInputSchema, EmbeddingMapSchema, EmbeddingsStatusSchema, EmbeddingTypeParams } from './schemas.ts';

export const embeddingRoutes: FastifyPluginAsyncTypebox<{ embeddings: EmbeddingService }> = async (app, { embeddings }) => {
  app.get('/embeddings/:type/status', {
    schema: {
      tags: ['embeddings'],
      summary: "The project's embedding model and how many objects have a vector of this type (text, image, properties)",
      params: EmbeddingTypeParams,
      response: { 200: EmbeddingsStatusSchema, ...errorResponses(400, 401) },
    },
  }, (req) => embeddings.status(scopeOf(principalOf(req)), req.params.type) as never);

  app.put('/objects/:id/embeddings/:type', {
    schema: {
      tags: ['objects'],
      summary: "Set an object's vector of a type (text, properties; image is a 400 while the model embeds no images), stored under the project's model and searched like computed ones; kept until the object's source for that type or the project's model changes. Answers {<type>: {model, values, etag}}",
      params: Type.Object({ id: Type.String({ minLength: 1 }), type: EmbeddingTypeParams.properties.type }),
      body: EmbeddingInputSchema,
      response: { 200: EmbeddingMapSchema, ...errorResponses(400, 401, 404) },
    },
  }, (req) => embeddings.setObjectEmbedding(scopeOf(principalOf(req)), req.params.id, req.params.type, req.body));
};
