/** `GET /embeddings/:type/status`: what the official client's `embeddings.status(type)` reads. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../http/auth-hook.ts';
import { errorResponses } from '../http/schemas.ts';
import { scopeOf } from '../auth/principal.ts';
import type { EmbeddingService } from './service.ts';
import { EmbeddingsStatusSchema, EmbeddingTypeParams } from './schemas.ts';

export const embeddingRoutes: FastifyPluginAsyncTypebox<{ embeddings: EmbeddingService }> = async (app, { embeddings }) => {
  app.get('/embeddings/:type/status', {
    schema: {
      tags: ['embeddings'],
      summary: "The project's embedding model and how many objects have a vector of this type (text, image, properties)",
      params: EmbeddingTypeParams,
      response: { 200: EmbeddingsStatusSchema, ...errorResponses(400, 401) },
    },
  }, (req) => embeddings.status(scopeOf(principalOf(req)), req.params.type) as never);
};
