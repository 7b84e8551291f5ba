/**
 * A local server that speaks IBM's wire as documented: IBM Cloud IAM's token endpoint
 * (`POST /identity/token`, form-encoded API key grant; `{errorCode, errorMessage}` on a refused
 * key) and the watsonx.ai runtime API (`/ml/v1/text/chat`, `/chat_stream`, `/text/generation`,
 * `/generation_stream`, `GET /ml/v1/foundation_model_specs`; the `version` query parameter; bearer
 * tokens from the IAM endpoint; `{errors:[{code, message, more_info}], trace, status_code}` bodies;
 * SSE events `id: n / event: message / data: {…}`). Knobs script the answer and failures.
 * The chat API's tool calling as IBM documents it: `tools` (functions with JSON Schema
 * `parameters`), `tool_choice_option` (none, auto, required) or `tool_choice` (one function),
 * assistant `tool_calls` answered by `tool` messages naming each `tool_call_id`; calls come back as
 * `message.tool_calls` with finish_reason `tool_calls`, streamed as `delta.tool_calls` pieces by index.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { listenOnLoopback, readBody, words, writeJson } from './wire-scaffold.ts';

export interface WatsonxWireOptions {
  /** The IBM Cloud API key IAM accepts. Default 'ibm-api-key'. */
  apiKey?: string;
  /** Answer text. Default: "Hello from watsonx." */
  text?: string;
  /** Exact stream pieces; default: the text split after each space. */
  chunks?: string[];
  usage?: { prompt_tokens: number; completion_tokens: number };
  /** Chat finish_reason (default 'stop'); generation stop_reason is mapped from it (stop → eos_token, length → max_tokens). */
  finishReason?: string;
  /** Answer the ml endpoints with this status and an IBM error body; `times` limits it. */
  fail?: { status: number; code?: string; message?: string; headers?: Record<string, string>; times?: number };
  /** Chat: answer these tool calls (arguments as JSON text); a function sees the body. */
  toolCalls?: WireCall[] | ((body: any) => WireCall[] | undefined);
  /** Stream only: an `event: error` after this many pieces. */
  midStreamError?: { afterChunks: number; status: number; code: string; message: string };
}

interface WireCall {
  id: string;
  name: string;
  arguments: string;
}

interface WatsonxRecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: Record<string, string | string[] | undefined>;
  /** JSON body parsed; a form body as its fields; else the text. */
  body: any;
}

export interface WatsonxWireServer {
  origin: string;
  /** The IAM token URL to put in `config.iam_url`. */
  iamUrl: string;
  requests: WatsonxRecordedRequest[];
  /** How many tokens IAM issued. */
  tokensIssued(): number;
  /** Forget every issued token (as if they were revoked). */
  revokeTokens(): void;
  options: WatsonxWireOptions;
  close(): Promise<void>;
}

const WATSONX_MODELS = [
  {
    model_id: 'ibm/granite-3-8b-instruct',
    label: 'granite-3-8b-instruct',
    provider: 'IBM',
    short_description: 'The Granite model series is a family of IBM-trained, dense decoder-only models.',
    functions: ['text_chat', 'text_generation'],
  },
  {
    model_id: 'meta-llama/llama-3-3-70b-instruct',
    label: 'llama-3-3-70b-instruct',
    provider: 'Meta',
    short_description: 'A state-of-the-art refresh of Llama 3.1 70B Instruct.',
    functions: ['text_chat', 'text_generation'],
  },
  {
    model_id: 'google/flan-t5-xl',
    label: 'flan-t5-xl-3b',
    provider: 'Google',
    short_description: 'A pretrained T5 - an encoder-decoder model.',
    functions: ['text_generation'],
  },
];

