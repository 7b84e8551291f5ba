/**
 * A local server that speaks the Anthropic Messages wire as documented (Messages, Streaming
 * Messages, Errors): `x-api-key` and `anthropic-version` checks, `{type:'error', error:{type,message}}`
 * bodies, and the SSE sequence message_start, content_block_start, ping, content_block_delta…,
 * content_block_stop, message_delta, message_stop, each as `event: <type>\ndata: {json}\n\n`.
 * Tool use as documented (Tool use overview, Streaming: input_json_delta): `tools` and
 * `tool_choice` are checked, and so is the history: each `tool_use` answered by a `tool_result`
 * in the next user turn, results first. Calls come back as `tool_use` blocks with
 * `stop_reason: "tool_use"`, or streamed as a block start (input `{}`) and `input_json_delta` pieces.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { listenOnLoopback, readBody, sleep, words, writeJson } from './wire-scaffold.ts';

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
  /** With `thinking` enabled or adaptive in the request: this reasoning as a thinking block before the text. */
  thinking?: string;
  /** With thinking on: also a `redacted_thinking` block with this data, after the thinking block. */
  redactedThinking?: string;
  /** Answer these tool_use blocks after the text (input streamed as its JSON text); a function sees the body. */
  toolUse?: WireToolUse[] | ((body: Record<string, unknown>) => WireToolUse[] | undefined);
  /** Stream each input's JSON in pieces of this many characters (default 8). */
  inputChunkSize?: number;
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

export interface WireToolUse {
  id: string;
  name: string;
  input: Record<string, unknown>;
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
  const listening = await listenOnLoopback(
    (req, res) => handle(req, res, state),
    (res, message) => sendError(res, 500, 'api_error', message),
  );
  state.url = listening.origin;
  state.close = listening.close;
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
  const tools = checkTools(body);
  if (tools) return tools;
  if (body.system !== undefined && typeof body.system !== 'string' && !Array.isArray(body.system))
    return 'system: Input should be a valid string';
  if (
    body.temperature !== undefined &&
    (typeof body.temperature !== 'number' || body.temperature < 0 || body.temperature > 1)
  ) {
    return 'temperature: Input should be less than or equal to 1';
  }
  return checkThinking(body) ?? checkThinkingHistory(body) ?? checkCacheControl(body);
}

/** Prompt caching's rules (Prompt caching, "Cache limitations"), with the API's wording. */
function checkCacheControl(body: any): string | undefined {
  const blocks: any[] = [
    ...(Array.isArray(body.system) ? body.system : []),
    ...(Array.isArray(body.tools) ? body.tools : []),
    ...body.messages.flatMap((m: any) => (Array.isArray(m?.content) ? m.content : [])),
  ];
  const marked = blocks.filter((b) => b?.cache_control !== undefined);
  for (const b of marked) {
    const c = b.cache_control;
    if (c?.type !== 'ephemeral') return "cache_control.type: Input should be 'ephemeral'";
    if (c.ttl !== undefined && c.ttl !== '5m' && c.ttl !== '1h')
      return "cache_control.ttl: Input should be '5m' or '1h'";
    if (Object.keys(c).some((k) => k !== 'type' && k !== 'ttl')) return 'cache_control: Extra inputs are not permitted';
    if (b.type === 'thinking' || b.type === 'redacted_thinking')
      return 'cache_control cannot be set for thinking blocks';
  }
  if (marked.length > 4) return `A maximum of 4 blocks with cache_control may be provided. Found ${marked.length}.`;
  return undefined;
}

/** The signature the server gives a reasoning text: a block sent back with other text fails its check. */
export const signatureOf = (thought: string) => 'sig_' + createHash('sha1').update(thought).digest('hex').slice(0, 16);
/** Redacted data the server wrote: what a redacted_thinking block sent back must carry, unchanged. */
const redactedOf = (data: string) => 'redacted_' + createHash('sha1').update(data).digest('base64url');

/**
 * Thinking blocks in the history (Extended thinking, "Preserving thinking blocks"): each sent back
 * unchanged with its signature; with thinking on, a final assistant turn that called tools starts
 * with its thinking, with the API's wording.
 */
