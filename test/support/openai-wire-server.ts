/**
 * A local server that speaks the OpenAI REST wire as documented (API reference: Chat Completions,
 * Embeddings, Errors): request validation, 401 on a wrong key, `{error:{message,type,param,code}}`
 * bodies, SSE chunks with `choices[0].delta.content`, a final usage chunk with empty `choices`
 * when `stream_options.include_usage`, then `data: [DONE]`. Knobs script the answer and failures.
 * Function calling as documented (Function calling guide, Chat object, Chat streaming): `tools`,
 * `tool_choice` and the tool-message history are checked with the API's wording; calls come back
 * as `message.tool_calls` with `finish_reason: "tool_calls"`, or streamed as `delta.tool_calls`
 * pieces keyed by `index` (the first names id and function, the rest append to `arguments`).
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { listenOnLoopback, readBody, sleep, words, writeJson } from './wire-scaffold.ts';

export interface OpenAIWireOptions {
  /** The accepted key (`Authorization: Bearer …`); null accepts any request, with or without one. Default 'sk-test'. */
  apiKey?: string | null;
  /** Answer text; a function sees the request body. Default: "Hello from the wire server." */
  text?: string | ((body: Record<string, unknown>) => string);
  /** Exact stream pieces; default: the text split after each space. */
  chunks?: string[];
  /** Usage to report; default: counts of words. The details default to zeros (blocking answers). */
  usage?: {
    prompt_tokens: number;
    completion_tokens: number;
    total_tokens: number;
    prompt_tokens_details?: { cached_tokens: number };
    completion_tokens_details?: { reasoning_tokens: number };
  };
  finishReason?: string;
  /** Answer these function calls (arguments as raw JSON text, exactly as given); a function sees the body. */
  toolCalls?: WireToolCall[] | ((body: Record<string, unknown>) => WireToolCall[] | undefined);
  /** Stream each call's arguments in pieces of this many characters (default 8). */
  argumentChunkSize?: number;
  /** Models that exist; others get 404 model_not_found. Default: any model. */
  models?: string[];
  /** Answer this status with an OpenAI error body instead of a completion. */
  fail?: {
    status: number;
    message?: string;
    type?: string;
    code?: string | null;
    rawBody?: string;
    headers?: Record<string, string>;
    times?: number;
  };
  /** Answer `GET /v1/models` with this status and an OpenAI error body. */
  failModels?: { status: number; message: string };
  /** Send this error object as a data line after `afterChunks` content chunks, then close. */
  midStreamError?: { afterChunks: number; message: string; type?: string; code?: string | null };
  /** Wait before answering (headers included). */
  delayMs?: number;
  /** Wait between stream chunks. */
  chunkDelayMs?: number;
  /** Never answer (the socket stays open until the client gives up or close()). */
  hang?: boolean;
  /** Stream only: hang after this many content chunks. */
  hangAfterChunks?: number;
  /** Stream only: send this piece as a content chunk again and again until the client closes. */
  endless?: string;
  /** The model's reasoning as compatible servers return it (`reasoning_content`, DeepSeek's and vLLM's field). */
  reasoningContent?: string;
}

interface WireToolCall {
  id: string;
  name: string;
  arguments: string;
}

interface RecordedRequest {
  method: string;
  path: string;
  /** The query string's parameters (Azure's api-version). */
  query: Record<string, string>;
  headers: Record<string, string | string[] | undefined>;
  /** Parsed JSON body, or the raw text when it was not JSON. */
  body: any;
}

export interface WireServer {
  /** Base URL as the OpenAI SDKs take it: `http://127.0.0.1:PORT/v1`. */
  url: string;
  origin: string;
  requests: RecordedRequest[];
  /** Change knobs between requests. */
  options: OpenAIWireOptions;
  /** Endless streams the client closed (the `endless` knob). */
  endlessClosed: number;
  close(): Promise<void>;
}