export async function startWatsonxWireServer(options: WatsonxWireOptions = {}): Promise<WatsonxWireServer> {
  const requests: WatsonxRecordedRequest[] = [];
  let issued = 0;
  const tokens = new Set<string>();
  const state: WatsonxWireServer = {
    origin: '',
    iamUrl: '',
    requests,
    tokensIssued: () => issued,
    revokeTokens: () => tokens.clear(),
    options,
    close: async () => {},
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const [path, search = ''] = (req.url ?? '/').split('?');
    const query = Object.fromEntries(new URLSearchParams(search));
    const isForm = String(req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded');
    let body: any = raw;
    let parsed = false;
    if (isForm) {
      body = Object.fromEntries(new URLSearchParams(raw));
      parsed = true;
    } else {
      try {
        body = raw === '' ? undefined : JSON.parse(raw);
        parsed = true;
      } catch {
        // kept as text
      }
    }
    requests.push({ method: req.method ?? '', path, query, headers: { ...req.headers }, body });
    const o = state.options;

    if (path === '/identity/token') {
      if (req.method !== 'POST')
        return sendJson(res, 405, { errorCode: 'BXNIM0001E', errorMessage: 'Method not allowed' });
      if (!isForm)
        return sendJson(res, 400, {
          errorCode: 'BXNIM0109E',
          errorMessage: 'Property missing or empty. Operation not allowed.',
          context: { requestId: 'wire' },
        });
      if (body.grant_type !== 'urn:ibm:params:oauth:grant-type:apikey') {
        return sendJson(res, 400, {
          errorCode: 'BXNIM0103E',
          errorMessage: 'Unsupported grant type',
          context: { requestId: 'wire' },
        });
      }
      if (body.apikey !== (o.apiKey ?? 'ibm-api-key')) {
        return sendJson(res, 400, {
          errorCode: 'BXNIM0415E',
          errorMessage: 'Provided API key could not be found.',
          context: { requestId: 'wire' },
        });
      }
      const token = `iam-token-${++issued}`;
      tokens.add(token);
      const now = Math.floor(Date.now() / 1000);
      return sendJson(res, 200, {
        access_token: token,
        refresh_token: 'not_supported',
        token_type: 'Bearer',
        expires_in: 3600,
        expiration: now + 3600,
        scope: 'ibm openid',
      });
    }

    if (!path.startsWith('/ml/v1/'))
      return sendJson(res, 404, ibmError(404, 'not_found', `Resource ${path} not found`));
    const auth = String(req.headers.authorization ?? '');
    if (!/^Bearer\s/.test(auth) || !tokens.has(auth.slice(7))) {
      return sendJson(
        res,
        401,
        ibmError(
          401,
          'authentication_token_not_valid',
          'Failed to authenticate the request due to invalid token: Failed to parse and verify token',
        ),
      );
    }
    if (!query.version)
      return sendJson(res, 400, ibmError(400, 'missing_argument', "Missing query parameter 'version'"));

    if (req.method === 'GET' && path === '/ml/v1/foundation_model_specs') {
      const filter = /^function_(.+)$/.exec(query.filters ?? '')?.[1];
      const resources = WATSONX_MODELS.filter((m) => !filter || m.functions.includes(filter)).map((m) => ({
        ...m,
        functions: m.functions.map((id) => ({ id })),
      }));
      return sendJson(res, 200, {
        total_count: resources.length,
        limit: Number(query.limit ?? 100),
        first: { href: `${state.origin}${req.url}` },
        resources,
      });
    }

    const endpoint =
      req.method === 'POST'
        ? /^\/ml\/v1\/text\/(chat|chat_stream|generation|generation_stream)$/.exec(path)?.[1]
        : undefined;
    if (!endpoint) return sendJson(res, 404, ibmError(404, 'not_found', `Resource ${req.method} ${path} not found`));
    if (!parsed || typeof body !== 'object' || body === null)
      return sendJson(
        res,
        400,
        ibmError(400, 'json_type_error', 'Json document validation error: expected a JSON object'),
      );
    if (o.fail && (o.fail.times === undefined || o.fail.times-- > 0)) {
      return sendJson(
        res,
        o.fail.status,
        ibmError(
          o.fail.status,
          o.fail.code ?? 'internal_error',
          o.fail.message ?? 'The server encountered an internal error',
        ),
        o.fail.headers,
      );
    }
    if (!body.project_id && !body.space_id) {
      return sendJson(
        res,
        400,
        ibmError(
          400,
          'json_validation_error',
          "Json document validation error: Either 'space_id' or 'project_id' must be provided",
        ),
      );
    }
    if (typeof body.model_id !== 'string' || !WATSONX_MODELS.some((m) => m.model_id === body.model_id)) {
      return sendJson(
        res,
        404,
        ibmError(404, 'model_not_supported', `Model '${body.model_id}' is not supported for this environment.`),
      );
    }
    const chat = endpoint.startsWith('chat');
    if (chat && (!Array.isArray(body.messages) || body.messages.length === 0)) {
      return sendJson(
        res,
        400,
        ibmError(400, 'json_validation_error', "Json document validation error: 'messages' is required"),
      );
    }
    const toolError = chat
      ? checkChatTools(body)
      : body.tools !== undefined
        ? "Json document validation error: 'tools' is not a field of text generation"
        : undefined;
    if (toolError) return sendJson(res, 400, ibmError(400, 'json_validation_error', toolError));
    if (!chat && typeof body.input !== 'string') {
      return sendJson(
        res,
        400,
        ibmError(400, 'json_validation_error', "Json document validation error: 'input' is required"),
      );
    }
    const calls = (chat ? (typeof o.toolCalls === 'function' ? o.toolCalls(body) : o.toolCalls) : undefined) ?? [];
    const text = o.text ?? (calls.length > 0 ? '' : 'Hello from watsonx.');
    const wireCalls = calls.map((c) => ({
      id: c.id,
      type: 'function',
      function: { name: c.name, arguments: c.arguments },
    }));
    const promptWords = chat
      ? body.messages.reduce(
          (n: number, m: any) =>
            n +
            words(
              typeof m?.content === 'string'
                ? m.content
                : Array.isArray(m?.content)
                  ? m.content.map((p: any) => p?.text ?? '').join(' ')
                  : '',
            ),
          0,
        )
      : words(body.input);
    const usage = o.usage ?? { prompt_tokens: promptWords, completion_tokens: words(text) };
    const finish = o.finishReason ?? (calls.length > 0 ? 'tool_calls' : 'stop');
    const stopReason = finish === 'stop' ? 'eos_token' : finish === 'length' ? 'max_tokens' : finish;
    const created = Math.floor(Date.now() / 1000);
    const createdAt = new Date().toISOString();

    if (endpoint === 'chat') {
      return sendJson(res, 200, {
        id: 'chatcmpl-wire',
        model_id: body.model_id,
        model: body.model_id,
        created,
        model_version: '1.0.0',
        created_at: createdAt,
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: text, ...(calls.length > 0 ? { tool_calls: wireCalls } : {}) },
            finish_reason: finish,
          },
        ],
        usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
      });
    }
    if (endpoint === 'generation') {
      return sendJson(res, 200, {
        model_id: body.model_id,
        model_version: '1.0.0',
        created_at: createdAt,
        results: [
          {
            generated_text: text,
            generated_token_count: usage.completion_tokens,
            input_token_count: usage.prompt_tokens,
            stop_reason: stopReason,
          },
        ],
      });
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    let id = 0;
    const send = (event: string, data: unknown) =>
      res.write(`id: ${++id}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    const pieces = o.chunks ?? text.split(/(?<= )/).filter((p) => p !== '');
    if (endpoint === 'chat_stream') {
      const base = {
        id: 'chatcmpl-wire',
        model_id: body.model_id,
        model: body.model_id,
        created,
        model_version: '1.0.0',
        created_at: createdAt,
      };
      send('message', {
        ...base,
        choices: [{ index: 0, finish_reason: null, delta: { role: 'assistant', content: '' } }],
      });
      for (const [i, piece] of pieces.entries()) {
        if (o.midStreamError?.afterChunks === i) return endWithError(res, send, o.midStreamError);
        send('message', { ...base, choices: [{ index: 0, finish_reason: null, delta: { content: piece } }] });
      }
      if (o.midStreamError && o.midStreamError.afterChunks >= pieces.length)
        return endWithError(res, send, o.midStreamError);
      for (const [index, c] of wireCalls.entries()) {
        // The first piece names the call; the arguments follow in pieces of 6 characters.
        send('message', {
          ...base,
          choices: [
            {
              index: 0,
              finish_reason: null,
              delta: {
                tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.function.name, arguments: '' } }],
              },
            },
          ],
        });
        for (let k = 0; k < c.function.arguments.length; k += 6)
          send('message', {
            ...base,
            choices: [
              {
                index: 0,
                finish_reason: null,
                delta: { tool_calls: [{ index, function: { arguments: c.function.arguments.slice(k, k + 6) } }] },
              },
            ],
          });
      }
      send('message', {
        ...base,
        choices: [{ index: 0, finish_reason: finish, delta: { content: '' } }],
        usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
      });
      return void res.end();
    }
    // generation_stream: each event carries its piece and the counts so far.
    const base = { model_id: body.model_id, model_version: '1.0.0', created_at: createdAt };
    for (const [i, piece] of pieces.entries()) {
      if (o.midStreamError?.afterChunks === i) return endWithError(res, send, o.midStreamError);
      const last = i === pieces.length - 1;
      send('message', {
        ...base,
        results: [
          {
            generated_text: piece,
            generated_token_count: last ? usage.completion_tokens : i + 1,
            input_token_count: usage.prompt_tokens,
            stop_reason: last ? stopReason : 'not_finished',
          },
        ],
      });
    }
    res.end();
  }

  const listening = await listenOnLoopback(handle, (res, message) =>
    sendJson(res, 500, ibmError(500, 'internal_error', message)),
  );
  state.origin = listening.origin;
  state.iamUrl = `${state.origin}/identity/token`;
  state.close = listening.close;
  return state;
}

/** The chat API's tool fields, and every assistant call answered by a tool message before the next turn. */
function checkChatTools(body: any): string | undefined {
  if (body.tools !== undefined) {
    if (!Array.isArray(body.tools)) return "Json document validation error: 'tools' must be an array";
    for (const [i, t] of body.tools.entries()) {
      if (t?.type !== 'function') return `Json document validation error: 'tools[${i}].type' must be 'function'`;
      if (typeof t.function?.name !== 'string' || !/^[a-zA-Z0-9_-]{1,64}$/.test(t.function.name))
        return `Json document validation error: 'tools[${i}].function.name' is required`;
      if (
        t.function.parameters !== undefined &&
        (typeof t.function.parameters !== 'object' || t.function.parameters === null)
      )
        return `Json document validation error: 'tools[${i}].function.parameters' must be an object`;
    }
  }
  if (body.tool_choice_option !== undefined) {
    if (!['none', 'auto', 'required'].includes(body.tool_choice_option))
      return "Json document validation error: 'tool_choice_option' must be one of none, auto, required";
    if (body.tool_choice !== undefined)
      return "Json document validation error: only one of 'tool_choice' and 'tool_choice_option' may be given";
  }
  if (body.tool_choice !== undefined && typeof body.tool_choice?.function?.name !== 'string')
    return "Json document validation error: 'tool_choice' must be {type: 'function', function: {name}}";
  if ((body.tool_choice_option !== undefined || body.tool_choice !== undefined) && !body.tools?.length)
    return "Json document validation error: 'tool_choice' requires 'tools'";
  for (const [i, m] of body.messages.entries()) {
    if (m?.role === 'system' && typeof m.content !== 'string')
      return `Json document validation error: 'messages[${i}].content' of a system message must be a string`;
    if (m?.role === 'tool') {
      if (typeof m.tool_call_id !== 'string' || typeof m.content !== 'string')
        return `Json document validation error: 'messages[${i}]' (tool) needs 'tool_call_id' and 'content' strings`;
      let j = i - 1;
      while (j >= 0 && body.messages[j]?.role === 'tool') j--;
      const asked = (body.messages[j]?.role === 'assistant' ? (body.messages[j].tool_calls ?? []) : []).map(
        (c: any) => c?.id,
      );
      if (!asked.includes(m.tool_call_id))
        return `Json document validation error: 'messages[${i}].tool_call_id' ${m.tool_call_id} answers no tool call of the preceding assistant message`;
    }
    if (m?.role === 'assistant' && Array.isArray(m.tool_calls)) {
      for (const c of m.tool_calls)
        if (
          typeof c?.id !== 'string' ||
          c?.type !== 'function' ||
          typeof c.function?.name !== 'string' ||
          typeof c.function?.arguments !== 'string'
        )
          return `Json document validation error: 'messages[${i}].tool_calls' must be {id, type: 'function', function: {name, arguments: string}}`;
      const answered = new Set<string>();
      for (let k = i + 1; k < body.messages.length && body.messages[k]?.role === 'tool'; k++)
        answered.add(body.messages[k].tool_call_id);
      const missing = m.tool_calls.map((c: any) => c.id).filter((id: string) => !answered.has(id));
      if (missing.length > 0 && i + 1 < body.messages.length)
        return `Json document validation error: tool calls ${missing.join(', ')} of 'messages[${i}]' have no tool message answering them`;
    }
  }
  return undefined;
}

function endWithError(
  res: ServerResponse,
  send: (event: string, data: unknown) => void,
  e: NonNullable<WatsonxWireOptions['midStreamError']>,
): void {
  send('error', ibmError(e.status, e.code, e.message));
  res.end();
}

const ibmError = (status: number, code: string, message: string) => ({
  errors: [{ code, message, more_info: 'https://cloud.ibm.com/apidocs/watsonx-ai' }],
  trace: 'wire-trace-0001',
  status_code: status,
});

const sendJson = writeJson;
