/**
 * Telemetry with the OpenTelemetry SDK (loaded by telemetry/start.ts only when OTEL_* asks for
 * it): spans batched to an OTLP/HTTP endpoint, the GenAI client metrics to another. Nothing is
 * registered globally: the current span travels in this module's own AsyncLocalStorage, so several
 * servers in one process (tests) keep their traces apart, and no other library's spans mix in.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  defaultTextMapGetter,
  defaultTextMapSetter,
  trace,
  type Context,
  type Histogram,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BasicTracerProvider,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type Sampler,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import { MeterProvider, PeriodicExportingMetricReader, type PushMetricExporter } from '@opentelemetry/sdk-metrics';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ProviderCallTrace, RunEnd, RunStart, RunTrace, Telemetry } from './hooks.ts';
import type { OtlpTarget, TelemetrySettings } from './settings.ts';
import { CountedBatchProcessor } from './span-queue.ts';
import { contentEvent, endAttributes, providerName, startAttributes } from './genai.ts';

const VERSION = '0.1.0';
/** Probes answer monitors, not users: their spans would only be noise. */
const UNTRACED = new Set(['/health', '/ready', '/metrics']);

export interface TracingOptions {
  /** Told of each span dropped past OTEL_BSP_MAX_QUEUE_SIZE. */
  onDropped: (n: number) => void;
}

export async function startTracing(settings: TelemetrySettings, opts: TracingOptions): Promise<Telemetry> {
  const resource = resourceFromAttributes({
    ...settings.resourceAttributes,
    [ATTR_SERVICE_NAME]: settings.serviceName,
    [ATTR_SERVICE_VERSION]: VERSION,
  });
  const spanProcessors = settings.traces
    ? [new CountedBatchProcessor(await spanExporter(settings.traces), { ...settings.batch, onDropped: opts.onDropped })]
    : [];
  // Without a trace exporter (OTEL_TRACES_EXPORTER=none: metrics only) no span is recorded: making
  // spans nobody exports cost as much as the metrics themselves.
  const sampler = settings.traces ? samplerOf(settings) : new AlwaysOffSampler();
  const tracerProvider = new BasicTracerProvider({ resource, sampler, spanProcessors });
  const meterProvider = settings.metrics
    ? new MeterProvider({
        resource,
        readers: [
          new PeriodicExportingMetricReader({
            exporter: await metricExporter(settings.metrics),
            exportIntervalMillis: settings.metrics.intervalMs,
            exportTimeoutMillis: Math.min(settings.metrics.timeoutMs, settings.metrics.intervalMs),
          }),
        ],
      })
    : undefined;
  return new OtelTelemetry(settings, tracerProvider, meterProvider);
}

async function spanExporter(t: OtlpTarget): Promise<SpanExporter> {
  const config = { url: t.url, headers: t.headers, timeoutMillis: t.timeoutMs };
  if (t.protocol === 'http/json')
    return new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter(config);
  return new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter(config);
}

async function metricExporter(t: OtlpTarget): Promise<PushMetricExporter> {
  const config = { url: t.url, headers: t.headers, timeoutMillis: t.timeoutMs };
  if (t.protocol === 'http/json')
    return new (await import('@opentelemetry/exporter-metrics-otlp-http')).OTLPMetricExporter(config);
  return new (await import('@opentelemetry/exporter-metrics-otlp-proto')).OTLPMetricExporter(config);
}

function samplerOf(s: TelemetrySettings): Sampler {
  const ratio = () => new TraceIdRatioBasedSampler(s.samplerArg);
  switch (s.sampler) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return ratio();
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: ratio() });
    default:
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

/** A `performance.now()` instant as the epoch milliseconds a span's time takes. */
const epochMs = (perfNow: number) => performance.timeOrigin + perfNow;

