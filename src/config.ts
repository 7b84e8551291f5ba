/**
 * One typed configuration, read from environment variables (and CLI flags, which override them).
 * Every variable is documented in README.md and .env.example.
 */
import { DEFAULT_MEDIA_BOUNDS, type MediaBounds } from './media/bounds.ts';
import { resolve } from 'node:path';
import { table } from './util/own.ts';
import { EgressPolicy } from './providers/egress.ts';
import { telemetrySettingsOf, type TelemetrySettings } from './telemetry/settings.ts';
import { userSettingsOf, type UserSettings } from './users/settings.ts';

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  /** Absolute base of every URL the server hands out, without a trailing slash. */
  publicUrl: string;
  /** An `sk-…` key for the default project instead of a generated one. */
  adminKey?: string;
  /** Signing and encryption secret; when unset it is generated and kept (data folder or database). */
  secret?: string;
  /** `postgres://…` selects PostgreSQL; unset means SQLite under the data folder. */
  databaseUrl?: string;
  /** `s3://bucket?endpoint=…&region=…&path_style=true` selects S3; unset means `<data>/blobs`. */
  blobUrl?: string;
  /** Lifetime of JWTs issued at /token/issue, in seconds. */
  jwtTtlSeconds: number;
  /** A run created with stream:true and never streamed fails after this many seconds. */
  streamTimeoutSeconds: number;
  /** Largest accepted upload through a signed URL, in bytes (413 past it). */
  maxUploadBytes: number;
  /** Free space under the data folder below which /ready answers 503, in bytes. */
  minFreeDiskBytes: number;
  /** Largest JSON stored inline by a run (data, result) or an object (properties), in bytes of its text. */
  maxInlineJsonBytes: number;
  /** The largest result a model may answer, in bytes of text; past it the call is cut and the run fails. */
  maxResultBytes: number;
  /** A conversation's turns at most (runs chained by previous_run); past it, 413 conversation_too_long. */
  conversationMaxTurns: number;
  /** A conversation's history at most, in bytes of its messages' JSON; past it, 413 conversation_too_long. */
  conversationMaxBytes: number;
  /** Bounds of media inputs of runs (ORRERY_MEDIA_*, src/media/bounds.ts). */
  media: MediaBounds;
  /** Flush each upload to disk before publishing it (local blob folder); off trades power-loss safety for speed. */
  blobFsync: boolean;
  logLevel: string;
  /** When set, GET /metrics requires `Authorization: Bearer <this token>`. */
  metricsToken?: string;
  /** OpenTelemetry export (the OTEL_* variables, telemetry/settings.ts); absent: off, nothing loaded. */
  telemetry?: TelemetrySettings;
  /** Users, sessions, sign-in and SSO (src/users/settings.ts). */
  users: UserSettings;
  /** A link to a run's trace in the console: a URL with `{trace_id}` (ORRERY_TRACE_URL). */
  traceUrl?: string;
  /** Graceful shutdown waits this long for streams, runs and jobs before it exits anyway. */
  shutdownTimeoutSeconds: number;
  /** A replica silent this long is dead and the runs it was executing are failed. */
  replicaTimeoutSeconds: number;
  /** How often the retention sweeper deletes expired runs and objects (issue 18). */
  retentionSweepSeconds: number;
  /** Content processing (src/content): jobs at once per process, and one worker process each (src/content/worker/pool.ts). */
  contentWorkers: number;
  /** Background jobs (content processing, embeddings) of one project at once per process: the rest wait their turn. */
  jobProjectConcurrency: number;
  /** Pages of a PDF (slides of a presentation) processed at most; more fails the object. */
  contentMaxPages: number;
  /** Uncompressed size of a zip-based file (DOCX, XLSX, PPTX, ODF) at most, in bytes. */
  contentMaxDecompressedBytes: number;
  /** Pixels (width × height) of an image or rendered page at most. */
  contentMaxPixels: number;
  /** Bytes of content read for processing at most. */
  contentMaxInputBytes: number;
  /** Wall-clock limit of one processing step, in milliseconds. */
  contentStepTimeoutMs: number;
  /** JS heap limit of one content worker process (`--max-old-space-size`), in MB. */
  contentWorkerMemoryMb: number;
  /** Visibility timeout of a running job: a job not heard of this long is taken again, in milliseconds. */
  jobLeaseMs: number;
  /** Attempts of a job before it is given up (transient failures, lost processes). */
  jobMaxAttempts: number;
  /** Async runs (POST /execute/async) executed at once per process. */
  asyncConcurrency: number;
  /** Visibility timeout of a running async run's job, in milliseconds (a dead replica's is taken over at its heartbeat's end too). */
  asyncLeaseMs: number;
  /** Longest step of an agent (a model or tool call), in milliseconds (ORRERY_AGENT_STEP_TIMEOUT, seconds). */
  agentStepTimeoutMs: number;
  /** Longest life of an agent, waits included, in milliseconds (ORRERY_AGENT_TIMEOUT, seconds). */
  agentTimeoutMs: number;
  /** Each attempt of an async run's provider call stops after this long, in milliseconds. */
  asyncStepTimeoutMs: number;
  /** An async run fails once this long has passed since its provider call first started, in milliseconds. */
  asyncRunTimeoutMs: number;
  /** How often a running async run checks whether its cancellation was asked, in milliseconds. */
  asyncCancelPollMs: number;
  /** Attempts of one webhook delivery (the first included) before it is recorded failed. */
  webhookMaxAttempts: number;
  /** The wait before a webhook delivery's first retry, in milliseconds; each retry doubles it, up to an hour. */
  webhookRetryBaseMs: number;
  /** How long one webhook request may take, in milliseconds. */
  webhookTimeoutMs: number;
  /** Longest wait of GET …/renditions/:format?block_on_generation=true, in milliseconds. */
  renditionWaitMs: number;
  /** Time budget of heavy reads: PostgreSQL statement timeout, SQLite reader-thread deadline (ORRERY_QUERY_TIMEOUT, seconds; db/read-budget.ts). */
  queryTimeoutMs: number;
  /** SQLite: bytes of stored documents one heavy read may examine (ORRERY_QUERY_MAX_READ). */
  queryMaxReadBytes: number;
  /** SQLite: reader threads for heavy reads (ORRERY_SQLITE_READERS; 0: on the HTTP thread). */
  sqliteReaders: number;
  /** PostgreSQL: how long a query waits for a pooled connection before a 503 (ORRERY_DATABASE_POOL_WAIT, seconds). */
  poolWaitMs: number;
  /** PostgreSQL: expensive reads one project may run at once (ORRERY_PROJECT_READS). */
  projectReads: number;
  /** jst: CPU time of one render, in ms. */
  templateCpuMs: number;
  /** jst: memory of one render, in bytes. */
  templateMemoryBytes: number;
  /** Characters a template may render. */
  templateMaxOutput: number;
  /** Threads that compile handlebars and run jst (started on first use). */
  templateWorkers: number;
  /** A temporary upload file idle this long belongs to an upload that was cut off: swept. */
  uploadStaleMs: number;
  /** ORRERY_EGRESS as given; unset: `private` on a loopback listener, `public` otherwise (providers/egress.ts). */
  egress?: string;
  /**
   * Similarity search: an index partition (project, type, model) with fewer vectors than this is
   * searched exactly (brute force), and so is a filtered candidate set this small; from it on, HNSW.
   */
  vectorExactThreshold: number;
  /**
   * Candidate list (ef) of an HNSW search up to 100,000 vectors (ORRERY_VECTOR_EF_SEARCH); it grows
   * with the partition beyond (embeddings/vector-index.ts `searchExpansion`).
   */
  vectorEfSearch: number;
  /** Scalar kind of the HNSW graphs (ORRERY_VECTOR_SCALAR): f32 (default), f16 or i8. */
  vectorScalar: 'f32' | 'f16' | 'i8';
  /** A replica building a graph holds its lease this long, renewed while it builds (ORRERY_VECTOR_GRAPH_LEASE, seconds). */
  vectorGraphLeaseMs: number;
  /** A replica waiting on another's build looks for the published graph this often (ORRERY_VECTOR_GRAPH_POLL, seconds). */
  vectorGraphPollMs: number;
}

