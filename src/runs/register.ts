/**
 * The runs feature: where run rows are written (SQLite's writer thread, intent log and checkpoint
 * thread; a plain writer elsewhere), the run service, retention, their routes, and the periodic
 * sweeps of runs (lost, unconsumed, chunks, result cache, retention).
 */
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { Config } from '../config.ts';
import type { OpenedDatabase } from '../db/open.ts';
import type { Notifier } from '../db/notify.ts';
import type { Scope } from '../auth/principal.ts';
import type { AuditLog } from '../audit/log.ts';
import type { ReplicaRegistry } from '../cluster/replicas.ts';
import type { Metrics } from '../http/metrics.ts';
import type { Telemetry } from '../telemetry/hooks.ts';
import type { Limiter } from '../limits/limiter.ts';
import type { RunEmbeddingHook } from '../embeddings/run-embeddings.ts';
import type { Interactions } from '../interactions/register.ts';
import type { RunMediaHook } from './run-media.ts';
import { WalCheckpointer } from '../db/wal-checkpointer.ts';
import { usableCores } from '../util/cpu-quota.ts';
import { JobQueue } from '../jobs/queue.ts';
import { RunService } from './service.ts';
import type { ProjectExists } from './sweep.ts';
import { RunWriter, signallingWrites } from './run-writer.ts';
import { ThreadRunWriter } from './run-writer-thread.ts';
import { RunIntentLog } from './run-intents.ts';
import { StreamHub } from './stream-hub.ts';
import { RunRetention } from './retention.ts';
import { RunFinder } from './find.ts';
import { RunExporter, type RunScores } from './export.ts';
import { runRoutes, type ConversationAgents } from './routes.ts';
import { asyncRunRoutes } from './async-routes.ts';
import { retentionRoutes } from './retention-routes.ts';
import { deleteProjectRuns, type Db } from './store.ts';
import type { ProjectScope } from '../db/project-rows.ts';

export interface RunsDeps {
  config: Config;
  database: OpenedDatabase;
  interactions: Interactions;
  replica: ReplicaRegistry;
  notifier: Notifier;
  metrics: Metrics;
  /** Spans of runs (src/telemetry). */
  telemetry: Telemetry;
  limiter: Limiter;
  audit: AuditLog;
  log: FastifyBaseLogger;
  projectExists: ProjectExists;
  embeddings: RunEmbeddingHook;
  /** Deletes objects of a project (retention of objects); called once requests arrive. */
  deleteObjects: (s: Scope, ids: string[]) => Promise<unknown>;
  /** Media inputs as prompt parts (src/media). */
  media?: RunMediaHook;
  /** The latest scores of runs (src/scores): a run's answer and its export carry them. */
  scores?: RunScores;
  /** Told once an async run ended (src/events); called once requests arrive. */
  onAsyncEnded?: (s: Scope, runId: string, notifyEndpoints: readonly string[]) => Promise<void>;
}

