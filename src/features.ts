/**
 * The features of a server, each built by its own factory (src/<feature>/register.ts) with the
 * dependencies it names: the composition root's wiring, apart from its start, routes and stop
 * (server.ts). A feature reaches another through the closures given here, never its tables.
 */
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { Config } from './config.ts';
import type { Outbound } from './providers/outbound.ts';
import type { OpenedDatabase } from './db/open.ts';
import { openNotifier } from './db/notify.ts';
import type { SecretKeys } from './auth/secret.ts';
import type { AuthService, BootstrapResult } from './auth/service.ts';
import { authReads } from './auth/reads.ts';
import { getProject } from './auth/store.ts';
import type { AuditLog } from './audit/log.ts';
import { retentionSettingsOf } from './runs/retention.ts';
import { Limiter, limitsOf } from './limits/limiter.ts';
import type { Metrics } from './http/metrics.ts';
import { createInteractions } from './interactions/register.ts';
import { createRuns } from './runs/register.ts';
import { aggregateRunValues } from './runs/reads.ts';
import { createBlobs, type Blobs } from './blobs/register.ts';
import { createObjects } from './objects/register.ts';
import * as objectReads from './objects/reads.ts';
import { DEFAULT_MEDIA_BOUNDS } from './media/bounds.ts';
import { MediaService } from './media/service.ts';
import { ReplicaRegistry } from './cluster/replicas.ts';
import { JobQueue } from './jobs/queue.ts';
import { createContent } from './content/register.ts';
import { deleteProjectCollections } from './collections/store.ts';
import { createDatasets } from './datasets/register.ts';
import { createScores } from './scores/register.ts';
import { createEvaluators } from './evaluators/register.ts';
import { outputOf } from './evaluators/service.ts';
import { createExperiments } from './experiments/register.ts';
import { createAgents } from './agents/register.ts';
import { deleteProjectJobs } from './jobs/store.ts';
import { systemPrincipal } from './embeddings/settings.ts';
import { scopeOf, type Principal } from './auth/principal.ts';
import { embeddingsStep } from './embeddings/pipeline-step.ts';
import { createEmbeddings, type Embeddings } from './embeddings/register.ts';
import { ImportService } from './import/service.ts';
import type { Telemetry } from './telemetry/hooks.ts';
import { createEvents } from './events/register.ts';
import { deleteProjectEvents } from './events/store.ts';
import { createUsers } from './users/register.ts';

/** What every feature is built on (server.ts createCore). */
export interface Core {
  keys: SecretKeys;
  audit: AuditLog;
  auth: AuthService;
  bootstrap: BootstrapResult;
  metrics: Metrics;
  telemetry: Telemetry;
  app: FastifyInstance;
  routes: string[];
  log: FastifyBaseLogger;
  outbound: Outbound;
}

export type Features = Awaited<ReturnType<typeof createFeatures>>;

/** Builds every feature, wires them to each other and to the project's deletion. */
export async function createFeatures(config: Config, database: OpenedDatabase, core: Core) {
  const { db, dialect } = database;
  const { keys, audit, auth, bootstrap, metrics, telemetry, log, outbound } = core;
  const interactions = createInteractions({
    config,
    database,
    encryptionKey: keys.encryption,
    outbound,
    audit,
    // result_schema references to object types: the objects feature built below, once requests arrive.
    typeSchemas: async (p, id) => (await objects.types.get(p, id)).object_schema ?? null,
  });
  const replica = new ReplicaRegistry(db, config.replicaTimeoutSeconds * 1000);
  await replica.start();
  const notifier = openNotifier(database, config.databaseUrl);
  const limiter = new Limiter(db, authReads(db, dialect));
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
      aggregateRuns: (s, values, q) => aggregateRunValues(db, dialect.name, s, values, q),
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
    // The objects they embed, read by the objects feature (which is built on embeddings).
    objects: {
      get: (s, id) => objectReads.embeddedObject(db, dialect, s, id),
      page: (s, after, limit) => objectReads.embeddedObjects(db, dialect, s, after, limit),
      count: (s) => objectReads.countObjects(db, s),
    },
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
      // embedding_similarity: the project's embeddings (its settings, else the built-in embedder).
      embed: async (texts) => {
        const s = scopeOf(p);
        const resolved = await embeddings.embeddings.resolve(s);
        return Promise.all(texts.map((t) => embeddings.embeddings.textVector(s, t, resolved)));
      },
      // A judge's run is an ordinary run of the caller's project, tagged as an evaluator's.
      judge: async (interaction, data) => {
        const run = await runs.runs.executeByName(p, { interaction, data, tags: ['evaluator'] }, { ip: 'evaluator' });
        if (run.status !== 'completed') throw new Error(run.error?.message ?? `the run is ${run.status}`);
        return outputOf(run as never);
      },
    }),
  });
  // Experiments (src/experiments): their job runs on the queue of async runs, started by runs.start().
  const experiments = createExperiments({
    database,
    auth,
    runs,
    interactions,
    datasets: datasets.datasets,
    evaluators: evaluators.evaluators,
    limiter,
    onError: (err, what) => log.error({ err }, `experiments: could not ${what}`),
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
      runTurn: (p, id) => runs.runs.turnOf(p, id),
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
    // Images outside their provider's limits are converted in the content workers (src/media/convert.ts).
    convert: content.convertImage,
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
  return {
    interactions,
    replica,
    notifier,
    limiter,
    scores,
    runs,
    events,
    blobs,
    jobs,
    embeddings,
    content,
    objects,
    datasets,
    evaluators,
    experiments,
    agents,
    users,
    imports,
    media,
  };
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
