/**
 * Experiments (src/experiments): the service, its job on the queue of async runs, its routes, and
 * its rows inside a project's deletion. What it needs of the other features goes through their
 * services: runs are made by the runs service, scored by the evaluators', admitted by the limiter.
 */
import type { FastifyInstance } from 'fastify';
import type { AuthService } from '../auth/service.ts';
import type { OpenedDatabase } from '../db/open.ts';
import type { Interactions } from '../interactions/register.ts';
import type { Runs } from '../runs/register.ts';
import type { DatasetService } from '../datasets/service.ts';
import type { EvaluatorService } from '../evaluators/service.ts';
import { outputOf } from '../evaluators/service.ts';
import type { Limiter } from '../limits/limiter.ts';
import { experimentRoutes } from './routes.ts';
import { ExperimentRunner, type RunLike } from './runner.ts';
import { ExperimentService } from './service.ts';
import { deleteProjectExperiments, experimentsOf } from './store.ts';

export interface ExperimentsDeps {
  database: OpenedDatabase;
  auth: AuthService;
  runs: Runs;
  interactions: Interactions;
  datasets: DatasetService;
  evaluators: EvaluatorService;
  limiter: Limiter;
  onError?: (err: unknown, what: string) => void;
}

export function createExperiments(deps: ExperimentsDeps) {
  const { database, runs, interactions, evaluators, limiter } = deps;
  const db = experimentsOf(database.db);
  const runner = new ExperimentRunner({
    db,
    dialect: database.dialect,
    queue: runs.asyncQueue,
    run: async (p, input) => {
      const run = (await runs.runs.create(p, input, { ip: 'experiment' })) as RunLike;
      // A run answers before its row is written (runs/run-writer.ts): its scores need the row.
      await runs.runs.whenStored();
      return run;
    },
    evaluate: async (p, ev, run, item) => {
      const { row, version } = await evaluators.at(p, ev.id, ev.version);
      return evaluators.judgeAndRecord(p, row, version, run.id, {
        input: item.data,
        output: outputOf(run),
        ...(item.expected !== undefined ? { expected: item.expected } : {}),
        run: { execution_time: run.execution_time ?? null, cost: run.cost?.total ?? null },
      });
    },
    admit: async (p) => {
      if (!limiter.unlimited(p)) await limiter.admit(p, true);
    },
    ...(deps.onError ? { onError: deps.onError } : {}),
  });
  const experiments = new ExperimentService(
    db,
    database.dialect,
    {
      // An id first (a version's own id), else a selector (Name@1).
      interaction: (p, selector) =>
        interactions.interactions
          .get(p, selector)
          .catch((err: { status?: number }) =>
            err?.status === 404 ? interactions.interactions.resolveSelector(p, selector) : Promise.reject(err),
          ),
      environment: (p, id) => interactions.environments.get(p, id),
      evaluator: async (p, id) => {
        const { row, version } = await evaluators.at(p, id);
        return { id: row.id, name: row.name, version: Number(version.version) };
      },
      datasets: deps.datasets,
    },
    runner,
  );
  deps.auth.ownsProjectRows((trx, s) => deleteProjectExperiments(experimentsOf(trx), s));
  return {
    experiments,
    async register(app: FastifyInstance): Promise<void> {
      await app.register(experimentRoutes, { experiments });
    },
  };
}

export type Experiments = ReturnType<typeof createExperiments>;