const DEFAULT_TEXT = 'Hello from the wire server.';
const EMBEDDING_DIMENSIONS: Record<string, number> = {
  'text-embedding-3-small': 1536,
  'text-embedding-3-large': 3072,
  'text-embedding-ada-002': 1536,
};

export async function startOpenAIWireServer(options: OpenAIWireOptions = {}): Promise<WireServer> {
  const requests: RecordedRequest[] = [];
  const state: WireServer = { url: '', origin: '', requests, options, endlessClosed: 0, close: async () => {} };

  const listening = await listenOnLoopback(
    (req, res) => handle(req, res, state),
    (res, message) => sendJson(res, 500, errorBody(message, 'server_error', null)),
  );
  state.origin = listening.origin;
  state.url = `${listening.origin}/v1`;
  state.close = listening.close;
  return state;
}

async function handle(req: IncomingMessage, res: ServerResponse, state: WireServer): Promise<void> {
  const raw = await readBody(req);
  let body: any = raw;
  let parsed = false;
  try {
    body = raw === '' ? undefined : JSON.parse(raw);
    parsed = true;
  } catch {
    // recorded as text; answered below as a parse error
  }
  const [path, search = ''] = (req.url ?? '/').split('?');
  state.requests.push({
    method: req.method ?? '',
    path,
    query: Object.fromEntries(new URLSearchParams(search)),
    headers: { ...req.headers },
    body,
  });
  const o = state.options;

  if (o.hang) return; // never answer
  if (o.delayMs) await sleep(o.delayMs);

  // OpenAI's paths, and the same API where Azure OpenAI (/openai/deployments/<d>/…, /openai/v1/…),
  // Azure AI Foundry (/models/…) and Hugging Face endpoints serve it.
  const route = `${req.method} ${path
    .replace(/^\/openai\/deployments\/[^/]+\//, '/v1/')
    .replace(/^\/openai\/v1\//, '/v1/')
    .replace(/^\/models\//, '/v1/')}`;
  if (route === 'GET /v1/models') {
    const authError = checkAuth(req, o.apiKey === undefined ? 'sk-test' : o.apiKey);
    if (authError) return sendJson(res, 401, authError);
    if (o.failModels)
      return sendJson(res, o.failModels.status, errorBody(o.failModels.message, 'invalid_request_error', null));
    // As OpenAI lists them: `{object: 'list', data: [{id, object: 'model', created, owned_by}]}`.
    const ids = o.models ?? ['gpt-4o-mini', 'gpt-4o', 'text-embedding-3-small'];
    return sendJson(res, 200, {
      object: 'list',
      data: ids.map((id) => ({ id, object: 'model', created: 1715367049, owned_by: 'system' })),
    });
  }
  if (route !== 'POST /v1/chat/completions' && route !== 'POST /v1/embeddings') {
    return sendJson(res, 404, errorBody(`Invalid URL (${req.method} ${path})`, 'invalid_request_error', null));
  }
  const authError = checkAuth(req, o.apiKey === undefined ? 'sk-test' : o.apiKey);
  if (authError) return sendJson(res, 401, authError);
  if (!parsed || typeof body !== 'object' || body === null || Array.isArray(body)) {
    return sendJson(
      res,
      400,
      errorBody(
        "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.",
        'invalid_request_error',
        null,
      ),
    );
  }
  // `times`: fail that many requests, then answer normally.
  if (o.fail && (o.fail.times === undefined || o.fail.times-- > 0)) {
    if (o.fail.rawBody !== undefined) {
      res.writeHead(o.fail.status, { 'content-type': 'text/html', ...o.fail.headers });
      return void res.end(o.fail.rawBody);
    }
    const type = o.fail.type ?? (o.fail.status >= 500 ? 'server_error' : 'invalid_request_error');
    return sendJson(
      res,
      o.fail.status,
      errorBody(o.fail.message ?? 'The server had an error while processing your request.', type, o.fail.code ?? null),
      o.fail.headers,
    );
  }
  // An Azure deployment URL names the model; the body need not.
  const deployment = /^\/openai\/deployments\/([^/]+)\//.exec(path)?.[1];
  if (deployment && body.model === undefined) body = { ...body, model: decodeURIComponent(deployment) };
  if (typeof body.model !== 'string' || body.model === '') {
    return sendJson(res, 400, errorBody('you must provide a model parameter', 'invalid_request_error', null));
  }
  if (o.models && !o.models.includes(body.model)) {
    return sendJson(
      res,
      404,
      errorBody(
        `The model \`${body.model}\` does not exist or you do not have access to it.`,
        'invalid_request_error',
        'model_not_found',
      ),
    );
  }
  if (route === 'POST /v1/embeddings') return embeddings(res, body);
  return chatCompletions(res, body, o, state);
}