type Env = Record<string, string | undefined>;

function int(env: Env, name: string, fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new Error(`${name} must be an integer between ${min} and ${max}, got ${JSON.stringify(raw)}`);
  }
  return n;
}

const UNITS: Record<string, number> = table({
  '': 1,
  b: 1,
  k: 1e3,
  kb: 1e3,
  kib: 1024,
  m: 1e6,
  mb: 1e6,
  mib: 1024 ** 2,
  g: 1e9,
  gb: 1e9,
  gib: 1024 ** 3,
  t: 1e12,
  tb: 1e12,
  tib: 1024 ** 4,
});

function flag(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return fallback;
  if (['1', 'true', 'yes', 'on'].includes(raw)) return true;
  if (['0', 'false', 'no', 'off'].includes(raw)) return false;
  throw new Error(`${name} must be true or false, got ${JSON.stringify(env[name])}`);
}

/** A size in bytes, with an optional unit: `1073741824`, `512MB`, `1GiB` (KB/MB/GB are powers of 1000). */
function byteSize(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(raw);
  const unit = m ? UNITS[m[2].toLowerCase()] : undefined;
  const n = m && unit ? Math.floor(Number(m[1]) * unit) : NaN;
  if (!Number.isSafeInteger(n) || n < 1) {
    throw new Error(`${name} must be a size such as 1073741824, 512MB or 1GiB, got ${JSON.stringify(raw)}`);
  }
  return n;
}