function checkThinkingHistory(body: any): string | undefined {
  for (const [i, m] of body.messages.entries()) {
    if (!Array.isArray(m?.content)) continue;
    for (const [j, b] of m.content.entries()) {
      if (b?.type === 'thinking' && (typeof b.signature !== 'string' || b.signature !== signatureOf(b.thinking)))
        return `messages.${i}.content.${j}: Invalid \`signature\` in \`thinking\` block`;
      if (b?.type === 'redacted_thinking' && (typeof b.data !== 'string' || !b.data.startsWith('redacted_')))
        return `messages.${i}.content.${j}: Invalid \`data\` in \`redacted_thinking\` block`;
    }
  }
  if (!thinks(body)) return undefined;
  const last = body.messages.findLastIndex((m: any) => m?.role === 'assistant');
  const m = body.messages[last];
  if (!Array.isArray(m?.content) || !m.content.some((b: any) => b?.type === 'tool_use')) return undefined;
  const first = m.content[0]?.type;
  if (first === 'thinking' || first === 'redacted_thinking') return undefined;
  return `messages.${last}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${String(first)}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block (preceeding the lastmost set of \`tool_use\` and \`tool_result\` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable \`thinking\`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking`;
}

/** Extended thinking's rules (Building with extended thinking), with the API's wording. */
function checkThinking(body: any): string | undefined {
  const t = body.thinking;
  if (t === undefined) return undefined;
  if (t?.type === 'adaptive' || t?.type === 'disabled') return undefined;
  if (t?.type !== 'enabled') return "thinking.type: Input should be 'enabled', 'adaptive' or 'disabled'";
  if (!Number.isInteger(t.budget_tokens)) return 'thinking.enabled.budget_tokens: Field required';
  if (t.budget_tokens < 1024) return 'thinking.enabled.budget_tokens: Input should be greater than or equal to 1024';
  if (body.max_tokens <= t.budget_tokens) return '`max_tokens` must be greater than `thinking.budget_tokens`';
  if (body.temperature !== undefined && body.temperature !== 1)
    return '`temperature` may only be set to 1 when thinking is enabled or in interleaved thinking mode.';
  if (body.top_k !== undefined) return '`top_k` must be unset when thinking is enabled';
  if (body.top_p !== undefined && body.top_p < 0.95)
    return '`top_p` must be greater than or equal to 0.95 or unset when thinking is enabled';
  return undefined;
}

/** Whether the request asks for thinking blocks. */
const thinks = (body: any) => body.thinking?.type === 'enabled' || body.thinking?.type === 'adaptive';

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** `tools`, `tool_choice`, and tool_use / tool_result pairing across turns, with the API's wording. */
export function checkTools(body: any): string | undefined {
  if (body.tools !== undefined) {
    if (!Array.isArray(body.tools)) return 'tools: Input should be a valid list';
    for (const [i, t] of body.tools.entries()) {
      if (typeof t?.name !== 'string') return `tools.${i}.custom.name: Field required`;
      if (!TOOL_NAME.test(t.name)) return `tools.${i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'`;
      if (t.input_schema === undefined) return `tools.${i}.custom.input_schema: Field required`;
      if (typeof t.input_schema !== 'object' || t.input_schema?.type !== 'object')
        return `tools.${i}.custom.input_schema.type: Input should be 'object'`;
    }
  }
  if (body.tool_choice !== undefined) {
    const type = body.tool_choice?.type;
    if (!['auto', 'any', 'tool', 'none'].includes(type))
      return `tool_choice: Input tag '${String(type)}' found using 'type' does not match any of the expected tags: 'auto', 'any', 'tool', 'none'`;
    if (!body.tools?.length && type !== 'none')
      return 'tool_choice: tool_choice may only be specified while providing tools.';
  }
  const blocks = (m: any): any[] => (Array.isArray(m?.content) ? m.content : []);
  for (const [i, m] of body.messages.entries()) {
    const calls = m?.role === 'assistant' ? blocks(m).filter((b) => b?.type === 'tool_use') : [];
    for (const [j, b] of blocks(m).entries()) {
      if (b?.type === 'tool_use' && (typeof b.input !== 'object' || b.input === null || Array.isArray(b.input)))
        return `messages.${i}.content.${j}.tool_use.input: Input should be a valid dictionary`;
    }
    if (calls.length > 0) {
      const next = body.messages[i + 1];
      const answered = new Set(
        (next?.role === 'user' ? blocks(next) : []).filter((b) => b?.type === 'tool_result').map((b) => b.tool_use_id),
      );
      const missing = calls.map((c) => c.id).filter((id) => !answered.has(id));
      if (missing.length > 0)
        return `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`;
    }
    if (m?.role === 'user') {
      const content = blocks(m);
      const results = content.filter((b) => b?.type === 'tool_result');
      if (results.length === 0) continue;
      const prev = body.messages[i - 1];
      const asked = new Set(
        (prev?.role === 'assistant' ? blocks(prev) : []).filter((b) => b?.type === 'tool_use').map((b) => b.id),
      );
      const unknown = results.map((r) => r.tool_use_id).filter((id) => !asked.has(id));
      if (unknown.length > 0)
        return `messages.${i}.content.0: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${unknown.join(', ')}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`;
      const firstOther = content.findIndex((b) => b?.type !== 'tool_result');
      if (firstOther !== -1 && content.slice(firstOther).some((b) => b?.type === 'tool_result'))
        return `messages.${i}: \`tool_result\` blocks must come first in the content of a user message, before any other content.`;
    }
  }
  return undefined;
}

