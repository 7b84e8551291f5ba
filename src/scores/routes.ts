/** Scores on runs (src/scores): parse, call the service, answer (style F2). */
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../http/auth-hook.ts';
import { errorResponses, IdParams } from '../http/schemas.ts';
import type { ScoreService } from './service.ts';
import { NewScoreBody, Score, ScoreAnalyticsAnswer, ScoreAnalyticsQuery, ScoreParams } from './schemas.ts';

export const scoreRoutes: FastifyPluginAsyncTypebox<{ scores: ScoreService }> = async (app, { scores }) => {
  const tags = ['scores'];
  app.post(
    '/runs/:id/scores',
    {
      schema: {
        tags,
        summary: 'Score a run: a number, a boolean or a category under a name; the latest per name is the run’s',
        params: IdParams,
        body: NewScoreBody,
        response: { 200: Score, ...errorResponses(400, 401, 403, 404, 409, 413) },
      },
    },
    (req) => scores.add(principalOf(req), req.params.id, req.body),
  );
  app.get(
    '/runs/:id/scores',
    {
      schema: {
        tags,
        summary: 'Every score given to a run, oldest first',
        params: IdParams,
        response: { 200: Type.Array(Score), ...errorResponses(401, 404) },
      },
    },
    (req) => scores.list(principalOf(req), req.params.id),
  );
  app.delete(
    '/runs/:id/scores/:scoreId',
    {
      schema: {
        tags,
        summary: 'Delete a score; the one before it under its name becomes the run’s latest',
        params: ScoreParams,
        response: { 200: Type.Object({ id: Type.String() }), ...errorResponses(401, 403, 404) },
      },
    },
    (req) => scores.remove(principalOf(req), req.params.id, req.params.scoreId),
  );
  app.get(
    '/analytics/runs/scores',
    {
      schema: {
        tags: ['analytics'],
        summary: "Mean, min, max and count of a score's latest values per interaction version, model or day",
        querystring: ScoreAnalyticsQuery,
        response: { 200: ScoreAnalyticsAnswer, ...errorResponses(400, 401) },
      },
    },
    (req) => scores.analytics(principalOf(req), req.query),
  );
};
