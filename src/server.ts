/**
 * The composition root (style F5): opens the database, builds each feature with explicit
 * dependencies (src/<feature>/register.ts: its stores, services and routes), registers their routes
 * in the authenticated API context or the public one, and starts and stops them. `cli.ts` calls
 * `listen`; tests call `buildServer` and listen.
 */
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { egressPolicyOf, type Config } from './config.ts';
import { Outbound } from './providers/outbound.ts';
import type { Resolver } from './providers/egress.ts';
import { openDatabase, type OpenedDatabase } from './db/open.ts';
import { openNotifier } from './db/notify.ts';
import { deriveKeys, resolveSecret } from './auth/secret.ts';
import { AuthService, type BootstrapResult } from './auth/service.ts';
import { getProject } from './auth/store.ts';
import { authRoutes } from './auth/routes.ts';
import { installPermissions } from './auth/permissions.ts';
import { AuditLog } from './audit/log.ts';
import { AuditTrail } from './audit/trail.ts';
import { auditRoutes } from './audit/routes.ts';
import { retentionSettingsOf, type RunRetention } from './runs/retention.ts';
import { Limiter, limitsOf } from './limits/limiter.ts';
import { installLimits } from './limits/hook.ts';
import { limitRoutes } from './limits/routes.ts';
import { slotRoutes } from './limits/slot-routes.ts';
import { authenticate } from './http/auth-hook.ts';
import { createApp, registerProbes } from './http/app.ts';
import { Metrics } from './http/metrics.ts';
import { createInteractions, type Interactions } from './interactions/register.ts';
import type { RunService } from './runs/service.ts';
import { createRuns, type Runs } from './runs/register.ts';
import { installRunReadBarrier } from './runs/read-barrier.ts';
import { installReadCancellation } from './db/read-context.ts';
import { RunRefSchema, RunSchema } from './runs/schemas.ts';
import type { WalCheckpointer } from './db/wal-checkpointer.ts';
import { AnalyticsService, analyticsRoutes } from './analytics/index.ts';
import { assertFreeDisk } from './util/free-disk.ts';
import { createBlobs, type Blobs } from './blobs/register.ts';
import { createObjects, type Objects } from './objects/register.ts';
import { DEFAULT_MEDIA_BOUNDS } from './media/bounds.ts';
import { MediaService } from './media/service.ts';
import { ObjectRecordSchema, ObjectTypeSchema } from './objects/schemas.ts';
import { ReplicaRegistry } from './cluster/replicas.ts';
import { JobQueue } from './jobs/queue.ts';
import type { ContentPipeline } from './content/pipeline.ts';
import { createContent, type Content } from './content/register.ts';
import { CollectionService, collectionRoutes } from './collections/index.ts';
import { deleteProjectCollections } from './collections/store.ts';
import { createDatasets, type Datasets } from './datasets/register.ts';
import { createScores, type Scores } from './scores/register.ts';
import { createEvaluators, type Evaluators } from './evaluators/register.ts';
import { outputOf } from './evaluators/service.ts';
import { createAgents, type Agents } from './agents/register.ts';
import { deleteProjectJobs } from './jobs/store.ts';
import type { EmbeddingService } from './embeddings/service.ts';
import { systemPrincipal } from './embeddings/settings.ts';
import type { Principal } from './auth/principal.ts';
import { embeddingsStep } from './embeddings/pipeline-step.ts';
import { createEmbeddings, type Embeddings } from './embeddings/register.ts';
import { ImportService } from './import/service.ts';
import { importRoutes } from './import/routes.ts';
import { createOpenAIDoor } from './doors/openai/register.ts';
import { createAnthropicDoor } from './doors/anthropic/register.ts';
import { createResponsesDoor } from './doors/responses/register.ts';
import { createMcpDoor } from './doors/mcp/register.ts';
import { startTelemetry } from './telemetry/start.ts';
import { createEvents, type Events } from './events/register.ts';
import { deleteProjectEvents } from './events/store.ts';
import { createUsers, type Users } from './users/register.ts';

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
    /** DELETE /runs/:id and the retention sweeper (its sweep is what the timer calls). */
    retention: RunRetention;
  };
  replica: ReplicaRegistry;
  metrics: Metrics;
  /** Checks of GET /ready (features add theirs). */
  readiness: Array<() => Promise<unknown>>;
  /** Every API route as `METHOD /path`, for the OpenAPI coverage test. */
  routes: string[];
}

