/**
 * The OpenTelemetry settings, read from the standard OTEL_* environment variables
 * (opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables). Telemetry is on when
 * an OTLP endpoint is set; unset, nothing of the SDK is loaded (telemetry/start.ts). This module
 * imports nothing of it, so reading the config stays as cheap as before.
 */

type Env = Record<string, string | undefined>;

type OtlpProtocol = 'http/protobuf' | 'http/json';
type SamplerName =
  | 'always_on'
  | 'always_off'
  | 'traceidratio'
  | 'parentbased_always_on'
  | 'parentbased_always_off'
  | 'parentbased_traceidratio';

export interface OtlpTarget {
  url: string;
  protocol: OtlpProtocol;
  headers: Record<string, string>;
  timeoutMs: number;
}

export interface TelemetrySettings {
  /** Where spans go; absent: no traces (OTEL_TRACES_EXPORTER=none). */
  traces?: OtlpTarget;
  /** Where the GenAI client metrics go; absent: none (no endpoint, or OTEL_METRICS_EXPORTER=none). */
  metrics?: OtlpTarget & { intervalMs: number };
  serviceName: string;
  resourceAttributes: Record<string, string>;
  sampler: SamplerName;
  /** Probability for the ratio samplers, 0 to 1. */
  samplerArg: number;
  /** The batch span processor (OTEL_BSP_*). */
  batch: { scheduleDelayMs: number; exportTimeoutMs: number; maxQueueSize: number; maxExportBatchSize: number };
  /** Prompts and answers as span events (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true). */
  captureContent: boolean;
}

const SAMPLERS: readonly SamplerName[] = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
];

const value = (env: Env, name: string): string | undefined => {
  const v = env[name]?.trim();
  return v ? v : undefined;
};

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = value(env, name);
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max)
    throw new Error(`${name} must be a whole number between ${min} and ${max}, got ${JSON.stringify(raw)}`);
  return n;
}

/** `k1=v1,k2=v2`, values URL-encoded (W3C baggage format, as the specification says). */
function pairs(env: Env, name: string): Record<string, string> {
  const raw = value(env, name);
  const out: Record<string, string> = {};
  if (!raw) return out;
  for (const part of raw.split(',')) {
    if (!part.trim()) continue;
    const eq = part.indexOf('=');
    const key = eq > 0 ? part.slice(0, eq).trim() : '';
    if (!key)
      throw new Error(`${name} must be a list of key=value pairs separated by commas, got ${JSON.stringify(raw)}`);
    try {
      out[key] = decodeURIComponent(part.slice(eq + 1).trim());
    } catch {
      throw new Error(`${name}: the value of ${key} is not valid URL-encoding`);
    }
  }
  return out;
}

function protocol(env: Env, name: string, fallback: OtlpProtocol): OtlpProtocol {
  const raw = value(env, name);
  if (raw === undefined) return fallback;
  if (raw === 'http/protobuf' || raw === 'http/json') return raw;
  throw new Error(`${name} must be http/protobuf or http/json (grpc is not supported), got ${JSON.stringify(raw)}`);
}

function url(raw: string, name: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new Error(`${name} must be an absolute http(s) URL, got ${JSON.stringify(raw)}`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new Error(`${name} must be an absolute http(s) URL (http://collector:4318), got ${JSON.stringify(raw)}`);
  return u.toString();
}

/** A signal's target: its own endpoint as given, or the base endpoint with `/v1/<signal>` appended. */
function target(env: Env, signal: 'TRACES' | 'METRICS'): OtlpTarget | undefined {
  const own = value(env, `OTEL_EXPORTER_OTLP_${signal}_ENDPOINT`);
  const base = value(env, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  const exporter = value(env, `OTEL_${signal}_EXPORTER`);
  if (exporter === 'none' || (!own && !base)) return undefined;
  if (exporter !== undefined && exporter !== 'otlp')
    throw new Error(`OTEL_${signal}_EXPORTER must be otlp or none, got ${JSON.stringify(exporter)}`);
  const endpoint = own
    ? url(own, `OTEL_EXPORTER_OTLP_${signal}_ENDPOINT`)
    : `${url(base!, 'OTEL_EXPORTER_OTLP_ENDPOINT').replace(/\/+$/, '')}/v1/${signal.toLowerCase()}`;
  const timeout = integer(env, 'OTEL_EXPORTER_OTLP_TIMEOUT', 10_000, 1, 600_000);
  return {
    url: endpoint,
    protocol: protocol(
      env,
      `OTEL_EXPORTER_OTLP_${signal}_PROTOCOL`,
      protocol(env, 'OTEL_EXPORTER_OTLP_PROTOCOL', 'http/protobuf'),
    ),
    headers: { ...pairs(env, 'OTEL_EXPORTER_OTLP_HEADERS'), ...pairs(env, `OTEL_EXPORTER_OTLP_${signal}_HEADERS`) },
    timeoutMs: integer(env, `OTEL_EXPORTER_OTLP_${signal}_TIMEOUT`, timeout, 1, 600_000),
  };
}

function sampler(env: Env): { sampler: SamplerName; samplerArg: number } {
  const name = (value(env, 'OTEL_TRACES_SAMPLER') ?? 'parentbased_always_on') as SamplerName;
  if (!SAMPLERS.includes(name))
    throw new Error(`OTEL_TRACES_SAMPLER must be one of ${SAMPLERS.join(', ')}, got ${JSON.stringify(name)}`);
  const rawArg = value(env, 'OTEL_TRACES_SAMPLER_ARG');
  const arg = rawArg === undefined ? 1 : Number(rawArg);
  if (!Number.isFinite(arg) || arg < 0 || arg > 1)
    throw new Error(`OTEL_TRACES_SAMPLER_ARG must be a probability between 0 and 1, got ${JSON.stringify(rawArg)}`);
  return { sampler: name, samplerArg: arg };
}

/** The settings the variables ask for; undefined when telemetry is off (no endpoint, or OTEL_SDK_DISABLED=true). */
export function telemetrySettingsOf(env: Env): TelemetrySettings | undefined {
  if (value(env, 'OTEL_SDK_DISABLED')?.toLowerCase() === 'true') return undefined;
  const traces = target(env, 'TRACES');
  const metricsTarget = target(env, 'METRICS');
  if (!traces && !metricsTarget) return undefined;
  const maxQueueSize = integer(env, 'OTEL_BSP_MAX_QUEUE_SIZE', 2048, 1, 1_000_000);
  const resourceAttributes = pairs(env, 'OTEL_RESOURCE_ATTRIBUTES');
  return {
    ...(traces ? { traces } : {}),
    ...(metricsTarget
      ? {
          metrics: {
            ...metricsTarget,
            intervalMs: integer(env, 'OTEL_METRIC_EXPORT_INTERVAL', 60_000, 100, 86_400_000),
          },
        }
      : {}),
    serviceName: value(env, 'OTEL_SERVICE_NAME') ?? resourceAttributes['service.name'] ?? 'orrery',
    resourceAttributes,
    ...sampler(env),
    batch: {
      scheduleDelayMs: integer(env, 'OTEL_BSP_SCHEDULE_DELAY', 5000, 1, 3_600_000),
      exportTimeoutMs: integer(env, 'OTEL_BSP_EXPORT_TIMEOUT', 30_000, 1, 3_600_000),
      maxQueueSize,
      maxExportBatchSize: Math.min(maxQueueSize, integer(env, 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE', 512, 1, 1_000_000)),
    },
    captureContent: value(env, 'OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT')?.toLowerCase() === 'true',
  };
}
