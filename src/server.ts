/**
 * The composition root (style F5): opens the database, builds the core (keys, authentication,
 * the app, outbound HTTP) and the features (features.ts: each from src/<feature>/register.ts with
 * explicit dependencies), registers their routes in the authenticated API context or the public
 * one, and starts and stops them. `cli.ts` calls `listen`; tests call `buildServer` and listen.
 */
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
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
import { type RunRetention } from './runs/retention.ts';
import { Limiter } from './limits/limiter.ts';
import { installLimits } from './limits/hook.ts';
import { limitRoutes } from './limits/routes.ts';
import { slotRoutes } from './limits/slot-routes.ts';
import { authenticate } from './http/auth-hook.ts';
import { createApp, registerProbes } from './http/app.ts';
import { Metrics } from './http/metrics.ts';
import { type Interactions } from './interactions/register.ts';
import type { RunService } from './runs/service.ts';
import { type Runs } from './runs/register.ts';
import { installRunReadBarrier } from './runs/read-barrier.ts';
import { installReadCancellation } from './db/read-context.ts';
import { RunRefSchema, RunSchema } from './runs/schemas.ts';
import type { WalCheckpointer } from './db/wal-checkpointer.ts';
import { AnalyticsService, analyticsRoutes } from './analytics/index.ts';
import { assertFreeDisk } from './util/free-disk.ts';
import { type Blobs } from './blobs/register.ts';
import { type Objects } from './objects/register.ts';
import { ObjectRecordSchema, ObjectTypeSchema } from './objects/schemas.ts';
import { ReplicaRegistry } from './cluster/replicas.ts';
import { JobQueue } from './jobs/queue.ts';
import type { ContentPipeline } from './content/pipeline.ts';
import { type Content } from './content/register.ts';
import { CollectionService, collectionRoutes } from './collections/index.ts';
import { type Datasets } from './datasets/register.ts';
import { type Scores } from './scores/register.ts';
import { type Evaluators } from './evaluators/register.ts';
import { type Agents } from './agents/register.ts';
import { type Experiments } from './experiments/register.ts';
import type { EmbeddingService } from './embeddings/service.ts';
import { type Embeddings } from './embeddings/register.ts';
import { ImportService } from './import/service.ts';
import { importRoutes } from './import/routes.ts';
import { createOpenAIDoor } from './doors/openai/register.ts';
import { createAnthropicDoor } from './doors/anthropic/register.ts';
import { createResponsesDoor } from './doors/responses/register.ts';
import { createMcpDoor } from './doors/mcp/register.ts';
import { startTelemetry } from './telemetry/start.ts';
import { type Events } from './events/register.ts';
import { type Users } from './users/register.ts';
import { createFeatures, type Core, type Features } from './features.ts';

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
  try {
    const core = await createCore(config, database, opts);
    const features = await createFeatures(config, database, core);
    const readiness = readinessOf(config, database, features);
    const shutdown = { draining: false };
    await registerRoutes(config, database, core, features, readiness, shutdown);
    await start(config, database, core, features, shutdown);
    const { auth, app, routes, bootstrap, metrics } = core;
    const { runs, jobs, content, embeddings, replica } = features;
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
    await database.db.destroy().catch(() => {
      // The error that stopped the build is the one to report.
    });
    throw err;
  }
}

/** What every feature is built on: the keys, the audit log, authentication, metrics, telemetry, the app, outbound HTTP. */
async function createCore(config: Config, database: OpenedDatabase, opts: BuildOptions): Promise<Core> {
  const { db, dialect } = database;
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
  return { keys, audit, auth, bootstrap, metrics, telemetry, app, routes, log, outbound };
}

/** Checks behind GET /ready; features with an external dependency (blob storage) add theirs. */
function readinessOf(config: Config, database: OpenedDatabase, { blobs }: Features): Array<() => Promise<unknown>> {
  const readiness: Array<() => Promise<unknown>> = [
    () => sql`SELECT 1`.execute(database.db),
    () => blobs.blobs.check(),
  ];
  // The data folder holds the SQLite database, local blobs or intent logs: a full disk fails writes.
  if (database.file || !config.blobUrl) readiness.push(() => assertFreeDisk(config.dataDir, config.minFreeDiskBytes));
  return readiness;
}

/** The probes, the API, the doors, the public routes and the console, each in its context. */
async function registerRoutes(
  config: Config,
  database: OpenedDatabase,
  core: Core,
  features: Features,
  readiness: Array<() => Promise<unknown>>,
  shutdown: { draining: boolean },
): Promise<void> {
  const { app, auth, metrics, log } = core;
  const { replica, jobs, runs, limiter, interactions, objects, blobs, content, users } = features;
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
  await registerApi(app, { config, database, auth, ...features });
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
}

/** Starts the features' work, and stops it in order at shutdown. */
async function start(
  config: Config,
  database: OpenedDatabase,
  { app, outbound, telemetry, log }: Core,
  features: Features,
  shutdown: { draining: boolean },
): Promise<void> {
  const { runs, events, blobs, content, embeddings, replica, notifier, interactions, users } = features;
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
    await database.db.destroy();
    users.close();
    await telemetry.close(); // last: the spans of everything above, within OTEL_BSP_EXPORT_TIMEOUT
  });
  await app.ready();
  content.start();
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
  experiments: Experiments;
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
        await parts.experiments.register(authed);
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