function checkAuth(req: IncomingMessage, key: string | null): object | undefined {
  if (key === null) return undefined;
  // Azure's own header: `api-key: KEY`.
  const azure = req.headers['api-key'];
  if (typeof azure === 'string')
    return azure === key
      ? undefined
      : errorBody(
          'Access denied due to invalid subscription key or wrong API endpoint.',
          'invalid_request_error',
          '401',
        );
  const header = req.headers.authorization;
  if (!header) {
    return errorBody(
      "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) if you're accessing the API from your browser and are prompted for a username and password. You can obtain an API key from https://platform.openai.com/account/api-keys.",
      'invalid_request_error',
      null,
    );
  }
  const given = header.replace(/^Bearer\s+/i, '');
  if (!/^Bearer\s/i.test(header) || given !== key) {
    const shown = given.length > 8 ? `${given.slice(0, 4)}*****${given.slice(-4)}` : '*****';
    return errorBody(
      `Incorrect API key provided: ${shown}. You can find your API key at https://platform.openai.com/account/api-keys.`,
      'invalid_request_error',
      'invalid_api_key',
    );
  }
  return undefined;
}

/** o1, o3, o4 and gpt-5 onwards: OpenAI's reasoning models. */
const isReasoningModel = (model: unknown) =>
  typeof model === 'string' && (/(^|[^a-z0-9])o[134](?:$|[-.])/.test(model) || /gpt-([5-9]|\d{2,})/.test(model));

/**
 * Reasoning models take only the default sampling (Reasoning models guide) and are the only ones
 * that take `reasoning_effort`; OpenAI's wording for each.
 */
function checkReasoningOptions(body: any): Record<string, unknown> | undefined {
  const reasoning = isReasoningModel(body.model);
  const unsupported = (param: string, message: string) => ({
    error: { message, type: 'invalid_request_error', param, code: 'unsupported_parameter' },
  });
  if (reasoning) {
    if (body.temperature !== undefined && body.temperature !== 1)
      return {
        error: {
          message: `Unsupported value: 'temperature' does not support ${body.temperature} with this model. Only the default (1) value is supported.`,
          type: 'invalid_request_error',
          param: 'temperature',
          code: 'unsupported_value',
        },
      };
    for (const k of ['top_p', 'presence_penalty', 'frequency_penalty'])
      if (body[k] !== undefined)
        return unsupported(k, `Unsupported parameter: '${k}' is not supported with this model.`);
    if (body.max_tokens !== undefined)
      return unsupported(
        'max_tokens',
        "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
      );
  } else if (body.reasoning_effort !== undefined) {
    return unsupported(
      'reasoning_effort',
      "Unsupported parameter: 'reasoning_effort' is not supported with this model.",
    );
  }
  if (
    body.reasoning_effort !== undefined &&
    !['none', 'minimal', 'low', 'medium', 'high', 'xhigh'].includes(body.reasoning_effort)
  )
    return {
      error: {
        message: `Invalid value: '${body.reasoning_effort}'. Supported values are: 'minimal', 'low', 'medium', and 'high'.`,
        type: 'invalid_request_error',
        param: 'reasoning_effort',
        code: 'invalid_value',
      },
    };
  return undefined;
}

