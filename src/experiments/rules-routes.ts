/** Online evaluation rules (src/experiments/rules.ts): parse, call the service, answer (style F2). */
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../http/auth-hook.ts';
import { errorResponses, IdParams } from '../http/schemas.ts';
import type { EvaluationRules } from './rules.ts';
import { CreateRuleBody, ListRulesQuery, Rule, UpdateRuleBody } from './schemas.ts';

export const ruleRoutes: FastifyPluginAsyncTypebox<{ rules: EvaluationRules }> = async (app, { rules }) => {
  const tags = ['evaluation rules'];
  app.post(
    '/evaluation-rules',
    {
      schema: {
        tags,
        summary: "Score a sampled share of an interaction's (or a run query's) new production runs in the background",
        body: CreateRuleBody,
        response: { 200: Rule, ...errorResponses(400, 401, 403, 409) },
      },
    },
    (req) => rules.create(principalOf(req), req.body),
  );
  app.get(
    '/evaluation-rules',
    {
      schema: {
        tags,
        summary: 'List online evaluation rules, newest first',
        querystring: ListRulesQuery,
        response: { 200: Type.Array(Rule), ...errorResponses(400, 401) },
      },
    },
    (req) => rules.list(principalOf(req), req.query),
  );
  app.get(
    '/evaluation-rules/:id',
    {
      schema: {
        tags,
        summary: 'An online evaluation rule, with the runs it scored and its last error',
        params: IdParams,
        response: { 200: Rule, ...errorResponses(401, 404) },
      },
    },
    (req) => rules.retrieve(principalOf(req), req.params.id),
  );
  app.put(
    '/evaluation-rules/:id',
    {
      schema: {
        tags,
        summary: 'Change a rule (enabled: false pauses it)',
        params: IdParams,
        body: UpdateRuleBody,
        response: { 200: Rule, ...errorResponses(400, 401, 404, 409) },
      },
    },
    (req) => rules.update(principalOf(req), req.params.id, req.body),
  );
  app.delete(
    '/evaluation-rules/:id',
    {
      schema: {
        tags,
        summary: 'Delete a rule (the scores it gave stay on their runs)',
        params: IdParams,
        response: { 200: Type.Object({ id: Type.String() }), ...errorResponses(401, 404) },
      },
    },
    (req) => rules.remove(principalOf(req), req.params.id),
  );
};
