/** Evaluators (src/evaluators): parse, call the service, answer (style F2). */
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../http/auth-hook.ts';
import { errorResponses, IdParams } from '../http/schemas.ts';
import type { EvaluatorService } from './service.ts';
import {
  CreateEvaluatorBody,
  EvaluateBody,
  EvaluationAnswer,
  Evaluator,
  ListEvaluatorsQuery,
  RetrieveEvaluatorQuery,
  UpdateEvaluatorBody,
} from './schemas.ts';

export const evaluatorRoutes: FastifyPluginAsyncTypebox<{ evaluators: EvaluatorService }> = async (
  app,
  { evaluators },
) => {
  const tags = ['evaluators'];
  app.post(
    '/evaluators',
    {
      schema: {
        tags,
        summary: 'Create an evaluator (version 1)',
        body: CreateEvaluatorBody,
        response: { 200: Evaluator, ...errorResponses(400, 401, 409) },
      },
    },
    (req) => evaluators.create(principalOf(req), req.body),
  );
  app.get(
    '/evaluators',
    {
      schema: {
        tags,
        summary: 'List evaluators (their current versions), newest change first',
        querystring: ListEvaluatorsQuery,
        response: { 200: Type.Array(Evaluator), ...errorResponses(400, 401) },
      },
    },
    (req) => evaluators.list(principalOf(req), req.query),
  );
  app.get(
    '/evaluators/:id',
    {
      schema: {
        tags,
        summary: 'Retrieve an evaluator at its current version, or at ?version=',
        params: IdParams,
        querystring: RetrieveEvaluatorQuery,
        response: { 200: Evaluator, ...errorResponses(400, 401, 404) },
      },
    },
    (req) => evaluators.retrieve(principalOf(req), req.params.id, req.query.version),
  );
  app.put(
    '/evaluators/:id',
    {
      schema: {
        tags,
        summary: 'Make the next version of an evaluator (earlier versions stay as they were)',
        params: IdParams,
        body: UpdateEvaluatorBody,
        response: { 200: Evaluator, ...errorResponses(400, 401, 404) },
      },
    },
    (req) => evaluators.update(principalOf(req), req.params.id, req.body),
  );
  app.delete(
    '/evaluators/:id',
    {
      schema: {
        tags,
        summary: 'Delete an evaluator and its versions (the scores it gave stay on their runs)',
        params: IdParams,
        response: { 200: Type.Object({ id: Type.String() }), ...errorResponses(401, 404) },
      },
    },
    (req) => evaluators.remove(principalOf(req), req.params.id),
  );
  app.post(
    '/evaluators/:id/evaluate',
    {
      schema: {
        tags,
        summary: "Score a run with the evaluator: the score is recorded on the run, or the evaluator's error answered",
        params: IdParams,
        body: EvaluateBody,
        response: { 200: EvaluationAnswer, ...errorResponses(400, 401, 403, 404, 409) },
      },
    },
    (req) => evaluators.evaluateRun(principalOf(req), req.params.id, req.body),
  );
};
