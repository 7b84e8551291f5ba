/** `DELETE /runs/:id` (`run:write`): forget a run (src/runs/retention.ts). */
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../http/auth-hook.ts';
import { errorResponses, IdParams } from '../http/schemas.ts';
import type { RunRetention } from './retention.ts';

export const retentionRoutes: FastifyPluginAsyncTypebox<{ retention: RunRetention }> = async (app, { retention }) => {
  app.delete(
    '/runs/:id',
    {
      schema: {
        tags: ['runs'],
        summary:
          'Delete a run with its tags, chunks, search data, vectors and the cached answers it made (a run still executing: 409)',
        params: IdParams,
        response: {
          200: Type.Object({ id: Type.String(), count: Type.Integer() }),
          ...errorResponses(401, 403, 404, 409),
        },
      },
    },
    (req) => retention.delete(principalOf(req), req.params.id),
  );
};
