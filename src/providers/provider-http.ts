/**
 * The HTTP edge shared by the network drivers: one POST with a timeout and the caller's abort
 * signal, and the translation of every failure (network, HTTP status, body) into a ProviderError.
 * Drivers speak HTTP themselves rather than through an SDK so statuses, provider messages, finish
 * reasons and mid-stream errors reach Orrery exactly as the provider sent them. Requests go
 * through the server's Outbound (outbound.ts: pooled connections, the egress policy); redirects
 * are never followed. They are dispatched with a handler of our own (`Exchange`) that keeps the
 * answer's bytes as they come, rather than through undici's `request`, whose stream per answer cost
 * a blocking call about half its client CPU (bench/README.md, issue 17).
 */
import type { Dispatcher } from 'undici';
import { ProviderError, type ProviderConnection, type ProviderErrorCode } from './driver.ts';
import { readSse, type SseEvent } from './sse.ts';
import { EgressRefused } from './egress.ts';
import { defaultOutbound, type Outbound } from './outbound.ts';
import { AnswerTooLarge, resultTooLarge } from './result-bound.ts';
import type { ProviderCallTrace } from '../telemetry/hooks.ts';

const DEFAULT_TIMEOUT_MS = 10 * 60 * 1000;

export interface ProviderPost {
  /** Who we are talking to, for messages: "OpenAI", "Anthropic", "openai_compatible at http://…". */
  label: string;
  url: string;
  /** POST by default; GET sends no body (polling, stream URLs). */
  method?: 'POST' | 'GET';
  headers: Record<string, string>;
  /** Sent as JSON, unless `rawBody` is given. */
  body?: unknown;
  /**
   * The exact bytes to send (with its own content-type in `headers`): a form body, or JSON already
   * serialised because a signature (SigV4) covers it.
   */
  rawBody?: string;
  signal?: AbortSignal;
  /**
   * Blocking: the whole call must finish within it. Streaming: the answer must start within it and
   * no gap between two pieces may exceed it (a long, live stream is fine; a stalled one is not).
   */
  timeoutMs: number;
  /** The server's outbound layer (the environment's connection carries it). */
  outbound?: Outbound;
}

/** `conn.config.timeout_ms` when it is a positive number, else the default. */
export function timeoutOf(conn: ProviderConnection): number {
  const t = conn.config?.timeout_ms;
  return typeof t === 'number' && Number.isFinite(t) && t > 0 ? t : DEFAULT_TIMEOUT_MS;
}

/** Status → code, as documented on ProviderErrorCode. */
export function codeForStatus(status: number): ProviderErrorCode {
  if (status === 401 || status === 403) return 'provider_auth';
  if (status === 429) return 'provider_rate_limited';
  if (status >= 400 && status < 500 && status !== 408) return 'provider_bad_request';
  return 'provider_error';
}

/** Worth trying again later: rate limits, timeouts, overload, gateway trouble. */
export const isRetryableStatus = (status: number) =>
  status === 408 ||
  status === 429 ||
  status === 500 ||
  status === 502 ||
  status === 503 ||
  status === 504 ||
  status === 529;

/**
 * The provider's own words from an error body. OpenAI: `{error:{message}}`; Anthropic:
 * `{type:'error', error:{type, message}}`; Ollama: `{error:"…"}`; vLLM: `{message}`; FastAPI, Replicate: `{detail}`;
 * IBM: `{errorMessage}`, `{errors:[{message}]}`.
 */
export function providerMessage(body: unknown): string | undefined {
  if (typeof body === 'string') return body.trim() || undefined;
  if (!body || typeof body !== 'object') return undefined;
  const b = body as Record<string, unknown>;
  const err = b.error;
  // OAuth 2.0 token endpoints (RFC 6749 §5.2, Google's, IBM's): `{error:"invalid_grant", error_description:"…"}`.
  if (typeof err === 'string' && err && typeof b.error_description === 'string' && b.error_description)
    return `${err}: ${b.error_description}`;
  if (typeof err === 'string' && err) return err;
  if (err && typeof err === 'object' && typeof (err as Record<string, unknown>).message === 'string') {
    return (err as Record<string, unknown>).message as string;
  }
  if (typeof b.message === 'string' && b.message) return b.message;
  if (typeof b.detail === 'string' && b.detail) return b.detail;
  // IBM Cloud IAM: `{errorCode, errorMessage}`; watsonx.ai: `{errors:[{code, message}], trace, status_code}`.
  if (typeof b.errorMessage === 'string' && b.errorMessage) return b.errorMessage;
  if (Array.isArray(b.errors)) {
    const first = b.errors.find(
      (e) => e && typeof e === 'object' && typeof (e as Record<string, unknown>).message === 'string',
    );
    if (first) return (first as Record<string, unknown>).message as string;
  }
  return undefined;
}