export async function messages(res: ServerResponse, body: any, o: AnthropicWireOptions): Promise<void> {
  const calls = (typeof o.toolUse === 'function' ? o.toolUse(body) : o.toolUse) ?? [];
  const text = typeof o.text === 'function' ? o.text(body) : (o.text ?? (calls.length > 0 ? '' : DEFAULT_TEXT));
  const inputWords =
    words(typeof body.system === 'string' ? body.system : '') +
    body.messages.reduce((n: number, m: any) => n + words(typeof m.content === 'string' ? m.content : ''), 0);
  const usage = {
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    ...(o.usage ?? { input_tokens: inputWords, output_tokens: words(text) }),
  };
  const stop = o.stopReason ?? (calls.length > 0 ? 'tool_use' : 'end_turn');
  const toolBlocks = calls.map((c) => ({ type: 'tool_use', id: c.id, name: c.name, input: c.input }));
  const thought = o.thinking !== undefined && thinks(body) ? o.thinking : undefined;
  const signature = signatureOf(thought ?? '');
  const redacted = o.redactedThinking !== undefined && thinks(body) ? redactedOf(o.redactedThinking) : undefined;
  const id = `msg_${createHash('sha1').update(JSON.stringify(body)).digest('hex').slice(0, 24)}`;

  if (body.stream !== true) {
    return sendJson(res, 200, {
      id,
      type: 'message',
      role: 'assistant',
      model: body.model,
      content: [
        ...(thought !== undefined ? [{ type: 'thinking', thinking: thought, signature }] : []),
        ...(redacted !== undefined ? [{ type: 'redacted_thinking', data: redacted }] : []),
        ...(text !== '' || calls.length === 0 ? [{ type: 'text', text }] : []),
        ...toolBlocks,
      ],
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
  // A thinking block comes first, at index 0 (a redacted one, whole in its start, next); the text and the calls follow.
  const first = (thought !== undefined ? 1 : 0) + (redacted !== undefined ? 1 : 0);
  if (thought !== undefined) {
    send('content_block_start', { index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } });
    for (const piece of thought.split(/(?<= )/).filter((p) => p !== ''))
      send('content_block_delta', { index: 0, delta: { type: 'thinking_delta', thinking: piece } });
    send('content_block_delta', { index: 0, delta: { type: 'signature_delta', signature } });
    send('content_block_stop', { index: 0 });
  }
  if (redacted !== undefined) {
    const index = first - 1;
    send('content_block_start', { index, content_block: { type: 'redacted_thinking', data: redacted } });
    send('content_block_stop', { index });
  }
  const withText = text !== '' || calls.length === 0;
  if (withText) send('content_block_start', { index: first, content_block: { type: 'text', text: '' } });
  send('ping', {});
  const pieces = o.chunks ?? (text === '' ? [] : text.split(/(?<= )/).filter((p) => p !== ''));
  for (const [i, piece] of pieces.entries()) {
    if (o.midStreamError && i === o.midStreamError.afterChunks) return endWithError(res, o.midStreamError);
    if (o.hangAfterChunks !== undefined && i === o.hangAfterChunks) return;
    if (o.chunkDelayMs && i > 0) await sleep(o.chunkDelayMs);
    if (res.destroyed) return;
    send('content_block_delta', { index: first, delta: { type: 'text_delta', text: piece } });
  }
  if (o.midStreamError && o.midStreamError.afterChunks >= pieces.length) return endWithError(res, o.midStreamError);
  if (o.hangAfterChunks !== undefined && o.hangAfterChunks >= pieces.length) return;
  if (withText) send('content_block_stop', { index: first });
  const size = o.inputChunkSize ?? 8;
  for (const [k, c] of calls.entries()) {
    const index = first + k + (withText ? 1 : 0);
    send('content_block_start', { index, content_block: { type: 'tool_use', id: c.id, name: c.name, input: {} } });
    const json = JSON.stringify(c.input);
    send('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: '' } });
    for (let i = 0; i < json.length; i += size)
      send('content_block_delta', {
        index,
        delta: { type: 'input_json_delta', partial_json: json.slice(i, i + size) },
      });
    send('content_block_stop', { index });
  }
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

const sendJson = (res: ServerResponse, status: number, body: unknown) =>
  writeJson(res, status, body, { 'content-type': 'application/json', 'request-id': 'req_wire' });