export interface BuildOptions {
  logger?: boolean | object;
  /** DNS for the outbound layer; tests stub it so that no name is resolved outside the machine. */
  resolve?: Resolver;
  /** Certificates the outbound layer trusts instead of the system's (tests' local https servers). */
  ca?: string;
}

export async function buildServer(config: Config, opts: BuildOptions = {}): Promise<Orrery> {
  const database = await openDatabase(config);
  const { db, dialect } = database;
  try {
    const keys = deriveKeys(await resolveSecret(config, db, dialect));
    const audit = new AuditLog(db, dialect);
    const auth = new AuthService(db, dialect, config, keys.jwt, audit);
    const bootstrap = await auth.bootstrap();
    const metrics = new Metrics();
    // OpenTelemetry (src/telemetry): a no-op, with nothing of the SDK loaded, unless OTEL_* asks for it.
    const telemetry = await startTelemetry(config.telemetry, { onDropped: (n) => metrics.otelSpansDropped.inc(n) });
    const { app, routes } = await createApp(config, {
      logger: opts.logger,
      metrics,
      schemas: [RunSchema, RunRefSchema, ObjectRecordSchema, ObjectTypeSchema],
    });
    telemetry.installHttp(app);
    const log = app.log;
    const outbound = new Outbound({
      policy: egressPolicyOf(config),
      resolve: opts.resolve,
      ...(opts.ca ? { ca: opts.ca } : {}),
      maxResultBytes: config.maxResultBytes,
      ...(telemetry.enabled ? { tracer: telemetry } : {}),
    });
    const interactions = createInteractions({ config, database, encryptionKey: keys.encryption, outbound, audit });
    const replica = new ReplicaRegistry(db, config.replicaTimeoutSeconds * 1000);
    await replica.start();
    const notifier = openNotifier(database, config.databaseUrl);
    const limiter = new Limiter(db, dialect);
    // Whether the caller's project holds a run: scores, objects' run links and imports ask.
    const runExists = (p: Principal, id: string): Promise<boolean> =>
      runs.runs.get(p, id).then(
        () => true,
        (err: { status?: number }) => (err?.status === 404 ? false : Promise.reject(err)),
      );
    // Scores on runs (src/scores): a run's answer carries its latest scores; a score needs its run.
    const scores = createScores({
      database,
      auth,
      targets: {
        runExists,
        evaluatorExists: (p, id) => evaluators.evaluators.exists(p, id),
      },
    });
    const runs = createRuns({
      config,
      database,
      interactions,
      replica,
      notifier,
      metrics,
      telemetry,
      limiter,
      audit,
      log,
      projectExists: async (trx, account, project) => (await getProject(trx, account, project)) !== undefined,
      // Run embeddings: the hook reaches the embedding service built below, once requests arrive.
      embeddings: { embedRun: (s, r) => embeddings.embeddings.embedRun(s, r) },
      deleteObjects: (s, ids) => objects.objects.bulkDelete(systemPrincipal(s), ids),
      // Media inputs: the media service built below, once requests arrive.
      media: {
        inputs: (p, schema, data, target) => media.inputs(p, schema, data, target),
        materialize: (p, messages, sent, target) => media.materialize(p, messages, sent, target),
      },
      scores: scores.scores,
      // Webhooks and notify_endpoints of async runs: the events feature built below.
      onAsyncEnded: (s, id, notify) => events.bus.runEnded(s, id, notify),
    });
    const events = createEvents({
      config,
      database,
      outbound,
      encryptionKey: keys.encryption,
      replicaId: replica.id,
      metrics,
      log,
      readRun: (s, id) =>
        runs.runs.get(systemPrincipal(s), id).then(
          (run) => run as unknown as Record<string, unknown>,
          (err: { status?: number }) => (err?.status === 404 ? undefined : Promise.reject(err)),
        ),
    });
    const blobs = await createBlobs({ config, database, urlKey: keys.urls });
    // Content processing and embeddings share a durable job queue (src/jobs).
    const jobs = new JobQueue(db, dialect, {
      concurrency: config.contentWorkers,
      perProject: config.jobProjectConcurrency,
      leaseMs: config.jobLeaseMs,
      maxAttempts: config.jobMaxAttempts,
      owner: replica.id,
      metrics,
      onError: (err, what) => log.error({ err }, `jobs: could not ${what}`),
    });
    const embeddings = createEmbeddings({
      config,
      database,
      notifier,
      replicaId: replica.id,
      metrics,
      environments: interactions.environments,
      queue: jobs,
      blobStore: blobs.store,
      log,
    });
    wireProjectSettings(auth, { limiter, blobs, embeddings, log });
    const content = createContent({
      config,
      database,
      blobs: blobs.blobs,
      queue: jobs,
      steps: [embeddingsStep(embeddings.embeddings)],
      log,
    });
    const objects = createObjects({
      config,
      database,
      audit,
      blobs: blobs.blobs,
      embeddings: embeddings.embeddings,
      processing: content.content,
      renditions: content.renditions,
      runExists,
      log,
    });
    const datasets = createDatasets({ database, auth, runs: runs.runs });
    const evaluators = createEvaluators({
      database,
      auth,
      scores: scores.scores,
      getRun: (p, id) => runs.runs.get(p, id) as never,
      verdicts: (p) => ({
        templates: interactions.templates,
        interactionExists: (selector) =>
          interactions.interactions.resolveSelector(p, selector).then(
            () => true,
            (err: { status?: number }) => (err?.status === 404 ? false : Promise.reject(err)),
          ),
        // A judge's run is an ordinary run of the caller's project, tagged as an evaluator's.
        judge: async (interaction, data) => {
          const run = await runs.runs.executeByName(p, { interaction, data, tags: ['evaluator'] }, { ip: 'evaluator' });
          if (run.status !== 'completed') throw new Error(run.error?.message ?? `the run is ${run.status}`);
          return outputOf(run as never);
        },
      }),
    });
    const agents = createAgents({
      config,
      database,
      interactions,
      runs,
      objects,
      encryptionKey: keys.encryption,
      outbound,
    });
    // People (src/users): sessions' tokens are checked there; ORRERY_ADMIN_EMAILS made admins at each start.
    const users = createUsers({ config, database, audit, auth, jwtKey: keys.jwt, log });
    await users.start(bootstrap.account.id);
    // Imports (src/import) store runs as records, through the runs' writer.
    const imports = new ImportService(
      db,
      {
        runExists,
        interaction: (p, id) => interactions.interactions.get(p, id),
        environment: (p, id) => interactions.environments.get(p, id),
        writes: runs.writer,
      },
      config.maxInlineJsonBytes,
    );
    const media = new MediaService({
      objects: objects.objects,
      // A PDF for a model without PDFs: its extracted text, or its rendition.
      fallbacks: {
        text: (p, id) => objects.objects.text(p, id),
        renditions: (p, id) => content.renditions.list(p, id),
      },
      blobs: blobs.blobs,
      bounds: config.media,
      // https inputs for providers that take bytes only: read through the egress policy.
      remote: {
        dispatcher: () => outbound.agent,
        timeoutMs: config.media.fetchTimeoutMs ?? DEFAULT_MEDIA_BOUNDS.fetchTimeoutMs!,
      },
    });
    // A project's deletion asks each feature to delete its rows; its keys and its row go last.
    for (const deleteRows of [
      deleteProjectCollections,
      embeddings.deleteProjectRows,
      content.deleteProjectRows,
      deleteProjectJobs,
      deleteProjectEvents,
      objects.deleteProjectRows,
      blobs.deleteProjectRows,
      runs.deleteProjectRows,
      interactions.deleteProjectRows,
      agents.deleteProjectRows,
      users.deleteProjectRows,
    ])
      auth.ownsProjectRows(deleteRows);
    /** Checks behind GET /ready; features with an external dependency (blob storage) add theirs. */
    const readiness: Array<() => Promise<unknown>> = [() => sql`SELECT 1`.execute(db), () => blobs.blobs.check()];
    // The data folder holds the SQLite database, local blobs or intent logs: a full disk fails writes.
    if (database.file || !config.blobUrl) readiness.push(() => assertFreeDisk(config.dataDir, config.minFreeDiskBytes));
    const shutdown = { draining: false };
    installReadCancellation(app); // before the probes: every later route's reads can be cancelled
    registerProbes(app, {
      config,
      metrics,
      replicaId: replica.id,
      readiness,
      draining: () => shutdown.draining,
      refreshMetrics: async () => {
        metrics.executing.set(runs.runs.executing);
        await jobs.refreshMetrics().catch((err) => log.warn({ err }, 'jobs: could not count queued jobs'));
        await runs.refreshMetrics().catch((err) => log.warn({ err }, 'async runs: could not count queued runs'));
      },
    });
    await registerApi(app, {
      config,
      database,
      auth,
      limiter,
      interactions,
      runs,
      objects,
      embeddings,
      blobs,
      content,
      datasets,
      scores,
      evaluators,
      agents,
      events,
      users,
      imports,
    });
    // The OpenAI-compatible door at /v1 (src/doors/openai), with its own error shape.
    await createOpenAIDoor({ database, auth, limiter, interactions, runs, log }).register(app);
    // Anthropic's Messages API at /v1/messages (src/doors/anthropic), in Anthropic's error shape.
    await createAnthropicDoor({
      database,
      auth,
      limiter,
      interactions,
      runs,
      log,
      countTokens: content.countTokens,
    }).register(app);
    // OpenAI's Responses API at /v1/responses (src/doors/responses), in OpenAI's error shape.
    await createResponsesDoor({ auth, limiter, interactions, runs }).register(app);
    // The MCP server at /mcp (src/doors/mcp), with JSON-RPC's error shape.
    await createMcpDoor({ auth, limiter, interactions, runs, objects, blobs: blobs.blobs }).register(app);
    // Public context (style F1): the signature in a blob URL is its credential.
    await blobs.registerPublic(app);
    // Signing in: the password, the link or the session cookie is the credential.
    await users.registerPublic(app);
    // The web console (src/console), public: the SPA holds no data.
    await app.register((await import('./console/routes.ts')).consoleRoutes, { traceUrl: config.traceUrl });

    await runs.start();
    events.start();
    blobs.start(log);
    // In this order: the sweeps stop, runs and streams finish, then what they use is released.
    installShutdown(app, shutdown, async () => {
      runs.stopSweeps();
      blobs.stop();
      await runs.close(Date.now() + config.shutdownTimeoutSeconds * 1000);
      await content.close();
      await events.close();
      embeddings.close();
      await replica.stop();
      await notifier.close();
      await outbound.close();
      await interactions.close();
      await db.destroy();
      users.close();
      await telemetry.close(); // last: the spans of everything above, within OTEL_BSP_EXPORT_TIMEOUT
    });
    await app.ready();
    content.start();
    return {
      app,
      config,
      database,
      bootstrap,
      services: {
        auth,
        runs: runs.runs,
        jobs,
        content: content.content,
        embeddings: embeddings.embeddings,
        checkpointer: runs.checkpointer,
        retention: runs.retention,
      },
      routes,
      replica,
      metrics,
      readiness,
    } as Orrery;
  } catch (err) {
    await db.destroy().catch(() => {
      // The error that stopped the build is the one to report.
    });
    throw err;
  }
}