/** A duration given in seconds (decimals allowed), answered in milliseconds. */
function seconds(env: Env, name: string, fallbackSeconds: number, min = 0.001, max = 86_400): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return Math.round(fallbackSeconds * 1000);
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min || n > max)
    throw new Error(`${name} must be a number of seconds between ${min} and ${max}, got ${JSON.stringify(raw)}`);
  return Math.round(n * 1000);
}

function vectorScalar(env: Env): Config['vectorScalar'] {
  const v = nonEmpty(env, 'ORRERY_VECTOR_SCALAR') ?? 'f32';
  if (v !== 'f32' && v !== 'f16' && v !== 'i8')
    throw new Error(`ORRERY_VECTOR_SCALAR must be f32, f16 or i8, not ${JSON.stringify(v)}`);
  return v;
}

function traceUrl(env: Env): string | undefined {
  const v = nonEmpty(env, 'ORRERY_TRACE_URL');
  if (v !== undefined && (!/^https?:\/\//.test(v) || !v.includes('{trace_id}')))
    throw new Error(`ORRERY_TRACE_URL must be an http(s) URL with {trace_id} in it, got ${JSON.stringify(v)}`);
  return v;
}

function nonEmpty(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

export function loadConfig(env: Env = process.env, overrides: Partial<Config> = {}): Config {
  const port = overrides.port ?? int(env, 'ORRERY_PORT', 8080, 0, 65535);
  const host = overrides.host ?? nonEmpty(env, 'ORRERY_HOST') ?? '127.0.0.1';
  const dataDir = resolve(overrides.dataDir ?? nonEmpty(env, 'ORRERY_DATA_DIR') ?? './data');
  const adminKey = overrides.adminKey ?? nonEmpty(env, 'ORRERY_ADMIN_KEY');
  if (adminKey !== undefined && !/^sk-[A-Za-z0-9_-]{16,}$/.test(adminKey)) {
    throw new Error('ORRERY_ADMIN_KEY must look like "sk-" followed by at least 16 letters, digits, "-" or "_"');
  }
  const publicUrl = overrides.publicUrl ?? nonEmpty(env, 'ORRERY_PUBLIC_URL') ?? defaultPublicUrl(host, port);
  const config: Config = {
    port,
    host,
    dataDir,
    publicUrl: normalisePublicUrl(publicUrl),
    adminKey,
    secret: overrides.secret ?? nonEmpty(env, 'ORRERY_SECRET'),
    databaseUrl: overrides.databaseUrl ?? nonEmpty(env, 'ORRERY_DATABASE_URL'),
    blobUrl: overrides.blobUrl ?? nonEmpty(env, 'ORRERY_BLOB_URL'),
    jwtTtlSeconds: overrides.jwtTtlSeconds ?? int(env, 'ORRERY_JWT_TTL', 3600, 60, 30 * 24 * 3600),
    streamTimeoutSeconds: overrides.streamTimeoutSeconds ?? int(env, 'ORRERY_STREAM_TIMEOUT', 3600, 1),
    maxUploadBytes: overrides.maxUploadBytes ?? byteSize(env, 'ORRERY_MAX_UPLOAD_SIZE', 1024 ** 3),
    minFreeDiskBytes: overrides.minFreeDiskBytes ?? byteSize(env, 'ORRERY_MIN_FREE_DISK', 64 * 1024 ** 2),
    maxInlineJsonBytes: overrides.maxInlineJsonBytes ?? byteSize(env, 'ORRERY_MAX_INLINE_JSON', 1024 ** 2),
    maxResultBytes: overrides.maxResultBytes ?? byteSize(env, 'ORRERY_MAX_RESULT_SIZE', 1024 ** 2),
    conversationMaxTurns: overrides.conversationMaxTurns ?? int(env, 'ORRERY_CONVERSATION_MAX_TURNS', 200, 1, 100_000),
    conversationMaxBytes:
      overrides.conversationMaxBytes ?? byteSize(env, 'ORRERY_CONVERSATION_MAX_BYTES', 8 * 1024 ** 2),
    media: overrides.media ?? {
      maxBytes: byteSize(env, 'ORRERY_MEDIA_MAX_BYTES', DEFAULT_MEDIA_BOUNDS.maxBytes),
      maxPixels: int(env, 'ORRERY_MEDIA_MAX_PIXELS', DEFAULT_MEDIA_BOUNDS.maxPixels, 1),
      maxPdfBytes: byteSize(env, 'ORRERY_MEDIA_MAX_PDF_BYTES', DEFAULT_MEDIA_BOUNDS.maxPdfBytes),
      maxPdfPages: int(env, 'ORRERY_MEDIA_MAX_PDF_PAGES', DEFAULT_MEDIA_BOUNDS.maxPdfPages, 1),
      fetchTimeoutMs: seconds(env, 'ORRERY_MEDIA_FETCH_TIMEOUT', 30, 0.1, 600),
    },
    blobFsync: overrides.blobFsync ?? flag(env, 'ORRERY_BLOB_FSYNC', true),
    logLevel: overrides.logLevel ?? nonEmpty(env, 'ORRERY_LOG_LEVEL') ?? 'info',
    metricsToken: overrides.metricsToken ?? nonEmpty(env, 'ORRERY_METRICS_TOKEN'),
    telemetry: 'telemetry' in overrides ? overrides.telemetry : telemetrySettingsOf(env),
    traceUrl: overrides.traceUrl ?? traceUrl(env),
    users: overrides.users ?? userSettingsOf(env),
    shutdownTimeoutSeconds: overrides.shutdownTimeoutSeconds ?? int(env, 'ORRERY_SHUTDOWN_TIMEOUT', 30, 0, 3600),
    replicaTimeoutSeconds: overrides.replicaTimeoutSeconds ?? int(env, 'ORRERY_REPLICA_TIMEOUT', 30, 2, 3600),
    retentionSweepSeconds: overrides.retentionSweepSeconds ?? int(env, 'ORRERY_RETENTION_SWEEP', 30, 1, 3600),
    contentWorkers: overrides.contentWorkers ?? int(env, 'ORRERY_CONTENT_WORKERS', 2, 1, 64),
    jobProjectConcurrency:
      overrides.jobProjectConcurrency ??
      int(
        env,
        'ORRERY_JOB_PROJECT_CONCURRENCY',
        Math.max(1, (overrides.contentWorkers ?? int(env, 'ORRERY_CONTENT_WORKERS', 2, 1, 64)) - 1),
        1,
        64,
      ),
    contentMaxPages: overrides.contentMaxPages ?? int(env, 'ORRERY_CONTENT_MAX_PAGES', 2000, 1),
    contentMaxDecompressedBytes:
      overrides.contentMaxDecompressedBytes ?? byteSize(env, 'ORRERY_CONTENT_MAX_DECOMPRESSED', 512 * 1024 ** 2),
    contentMaxPixels: overrides.contentMaxPixels ?? int(env, 'ORRERY_CONTENT_MAX_PIXELS', 100_000_000, 1),
    contentMaxInputBytes: overrides.contentMaxInputBytes ?? byteSize(env, 'ORRERY_CONTENT_MAX_INPUT', 256 * 1024 ** 2),
    contentStepTimeoutMs: overrides.contentStepTimeoutMs ?? seconds(env, 'ORRERY_CONTENT_STEP_TIMEOUT', 120),
    contentWorkerMemoryMb: overrides.contentWorkerMemoryMb ?? int(env, 'ORRERY_CONTENT_WORKER_MEMORY', 1024, 64, 65536),
    jobLeaseMs: overrides.jobLeaseMs ?? seconds(env, 'ORRERY_JOB_LEASE', 60, 0.1),
    jobMaxAttempts: overrides.jobMaxAttempts ?? int(env, 'ORRERY_JOB_ATTEMPTS', 5, 1, 100),
    asyncConcurrency: overrides.asyncConcurrency ?? int(env, 'ORRERY_ASYNC_CONCURRENCY', 16, 1, 1024),
    asyncLeaseMs: overrides.asyncLeaseMs ?? seconds(env, 'ORRERY_ASYNC_LEASE', 10, 0.1, 3600),
    agentStepTimeoutMs: overrides.agentStepTimeoutMs ?? seconds(env, 'ORRERY_AGENT_STEP_TIMEOUT', 300, 0.1, 86_400),
    agentTimeoutMs: overrides.agentTimeoutMs ?? seconds(env, 'ORRERY_AGENT_TIMEOUT', 3600, 1, 30 * 86_400),
    asyncStepTimeoutMs: overrides.asyncStepTimeoutMs ?? seconds(env, 'ORRERY_ASYNC_STEP_TIMEOUT', 600, 0.01, 86_400),
    asyncRunTimeoutMs: overrides.asyncRunTimeoutMs ?? seconds(env, 'ORRERY_ASYNC_RUN_TIMEOUT', 3600, 0.01, 7 * 86_400),
    asyncCancelPollMs: overrides.asyncCancelPollMs ?? seconds(env, 'ORRERY_ASYNC_CANCEL_POLL', 1, 0.01, 60),
    webhookMaxAttempts: overrides.webhookMaxAttempts ?? int(env, 'ORRERY_WEBHOOK_ATTEMPTS', 8, 1, 20),
    webhookRetryBaseMs: overrides.webhookRetryBaseMs ?? seconds(env, 'ORRERY_WEBHOOK_RETRY_BASE', 10, 0.01, 3600),
    webhookTimeoutMs: overrides.webhookTimeoutMs ?? seconds(env, 'ORRERY_WEBHOOK_TIMEOUT', 10, 0.1, 120),
    renditionWaitMs: overrides.renditionWaitMs ?? seconds(env, 'ORRERY_RENDITION_WAIT', 30, 0, 600),
    queryTimeoutMs: overrides.queryTimeoutMs ?? seconds(env, 'ORRERY_QUERY_TIMEOUT', 5, 0.001, 3600),
    queryMaxReadBytes: overrides.queryMaxReadBytes ?? byteSize(env, 'ORRERY_QUERY_MAX_READ', 2 * 1024 ** 3),
    sqliteReaders: overrides.sqliteReaders ?? int(env, 'ORRERY_SQLITE_READERS', 2, 0, 64),
    poolWaitMs: overrides.poolWaitMs ?? seconds(env, 'ORRERY_DATABASE_POOL_WAIT', 10, 0.001, 3600),
    projectReads: overrides.projectReads ?? int(env, 'ORRERY_PROJECT_READS', 3, 1, 1000),
    vectorExactThreshold:
      overrides.vectorExactThreshold ?? int(env, 'ORRERY_VECTOR_EXACT_THRESHOLD', 10_000, 1, 1_000_000),
    vectorEfSearch: overrides.vectorEfSearch ?? int(env, 'ORRERY_VECTOR_EF_SEARCH', 128, 10, 4096),
    vectorScalar: overrides.vectorScalar ?? vectorScalar(env),
    vectorGraphLeaseMs: overrides.vectorGraphLeaseMs ?? seconds(env, 'ORRERY_VECTOR_GRAPH_LEASE', 120, 1),
    vectorGraphPollMs: overrides.vectorGraphPollMs ?? seconds(env, 'ORRERY_VECTOR_GRAPH_POLL', 5, 0.05),
    egress: overrides.egress ?? nonEmpty(env, 'ORRERY_EGRESS'),
    uploadStaleMs: overrides.uploadStaleMs ?? seconds(env, 'ORRERY_UPLOAD_STALE', 600, 1),
    templateCpuMs: overrides.templateCpuMs ?? int(env, 'ORRERY_TEMPLATE_CPU_MS', 1000, 10, 60_000),
    templateMemoryBytes: overrides.templateMemoryBytes ?? byteSize(env, 'ORRERY_TEMPLATE_MEMORY', 64 * 1024 ** 2),
    templateMaxOutput:
      overrides.templateMaxOutput ?? int(env, 'ORRERY_TEMPLATE_MAX_OUTPUT', 1_048_576, 1, 100 * 1024 * 1024),
    templateWorkers: overrides.templateWorkers ?? int(env, 'ORRERY_TEMPLATE_WORKERS', 2, 1, 64),
  };
  egressPolicyOf(config); // a bad ORRERY_EGRESS stops the start with its message
  if (config.secret !== undefined && config.secret.length < 16) {
    throw new Error('ORRERY_SECRET must be at least 16 characters long');
  }
  if (config.databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(config.databaseUrl)) {
    throw new Error('ORRERY_DATABASE_URL must be a postgres:// or postgresql:// URL');
  }
  return config;
}

/** The egress policy the config asks for (providers/egress.ts). */
export function egressPolicyOf(config: Pick<Config, 'egress' | 'host'>): EgressPolicy {
  return config.egress ? new EgressPolicy(config.egress, 'ORRERY_EGRESS') : EgressPolicy.forListener(config.host);
}

function defaultPublicUrl(host: string, port: number): string {
  // 0.0.0.0 and :: are listen addresses, not addresses a client can reach.
  const reachable = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  const hostPart = reachable.includes(':') ? `[${reachable}]` : reachable;
  return `http://${hostPart}:${port}`;
}

function normalisePublicUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(`ORRERY_PUBLIC_URL must be an absolute URL, got ${JSON.stringify(raw)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new Error('ORRERY_PUBLIC_URL must use http or https');
  return url.toString().replace(/\/+$/, '');
}
