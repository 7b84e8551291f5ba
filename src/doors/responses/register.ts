/**
 * OpenAI's Responses API (src/doors/responses) at {origin}/v1/responses, in its own authenticated
 * context with the OpenAI door's error shape: an adapter on the same foundation (model
 * addressing, door runs), each call a run of `sys:responses`.
 */
import type { FastifyInstance } from 'fastify';
import type { AuthService } from '../../auth/service.ts';
import { installPermissions, type Permission } from '../../auth/permissions.ts';
import { authenticate } from '../../http/auth-hook.ts';
import { installLimits } from '../../limits/hook.ts';
import type { Limiter } from '../../limits/limiter.ts';
import type { Interactions } from '../../interactions/register.ts';
import type { Runs } from '../../runs/register.ts';
import { installRunReadBarrier } from '../../runs/read-barrier.ts';
import { ModelAddressing } from '../openai/addressing.ts';
import { toOpenAIError } from '../openai/errors.ts';
import { responsesRoutes } from './routes.ts';
import { ResponsesDoor } from './service.ts';

const DOOR_PERMISSIONS: Record<string, Permission> = {
  'POST /v1/responses': 'interaction:execute',
};

export interface ResponsesDoorDeps {
  auth: AuthService;
  limiter: Limiter;
  interactions: Interactions;
  runs: Runs;
}

export function createResponsesDoor(deps: ResponsesDoorDeps) {
  const { auth, limiter } = deps;
  const { environments, changes } = deps.interactions;
  const runs = deps.runs.runs;
  const addressing = new ModelAddressing(environments, changes, async (p) => {
    const project = await auth.getProject(p, p.project.id);
    const id = project.configuration.default_environment;
    return typeof id === 'string' && id ? id : undefined;
  });
  const door = new ResponsesDoor({ runs, addressing });
  return {
    async register(app: FastifyInstance): Promise<void> {
      await app.register(
        async (v1) => {
          v1.setErrorHandler((err, req, reply) => {
            const { status, headers, body } = toOpenAIError(err);
            if (status >= 500) req.log.error({ err }, 'responses door: unhandled error');
            return reply.code(status).headers(headers).send(body);
          });
          v1.addHook('onRequest', authenticate(auth));
          installPermissions(v1, DOOR_PERMISSIONS);
          installLimits(v1, limiter);
          installRunReadBarrier(v1, runs);
          await v1.register(responsesRoutes, { door, runs });
        },
        { prefix: '/v1' },
      );
    },
  };
}