/** A sent request: read it as one JSON document or as server-sent events. */
export interface ProviderResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  json(): Promise<unknown>;
  events(): AsyncGenerator<SseEvent>;
  /** The raw body, piece by piece, under the same idle timeout (binary framings: AWS event streams). */
  bytes(): AsyncGenerator<Uint8Array>;
}

/** POST JSON (or GET); resolves once a 2xx answer has started, throws a ProviderError for anything else. */
export async function postToProvider(req: ProviderPost): Promise<ProviderResponse> {
  const outbound = req.outbound ?? defaultOutbound();
  const exchange = new Exchange(answerLimits(outbound.maxResultBytes));
  const method = req.method ?? 'POST';
  const traced = outbound.tracer?.providerCall(req.label, method, req.url);
  const call = new Call(req, exchange, traced);
  try {
    call.arm();
    const url = new URL(req.url);
    outbound.agent.dispatch(
      {
        origin: url.origin,
        path: url.pathname + url.search,
        method,
        headers: {
          ...(method === 'POST' ? { 'content-type': 'application/json' } : {}),
          accept: 'application/json, text/event-stream',
          ...traced?.headers,
          ...req.headers,
        },
        body: method === 'GET' ? undefined : (req.rawBody ?? JSON.stringify(req.body)),
      },
      exchange,
    );
    await exchange.started;
  } catch (err) {
    const failure = call.translate(err, 'connect');
    call.end(failure);
    throw failure;
  }
  const status = exchange.status;
  if (status < 200 || status >= 300) {
    let text: string;
    try {
      text = (await exchange.whole()).toString('utf8');
    } catch (err) {
      call.end();
      throw call.translate(err, 'body');
    }
    const failure = httpError(req.label, status, text, exchange.headers);
    call.end(failure);
    throw failure;
  }
  return {
    status,
    headers: exchange.headers,
    json: async () => {
      let text: string;
      try {
        text = (await exchange.whole()).toString('utf8');
      } catch (err) {
        const failure = call.translate(err, 'body');
        call.end(failure);
        throw failure;
      } finally {
        call.end();
      }
      try {
        return JSON.parse(text) as unknown;
      } catch {
        throw new ProviderError(
          'provider_error',
          `${req.label} answered something that is not JSON: ${clip(text)}`,
          status,
        );
      }
    },
    events: () => call.events(exchange.pieces(), exchange.limits.whole),
    bytes: () => call.bytes(exchange.pieces()),
  };
}

/** Bytes held for a reader of pieces before the connection is paused (and resumed below half of it). */
const HELD_BYTES = 1 << 20;

/** The most bytes an answer may have on the wire, read whole and streamed. */
interface AnswerLimits {
  whole: number;
  streamed: number;
}

/**
 * From the result bound (bytes of text): a whole answer holds its text JSON-escaped (at most six
 * bytes a character, `\uXXXX`) and an envelope; a stream sends each token in an event of its own
 * (a hundred bytes or two each), so it may carry many times its text before the text bound cuts it.
 */
const answerLimits = (maxResultBytes: number): AnswerLimits => ({
  whole: 6 * maxResultBytes + 64 * 1024,
  streamed: 128 * maxResultBytes + 64 * 1024,
});

/**
 * One request as undici dispatches it: the status and headers, then the answer's bytes, kept in
 * arrival order for whoever reads them, whole (`whole`) or piece by piece (`pieces`, which pauses
 * the connection while it holds more than HELD_BYTES unread).
 */
class Exchange implements Dispatcher.DispatchHandler {
  status = 0;
  headers: Record<string, string | string[] | undefined> = {};
  /** Settles when the answer starts (a final status), or fails with the request's error. */
  readonly started: Promise<void>;
  private start!: { resolve: () => void; reject: (err: Error) => void };
  private controller: Dispatcher.DispatchController | undefined;
  private abortedWith: Error | undefined;
  private readonly held: Buffer[] = [];
  private heldBytes = 0;
  private receivedBytes = 0;
  private streaming = false;
  private ended = false;
  private failure: Error | undefined;
  private wake: (() => void) | undefined;

