/** Datasets (src/datasets): the service, its routes, and its rows inside a project's deletion. */
import type { FastifyInstance } from 'fastify';
import type { AuthService } from '../auth/service.ts';
import type { OpenedDatabase } from '../db/open.ts';
import { datasetRoutes } from './routes.ts';
import { DatasetService, type RunsReader } from './service.ts';
import { datasetsOf, deleteProjectDatasets } from './store.ts';

export function createDatasets(deps: { database: OpenedDatabase; auth: AuthService; runs: RunsReader }) {
  const db = datasetsOf(deps.database.db);
  const datasets = new DatasetService(db, deps.database.dialect, deps.runs);
  deps.auth.ownsProjectRows((trx, s) => deleteProjectDatasets(datasetsOf(trx), s));
  return {
    datasets,
    async register(app: FastifyInstance): Promise<void> {
      await app.register(datasetRoutes, { datasets });
    },
  };
}

export type Datasets = ReturnType<typeof createDatasets>;