class OtelTelemetry implements Telemetry {
  readonly enabled = true;
  private readonly current = new AsyncLocalStorage<Context>();
  private readonly tracer: Tracer;
  private readonly propagator = new CompositePropagator({
    propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()],
  });
  private readonly tokenUsage?: Histogram;
  private readonly duration?: Histogram;

  constructor(
    private readonly settings: TelemetrySettings,
    private readonly tracerProvider: BasicTracerProvider,
    private readonly meterProvider: MeterProvider | undefined,
  ) {
    this.tracer = tracerProvider.getTracer('orrery', VERSION);
    const meter = meterProvider?.getMeter('orrery', VERSION);
    this.tokenUsage = meter?.createHistogram('gen_ai.client.token.usage', {
      description: 'Tokens used by a run, by type (input, output)',
      unit: '{token}',
      advice: {
        explicitBucketBoundaries: [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216],
      },
    });
    this.duration = meter?.createHistogram('gen_ai.client.operation.duration', {
      description: 'Duration of a run, from its start to its end',
      unit: 's',
      advice: {
        explicitBucketBoundaries: [
          0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
        ],
      },
    });
  }

  private active(): Context {
    return this.current.getStore() ?? ROOT_CONTEXT;
  }

  installHttp(app: FastifyInstance): void {
    const spans = new WeakMap<FastifyRequest, Span>();
    const end = (req: FastifyRequest, status: number | undefined, aborted: boolean) => {
      const span = spans.get(req);
      if (!span) return;
      spans.delete(req);
      if (status !== undefined) span.setAttribute('http.response.status_code', status);
      if (aborted) span.setAttribute('error.type', 'aborted');
      if (aborted || (status !== undefined && status >= 500))
        span.setStatus({ code: SpanStatusCode.ERROR, ...(aborted ? { message: 'the client went away' } : {}) });
      span.end();
    };
    app.addHook('onRequest', (req, _reply, done) => {
      const route = req.routeOptions.url;
      if (route && UNTRACED.has(route)) return done();
      const parent = this.propagator.extract(ROOT_CONTEXT, req.headers, defaultTextMapGetter);
      const span = this.tracer.startSpan(
        route ? `${req.method} ${route}` : req.method,
        {
          kind: SpanKind.SERVER,
          attributes: {
            'http.request.method': req.method,
            'url.path': req.url.split('?')[0],
            'url.scheme': req.protocol,
            ...(route ? { 'http.route': route } : {}),
            ...(req.headers['user-agent'] ? { 'user_agent.original': req.headers['user-agent'] } : {}),
          },
        },
        parent,
      );
      spans.set(req, span);
      this.current.run(trace.setSpan(parent, span), done);
    });
    app.addHook('onResponse', (req, reply, done) => {
      end(req, reply.statusCode, false);
      done();
    });
    app.addHook('onRequestAbort', (req, done) => {
      end(req, undefined, true);
      done();
    });
  }

  startRun(start: RunStart): RunTrace {
    return this.runTrace(start, this.active());
  }

  resumeRun(start: RunStart, stored: { traceId: string | null; spanId: string | null }): RunTrace {
    const parent =
      stored.traceId && stored.spanId
        ? trace.setSpanContext(ROOT_CONTEXT, {
            traceId: stored.traceId,
            spanId: stored.spanId,
            traceFlags: TraceFlags.SAMPLED,
            isRemote: true,
          })
        : this.active();
    return this.runTrace(start, parent);
  }

  private runTrace(start: RunStart, parent: Context): RunTrace {
    const started = performance.now();
    const span = this.tracer.startSpan(
      `${start.operation} ${start.model}`,
      { kind: SpanKind.CLIENT, attributes: startAttributes(start) },
      parent,
    );
    const ctx = trace.setSpan(parent, span);
    const sampled = (span.spanContext().traceFlags & TraceFlags.SAMPLED) !== 0;
    const { traceId, spanId } = span.spanContext();
    // Content only when asked for, and never a restricted conversation's (its history is the caller's).
    const content = this.settings.captureContent && !start.restricted ? { messages: start.messages } : undefined;
    return {
      traceId: sampled ? traceId : null,
      spanId: sampled ? spanId : null,
      within: (fn) => this.current.run(ctx, fn),
      end: (end) => this.endRun(span, ctx, start, started, end, content),
    };
  }

  private endRun(
    span: Span,
    ctx: Context,
    start: RunStart,
    started: number,
    end: RunEnd,
    content: { messages: unknown } | undefined,
  ): void {
    span.setAttributes(endAttributes(end));
    if (end.cachedFrom)
      this.tracer.startSpan('cache hit', { attributes: { 'orrery.cache.cached_from': end.cachedFrom } }, ctx).end();
    for (const call of end.toolUse ?? [])
      this.tracer
        .startSpan(
          `tool_call ${call.tool_name}`,
          {
            attributes: {
              'gen_ai.tool.name': call.tool_name,
              'gen_ai.tool.call.id': call.id,
              'gen_ai.tool.type': 'function',
            },
          },
          ctx,
        )
        .end();
    if (content) span.addEvent('gen_ai.client.inference.operation.details', contentEvent(content.messages, end.result));
    if (end.error) span.setStatus({ code: SpanStatusCode.ERROR, message: end.error.message });
    span.end();
    const common = {
      'gen_ai.operation.name': start.operation,
      'gen_ai.provider.name': providerName(start.provider),
      'gen_ai.request.model': start.model,
      ...(end.responseModel ? { 'gen_ai.response.model': end.responseModel } : {}),
    };
    this.duration?.record((performance.now() - started) / 1000, {
      ...common,
      ...(end.error ? { 'error.type': end.error.code } : {}),
    });
    if (typeof end.inputTokens === 'number')
      this.tokenUsage?.record(end.inputTokens, { ...common, 'gen_ai.token.type': 'input' });
    if (typeof end.outputTokens === 'number')
      this.tokenUsage?.record(end.outputTokens, { ...common, 'gen_ai.token.type': 'output' });
  }

  attempt(n: number, startedAt: number, error?: { code: string; message: string }, repair?: boolean): void {
    const span = this.tracer.startSpan(
      repair ? `attempt ${n} (asked again)` : `attempt ${n}`,
      {
        startTime: epochMs(startedAt),
        attributes: {
          'orrery.attempt.number': n,
          ...(repair ? { 'orrery.attempt.repair': true } : {}),
          ...(error ? { 'error.type': error.code } : {}),
        },
      },
      this.active(),
    );
    if (error) span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
    span.end();
  }

  providerCall(label: string, method: string, url: string): ProviderCallTrace {
    const parent = this.active();
    // Calls outside any run (an environment's model list) are not traced: they would start traces of their own.
    if (!trace.getSpan(parent)) return { headers: undefined, end: () => {} };
    const u = new URL(url);
    const span = this.tracer.startSpan(
      method,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          'http.request.method': method,
          'server.address': u.hostname,
          ...(u.port ? { 'server.port': Number(u.port) } : {}),
          // The path only: a query may hold a key (Gemini's `?key=`).
          'url.full': `${u.origin}${u.pathname}`,
          'orrery.provider.label': label,
        },
      },
      parent,
    );
    const headers: Record<string, string> = {};
    this.propagator.inject(trace.setSpan(parent, span), headers, defaultTextMapSetter);
    let ended = false;
    return {
      headers,
      end: (status, error) => {
        if (ended) return;
        ended = true;
        if (status) span.setAttribute('http.response.status_code', status);
        if (error || (status !== undefined && status >= 400)) {
          const code = (error as { code?: unknown } | undefined)?.code;
          span.setAttribute('error.type', typeof code === 'string' ? code : status ? String(status) : 'error');
          span.setStatus({ code: SpanStatusCode.ERROR });
        }
        span.end();
      },
    };
  }

  async close(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, this.settings.batch.exportTimeoutMs);
      timer.unref();
    });
    const stopped = Promise.all([this.tracerProvider.shutdown(), this.meterProvider?.shutdown()]).then(
      () => {},
      () => {
        // A collector that cannot take the last spans costs them, never the shutdown.
      },
    );
    await Promise.race([stopped, bound]);
    clearTimeout(timer);
  }
}
