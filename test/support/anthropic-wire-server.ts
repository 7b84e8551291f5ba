/**
 * A local server that speaks the Anthropic Messages wire as documented (Messages, Streaming
 * Messages, Errors): `x-api-key` and `anthropic-version` checks, `{type:'error', error:{type,message}}`
 * bodies, and the SSE sequence message_start, content_block_start, ping, content_block_delta…,
 * content_block_stop, message_delta, message_stop, each as `event: <type>\ndata: {json}\n\n`.
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface AnthropicWireOptions {
  /** The accepted `x-api-key`; null accepts any. Default 'sk-ant-test'. */
  apiKey?: string | null;
  /** Answer text; a function sees the request body. Default: "Hello from the wire server." */
  text?: string | ((body: Record<string, unknown>) => string);
  /** Exact stream pieces; default: the text split after each space. */
  chunks?: string[];
  usage?: {
    input_tokens: number;
    output_tokens: number;
    cache_creation_input_tokens?: number;
    cache_read_input_tokens?: number;
  };
  stopReason?: string;
  /** Models that exist; others get 404 not_found_error. Default: any model. */
  models?: string[];
  /** Answer this status with an Anthropic error body. */
  fail?: { status: number; type?: string; message?: string };
  /** Send `event: error` after `afterChunks` text deltas, then close. */
  midStreamError?: { afterChunks: number; type?: string; message: string };
  delayMs?: number;
  chunkDelayMs?: number;
  hang?: boolean;
  hangAfterChunks?: number;
}

interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: any;
}

export interface AnthropicWireServer {
  /** Base URL as the Anthropic SDK takes it: `http://127.0.0.1:PORT` (the driver adds /v1/messages). */
  url: string;
  requests: RecordedRequest[];
  options: AnthropicWireOptions;
  close(): Promise<void>;
}

const DEFAULT_TEXT = 'Hello from the wire server.';
/** Error type per status, from Anthropic's errors page. */
const TYPE_FOR_STATUS: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  529: 'overloaded_error',
};

