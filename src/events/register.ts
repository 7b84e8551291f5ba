/**
 * The events feature: webhook subscriptions, the bus that turns what happened into deliveries,
 * and the worker that sends them on a durable queue of their own (so that a slow receiver never
 * holds the slots of content processing or async runs).
 */
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { Config } from '../config.ts';
import type { OpenedDatabase } from '../db/open.ts';
import type { Metrics } from '../http/metrics.ts';
import type { Outbound } from '../providers/outbound.ts';
import { JobQueue } from '../jobs/queue.ts';
import { EventBus, type RunReader } from './bus.ts';
import { DeliveryWorker } from './delivery.ts';
import { Subscriptions } from './subscriptions.ts';
import { eventRoutes } from './routes.ts';

/** The longest wait between two attempts of a delivery. */
const MAX_BACKOFF_MS = 3_600_000;

export interface EventsDeps {
  config: Config;
  database: OpenedDatabase;
  outbound: Outbound;
  encryptionKey: Buffer;
  replicaId: string;
  metrics: Metrics;
  log: FastifyBaseLogger;
  readRun: RunReader;
}

export function createEvents(deps: EventsDeps) {
  const { config, database, outbound, encryptionKey: key, log } = deps;
  const { db, dialect } = database;
  const base = config.webhookRetryBaseMs;
  const queue = new JobQueue(db, dialect, {
    concurrency: 8,
    leaseMs: Math.max(config.jobLeaseMs, config.webhookTimeoutMs * 3),
    maxAttempts: config.webhookMaxAttempts,
    owner: deps.replicaId,
    metrics: deps.metrics,
    // Doubling from ORRERY_WEBHOOK_RETRY_BASE, ±10 % so that many failed deliveries do not retry in step.
    backoffMs: (attempt) =>
      Math.round(Math.min(MAX_BACKOFF_MS, base * 2 ** (attempt - 1)) * (0.9 + Math.random() * 0.2)),
    onError: (err, what) => log.warn({ err }, `webhooks: could not ${what}`),
  });
  new DeliveryWorker({ db, queue, outbound, key, timeoutMs: config.webhookTimeoutMs });
  const subscriptions = new Subscriptions(db, dialect, key, outbound.policy);
  return {
    bus: new EventBus(db, dialect, queue, deps.readRun),
    register: (authed: FastifyInstance) => authed.register(eventRoutes, { subscriptions, db, key }),
    start: () => queue.start(),
    close: () => queue.stop(),
  };
}

export type Events = ReturnType<typeof createEvents>;
