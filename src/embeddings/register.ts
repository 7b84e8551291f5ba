/**
 * The embeddings feature: the project's embedder settings, the vectors and their in-memory indexes
 * (with saved similarity graphs), the embedding service and its routes.
 */
import { join } from 'node:path';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { Config } from '../config.ts';
import type { OpenedDatabase } from '../db/open.ts';
import type { Notifier } from '../db/notify.ts';
import type { Principal } from '../auth/principal.ts';
import type { ProjectSettingHandler } from '../auth/service.ts';
import type { Metrics } from '../http/metrics.ts';
import type { JobQueue } from '../jobs/queue.ts';
import type { EnvironmentService } from '../interactions/environments.ts';
import type { BlobStore } from '../blobs/blob-store.ts';
import { LocalBlobStore } from '../blobs/local-store.ts';
import { authReads } from '../auth/reads.ts';
import { EmbeddingService, type EmbeddableObjects } from './service.ts';
import { EmbeddingSettingsStore, parseStored, type EmbeddingSettings } from './settings.ts';
import { VectorIndexes } from './index-registry.ts';
import { DEFAULT_HNSW } from './vector-index.ts';
import { embeddingRoutes } from './routes.ts';
import { deleteProjectVectors } from './store.ts';

export interface EmbeddingsDeps {
  config: Config;
  database: OpenedDatabase;
  notifier: Notifier;
  replicaId: string;
  metrics: Metrics;
  environments: EnvironmentService;
  queue: JobQueue;
  /** The blob store: saved graphs go there when it is S3. */
  blobStore: BlobStore;
  /** The objects' rows they embed, read by the objects feature. */
  objects: EmbeddableObjects;
  log: FastifyBaseLogger;
}

export function createEmbeddings(deps: EmbeddingsDeps) {
  const { config, database, notifier, metrics, log } = deps;
  const { db, dialect } = database;
  const { projectSettings } = authReads(db, dialect);
  const vectorIndexes = new VectorIndexes(db, notifier, {
    exactBelow: config.vectorExactThreshold,
    replicaId: deps.replicaId,
    scalar: config.vectorScalar,
    hnsw: { ...DEFAULT_HNSW, expansionSearch: config.vectorEfSearch },
    // Saved graphs: in the blob store when it is S3, else in the data folder.
    graphs: {
      store: config.blobUrl
        ? deps.blobStore
        : new LocalBlobStore(join(config.dataDir, 'vector-graphs'), { durable: false }),
      prefix: config.blobUrl ? 'vector-graphs/' : '',
      dialect: dialect.name,
      projectSettings,
      leaseMs: config.vectorGraphLeaseMs,
      pollMs: config.vectorGraphPollMs,
      events: (event, partition, detail) => {
        metrics.vectorGraphs.inc({ event });
        log.info({ partition, event, detail }, 'embeddings: similarity graph');
      },
    },
    searched: (mode) => metrics.vectorSearches.inc({ mode }),
    onError: (err, what) => log.error({ err }, `embeddings: could not ${what}`),
  });
  const embeddings = new EmbeddingService({
    db,
    dialect,
    settings: new EmbeddingSettingsStore(projectSettings, deps.environments),
    indexes: vectorIndexes,
    queue: deps.queue,
    objects: deps.objects,
    onError: (err, what) => log.error({ err }, `embeddings: could not ${what}`),
  });
  /** The project setting `embeddings` (PUT /projects/:id). */
  const setting: ProjectSettingHandler<EmbeddingSettings> = {
    current: (_s, stored) => parseStored(stored),
    prepare: (s, value) => embeddings.prepareSettings(s, value),
    changed: (s, before, after) => embeddings.settingsChanged(s, before, after),
  };
  return {
    vectorIndexes,
    embeddings,
    /** Deletes its rows of a project, inside the project's deletion (auth.ownsProjectRows). */
    deleteProjectRows: deleteProjectVectors,
    setting,
    /** Its routes, behind authentication; `configure` stores a project's settings as PUT /projects/:id does. */
    register: (
      authed: FastifyInstance,
      configure: (p: Principal, settings: Record<string, unknown>) => Promise<unknown>,
    ) => authed.register(embeddingRoutes, { embeddings, configure }),
    /** Drops a deleted project's saved similarity graphs. */
    pruneProject: (project: string) => vectorIndexes.pruneGraphs(project),
    close: () => vectorIndexes.close(),
  };
}

export type Embeddings = ReturnType<typeof createEmbeddings>;
