/** `GET /limits`: the caller's rate limits and quotas (its project's and its key's) and what was used of them. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../http/auth-hook.ts';
import { errorResponses } from '../http/schemas.ts';
import type { Limiter } from './limiter.ts';
import { LimitsReport } from './schemas.ts';

export const limitRoutes: FastifyPluginAsyncTypebox<{ limiter: Limiter }> = async (app, { limiter }) => {
  app.get(
    '/limits',
    {
      schema: {
        tags: ['limits'],
        summary:
          "The caller's rate limits and quotas (its project's, set with PUT /projects/:id {limits}, and its key's, PUT /apikeys/:id {limits}) and what was used of them in the current minute and UTC day",
        response: { 200: LimitsReport, ...errorResponses(401) },
      },
    },
    (req) => limiter.report(principalOf(req)),
  );
};
