/**
 * `GET /embeddings/:type/status`: what the official client's `embeddings.status(type)` reads;
 * `PUT /objects/:id/embeddings/:type`: the client's `objects.setEmbedding(id, type, embedding)`.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../http/auth-hook.ts';
import { errorResponses } from '../http/schemas.ts';
import { scopeOf, type Principal } from '../auth/principal.ts';
import { embeddingKindOf, type EmbeddingService } from './service.ts';
import {
  CommandResponseSchema,
  EmbeddingEnableBody,
  EmbeddingInputSchema,
  EmbeddingMapSchema,
  EmbeddingsStatusSchema,
  EmbeddingTypeParams,
} from './schemas.ts';

export const embeddingRoutes: FastifyPluginAsyncTypebox<{
  embeddings: EmbeddingService;
  /** Stores the project's embedding settings as `PUT /projects/:id {embeddings}` does (validated, re-embedding on a new model). */
  configure: (p: Principal, embeddings: Record<string, unknown>) => Promise<unknown>;
}> = async (app, { embeddings, configure }) => {
  app.get(
    '/embeddings/:type/status',
    {
      schema: {
        tags: ['embeddings'],
        summary:
          "The project's embedding model and how many objects have a vector of this type (text, image, properties)",
        params: EmbeddingTypeParams,
        response: { 200: EmbeddingsStatusSchema, ...errorResponses(400, 401) },
      },
    },
    (req) => embeddings.status(scopeOf(principalOf(req)), req.params.type) as never,
  );

  app.post(
    '/embeddings/:type/enable',
    {
      schema: {
        tags: ['embeddings'],
        summary:
          "Turn on embeddings of a type and choose the project's embedder (environment, model): the same settings as PUT /projects/:id {embeddings}, shared by every type; a new model re-embeds in the background",
        params: EmbeddingTypeParams,
        body: EmbeddingEnableBody,
        response: { 200: CommandResponseSchema, ...errorResponses(400, 401, 404, 502) },
      },
    },
    async (req) => {
      const p = principalOf(req);
      const type = embeddingKindOf(req.params.type);
      const current = await embeddings.settings.settings(scopeOf(p));
      const environment = req.body.environment === 'builtin' ? null : req.body.environment;
      const model =
        req.body.model ??
        (environment === null ? undefined : environment === current.environment ? current.model : undefined);
      const disabled = (current.disabled ?? []).filter((t) => t !== type);
      await configure(p, { environment, ...(model ? { model } : {}), disabled });
      const now = await embeddings.settings.settings(scopeOf(p));
      return { status: 'enabled', message: `${type} embeddings are on, computed with ${now.model}`, details: now };
    },
  );
  app.post(
    '/embeddings/:type/disable',
    {
      schema: {
        tags: ['embeddings'],
        summary:
          'Turn off embeddings of a type: none computed and similarity searches of the type refused (409) until enabled again; the vectors already computed are kept',
        params: EmbeddingTypeParams,
        response: { 200: CommandResponseSchema, ...errorResponses(400, 401, 404) },
      },
    },
    async (req) => {
      const p = principalOf(req);
      const type = embeddingKindOf(req.params.type);
      const current = await embeddings.settings.settings(scopeOf(p));
      await configure(p, { disabled: [...new Set([...(current.disabled ?? []), type])] });
      return { status: 'disabled', message: `${type} embeddings are off in this project` };
    },
  );
  app.post(
    '/embeddings/:type/recalculate',
    {
      schema: {
        tags: ['embeddings'],
        summary: "Compute every object's vector of a type again, in the background (status shows the progress)",
        params: EmbeddingTypeParams,
        response: { 200: CommandResponseSchema, ...errorResponses(400, 401, 409) },
      },
    },
    (req) => embeddings.recalculate(scopeOf(principalOf(req)), req.params.type),
  );

  app.put(
    '/objects/:id/embeddings/:type',
    {
      schema: {
        tags: ['objects'],
        summary:
          "Set an object's vector of a type (text, properties; image is a 400 while the model embeds no images), stored under the project's model and searched like computed ones; kept until the object's source for that type or the project's model changes. Answers {<type>: {model, values, etag}}",
        params: Type.Object({ id: Type.String({ minLength: 1 }), type: EmbeddingTypeParams.properties.type }),
        body: EmbeddingInputSchema,
        response: { 200: EmbeddingMapSchema, ...errorResponses(400, 401, 404) },
      },
    },
    (req) => embeddings.setObjectEmbedding(scopeOf(principalOf(req)), req.params.id, req.params.type, req.body),
  );
};