async function chatCompletions(res: ServerResponse, body: any, o: OpenAIWireOptions, state: WireServer): Promise<void> {
  if (!Array.isArray(body.messages)) {
    return sendJson(res, 400, {
      error: {
        message: "Missing required parameter: 'messages'.",
        type: 'invalid_request_error',
        param: 'messages',
        code: 'missing_required_parameter',
      },
    });
  }
  if (body.messages.length === 0) {
    return sendJson(res, 400, {
      error: {
        message:
          "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
        type: 'invalid_request_error',
        param: 'messages',
        code: 'empty_array',
      },
    });
  }
  if (body.stream_options !== undefined && body.stream !== true) {
    return sendJson(res, 400, {
      error: {
        message: 'The stream_options parameter is only allowed when stream is enabled.',
        type: 'invalid_request_error',
        param: 'stream_options',
        code: null,
      },
    });
  }
  const invalidTools = checkTools(body);
  if (invalidTools) return sendJson(res, 400, invalidTools);
  const invalidOptions = checkReasoningOptions(body);
  if (invalidOptions) return sendJson(res, 400, invalidOptions);
  const calls = (typeof o.toolCalls === 'function' ? o.toolCalls(body) : o.toolCalls) ?? [];
  const text = typeof o.text === 'function' ? o.text(body) : (o.text ?? (calls.length > 0 ? '' : DEFAULT_TEXT));
  const promptWords = body.messages.reduce(
    (n: number, m: any) => n + words(typeof m?.content === 'string' ? m.content : ''),
    0,
  );
  const usage: NonNullable<OpenAIWireOptions['usage']> = o.usage ?? {
    prompt_tokens: promptWords,
    completion_tokens: words(text),
    total_tokens: promptWords + words(text),
  };
  const finish = o.finishReason ?? (calls.length > 0 ? 'tool_calls' : 'stop');
  const wireCalls = calls.map((c) => ({
    id: c.id,
    type: 'function',
    function: { name: c.name, arguments: c.arguments },
  }));
  const id = `chatcmpl-${createHash('sha1').update(JSON.stringify(body)).digest('hex').slice(0, 24)}`;
  const created = Math.floor(Date.now() / 1000);
  const base = { id, created, model: body.model, system_fingerprint: 'fp_wire' };

  if (body.stream !== true) {
    return sendJson(res, 200, {
      ...base,
      object: 'chat.completion',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: calls.length > 0 && text === '' ? null : text,
            ...(o.reasoningContent !== undefined ? { reasoning_content: o.reasoningContent } : {}),
            ...(calls.length > 0 ? { tool_calls: wireCalls } : {}),
            refusal: null,
            annotations: [],
          },
          logprobs: null,
          finish_reason: finish,
        },
      ],
      usage: {
        ...usage,
        prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0, ...usage.prompt_tokens_details },
        completion_tokens_details: {
          reasoning_tokens: 0,
          audio_tokens: 0,
          accepted_prediction_tokens: 0,
          rejected_prediction_tokens: 0,
          ...usage.completion_tokens_details,
        },
      },
      service_tier: 'default',
    });
  }

  const includeUsage = body.stream_options?.include_usage === true;
  // With include_usage every chunk carries `usage: null` except the last.
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
    JSON.stringify({
      ...base,
      object: 'chat.completion.chunk',
      choices,
      ...(includeUsage ? { usage: null } : {}),
      ...extra,
    });
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-request-id': `req_${id.slice(9)}`,
  });
  const send = (data: string) => res.write(`data: ${data}\n\n`);
  if (o.endless !== undefined) {
    const piece = chunk([{ index: 0, delta: { content: o.endless }, logprobs: null, finish_reason: null }]);
    while (!res.destroyed) {
      if (!send(piece))
        await new Promise<void>((r) => {
          const done = () => {
            res.off('drain', done);
            res.off('close', done);
            r();
          };
          res.on('drain', done);
          res.on('close', done);
        });
    }
    state.endlessClosed++;
    return;
  }

  send(
    chunk([
      { index: 0, delta: { role: 'assistant', content: '', refusal: null }, logprobs: null, finish_reason: null },
    ]),
  );
  if (o.reasoningContent !== undefined)
    for (const piece of o.reasoningContent.split(/(?<= )/).filter((p) => p !== ''))
      send(chunk([{ index: 0, delta: { reasoning_content: piece }, logprobs: null, finish_reason: null }]));
  const pieces = o.chunks ?? (text === '' ? [] : text.split(/(?<= )/).filter((p) => p !== ''));
  for (const [i, piece] of pieces.entries()) {
    if (o.midStreamError && i === o.midStreamError.afterChunks) return endWithError(res, o.midStreamError);
    if (o.hangAfterChunks !== undefined && i === o.hangAfterChunks) return;
    if (o.chunkDelayMs && i > 0) await sleep(o.chunkDelayMs);
    if (res.destroyed) return;
    send(chunk([{ index: 0, delta: { content: piece }, logprobs: null, finish_reason: null }]));
  }
  if (o.midStreamError && o.midStreamError.afterChunks >= pieces.length) return endWithError(res, o.midStreamError);
  if (o.hangAfterChunks !== undefined && o.hangAfterChunks >= pieces.length) return;
  // Each call: a delta that names it (arguments ''), then its arguments in pieces.
  const size = o.argumentChunkSize ?? 8;
  for (const [index, c] of calls.entries()) {
    const named = { index, id: c.id, type: 'function', function: { name: c.name, arguments: '' } };
    send(chunk([{ index: 0, delta: { tool_calls: [named] }, logprobs: null, finish_reason: null }]));
    for (let i = 0; i < c.arguments.length; i += size) {
      const piece = { index, function: { arguments: c.arguments.slice(i, i + size) } };
      send(chunk([{ index: 0, delta: { tool_calls: [piece] }, logprobs: null, finish_reason: null }]));
    }
  }
  send(chunk([{ index: 0, delta: {}, logprobs: null, finish_reason: finish }]));
  if (includeUsage) send(chunk([], { usage }));
  send('[DONE]');
  res.end();
}

