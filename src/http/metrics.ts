/**
 * Prometheus metrics (GET /metrics): requests, runs, open streams, provider latency, jobs, and
 * Node's defaults (with `orrery_nodejs_eventloop_lag_*`: the event-loop delay, mean, p50, p90,
 * p99 and max, which shows a request that stalls the loop for everyone).
 * One registry per server, so tests with several servers in one process do not collide.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { FastifyInstance } from 'fastify';

export class Metrics {
  readonly registry = new Registry();
  readonly httpRequests = new Counter({
    name: 'orrery_http_requests_total',
    help: 'HTTP requests answered',
    labelNames: ['method', 'route', 'status'],
    registers: [this.registry],
  });
  readonly httpDuration = new Histogram({
    name: 'orrery_http_request_duration_seconds',
    help: 'Time to answer an HTTP request',
    labelNames: ['method', 'route'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [this.registry],
  });
  readonly runs = new Counter({
    name: 'orrery_runs_total',
    help: 'Runs that ended, by status and provider',
    labelNames: ['status', 'provider', 'mode'],
    registers: [this.registry],
  });
  readonly providerLatency = new Histogram({
    name: 'orrery_provider_latency_seconds',
    help: 'Time a provider took to answer a run (whole completion)',
    labelNames: ['provider', 'outcome'],
    buckets: [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers: [this.registry],
  });
  readonly providerRetries = new Counter({
    name: 'orrery_provider_retries_total',
    help: 'Provider calls of runs tried again, by provider and the error that caused the retry',
    labelNames: ['provider', 'code'],
    registers: [this.registry],
  });
  readonly openStreams = new Gauge({
    name: 'orrery_sse_streams_open',
    help: 'SSE streams open on this replica',
    registers: [this.registry],
  });
  readonly executing = new Gauge({
    name: 'orrery_runs_executing',
    help: 'Streamed runs executing on this replica',
    registers: [this.registry],
  });
  readonly jobs = new Counter({
    name: 'orrery_jobs_total',
    help: 'Background jobs finished, by kind and outcome',
    labelNames: ['kind', 'outcome'],
    registers: [this.registry],
  });
  readonly uncaughtErrors = new Counter({
    name: 'orrery_uncaught_errors_total',
    help: 'Exceptions and promise rejections that no code caught (logged; the server keeps serving)',
    labelNames: ['kind'],
    registers: [this.registry],
  });
  readonly jobsQueued = new Gauge({
    name: 'orrery_jobs_queued',
    help: 'Background jobs waiting in the queue',
    labelNames: ['kind'],
    registers: [this.registry],
  });

  readonly vectorGraphs = new Counter({
    name: 'orrery_vector_graph_events_total',
    help: 'Similarity graphs built, saved, loaded from a saved file, rejected (rebuilt), or found leased by another replica',
    labelNames: ['event'],
    registers: [this.registry],
  });
  readonly vectorSearches = new Counter({
    name: 'orrery_vector_searches_total',
    help: 'Top-k similarity queries of an index partition, by how they were answered (hnsw graph or exact scan)',
    labelNames: ['mode'],
    registers: [this.registry],
  });
  readonly otelSpansDropped = new Counter({
    name: 'orrery_otel_spans_dropped_total',
    help: 'OpenTelemetry spans dropped because OTEL_BSP_MAX_QUEUE_SIZE spans were waiting for export',
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'orrery_' });
  }

  /** Counts and times every request by its route pattern (never the raw URL: bounded labels). */
  install(app: FastifyInstance): void {
    app.addHook('onResponse', async (req, reply) => {
      const route = req.routeOptions.url ?? 'unmatched';
      this.httpRequests.inc({ method: req.method, route, status: String(reply.statusCode) });
      this.httpDuration.observe({ method: req.method, route }, reply.elapsedTime / 1000);
    });
  }
}
