/**
 * Routes of agents: the stop signal (Vertesia's `agents/:id/signal/stop`). An agent is started
 * with POST /execute/async (`type: "conversation"`) and read as its run (GET /runs/:id).
 */
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../http/auth-hook.ts';
import { errorResponses } from '../http/schemas.ts';
import { BadRequest } from '../util/errors.ts';
import type { AgentRunner } from './runner.ts';

export const agentRoutes: FastifyPluginAsyncTypebox<{ runner: AgentRunner }> = async (app, { runner }) => {
  app.post(
    '/agents/:id/signal/:signal',
    {
      schema: {
        tags: ['agents'],
        summary:
          "Signals an agent: only stop, which ends it (failed, code cancelled) before its next step; the agent's id is its run's",
        params: Type.Object({ id: Type.String({ maxLength: 200 }), signal: Type.String({ maxLength: 100 }) }),
        body: Type.Optional(Type.Object({}, { additionalProperties: false })),
        response: {
          200: Type.Object({ id: Type.String(), stop_requested: Type.Boolean() }),
          ...errorResponses(400, 401, 404, 409),
        },
      },
    },
    async (req) => {
      if (req.params.signal !== 'stop')
        throw new BadRequest(`signal ${JSON.stringify(req.params.signal)} is not supported: only stop is`);
      return runner.stop(principalOf(req), req.params.id);
    },
  );
};