/** The hooks and settings that tie a project's life to the features that keep data for it. */
function wireProjectSettings(
  auth: AuthService,
  {
    limiter,
    blobs,
    embeddings,
    log,
  }: { limiter: Limiter; blobs: Blobs; embeddings: Embeddings; log: FastifyBaseLogger },
): void {
  auth.onProjectDeleted(async (s) => {
    await blobs.blobs
      .purgeProject(s)
      .catch((err) => log.error({ err }, `could not delete the blobs of deleted project ${s.project}`));
    await embeddings
      .pruneProject(s.project)
      .catch((err) => log.error({ err }, `could not delete the similarity graphs of deleted project ${s.project}`));
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
  auth.useSetting('embeddings', embeddings.setting);
}

interface ApiParts {
  config: Config;
  database: OpenedDatabase;
  auth: AuthService;
  limiter: Limiter;
  interactions: Interactions;
  runs: Runs;
  objects: Objects;
  embeddings: Embeddings;
  blobs: Blobs;
  content: Content;
  datasets: Datasets;
  scores: Scores;
  evaluators: Evaluators;
  agents: Agents;
  events: Events;
  users: Users;
  imports: ImportService;
}

/**
 * /api/v1: the OpenAPI document, then every feature's routes in one authenticated context (style
 * F1): a route is authenticated because it is registered there.
 */
async function registerApi(app: FastifyInstance, parts: ApiParts): Promise<void> {
  const {
    auth,
    limiter,
    interactions,
    runs,
    objects,
    embeddings,
    blobs,
    content,
    datasets,
    scores,
    evaluators,
    agents,
    users,
    imports,
  } = parts;
  const { db, dialect } = parts.database;
  await app.register(
    async (api) => {
      api.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
      await api.register(async (authed) => {
        authed.addHook('onRequest', authenticate(auth));
        installPermissions(authed);
        installLimits(authed, limiter);
        installRunReadBarrier(authed, runs.runs);
        await authed.register(authRoutes, { auth });
        await interactions.register(authed);
        await runs.register(authed);
        await authed.register(analyticsRoutes, {
          analytics: new AnalyticsService(db, dialect, interactions.environments),
        });
        await objects.register(authed);
        await embeddings.register(authed, (p, settings) =>
          auth.updateProject(p, p.project.id, { embeddings: settings }),
        );
        await blobs.register(authed);
        await objects.registerCatalog(authed);
        await content.register(authed);
        await authed.register(auditRoutes, { trail: new AuditTrail(db, dialect) });
        await runs.registerRetention(authed);
        await authed.register(limitRoutes, { limiter });
        await authed.register(slotRoutes, {
          limiter,
          // An id, else an endpoint selector (Name, Name@draft, …), as POST /execute takes it.
          check: async (p, interaction, environment) => {
            await interactions.interactions
              .get(p, interaction)
              .catch((err: { status?: number }) =>
                err?.status === 404 ? interactions.interactions.resolveSelector(p, interaction) : Promise.reject(err),
              );
            if (environment !== undefined) await interactions.environments.get(p, environment);
          },
        });
        await authed.register(importRoutes, {
          imports,
        });
        await datasets.register(authed);
        await scores.register(authed);
        await evaluators.register(authed);
        await agents.register(authed);
        await parts.events.register(authed);
        await users.register(authed);
        await authed.register(collectionRoutes, {
          collections: new CollectionService({
            db,
            dialect,
            listing: objects.listing,
            types: objects.types,
            similarity: objects.similarity,
          }),
        });
      });
    },
    { prefix: '/api/v1' },
  );
}

/**
 * Graceful shutdown: fail readiness at once (`state.draining`), stop accepting, then `close` (which lets streams and
 * runs finish, bounded by ORRERY_SHUTDOWN_TIMEOUT, and releases the database).
 */
function installShutdown(app: FastifyInstance, state: { draining: boolean }, close: () => Promise<void>): void {
  let idleCloser: NodeJS.Timeout | undefined;
  app.addHook('preClose', async () => {
    state.draining = true;
    // Closing closes idle keep-alive connections once; one busy at that moment would stay open
    // after its answer until its client or the keep-alive timeout (72 s) ended it, and the
    // process with it. Close each as soon as it is idle.
    idleCloser = setInterval(() => app.server.closeIdleConnections(), 100);
    idleCloser.unref();
  });
  app.addHook('onClose', async () => {
    clearInterval(idleCloser);
    await close();
  });
}
