/** `GET /objects/:id/renditions/:format`: parse, call the rendition service, answer (style F2). */
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../http/auth-hook.ts';
import { errorResponses } from '../http/schemas.ts';
import type { RenditionService } from './renditions.ts';

const RenditionAnswer = Type.Object(
  {
    status: Type.Union([Type.Literal('found'), Type.Literal('generating'), Type.Literal('failed')]),
    renditions: Type.Array(Type.String({ description: 'Absolute signed URL' })),
  },
  { description: 'GetRenditionResponse of the official client' },
);

export const contentRoutes: FastifyPluginAsyncTypebox<{ renditions: RenditionService }> = async (
  app,
  { renditions },
) => {
  app.get(
    '/objects/:id/renditions/:format',
    {
      schema: {
        tags: ['objects'],
        summary:
          'An image rendition (jpeg, png, webp) of an image or PDF: {status: found|generating|failed, renditions: [signed URLs]}',
        params: Type.Object({ id: Type.String({ minLength: 1 }), format: Type.String({ minLength: 1 }) }),
        querystring: Type.Object(
          {
            max_hw: Type.Optional(
              Type.Integer({
                description: 'Longest side in pixels; without it, the default renditions (1024 and 256)',
              }),
            ),
            generate_if_missing: Type.Optional(
              Type.Boolean({ description: 'Make the rendition when there is none (queued)' }),
            ),
            block_on_generation: Type.Optional(
              Type.Boolean({
                description: 'Wait (bounded: ORRERY_RENDITION_WAIT) for it instead of answering generating',
              }),
            ),
            sign_url: Type.Optional(Type.Boolean({ description: 'Accepted; URLs are always signed' })),
          },
          { additionalProperties: true },
        ),
        response: { 200: RenditionAnswer, ...errorResponses(400, 401, 404) },
      },
    },
    (req) => renditions.get(principalOf(req), req.params.id, req.params.format, req.query),
  );
};