export async function startAnthropicWireServer(options: AnthropicWireOptions = {}): Promise<AnthropicWireServer> {
  const requests: RecordedRequest[] = [];
  const state: AnthropicWireServer = { url: '', requests, options, close: async () => {} };
  const server = createServer((req, res) => {
    void handle(req, res, state).catch((err) => {
      if (!res.headersSent) sendError(res, 500, 'api_error', `wire server bug: ${String(err)}`);
      else res.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return state;
}

async function handle(req: IncomingMessage, res: ServerResponse, state: AnthropicWireServer): Promise<void> {
  const raw = await readBody(req);
  let body: any = raw;
  let parsed = false;
  try {
    body = raw === '' ? undefined : JSON.parse(raw);
    parsed = true;
  } catch {
    // answered below
  }
  const path = (req.url ?? '/').split('?')[0];
  state.requests.push({ method: req.method ?? '', path, headers: { ...req.headers }, body });
  const o = state.options;

  if (o.hang) return;
  if (o.delayMs) await sleep(o.delayMs);

  if (req.method !== 'POST' || path !== '/v1/messages') return sendError(res, 404, 'not_found_error', 'Not Found');
  const key = o.apiKey === undefined ? 'sk-ant-test' : o.apiKey;
  const given = req.headers['x-api-key'];
  if (key !== null && !given) return sendError(res, 401, 'authentication_error', 'x-api-key header is required');
  if (key !== null && given !== key) return sendError(res, 401, 'authentication_error', 'invalid x-api-key');
  if (!req.headers['anthropic-version'])
    return sendError(res, 400, 'invalid_request_error', 'anthropic-version: header is required');
  if (!parsed || typeof body !== 'object' || body === null || Array.isArray(body)) {
    return sendError(res, 400, 'invalid_request_error', 'There was an error parsing the body of your request');
  }
  if (o.fail) {
    const type = o.fail.type ?? TYPE_FOR_STATUS[o.fail.status] ?? 'api_error';
    return sendError(
      res,
      o.fail.status,
      type,
      o.fail.message ?? (o.fail.status === 529 ? 'Overloaded' : 'Internal server error'),
    );
  }
  const invalid = validate(body);
  if (invalid) return sendError(res, 400, 'invalid_request_error', invalid);
  if (o.models && !o.models.includes(body.model)) return sendError(res, 404, 'not_found_error', `model: ${body.model}`);
  return messages(res, body, o);
}

/** The checks the API makes before generating, with its wording. */
function validate(body: any): string | undefined {
  if (body.model === undefined) return 'model: Field required';
  if (typeof body.model !== 'string') return 'model: Input should be a valid string';
  if (body.messages === undefined) return 'messages: Field required';
  if (!Array.isArray(body.messages)) return 'messages: Input should be a valid list';
  if (body.max_tokens === undefined) return 'max_tokens: Field required';
  if (!Number.isInteger(body.max_tokens) || body.max_tokens < 1)
    return 'max_tokens: Input should be greater than or equal to 1';
  if (body.messages.length === 0) return 'messages: at least one message is required';
  for (const [i, m] of body.messages.entries()) {
    if (m?.role === 'system') {
      return `messages: Unexpected role "system". The Messages API accepts a top-level \`system\` parameter, not "system" as an input message role.`;
    }
    if (m?.role !== 'user' && m?.role !== 'assistant')
      return `messages.${i}.role: Input should be 'user' or 'assistant'`;
  }
  if (body.system !== undefined && typeof body.system !== 'string' && !Array.isArray(body.system))
    return 'system: Input should be a valid string';
  if (
    body.temperature !== undefined &&
    (typeof body.temperature !== 'number' || body.temperature < 0 || body.temperature > 1)
  ) {
    return 'temperature: Input should be less than or equal to 1';
  }
  return undefined;
}

async function messages(res: ServerResponse, body: any, o: AnthropicWireOptions): Promise<void> {
  const text = typeof o.text === 'function' ? o.text(body) : (o.text ?? DEFAULT_TEXT);
  const inputWords =
    words(typeof body.system === 'string' ? body.system : '') +
    body.messages.reduce((n: number, m: any) => n + words(typeof m.content === 'string' ? m.content : ''), 0);
  const usage = {
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    ...(o.usage ?? { input_tokens: inputWords, output_tokens: words(text) }),
  };
  const stop = o.stopReason ?? 'end_turn';
  const id = `msg_${createHash('sha1').update(JSON.stringify(body)).digest('hex').slice(0, 24)}`;

  if (body.stream !== true) {
    return sendJson(res, 200, {
      id,
      type: 'message',
      role: 'assistant',
      model: body.model,
      content: [{ type: 'text', text }],
      stop_reason: stop,
      stop_sequence: null,
      usage: { ...usage, service_tier: 'standard' },
    });
  }

  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'request-id': `req_${id.slice(4)}`,
  });
  const send = (type: string, data: Record<string, unknown>) =>
    res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  send('message_start', {
    message: {
      id,
      type: 'message',
      role: 'assistant',
      model: body.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: {
        input_tokens: usage.input_tokens,
        cache_creation_input_tokens: usage.cache_creation_input_tokens,
        cache_read_input_tokens: usage.cache_read_input_tokens,
        output_tokens: 1,
        service_tier: 'standard',
      },
    },
  });
  send('content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
  send('ping', {});
  const pieces = o.chunks ?? text.split(/(?<= )/).filter((p) => p !== '');
  for (const [i, piece] of pieces.entries()) {
    if (o.midStreamError && i === o.midStreamError.afterChunks) return endWithError(res, o.midStreamError);
    if (o.hangAfterChunks !== undefined && i === o.hangAfterChunks) return;
    if (o.chunkDelayMs && i > 0) await sleep(o.chunkDelayMs);
    if (res.destroyed) return;
    send('content_block_delta', { index: 0, delta: { type: 'text_delta', text: piece } });
  }
  if (o.midStreamError && o.midStreamError.afterChunks >= pieces.length) return endWithError(res, o.midStreamError);
  if (o.hangAfterChunks !== undefined && o.hangAfterChunks >= pieces.length) return;
  send('content_block_stop', { index: 0 });
  send('message_delta', {
    delta: { stop_reason: stop, stop_sequence: null },
    usage: { output_tokens: usage.output_tokens },
  });
  send('message_stop', {});
  res.end();
}

function endWithError(res: ServerResponse, e: NonNullable<AnthropicWireOptions['midStreamError']>): void {
  res.write(
    `event: error\ndata: ${JSON.stringify({ type: 'error', error: { type: e.type ?? 'overloaded_error', message: e.message } })}\n\n`,
  );
  res.end();
}

function sendError(res: ServerResponse, status: number, type: string, message: string): void {
  sendJson(res, status, { type: 'error', error: { type, message }, request_id: 'req_wire' });
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    'request-id': 'req_wire',
  });
  res.end(text);
}

const words = (s: string) => s.split(/\s+/).filter(Boolean).length;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on('data', (b: Buffer) => parts.push(b));
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    req.on('error', reject);
  });
}
