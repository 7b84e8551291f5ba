/**
 * The composition root (style F5): opens the stores, builds the services with explicit
 * dependencies, registers routes. `cli.ts` calls `listen`; tests call `buildServer` and listen.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { egressPolicyOf, type Config } from './config.ts';
import { Outbound } from './providers/outbound.ts';
import type { Resolver } from './providers/egress.ts';
import { openDatabase, type OpenedDatabase } from './db/open.ts';
import { deriveKeys, resolveSecret } from './auth/secret.ts';
import { AuthService, type BootstrapResult } from './auth/service.ts';
import { authRoutes } from './auth/routes.ts';
import { installPermissions } from './auth/permissions.ts';
import { AuditLog } from './audit/log.ts';
import { AuditTrail } from './audit/trail.ts';
import { auditRoutes } from './audit/routes.ts';
import { RunRetention, retentionSettingsOf } from './runs/retention.ts';
import { retentionRoutes } from './runs/retention-routes.ts';
import { Limiter, limitsOf } from './limits/limiter.ts';
import { installLimits } from './limits/hook.ts';
import { limitRoutes } from './limits/routes.ts';
import { authenticate, installPrincipal } from './http/auth-hook.ts';
import { redactingLoggerOptions } from './http/log-redaction.ts';
import { installUrlGuard } from './http/url-guard.ts';
import { clientErrorHandler, installErrorHandling, installJsonParser } from './http/error-handler.ts';
import { installValidation, schemaController } from './http/validation.ts';
import { ErrorSchema } from './http/schemas.ts';
import { wireError } from './http/errors.ts';
import { EnvironmentService } from './interactions/environments.ts';
import { PromptService } from './interactions/prompts.ts';
import { TemplateEngine } from './templates/render.ts';
import { InteractionService } from './interactions/interactions.ts';
import { ChangeClock } from './interactions/change-clock.ts';
import { interactionRoutes } from './interactions/routes.ts';
import { RunService } from './runs/service.ts';
import { RunWriter, signallingWrites } from './runs/run-writer.ts';
import { ThreadRunWriter } from './runs/run-writer-thread.ts';
import { RunIntentLog } from './runs/run-intents.ts';
import { installRunReadBarrier } from './runs/read-barrier.ts';
import { WalCheckpointer } from './db/wal-checkpointer.ts';
import { StreamHub } from './runs/stream-hub.ts';
import { runRoutes } from './runs/routes.ts';
import { AnalyticsService, analyticsRoutes } from './analytics/index.ts';
import { RunFinder } from './runs/find.ts';
import { RunExporter } from './runs/export.ts';
import { RunRefSchema, RunSchema } from './runs/schemas.ts';
import { usableCores } from './util/cpu-quota.ts';
import { join } from 'node:path';
import { assertFreeDisk } from './util/free-disk.ts';
import { LocalBlobStore } from './blobs/local-store.ts';
import type { BlobStore } from './blobs/blob-store.ts';
import { UrlSigner } from './blobs/url-signer.ts';
import { BlobService } from './blobs/blob-service.ts';
import { blobRoutes } from './blobs/routes.ts';
import { fileRoutes } from './blobs/file-routes.ts';
import { TypeCatalog } from './objects/type-catalog.ts';
import { typeCatalogRoutes } from './objects/type-catalog-routes.ts';
import { ObjectService } from './objects/service.ts';
import { ObjectListing } from './objects/listing.ts';
import { ObjectExporter } from './objects/export.ts';
import { ObjectTypeService } from './objects/types-service.ts';
import { objectRoutes } from './objects/routes.ts';
import { ObjectRecordSchema, ObjectTypeSchema } from './objects/schemas.ts';
import { ReplicaRegistry } from './cluster/replicas.ts';
import { openNotifier } from './db/notify.ts';
import { Metrics } from './http/metrics.ts';
import { JobQueue } from './jobs/queue.ts';
import { WorkerPool } from './content/worker/pool.ts';
import { ContentPipeline } from './content/pipeline.ts';
import { RenditionService } from './content/renditions.ts';
import { contentRoutes } from './content/routes.ts';
import { CollectionService, collectionRoutes } from './collections/index.ts';
import { sql } from 'kysely';
import { EmbeddingService } from './embeddings/service.ts';
import { EmbeddingSettingsStore, parseStored, systemPrincipal } from './embeddings/settings.ts';
import { VectorIndexes } from './embeddings/index-registry.ts';
import { DEFAULT_HNSW } from './embeddings/vector-index.ts';
import { ObjectSimilarity } from './embeddings/object-search.ts';
import { embeddingsStep } from './embeddings/pipeline-step.ts';
import { embeddingRoutes } from './embeddings/routes.ts';
import { DEFAULT_STEPS } from './content/steps.ts';
import { ImportService } from './import/service.ts';
import { importRoutes } from './import/routes.ts';

export interface Orrery {
  app: FastifyInstance;
  config: Config;
  database: OpenedDatabase;
  bootstrap: BootstrapResult;
  services: {
    auth: AuthService;
    runs: RunService;
    jobs: JobQueue;
    content: ContentPipeline;
    embeddings: EmbeddingService;
    checkpointer?: WalCheckpointer;
  };
  replica: ReplicaRegistry;
  metrics: Metrics;
  /** Checks of GET /ready (features add theirs). */
  readiness: Array<() => Promise<unknown>>;
  /** Every API route as `METHOD /path`, for the OpenAPI coverage test. */
  routes: string[];
}