export function createRuns(deps: RunsDeps) {
  const { config, database, replica, notifier, metrics, limiter, log } = deps;
  const { db, dialect } = database;
  const { interactions, environments, templates, changes, typeSchemas } = deps.interactions;
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
  if (checkpointer) {
    checkpointer.onError = (message) =>
      log.error(`sqlite: the checkpoint thread stopped (${message}); connections checkpoint by themselves`);
  }
  const runWriter = checkpointer ? signallingWrites(writer, checkpointer) : writer;
  const hub = new StreamHub();
  // Async runs (POST /execute/async, runs/async.ts): a queue of their own, so that they neither wait
  // behind content processing nor hold its slots; it claims only their kind of job.
  const asyncQueue = new JobQueue(db, dialect, {
    concurrency: config.asyncConcurrency,
    perProject: Math.max(1, config.asyncConcurrency - 1),
    leaseMs: config.asyncLeaseMs,
    maxAttempts: config.jobMaxAttempts,
    owner: replica.id,
    metrics,
    onError: (err, what) => log.error({ err }, `async runs: could not ${what}`),
  });
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
    telemetry: deps.telemetry,
    streamTimeoutSeconds: config.streamTimeoutSeconds,
    projectExists: deps.projectExists,
    maxInlineJson: config.maxInlineJsonBytes,
    conversationBounds: { maxTurns: config.conversationMaxTurns, maxBytes: config.conversationMaxBytes },
    embeddings: deps.embeddings,
    ...(deps.media ? { media: deps.media } : {}),
    ...(typeSchemas ? { typeSchemas } : {}),
    writer: runWriter,
    intents,
    asyncQueue,
    asyncTimeouts: {
      stepMs: config.asyncStepTimeoutMs,
      runMs: config.asyncRunTimeoutMs,
      cancelPollMs: config.asyncCancelPollMs,
    },
    ...(deps.onAsyncEnded ? { onAsyncEnded: deps.onAsyncEnded } : {}),
    onRunEnded: (r) =>
      void limiter
        .charge(r.account, r.project, r.keyId, r.tokens, r.cost)
        .catch((err) => log.error({ err }, 'limits: could not count the usage of a run')),
  });
  const retention = new RunRetention({
    db,
    dialect,
    audit: deps.audit,
    deleteObjects: deps.deleteObjects,
    whenStored: () => runs.whenStored(),
  });
  const timers: NodeJS.Timeout[] = [];
  let conversations: ConversationAgents | undefined;

  return {
    runs,
    /** The durable queue of async runs: agents (src/agents) register their job on it. */
    asyncQueue,
    /** `type: "conversation"` on POST /execute/async goes to the agents (src/agents), once they are set. */
    setConversationAgents(agents: ConversationAgents): void {
      conversations = agents;
    },
    retention,
    /** Deletes its rows of a project, inside the project's deletion (auth.ownsProjectRows). */
    deleteProjectRows: (trx: Db, s: ProjectScope) => deleteProjectRuns(trx, dialect, s),
    checkpointer,
    /** Where run rows are written (imported runs too). */
    writer: runWriter,
    /** Its routes, behind authentication. */
    async register(authed: FastifyInstance): Promise<void> {
      await authed.register(runRoutes, {
        runs,
        finder: new RunFinder(db, dialect, config.queryTimeoutMs),
        metrics,
        exporter: new RunExporter(db, dialect, undefined, deps.scores),
        ...(deps.scores ? { scoresOf: deps.scores } : {}),
        conversations: () => conversations,
      });
      await authed.register(asyncRunRoutes, { runs });
    },
    registerRetention: (authed: FastifyInstance) => authed.register(retentionRoutes, { retention }),
    /** The periodic sweeps; resolves once the runs a stopped process of this host left are failed. */
    async start(): Promise<void> {
      let retaining = false;
      const sweepRetention = () => {
        if (retaining) return;
        retaining = true;
        limiter.sweep().catch((err) => log.error({ err }, 'limits: could not delete old usage counters'));
        retention
          .sweep()
          .then(
            (r) =>
              (r.expiredRuns || r.retainedRuns || r.expiredObjects) &&
              log.info(r, 'retention: deleted expired runs and objects'),
            (err) => log.error({ err }, 'retention sweeper failed'),
          )
          .finally(() => (retaining = false));
      };
      timers.push(setInterval(sweepRetention, config.retentionSweepSeconds * 1000));
      const takeOver = () =>
        replica
          .alive()
          .then((alive) => asyncQueue.takeOverFrom(alive))
          .catch((err) => log.error({ err }, 'async runs: could not take over the runs of stopped replicas'));
      const sweepLost = () => {
        void runs.sweepLost().catch((err) => log.error({ err }, 'lost-run sweeper failed'));
        void takeOver();
      };
      const sweep = () => {
        runs.sweepUnconsumed().catch((err) => log.error({ err }, 'stream sweeper failed'));
        runs.sweepChunks().catch((err) => log.error({ err }, 'chunk sweeper failed'));
        runs.sweepCache().catch((err) => log.error({ err }, 'result cache sweeper failed'));
      };
      timers.push(setInterval(sweep, Math.min(15_000, (config.replicaTimeoutSeconds * 1000) / 2)));
      // Every heartbeat: a dead replica's runs fail within ORRERY_REPLICA_TIMEOUT (cluster/replicas.ts).
      timers.push(setInterval(sweepLost, replica.heartbeatMs));
      for (const timer of timers) timer.unref();
      // Before the first request: the runs that a stopped process of this host left `processing` are
      // failed now, not once its heartbeat times out (cluster/replicas.ts knows its process is gone).
      await runs.sweepLost().catch((err) => log.error({ err }, 'lost-run sweeper failed'));
      // The async runs a stopped process of this host was executing: taken over now, then executed.
      await takeOver();
      asyncQueue.start();
      setImmediate(sweep);
    },
    /** Stops the sweeps (shutdown). */
    stopSweeps(): void {
      for (const timer of timers) clearInterval(timer);
    },
    /** Async runs queued, for the jobs gauge. */
    refreshMetrics: () => asyncQueue.refreshMetrics(),
    /** Lets runs and streams finish, up to `deadline` (ms since the epoch), then stores what is queued. */
    async close(deadline: number): Promise<void> {
      // Async runs not started stay queued for the next process; those executing finish within the grace.
      await asyncQueue.stop(Math.max(0, deadline - Date.now()));
      while (runs.executing > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      await runs.close();
      await checkpointer?.close();
    },
  };
}

export type Runs = ReturnType<typeof createRuns>;