  constructor(readonly limits: AnswerLimits) {
    this.started = new Promise<void>((resolve, reject) => (this.start = { resolve, reject }));
    this.started.catch(() => {}); // read by the caller; a failure after the start is read from `failure`
  }

  /**
   * Stops the request, once (later reasons are ignored). One still queued for a connection is
   * stopped when it gets one, but its caller is answered now (a timeout, an abort), not after the queue.
   */
  abort(reason: Error): void {
    if (this.abortedWith) return;
    this.abortedWith = reason;
    if (this.controller) this.controller.abort(reason);
    else this.start.reject(reason);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.abortedWith) controller.abort(this.abortedWith);
  }

  onResponseStart(
    _c: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    if (statusCode < 200) return; // informational (100 Continue): the answer is still to come
    this.status = statusCode;
    this.headers = headers;
    this.start.resolve();
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.abortedWith) return;
    this.receivedBytes += chunk.length;
    const limit = this.streaming ? this.limits.streamed : this.limits.whole;
    if (this.receivedBytes > limit) {
      // Nothing more is kept: the bytes held so far go with the exchange.
      this.held.length = 0;
      this.heldBytes = 0;
      this.abort(new AnswerTooLarge(limit));
      return;
    }
    this.held.push(chunk);
    this.heldBytes += chunk.length;
    if (this.streaming && this.heldBytes > HELD_BYTES && !controller.paused) controller.pause();
    this.notify();
  }

  onResponseEnd(): void {
    this.ended = true;
    this.notify();
  }

  onResponseError(_c: Dispatcher.DispatchController, error: Error): void {
    this.failure = error;
    this.start.reject(error);
    this.notify();
  }

  /** The whole answer, once it has ended. */
  async whole(): Promise<Buffer> {
    while (!this.ended && !this.failure) await this.next();
    if (this.failure) throw this.failure;
    return this.held.length === 1 ? this.held[0] : Buffer.concat(this.held, this.heldBytes);
  }

  /** The answer's bytes as they come. */
  async *pieces(): AsyncGenerator<Uint8Array> {
    this.streaming = true;
    for (;;) {
      const chunk = this.held.shift();
      if (chunk) {
        this.heldBytes -= chunk.length;
        if (this.controller?.paused && this.heldBytes < HELD_BYTES / 2) this.controller.resume();
        yield chunk;
        continue;
      }
      if (this.failure) throw this.failure;
      if (this.ended) return;
      await this.next();
    }
  }

  private next(): Promise<void> {
    return new Promise((resolve) => (this.wake = resolve));
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}

/** A ProviderError for a non-2xx answer, with the provider's message and the wait it asked for. */
function httpError(
  label: string,
  status: number,
  bodyText: string,
  headers?: Record<string, string | string[] | undefined>,
): ProviderError {
  let parsed: unknown = bodyText;
  try {
    parsed = JSON.parse(bodyText);
  } catch {
    // not JSON: an HTML error page from a proxy, say; use the text
  }
  const said = providerMessage(parsed);
  const message = `${label} answered HTTP ${status}${said ? `: ${clip(said)}` : ''}`;
  return new ProviderError(
    codeForStatus(status),
    message,
    status,
    isRetryableStatus(status),
    headers ? retryAfterMs(headers) : undefined,
  );
}

/**
 * How long the provider asked us to wait: `retry-after-ms` and `x-ms-retry-after-ms` (Azure) in
 * milliseconds, else `retry-after` in seconds or as an HTTP date.
 */
