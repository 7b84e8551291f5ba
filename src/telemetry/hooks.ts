/**
 * What the rest of the server calls of telemetry: the HTTP server spans, a span per run with its
 * attempts, and the provider's HTTP call. Without OTEL_* settings every call is the no-op below
 * and nothing of the OpenTelemetry SDK is loaded; with them, telemetry/tracing.ts implements it.
 */
import type { FastifyInstance } from 'fastify';

/** What a run's span is started with (the GenAI request attributes and Orrery's own). */
export interface RunStart {
  operation: string;
  provider: string;
  model: string;
  interaction: string;
  environment: string;
  project: string;
  temperature?: number;
  maxTokens?: number;
  /** The run's parent run (a virtual run's attempt). */
  parentRun?: string;
  /** The rendered prompt, recorded only when message content is captured. */
  messages?: unknown;
  /** A restricted conversation's run: its history is the caller's, so its content is never recorded. */
  restricted?: boolean;
}

/** What a run's span ends with: the run as stored. */
export interface RunEnd {
  id: string;
  status: string;
  responseModel?: string | null;
  inputTokens?: number | null;
  outputTokens?: number | null;
  finishReason?: string | null;
  responseId?: string;
  cost?: number | null;
  error?: { code: string; message: string };
  cachedFrom?: string;
  toolUse?: Array<{ id: string; tool_name: string }>;
  /** The answer, recorded only when message content is captured. */
  result?: unknown;
}

export interface RunTrace {
  /** Ids of the run's span, recorded on the run (null when not traced). */
  readonly traceId: string | null;
  readonly spanId: string | null;
  /** Runs `fn` with this run's span as the parent of the spans started inside. */
  within<T>(fn: () => T): T;
  end(end: RunEnd): void;
}

/** One provider HTTP call: headers to send (traceparent), and its end. */
export interface ProviderCallTrace {
  readonly headers: Record<string, string> | undefined;
  end(status?: number, error?: unknown): void;
}

export interface Telemetry {
  readonly enabled: boolean;
  /** The HTTP server span of every request, child of the caller's traceparent. */
  installHttp(app: FastifyInstance): void;
  /** A run's span, child of the current span (the request's, or a virtual run's). */
  startRun(start: RunStart): RunTrace;
  /** A run's span for a run whose stored ids are its creation's (a streamed run started after a restart). */
  resumeRun(start: RunStart, stored: { traceId: string | null; spanId: string | null }): RunTrace;
  /** One attempt of a provider call (started at `startedAt`, performance.now()), recorded when it ends. */
  attempt(n: number, startedAt: number, error?: { code: string; message: string }, repair?: boolean): void;
  /** An outgoing provider HTTP call under the current span. */
  providerCall(label: string, method: string, url: string): ProviderCallTrace;
  /** Flushes and stops, within OTEL_BSP_EXPORT_TIMEOUT. */
  close(): Promise<void>;
}

const NO_RUN: RunTrace = { traceId: null, spanId: null, within: (fn) => fn(), end: () => {} };
const NO_CALL: ProviderCallTrace = { headers: undefined, end: () => {} };

export const NO_TELEMETRY: Telemetry = {
  enabled: false,
  installHttp: () => {},
  startRun: () => NO_RUN,
  resumeRun: () => NO_RUN,
  attempt: () => {},
  providerCall: () => NO_CALL,
  close: async () => {},
};