const invalid = (message: string, param: string | null, code: string | null = null) => ({
  error: { message, type: 'invalid_request_error', param, code },
});

/** `tools`, `tool_choice` and the tool-call history, as the API checks them before generating. */
function checkTools(body: any): object | undefined {
  const tools = body.tools;
  if (tools !== undefined) {
    if (!Array.isArray(tools)) return invalid("Invalid type for 'tools': expected an array.", 'tools');
    for (const [i, t] of tools.entries()) {
      if (t?.type !== 'function')
        return invalid(`Invalid value: '${String(t?.type)}'. Supported values are: 'function'.`, `tools[${i}].type`);
      const name = t.function?.name;
      if (typeof name !== 'string')
        return invalid(`Missing required parameter: 'tools[${i}].function.name'.`, `tools[${i}].function.name`);
      if (!/^[a-zA-Z0-9_-]{1,64}$/.test(name))
        return invalid(
          `Invalid 'tools[${i}].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`,
          `tools[${i}].function.name`,
          'invalid_value',
        );
      const params = t.function.parameters;
      if (params !== undefined && (typeof params !== 'object' || params === null || params.type !== 'object'))
        return invalid(
          `Invalid schema for function '${name}': schema must be a JSON Schema of 'type: "object"', got 'type: "${String(params?.type)}"'.`,
          `tools[${i}].function.parameters`,
          'invalid_function_parameters',
        );
    }
  }
  const choice = body.tool_choice;
  if (choice !== undefined) {
    if (tools === undefined || tools.length === 0)
      return invalid(
        "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.",
        'tool_choice',
      );
    if (typeof choice === 'string' && !['none', 'auto', 'required'].includes(choice))
      return invalid(
        `Invalid value: '${choice}'. Supported values are: 'none', 'auto', and 'required'.`,
        'tool_choice',
        'invalid_value',
      );
  }
  // Every assistant call is answered by tool messages right after it; every tool message answers one.
  const messages: any[] = body.messages;
  let open = new Set<string>();
  for (const [i, m] of messages.entries()) {
    if (m?.role === 'tool') {
      if (typeof m.tool_call_id !== 'string')
        return invalid(`Missing required parameter: 'messages[${i}].tool_call_id'.`, `messages[${i}].tool_call_id`);
      if (!open.delete(m.tool_call_id))
        return invalid(
          "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
          `messages.[${i}].role`,
        );
      continue;
    }
    if (open.size > 0)
      return invalid(
        `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...open].join(', ')}`,
        'messages',
      );
    if (m?.role === 'assistant' && Array.isArray(m.tool_calls)) {
      open = new Set(m.tool_calls.map((c: any) => c?.id));
      for (const [j, c] of m.tool_calls.entries())
        if (typeof c?.function?.arguments !== 'string')
          return invalid(
            `Invalid type for 'messages[${i}].tool_calls[${j}].function.arguments': expected a string.`,
            `messages[${i}].tool_calls[${j}].function.arguments`,
          );
    }
  }
  if (open.size > 0)
    return invalid(
      `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...open].join(', ')}`,
      'messages',
    );
  return undefined;
}

