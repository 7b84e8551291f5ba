/** Experiments (src/experiments): parse, call the service, answer (style F2). */
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../http/auth-hook.ts';
import { errorResponses, IdParams } from '../http/schemas.ts';
import type { ExperimentService } from './service.ts';
import {
  Comparison,
  CompareQuery,
  CreateExperimentBody,
  Experiment,
  ExperimentItem,
  ItemsQuery,
  ListExperimentsQuery,
} from './schemas.ts';

export const experimentRoutes: FastifyPluginAsyncTypebox<{ experiments: ExperimentService }> = async (
  app,
  { experiments },
) => {
  const tags = ['experiments'];
  app.post(
    '/experiments',
    {
      schema: {
        tags,
        summary:
          'Start an experiment: every item of the dataset version through every variant as runs, each scored by every evaluator, in the background',
        body: CreateExperimentBody,
        response: { 200: Experiment, ...errorResponses(400, 401, 403, 413) },
      },
    },
    (req) => experiments.create(principalOf(req), req.body),
  );
  app.get(
    '/experiments',
    {
      schema: {
        tags,
        summary: 'List experiments, newest first, with their progress (GET /experiments/:id has the figures)',
        querystring: ListExperimentsQuery,
        response: { 200: Type.Array(Experiment), ...errorResponses(400, 401) },
      },
    },
    (req) => experiments.list(principalOf(req), req.query),
  );
  app.get(
    '/experiments/:id',
    {
      schema: {
        tags,
        summary: 'An experiment: its status, progress and per-variant figures (scores, latency, tokens, cost)',
        params: IdParams,
        response: { 200: Experiment, ...errorResponses(401, 404) },
      },
    },
    (req) => experiments.retrieve(principalOf(req), req.params.id),
  );
  app.get(
    '/experiments/:id/items',
    {
      schema: {
        tags,
        summary: "An experiment's items in dataset order, each with its run and scores per variant",
        params: IdParams,
        querystring: ItemsQuery,
        response: { 200: Type.Array(ExperimentItem), ...errorResponses(400, 401, 404) },
      },
    },
    (req) => experiments.items(principalOf(req), req.params.id, req.query),
  );
  app.post(
    '/experiments/:id/cancel',
    {
      schema: {
        tags,
        summary: 'Cancel an experiment: its queued runs are not made (the ones being made finish and are scored)',
        params: IdParams,
        response: { 200: Experiment, ...errorResponses(401, 404, 409) },
      },
    },
    (req) => experiments.cancel(principalOf(req), req.params.id),
  );
  app.post(
    '/experiments/:id/items/:itemId/rerun',
    {
      schema: {
        tags,
        summary: "Run an item's failed runs again (their evaluators too); the experiment resumes",
        params: Type.Object({ id: Type.String({ minLength: 1 }), itemId: Type.String({ minLength: 1 }) }),
        response: { 200: Experiment, ...errorResponses(401, 403, 404, 409) },
      },
    },
    (req) => experiments.rerunItem(principalOf(req), req.params.id, req.params.itemId),
  );
  app.get(
    '/experiments/:id/compare',
    {
      schema: {
        tags,
        summary: 'Compare with another experiment: both, and per shared variant and evaluator the differences',
        params: IdParams,
        querystring: CompareQuery,
        response: { 200: Comparison, ...errorResponses(400, 401, 404) },
      },
    },
    (req) => experiments.compare(principalOf(req), req.params.id, req.query.with),
  );
  app.delete(
    '/experiments/:id',
    {
      schema: {
        tags,
        summary: 'Delete an ended experiment (its runs and their scores stay)',
        params: IdParams,
        response: { 200: Type.Object({ id: Type.String() }), ...errorResponses(401, 404, 409) },
      },
    },
    (req) => experiments.remove(principalOf(req), req.params.id),
  );
};