const VERSION = '0.1.0';

/** The S3 store and the AWS SDK behind it are loaded only when ORRERY_BLOB_URL names a bucket. */
async function openS3Store(blobUrl: string): Promise<BlobStore> {
  const { parseS3Url, S3BlobStore } = await import('./blobs/s3-store.ts');
  return new S3BlobStore(parseS3Url(blobUrl));
}

export interface BuildOptions {
  logger?: boolean | object;
  /** DNS for the outbound layer; tests stub it so that no name is resolved outside the machine. */
  resolve?: Resolver;
}

export async function buildServer(config: Config, opts: BuildOptions = {}): Promise<Orrery> {
  const database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  const { db, dialect } = database;
  try {
    const keys = deriveKeys(await resolveSecret(config, db, dialect));
    const audit = new AuditLog(db, dialect);
    const auth = new AuthService(db, dialect, config, keys.jwt, audit);
    const bootstrap = await auth.bootstrap();
    const changes = new ChangeClock();
    const outbound = new Outbound({
      policy: egressPolicyOf(config),
      resolve: opts.resolve,
      maxResultBytes: config.maxResultBytes,
    });
    const environments = new EnvironmentService(db, dialect, keys.encryption, changes, outbound, audit);
    const templates = new TemplateEngine({
      workers: config.templateWorkers,
      limits: {
        cpuMs: config.templateCpuMs,
        memoryBytes: config.templateMemoryBytes,
        maxOutput: config.templateMaxOutput,
      },
    });
    const prompts = new PromptService(db, dialect, changes, templates, audit);
    const interactions = new InteractionService(
      db,
      dialect,
      prompts,
      (p, id) => environments.get(p, id),
      changes,
      audit,
    );
    const hub = new StreamHub();
    const metrics = new Metrics();
    const replica = new ReplicaRegistry(db, config.replicaTimeoutSeconds * 1000);
    await replica.start();
    const notifier = openNotifier(database, config.databaseUrl);
    // Run embeddings: the hook reaches the embedding service built below, once requests arrive.
    // SQLite runs in this process: with a second core, its run writes get a thread of their own
    // (on one core the thread only adds its hand-over cost; bench/README.md). A container's CPU
    // quota counts, not only the CPUs the process may be scheduled on (util/cpu-quota.ts).
    // With the thread, a lone blocking run's row goes to an intent log first (runs/run-intents.ts): a
    // folder next to the database file, one log per process, swept by whichever process outlives it.
    const intents = database.file
      ? new RunIntentLog({ dir: `${database.file}-intents`, replica: replica.id })
      : undefined;
    const writer =
      database.file && usableCores() > 1
        ? new ThreadRunWriter(database.file, db, dialect, { intents })
        : new RunWriter(db, dialect);
    // SQLite's log is checkpointed on a thread while runs are written (db/wal-checkpointer.ts); the
    // other writes (a heartbeat every few seconds) do not keep that thread alive on an idle server.
    const checkpointer = database.file ? new WalCheckpointer(database.file) : undefined;
    const runWriter = checkpointer ? signallingWrites(writer, checkpointer) : writer;
    const limiter = new Limiter(db, dialect);
    const runs = new RunService({
      db,
      dialect,
      interactions,
      environments,
      templates,
      hub,
      changes,
      replica,
      notifier,
      metrics,
      streamTimeoutSeconds: config.streamTimeoutSeconds,
      maxInlineJson: config.maxInlineJsonBytes,
      embeddings: { embedRun: (s, r) => embeddings.embedRun(s, r) },
      writer: runWriter,
      intents,
      onRunEnded: (r) =>
        void limiter
          .charge(r.account, r.project, r.keyId, r.tokens, r.cost)
          .catch((err) => app.log.error({ err }, 'limits: could not count the usage of a run')),
    });
    const blobStore = config.blobUrl
      ? await openS3Store(config.blobUrl)
      : new LocalBlobStore(join(config.dataDir, 'blobs'), { durable: config.blobFsync });
    const blobs = new BlobService(db, dialect, blobStore, new UrlSigner(keys.urls), {
      publicUrl: () => config.publicUrl,
      maxUploadBytes: config.maxUploadBytes,
    });
    // Content processing: a durable job queue, worker processes for parsing and drawing, the steps (src/content).
    const jobs = new JobQueue(db, dialect, {
      concurrency: config.contentWorkers,
      perProject: config.jobProjectConcurrency,
      leaseMs: config.jobLeaseMs,
      maxAttempts: config.jobMaxAttempts,
      owner: replica.id,
      metrics,
      onError: (err, what) => app.log.error({ err }, `jobs: could not ${what}`),
    });
    // Embeddings and similarity (src/embeddings): the project's embedder, the vectors, the in-memory indexes.
    const vectorIndexes = new VectorIndexes(db, notifier, {
      exactBelow: config.vectorExactThreshold,
      replicaId: replica.id,
      scalar: config.vectorScalar,
      hnsw: { ...DEFAULT_HNSW, expansionSearch: config.vectorEfSearch },
      // Saved graphs (issue 20): in the blob store when it is S3, else in the data folder.
      graphs: {
        store: config.blobUrl
          ? blobStore
          : new LocalBlobStore(join(config.dataDir, 'vector-graphs'), { durable: false }),
        prefix: config.blobUrl ? 'vector-graphs/' : '',
        dialect: dialect.name,
        leaseMs: config.vectorGraphLeaseMs,
        pollMs: config.vectorGraphPollMs,
        events: (event, partition, detail) => {
          metrics.vectorGraphs.inc({ event });
          app.log.info({ partition, event, detail }, 'embeddings: similarity graph');
        },
      },
      searched: (mode) => metrics.vectorSearches.inc({ mode }),
      onError: (err, what) => app.log.error({ err }, `embeddings: could not ${what}`),
    });
    const embeddings = new EmbeddingService({
      db,
      dialect,
      settings: new EmbeddingSettingsStore(db, dialect, environments),
      indexes: vectorIndexes,
      queue: jobs,
      onError: (err, what) => app.log.error({ err }, `embeddings: could not ${what}`),
    });
    auth.onProjectDeleted(async (s) => {
      await blobs
        .purgeProject(s)
        .catch((err) => app.log.error({ err }, `could not delete the blobs of deleted project ${s.project}`));
      await vectorIndexes
        .pruneGraphs(s.project)
        .catch((err) =>
          app.log.error({ err }, `could not delete the similarity graphs of deleted project ${s.project}`),
        );
    });
    auth.useSetting('limits', {
      current: (_s, stored) => stored ?? null,
      prepare: async (_s, value) => limitsOf(value, 'limits'),
      changed: async (s) => limiter.forget('project', s.project),
    });
    auth.onKeyChanged((id) => limiter.forget('key', id));
    auth.useSetting('retention', {
      current: (_s, stored) => stored ?? null,
      prepare: async (_s, value) => retentionSettingsOf(value),
    });
    auth.useSetting('embeddings', {
      current: (_s, stored) => parseStored(stored),
      prepare: (s, value) => embeddings.prepareSettings(s, value),
      changed: (s, before, after) => embeddings.settingsChanged(s, before, after),
    });
    const contentPool = new WorkerPool({ size: config.contentWorkers, memoryMb: config.contentWorkerMemoryMb });
    const content = new ContentPipeline({
      db,
      dialect,
      blobs,
      queue: jobs,
      pool: contentPool,
      steps: [...DEFAULT_STEPS, embeddingsStep(embeddings)],
      limits: {
        maxPages: config.contentMaxPages,
        maxDecompressedBytes: config.contentMaxDecompressedBytes,
        maxImagePixels: config.contentMaxPixels,
        maxInputBytes: config.contentMaxInputBytes,
        stepTimeoutMs: config.contentStepTimeoutMs,
        workerMemoryMb: config.contentWorkerMemoryMb,
      },
      onError: (err, what) => app.log.error({ err }, `content: could not ${what}`),
    });
    const renditions = new RenditionService({ db, dialect, blobs, pipeline: content, waitMs: config.renditionWaitMs });
    const objectTypes = new ObjectTypeService(db, dialect, audit);
    const listing = new ObjectListing(db, dialect, objectTypes, embeddings, config.queryTimeoutMs);
    const exporter = new ObjectExporter(db, dialect, objectTypes, listing);
    const objects = new ObjectService({
      db,
      dialect,
      blobs,
      types: objectTypes,
      processing: content,
      renditions,
      audit,
      maxInlineJson: config.maxInlineJsonBytes,
      runExists: (p, id) =>
        runs.get(p, id).then(
          () => true,
          (err: { status?: number }) => (err?.status === 404 ? false : Promise.reject(err)),
        ),
      onBackgroundError: (err, what) => app.log.error({ err }, `objects: could not ${what}`),
      embeddings,
    });
    const retention = new RunRetention({
      db,
      dialect,
      audit,
      deleteObjects: (s, ids) => objects.bulkDelete(systemPrincipal(s), ids),
    });
    const similarity = new ObjectSimilarity(db, listing, embeddings, config.vectorExactThreshold);
    /** Checks behind GET /ready; features with an external dependency (blob storage) add theirs. */
    const readiness: Array<() => Promise<unknown>> = [() => sql`SELECT 1`.execute(db), () => blobs.check()];
    // The data folder holds the SQLite database, local blobs or intent logs: a full disk fails writes.
    if (database.file || !config.blobUrl) readiness.push(() => assertFreeDisk(config.dataDir, config.minFreeDiskBytes));
    let draining = false;

    const app = Fastify({
      // Every logger this server writes with redacts secrets (http/log-redaction.ts); callers may
      // add options (tests give a stream) but not drop the redaction.
      logger:
        opts.logger === false
          ? false
          : {
              level: config.logLevel,
              ...(typeof opts.logger === 'object' ? opts.logger : {}),
              ...redactingLoggerOptions(),
            },
      bodyLimit: 16 * 1024 * 1024,
      // Ids are opaque strings in paths; keep them intact.
      routerOptions: { maxParamLength: 500 },
      clientErrorHandler,
      // Response serializers from the build's compiled table when there (http/validation.ts).
      schemaController,
    }).withTypeProvider<TypeBoxTypeProvider>();
    if (checkpointer) {
      checkpointer.onError = (message) =>
        app.log.error(`sqlite: the checkpoint thread stopped (${message}); connections checkpoint by themselves`);
    }

    const routes: string[] = [];
    app.addHook('onRoute', (r) => {
      if (r.url.startsWith('/api/v1') && !(r.schema as { hide?: boolean } | undefined)?.hide) {
        for (const m of [r.method].flat()) if (m !== 'HEAD') routes.push(`${m} ${r.url}`);
      }
    });
    installUrlGuard(app);
    installJsonParser(app);
    installValidation(app);
    metrics.install(app);
    installErrorHandling(app);
    installPrincipal(app);
    app.addSchema(ErrorSchema);
    app.addSchema(RunSchema);
    app.addSchema(RunRefSchema);
    app.addSchema(ObjectRecordSchema);
    app.addSchema(ObjectTypeSchema);

    await app.register(swagger, {
      openapi: {
        openapi: '3.1.0',
        info: {
          title: 'Orrery',
          version: VERSION,
          description:
            'Execution and Content Object Service Interface: runs (execute interactions, list, search, stream) and the resources needed to define them.',
        },
        servers: [{ url: `${config.publicUrl}/api/v1` }],
        components: {
          securitySchemes: {
            bearerAuth: {
              type: 'http',
              scheme: 'bearer',
              description: 'An API key (sk-…) or a JWT from POST /token/issue',
            },
          },
        },
        security: [{ bearerAuth: [] }],
      },
      refResolver: { buildLocalReference: (json, _base, _fragment, i) => (json.$id as string) ?? `def-${i}` },
    });

    app.get('/health', { schema: { hide: true } }, async () => ({ status: 'ok', version: VERSION }));
    app.get('/ready', { schema: { hide: true } }, async (_req, reply) => {
      if (draining) return reply.code(503).send(wireError('not_ready', 503, 'shutting down'));
      const failures: string[] = [];
      await Promise.all(
        readiness.map((check) => check().catch((err: Error) => failures.push(err.message || String(err)))),
      );
      if (failures.length)
        return reply.code(503).send(wireError('not_ready', 503, `not ready: ${failures.join('; ')}`));
      return { status: 'ready', replica: replica.id };
    });
    app.get('/metrics', { schema: { hide: true } }, async (req, reply) => {
      if (config.metricsToken && req.headers.authorization !== `Bearer ${config.metricsToken}`) {
        return reply
          .code(401)
          .send(wireError('unauthorized', 401, 'GET /metrics needs "Authorization: Bearer <ORRERY_METRICS_TOKEN>"'));
      }
      metrics.executing.set(runs.executing);
      await jobs.refreshMetrics().catch((err) => app.log.warn({ err }, 'jobs: could not count queued jobs'));
      return reply.type(metrics.registry.contentType).send(await metrics.registry.metrics());
    });

    await app.register(
      async (api) => {
        api.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
        await api.register(async (authed) => {
          authed.addHook('onRequest', authenticate(auth));
          installPermissions(authed);
          installLimits(authed, limiter);
          installRunReadBarrier(authed, runs);
          await authed.register(authRoutes, { auth });
          await authed.register(interactionRoutes, { environments, prompts, interactions });
          await authed.register(runRoutes, {
            runs,
            finder: new RunFinder(db, dialect, config.queryTimeoutMs),
            metrics,
            exporter: new RunExporter(db, dialect),
          });
          await authed.register(analyticsRoutes, { analytics: new AnalyticsService(db, dialect, environments) });
          await authed.register(objectRoutes, { objects, listing, exporter, types: objectTypes, blobs, similarity });
          await authed.register(embeddingRoutes, {
            embeddings,
            configure: (p, settings) => auth.updateProject(p, p.project.id, { embeddings: settings }),
          });
          await authed.register(fileRoutes, { blobs });
          await authed.register(typeCatalogRoutes, { catalog: new TypeCatalog(db, dialect) });
          await authed.register(contentRoutes, { renditions });
          await authed.register(auditRoutes, { trail: new AuditTrail(db, dialect) });
          await authed.register(retentionRoutes, { retention });
          await authed.register(limitRoutes, { limiter });
          await authed.register(importRoutes, {
            imports: new ImportService(db, dialect, config.maxInlineJsonBytes, runWriter),
          });
          await authed.register(collectionRoutes, {
            collections: new CollectionService({ db, dialect, listing, types: objectTypes, similarity }),
          });
        });
      },
      { prefix: '/api/v1' },
    );
    // Public context (style F1): the signature in a blob URL is its credential.
    await app.register(blobRoutes, { blobs });
    await app.register((await import('./console/routes.ts')).consoleRoutes); // the web console (src/console), public: the SPA holds no data

    let retaining = false;
    const sweepRetention = () => {
      if (retaining) return;
      retaining = true;
      limiter.sweep().catch((err) => app.log.error({ err }, 'limits: could not delete old usage counters'));
      retention
        .sweep()
        .then(
          (r) =>
            (r.expiredRuns || r.retainedRuns || r.expiredObjects) &&
            app.log.info(r, 'retention: deleted expired runs and objects'),
          (err) => app.log.error({ err }, 'retention sweeper failed'),
        )
        .finally(() => (retaining = false));
    };
    const retentionSweeper = setInterval(sweepRetention, config.retentionSweepSeconds * 1000);
    retentionSweeper.unref();
    const sweepLost = () => void runs.sweepLost().catch((err) => app.log.error({ err }, 'lost-run sweeper failed'));
    const sweep = () => {
      runs.sweepUnconsumed().catch((err) => app.log.error({ err }, 'stream sweeper failed'));
      runs.sweepChunks().catch((err) => app.log.error({ err }, 'chunk sweeper failed'));
      runs.sweepCache().catch((err) => app.log.error({ err }, 'result cache sweeper failed'));
    };
    const sweeper = setInterval(sweep, Math.min(15_000, (config.replicaTimeoutSeconds * 1000) / 2));
    sweeper.unref();
    // Every heartbeat: a dead replica's runs fail within ORRERY_REPLICA_TIMEOUT (cluster/replicas.ts).
    const lostSweeper = setInterval(sweepLost, replica.heartbeatMs);
    lostSweeper.unref();
    // Before the first request: the runs that a stopped process of this host left `processing` are
    // failed now, not once its heartbeat times out (cluster/replicas.ts knows its process is gone).
    await runs.sweepLost().catch((err) => app.log.error({ err }, 'lost-run sweeper failed'));
    setImmediate(sweep);
    // Uploads cut off by a crash leave temporary files in the blob folder: swept at start and then
    // as often as they can go stale (an upload in progress writes, so its file is never idle long).
    const sweepUploads = () => {
      if (blobStore instanceof LocalBlobStore) {
        blobStore.sweepTemporary(config.uploadStaleMs).then(
          (n) => n && app.log.info(`removed ${n} temporary upload file(s) left by interrupted uploads`),
          (err) => app.log.error({ err }, 'temporary upload sweeper failed'),
        );
      }
    };
    const uploadSweeper = setInterval(sweepUploads, Math.min(config.uploadStaleMs, 600_000));
    uploadSweeper.unref();
    setImmediate(sweepUploads);
    // Graceful shutdown: fail readiness at once, stop accepting, let streams and runs finish
    // (bounded by ORRERY_SHUTDOWN_TIMEOUT), then release the database.
    let idleCloser: NodeJS.Timeout | undefined;
    app.addHook('preClose', async () => {
      draining = true;
      // Closing closes idle keep-alive connections once; one busy at that moment would stay open
      // after its answer until its client or the keep-alive timeout (72 s) ended it, and the
      // process with it. Close each as soon as it is idle.
      idleCloser = setInterval(() => app.server.closeIdleConnections(), 100);
      idleCloser.unref();
    });
    app.addHook('onClose', async () => {
      clearInterval(idleCloser);
      clearInterval(sweeper);
      clearInterval(lostSweeper);
      clearInterval(uploadSweeper);
      clearInterval(retentionSweeper);
      const deadline = Date.now() + config.shutdownTimeoutSeconds * 1000;
      while (runs.executing > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      await runs.close();
      await checkpointer?.close();
      // Running jobs go back to the queue at once (not after their lease), for this or another process.
      content.stopRecovery();
      await jobs.stop(Math.min(5000, config.shutdownTimeoutSeconds * 1000));
      await contentPool.close();
      vectorIndexes.close();
      await replica.stop();
      await notifier.close();
      await outbound.close();
      await templates.close();
      await db.destroy();
    });
    await app.ready();
    jobs.start();
    content.startRecovery();
    return {
      app,
      config,
      database,
      bootstrap,
      services: { auth, runs, jobs, content, embeddings, checkpointer },
      routes,
      replica,
      metrics,
      readiness,
    } as Orrery;
  } catch (err) {
    await db.destroy().catch(() => {});
    throw err;
  }
}
