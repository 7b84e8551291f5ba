/** Scores on runs (src/scores): the service, its routes, and its rows inside a project's deletion. */
import type { FastifyInstance } from 'fastify';
import type { AuthService } from '../auth/service.ts';
import type { OpenedDatabase } from '../db/open.ts';
import { scoreRoutes } from './routes.ts';
import { ScoreService, type ScoreTargets } from './service.ts';
import { deleteProjectScores, scoresOf } from './store.ts';

export function createScores(deps: { database: OpenedDatabase; auth: AuthService; targets: ScoreTargets }) {
  const db = scoresOf(deps.database.db);
  const scores = new ScoreService(db, deps.targets);
  // Before the runs go: a score references its run.
  deps.auth.ownsProjectRows((trx, s) => deleteProjectScores(scoresOf(trx), s));
  return {
    scores,
    async register(app: FastifyInstance): Promise<void> {
      await app.register(scoreRoutes, { scores });
    },
  };
}

export type Scores = ReturnType<typeof createScores>;
