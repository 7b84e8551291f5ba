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
import { EvaluationRules } from './rules.ts';
import { ruleRoutes } from './rules-routes.ts';
import { deleteProjectRules, rulesOf } from './rules-store.ts';
import type { Principal } from '../auth/principal.ts';

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
  // An interaction by id first (a version's own id), else by selector (Name@1).
  const interactionOf = (p: Principal, selector: string) =>
    interactions.interactions
      .get(p, selector)
      .catch((err: { status?: number }) =>
        err?.status === 404 ? interactions.interactions.resolveSelector(p, selector) : Promise.reject(err),
      );
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
      interaction: (p, selector) => interactionOf(p, selector),
      environment: (p, id) => interactions.environments.get(p, id),
      evaluator: async (p, id) => {
        const { row, version } = await evaluators.at(p, id);
        return { id: row.id, name: row.name, version: Number(version.version) };
      },
      datasets: deps.datasets,
    },
    runner,
  );
  const rules = new EvaluationRules({
    db: rulesOf(database.db),
    dialect: database.dialect,
    queue: runs.asyncQueue,
    // A rule on an interaction covers its draft and every version, published later ones included.
    interactionIds: async (p, selector) => {
      const found = (await interactionOf(p, selector)) as { id: string; parent?: string };
      const draft = found.parent ?? found.id;
      const versions = await interactions.interactions.versions(p, draft);
      return [draft, ...versions.map((v) => v.id)];
    },
    evaluatorExists: (p, id) => evaluators.exists(p, id),
    checkQuery: async (p, query) => {
      await runs.runs.search(p, { query, limit: 1 });
    },
    newRuns: async (p, q) => {
      const found = await runs.runs.search(p, {
        query: q.query,
        filters: {
          status: 'completed',
          updated_at: { gte: q.since },
          ...(q.interaction ? { interaction: q.interaction } : {}),
        },
        limit: q.limit,
      });
      const list = (Array.isArray(found) ? found : ((found as { results?: unknown[] }).results ?? [])) as Array<{
        id: string;
        updated_at: string;
      }>;
      return list.map((r) => ({ id: r.id, updated_at: r.updated_at }));
    },
    getRun: (p, id) => runs.runs.get(p, id) as never,
    evaluate: async (p, id, run) => {
      const { row, version } = await evaluators.at(p, id);
      return evaluators.judgeAndRecord(p, row, version, run.id, {
        input: (run.parameters as Record<string, unknown> | undefined) ?? {},
        output: outputOf(run),
        run: { execution_time: run.execution_time ?? null, cost: run.cost?.total ?? null },
      });
    },
    admit: async (p) => {
      if (!limiter.unlimited(p)) await limiter.admit(p, true);
    },
  });
  deps.auth.ownsProjectRows(async (trx, s) => ({
    ...(await deleteProjectExperiments(experimentsOf(trx), s)),
    ...(await deleteProjectRules(rulesOf(trx), s)),
  }));
  return {
    experiments,
    async register(app: FastifyInstance): Promise<void> {
      await app.register(experimentRoutes, { experiments });
      await app.register(ruleRoutes, { rules });
    },
  };
}

export type Experiments = ReturnType<typeof createExperiments>;
