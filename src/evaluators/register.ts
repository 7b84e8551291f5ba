/** Evaluators (src/evaluators): the service, its routes, and its rows inside a project's deletion. */
import type { FastifyInstance } from 'fastify';
import type { AuthService } from '../auth/service.ts';
import type { OpenedDatabase } from '../db/open.ts';
import { evaluatorRoutes } from './routes.ts';
import { EvaluatorService, type EvaluatorDeps } from './service.ts';
import { deleteProjectEvaluators, evaluatorsOf } from './store.ts';

export function createEvaluators(deps: { database: OpenedDatabase; auth: AuthService } & EvaluatorDeps) {
  const { database, auth, ...rest } = deps;
  const evaluators = new EvaluatorService(evaluatorsOf(database.db), database.dialect, rest);
  auth.ownsProjectRows((trx, s) => deleteProjectEvaluators(evaluatorsOf(trx), s));
  return {
    evaluators,
    async register(app: FastifyInstance): Promise<void> {
      await app.register(evaluatorRoutes, { evaluators });
    },
  };
}

export type Evaluators = ReturnType<typeof createEvaluators>;