function endWithError(res: ServerResponse, e: NonNullable<OpenAIWireOptions['midStreamError']>): void {
  res.write(`data: ${JSON.stringify(errorBody(e.message, e.type ?? 'server_error', e.code ?? null))}\n\n`);
  res.end();
}

/** Unit vectors from a hash of the text: the same text always gets the same vector. */
export function wireEmbedding(text: string, dimensions: number): number[] {
  const out: number[] = [];
  let block = Buffer.alloc(0);
  for (let i = 0; out.length < dimensions; i++) {
    if (block.length < 4) block = createHash('sha256').update(`${i}\u0000${text}`).digest();
    out.push(block.readUInt32BE(0) / 0xffffffff - 0.5);
    block = block.subarray(4);
  }
  const norm = Math.hypot(...out) || 1;
  return out.map((x) => x / norm);
}

function embeddings(res: ServerResponse, body: any): void {
  const input = body.input;
  const inputs: unknown[] = typeof input === 'string' ? [input] : Array.isArray(input) ? input : [];
  if (input === undefined) {
    return sendJson(res, 400, {
      error: {
        message: "Missing required parameter: 'input'.",
        type: 'invalid_request_error',
        param: 'input',
        code: 'missing_required_parameter',
      },
    });
  }
  if (inputs.length === 0 || inputs.some((x) => typeof x !== 'string' || x === '')) {
    return sendJson(res, 400, {
      error: {
        message:
          "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference.",
        type: 'invalid_request_error',
        param: null,
        code: null,
      },
    });
  }
  const full = EMBEDDING_DIMENSIONS[body.model] ?? 1536;
  if (
    body.dimensions !== undefined &&
    (!Number.isInteger(body.dimensions) || body.dimensions < 1 || body.dimensions > full)
  ) {
    return sendJson(res, 400, {
      error: {
        message: `Invalid value for 'dimensions' = ${body.dimensions}. Must be between 1 and ${full}.`,
        type: 'invalid_request_error',
        param: 'dimensions',
        code: null,
      },
    });
  }
  const dims = body.dimensions ?? full;
  const base64 = body.encoding_format === 'base64';
  const data = (inputs as string[]).map((text, index) => {
    const vector = wireEmbedding(text, dims);
    // The official openai SDK asks for base64 (little-endian float32) by default.
    const embedding = base64 ? Buffer.from(new Float32Array(vector).buffer).toString('base64') : vector;
    return { object: 'embedding', index, embedding };
  });
  const tokens = (inputs as string[]).reduce((n, t) => n + words(t), 0);
  sendJson(res, 200, {
    object: 'list',
    data,
    model: body.model,
    usage: { prompt_tokens: tokens, total_tokens: tokens },
  });
}

const errorBody = (message: string, type: string, code: string | null) => ({
  error: { message, type, param: null, code },
});

const sendJson = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
  writeJson(res, status, body, { 'content-type': 'application/json', 'x-request-id': 'req_wire', ...headers });