export function retryAfterMs(
  headers: Record<string, string | string[] | undefined>,
  now = Date.now(),
): number | undefined {
  const header = (name: string) => {
    const v = headers[name];
    return Array.isArray(v) ? v[0] : v;
  };
  for (const name of ['retry-after-ms', 'x-ms-retry-after-ms']) {
    const ms = Number(header(name));
    if (header(name) !== undefined && Number.isFinite(ms) && ms >= 0) return ms;
  }
  const after = header('retry-after')?.trim();
  if (!after) return undefined;
  if (/^\d+(\.\d+)?$/.test(after)) return Number(after) * 1000;
  const at = Date.parse(after);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** One request's timer, abort wiring and error translation: every abort (the caller's, the timer's, a consumer that left) stops `exchange`. */
class Call {
  private timer: NodeJS.Timeout | undefined;
  private timedOut = false;
  private readonly onAbort = () => {
    const reason: unknown = this.req.signal?.reason;
    this.exchange.abort(reason instanceof Error ? reason : new Error('aborted'));
  };

  constructor(
    private readonly req: ProviderPost,
    private readonly exchange: Exchange,
    private readonly traced?: ProviderCallTrace,
  ) {}

  /** Starts the timer and listens to the caller's signal. */
  arm(): void {
    if (this.req.signal?.aborted) throw this.req.signal.reason;
    this.req.signal?.addEventListener('abort', this.onAbort, { once: true });
    this.restartTimer();
  }

  restartTimer(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timedOut = true;
      this.exchange.abort(new Error('timeout'));
    }, this.req.timeoutMs);
  }

  /** The call is over (its answer read, or failed with `error`); ending twice is harmless. */
  end(error?: unknown): void {
    clearTimeout(this.timer);
    this.req.signal?.removeEventListener('abort', this.onAbort);
    this.traced?.end(this.exchange.status || undefined, error);
  }

  events(body: AsyncIterable<Uint8Array>, maxEventChars: number): AsyncGenerator<SseEvent> {
    return this.guarded(readSse(this.touching(body), maxEventChars));
  }

  bytes(body: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
    return this.guarded(this.touching(body));
  }

  /** Translates the body's failures, and stops the download when the consumer leaves early (break, throw, abort). */
  private async *guarded<T>(source: AsyncIterable<T>): AsyncGenerator<T> {
    try {
      for await (const item of source) yield item;
    } catch (err) {
      const failure = this.translate(err, 'body');
      this.end(failure);
      throw failure;
    } finally {
      this.end();
      this.exchange.abort(new Error('stream consumer finished'));
    }
  }

  /** Each piece of bytes restarts the idle timer. */
  private async *touching(body: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
    this.restartTimer();
    for await (const bytes of body) {
      this.restartTimer();
      yield bytes;
    }
  }

  translate(err: unknown, phase: 'connect' | 'body'): unknown {
    if (err instanceof ProviderError) return err;
    if (err instanceof AnswerTooLarge || (err as { cause?: unknown })?.cause instanceof AnswerTooLarge)
      return resultTooLarge(this.req.label, (this.req.outbound ?? defaultOutbound()).maxResultBytes);
    const refused = egressRefusal(err);
    if (refused) return new ProviderError('egress_refused', `${this.req.label}: ${refused.message}`);
    // The caller's abort is not the provider's failure: hand back the caller's own reason.
    if (this.req.signal?.aborted) return this.req.signal.reason;
    const { label, url, timeoutMs } = this.req;
    if (this.timedOut) {
      const what = phase === 'connect' ? 'did not answer' : 'stopped sending';
      return new ProviderError(
        'provider_unreachable',
        `${label} ${what} within ${timeoutMs} ms (${url})`,
        undefined,
        true,
      );
    }
    const cause = describeCause(err);
    if (phase === 'connect') {
      return new ProviderError('provider_unreachable', `${label} is unreachable: ${cause} (${url})`, undefined, true);
    }
    return new ProviderError('provider_error', `${label} broke off its answer: ${cause}`, undefined, true);
  }
}

/** The egress policy's refusal, as thrown by the connector or wrapped by undici. */
export function egressRefusal(err: unknown): EgressRefused | undefined {
  for (let e = err as { cause?: unknown } | undefined, i = 0; e && i < 4; e = e.cause as typeof e, i++) {
    if (e instanceof EgressRefused) return e;
  }
  return undefined;
}

/** undici wraps the socket error: "fetch failed" with cause {code:'ECONNREFUSED'}. */
function describeCause(err: unknown): string {
  const e = err as { message?: string; cause?: { code?: string; message?: string } } | undefined;
  const c = e?.cause;
  if (c?.code && c.message) return c.message.includes(c.code) ? c.message : `${c.code} ${c.message}`;
  if (c?.message) return c.message;
  if (c?.code) return c.code;
  return e?.message ?? String(err);
}

const clip = (s: string, n = 500) => (s.length > n ? `${s.slice(0, n)}…` : s);

/** Base URL without trailing slashes, so joining paths never doubles them. */
export const trimSlashes = (url: string) => url.replace(/\/+$/, '');
