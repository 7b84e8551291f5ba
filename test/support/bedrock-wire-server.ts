/**
 * A local server that speaks the Amazon Bedrock wire as AWS documents it: the Runtime's Converse
 * (`POST /model/{modelId}/converse`) and ConverseStream (`…/converse-stream`, answered as an
 * `application/vnd.amazon.eventstream` of binary frames), and the control plane's
 * ListFoundationModels (`GET /foundation-models`) and ListInferenceProfiles (`GET /inference-profiles`).
 *
 * Every request must carry a SigV4 signature (service `bedrock`) that this server recomputes by
 * hand from what it received, from the spec (canonical request, string to sign, derived key), not
 * with the client's signing library; or a Bedrock API key as a bearer. Errors are AWS's JSON
 * errors: `{"message": …}` with the `x-amzn-errortype` header. Knobs script answers and failures.
 * Tool use as the Converse API reference documents it: `toolConfig` (`tools[].toolSpec` with
 * `inputSchema.json`, `toolChoice` one of auto / any / tool) is checked, and so is the history:
 * `toolUse` / `toolResult` blocks need a toolConfig, and each assistant `toolUse` is answered by a
 * `toolResult` of the same id in the next user turn. Calls come back as `toolUse` blocks with
 * stopReason `tool_use`, or streamed as a `contentBlockStart` naming the call and
 * `contentBlockDelta` events carrying pieces of its input's JSON text.
 */
import { createHash, createHmac } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { listenOnLoopback, readBody, words, writeJson } from './wire-scaffold.ts';
import { EventStreamCodec } from '@smithy/core/event-streams';

export interface BedrockWireOptions {
  /** The known credentials; a request signed with another secret fails its signature check. */
  accessKeyId?: string;
  secretAccessKey?: string;
  /** When set, requests must carry it (signed) as x-amz-security-token. */
  sessionToken?: string;
  /** The region the signature's scope must name. Default us-east-1. */
  region?: string;
  /** A Bedrock API key accepted as `Authorization: Bearer`. */
  bearerToken?: string;
  /** Answer text; a function sees the request body. */
  text?: string | ((body: any) => string);
  /** Exact stream pieces; default: the text split after each space. */
  chunks?: string[];
  /** Answer these toolUse blocks after the text; a function sees the body (undefined: none). */
  toolUse?: WireToolUse[] | ((body: any) => WireToolUse[] | undefined);
  /** Stream each call's input JSON in pieces of this many characters (default 7). */
  inputChunkSize?: number;
  usage?: {
    inputTokens: number;
    outputTokens: number;
    totalTokens: number;
    cacheReadInputTokens?: number;
    cacheWriteInputTokens?: number;
  };
  stopReason?: string;
  /** Answer this status with an AWS error body (`times`: that many requests, then normally). */
  fail?: { status: number; type: string; message: string; headers?: Record<string, string>; times?: number };
  /** Streams: send this exception frame after `afterChunks` deltas, then end. */
  midStreamException?: { afterChunks: number; type: string; message: string };
  /** Streams: write every frame in pieces of this many bytes, so frames arrive split. */
  splitBytes?: number;
  /** ListFoundationModels' summaries; default: a few current models. */
  foundationModels?: any[];
  /** ListInferenceProfiles' summaries; `null` answers 403 AccessDeniedException. */
  inferenceProfiles?: any[] | null;
}

interface WireToolUse {
  toolUseId: string;
  name: string;
  input: Record<string, unknown>;
}

interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: Record<string, string | string[] | undefined>;
  /** Parsed JSON body, or the raw text when it was not JSON. */
  body: any;
  raw: string;
}

export interface BedrockWireServer {
  /** The origin, as an environment's endpoint_url: `http://127.0.0.1:PORT`. */
  url: string;
  requests: RecordedRequest[];
  options: BedrockWireOptions;
  close(): Promise<void>;
}

export const TEST_ACCESS_KEY_ID = 'AKIAIOSFODNN7EXAMPLE';
export const TEST_SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
const DEFAULT_TEXT = 'Hello from Bedrock, streamed in pieces.';

const DEFAULT_FOUNDATION_MODELS = [
  {
    modelArn: 'arn:aws:bedrock:us-east-1::foundation-model/amazon.nova-pro-v1:0',
    modelId: 'amazon.nova-pro-v1:0',
    modelName: 'Nova Pro',
    providerName: 'Amazon',
    inputModalities: ['TEXT', 'IMAGE', 'VIDEO'],
    outputModalities: ['TEXT'],
    responseStreamingSupported: true,
    customizationsSupported: [],
    inferenceTypesSupported: ['ON_DEMAND', 'INFERENCE_PROFILE'],
    modelLifecycle: { status: 'ACTIVE' },
  },
  {
    modelArn: 'arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-sonnet-4-20250514-v1:0',
    modelId: 'anthropic.claude-sonnet-4-20250514-v1:0',
    modelName: 'Claude Sonnet 4',
    providerName: 'Anthropic',
    inputModalities: ['TEXT', 'IMAGE'],
    outputModalities: ['TEXT'],
    responseStreamingSupported: true,
    customizationsSupported: [],
    inferenceTypesSupported: ['INFERENCE_PROFILE'],
    modelLifecycle: { status: 'ACTIVE' },
  },
  {
    modelArn: 'arn:aws:bedrock:us-east-1::foundation-model/meta.llama3-8b-instruct-v1:0',
    modelId: 'meta.llama3-8b-instruct-v1:0',
    modelName: 'Llama 3 8B Instruct',
    providerName: 'Meta',
    inputModalities: ['TEXT'],
    outputModalities: ['TEXT'],
    responseStreamingSupported: true,
    customizationsSupported: [],
    inferenceTypesSupported: ['ON_DEMAND'],
    modelLifecycle: { status: 'LEGACY' },
  },
  {
    modelArn: 'arn:aws:bedrock:us-east-1::foundation-model/amazon.titan-embed-text-v2:0',
    modelId: 'amazon.titan-embed-text-v2:0',
    modelName: 'Titan Text Embeddings V2',
    providerName: 'Amazon',
    inputModalities: ['TEXT'],
    outputModalities: ['EMBEDDING'],
    customizationsSupported: [],
    inferenceTypesSupported: ['ON_DEMAND'],
    modelLifecycle: { status: 'ACTIVE' },
  },
  {
    modelArn: 'arn:aws:bedrock:us-east-1::foundation-model/stability.sd3-5-large-v1:0',
    modelId: 'stability.sd3-5-large-v1:0',
    modelName: 'SD3.5 Large',
    providerName: 'Stability AI',
    inputModalities: ['TEXT', 'IMAGE'],
    outputModalities: ['IMAGE'],
    customizationsSupported: [],
    inferenceTypesSupported: ['ON_DEMAND'],
    modelLifecycle: { status: 'ACTIVE' },
  },
];

const DEFAULT_INFERENCE_PROFILES = [
  {
    inferenceProfileName: 'US Anthropic Claude Sonnet 4',
    inferenceProfileId: 'us.anthropic.claude-sonnet-4-20250514-v1:0',
    inferenceProfileArn:
      'arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-20250514-v1:0',
    description: 'Routes requests to Claude Sonnet 4 in us-east-1, us-east-2 and us-west-2.',
    status: 'ACTIVE',
    type: 'SYSTEM_DEFINED',
    models: [
      { modelArn: 'arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-sonnet-4-20250514-v1:0' },
      { modelArn: 'arn:aws:bedrock:us-west-2::foundation-model/anthropic.claude-sonnet-4-20250514-v1:0' },
    ],
  },
  {
    inferenceProfileName: 'US Stable Diffusion 3.5 Large',
    inferenceProfileId: 'us.stability.sd3-5-large-v1:0',
    status: 'ACTIVE',
    type: 'SYSTEM_DEFINED',
    models: [{ modelArn: 'arn:aws:bedrock:us-west-2::foundation-model/stability.sd3-5-large-v1:0' }],
  },
];

const codec = new EventStreamCodec(
  (b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8'),
  (s) => new Uint8Array(Buffer.from(s, 'utf8')),
);

/** One event-stream frame as Bedrock sends it. */
export function eventFrame(eventType: string, body: unknown): Uint8Array {
  return codec.encode({
    headers: {
      ':event-type': { type: 'string', value: eventType },
      ':content-type': { type: 'string', value: 'application/json' },
      ':message-type': { type: 'string', value: 'event' },
    },
    body: new Uint8Array(Buffer.from(JSON.stringify(body), 'utf8')),
  });
}

export function exceptionFrame(exceptionType: string, message: string): Uint8Array {
  return codec.encode({
    headers: {
      ':exception-type': { type: 'string', value: exceptionType },
      ':content-type': { type: 'string', value: 'application/json' },
      ':message-type': { type: 'string', value: 'exception' },
    },
    body: new Uint8Array(Buffer.from(JSON.stringify({ message }), 'utf8')),
  });
}

export async function startBedrockWireServer(options: BedrockWireOptions = {}): Promise<BedrockWireServer> {
  const requests: RecordedRequest[] = [];
  const state: BedrockWireServer = { url: '', requests, options, close: async () => {} };
  const listening = await listenOnLoopback(
    (req, res) => handle(req, res, state),
    (res, message) => sendError(res, 500, 'InternalServerException', message),
  );
  state.url = listening.origin;
  state.close = listening.close;
  return state;
}

async function handle(req: IncomingMessage, res: ServerResponse, state: BedrockWireServer): Promise<void> {
  const raw = await readBody(req);
  let body: any = raw;
  let parsed = false;
  try {
    body = raw === '' ? undefined : JSON.parse(raw);
    parsed = true;
  } catch {
    // recorded as text; answered below as a validation error
  }
  const [path, search = ''] = (req.url ?? '/').split('?');
  state.requests.push({
    method: req.method ?? '',
    path,
    query: Object.fromEntries(new URLSearchParams(search)),
    headers: { ...req.headers },
    body,
    raw,
  });
  const o = state.options;

  const authError = checkAuth(req, path, search, raw, o);
  if (authError) return sendError(res, 403, authError.type, authError.message);

  if (req.method === 'GET' && path === '/foundation-models') {
    const want = new URLSearchParams(search).get('byOutputModality');
    const all = o.foundationModels ?? DEFAULT_FOUNDATION_MODELS;
    return sendJson(res, 200, { modelSummaries: want ? all.filter((m) => m.outputModalities?.includes(want)) : all });
  }
  if (req.method === 'GET' && path === '/inference-profiles') {
    if (o.inferenceProfiles === null)
      return sendError(
        res,
        403,
        'AccessDeniedException',
        'User is not authorized to perform: bedrock:ListInferenceProfiles',
      );
    return sendJson(res, 200, { inferenceProfileSummaries: o.inferenceProfiles ?? DEFAULT_INFERENCE_PROFILES });
  }
  const m = /^\/model\/([^/]+)\/(converse|converse-stream)$/.exec(path);
  if (req.method !== 'POST' || !m)
    return sendError(res, 404, 'UnknownOperationException', `Unknown operation ${req.method} ${path}`);

  if (o.fail && (o.fail.times === undefined || o.fail.times-- > 0)) {
    return sendError(res, o.fail.status, o.fail.type, o.fail.message, o.fail.headers);
  }
  const invalid =
    !parsed || typeof body !== 'object' || body === null || Array.isArray(body)
      ? 'Malformed input request, please reformat your input and try again.'
      : validate(body);
  if (invalid) return sendError(res, 400, 'ValidationException', invalid);

  const calls = (typeof o.toolUse === 'function' ? o.toolUse(body) : o.toolUse) ?? [];
  const text = typeof o.text === 'function' ? o.text(body) : (o.text ?? (calls.length > 0 ? '' : DEFAULT_TEXT));
  const inputWords = [...(body.system ?? []), ...body.messages.flatMap((x: any) => x.content)].reduce(
    (n: number, b: any) => n + words(b.text ?? ''),
    0,
  );
  const usage = o.usage ?? {
    inputTokens: inputWords,
    outputTokens: words(text),
    totalTokens: inputWords + words(text),
  };
  const stopReason = o.stopReason ?? (calls.length > 0 ? 'tool_use' : 'end_turn');
  const requestId = createHash('sha1').update(raw).digest('hex').slice(0, 32);

  if (m[2] === 'converse') {
    return sendJson(
      res,
      200,
      {
        output: {
          message: {
            role: 'assistant',
            content: [
              ...(text !== '' || calls.length === 0 ? [{ text }] : []),
              ...calls.map((c) => ({ toolUse: { toolUseId: c.toolUseId, name: c.name, input: c.input } })),
            ],
          },
        },
        stopReason,
        usage,
        metrics: { latencyMs: 42 },
      },
      { 'x-amzn-requestid': requestId },
    );
  }
  res.writeHead(200, {
    'content-type': 'application/vnd.amazon.eventstream',
    'x-amzn-requestid': requestId,
    'transfer-encoding': 'chunked',
  });
  const send = (frame: Uint8Array) => {
    if (!o.splitBytes) return res.write(frame);
    for (let i = 0; i < frame.length; i += o.splitBytes) res.write(frame.subarray(i, i + o.splitBytes));
  };
  // Bedrock pads each event with a `p` field so sizes do not reveal the tokens.
  const p = (n: number) => 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'.slice(0, n);
  send(eventFrame('messageStart', { p: p(12), role: 'assistant' }));
  const pieces = o.chunks ?? text.split(/(?<= )/).filter((x) => x !== '');
  const withText = pieces.length > 0 || calls.length === 0;
  for (const [i, piece] of pieces.entries()) {
    if (o.midStreamException && i === o.midStreamException.afterChunks) {
      send(exceptionFrame(o.midStreamException.type, o.midStreamException.message));
      return void res.end();
    }
    send(eventFrame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: piece }, p: p(i % 30) }));
  }
  if (o.midStreamException && o.midStreamException.afterChunks >= pieces.length) {
    send(exceptionFrame(o.midStreamException.type, o.midStreamException.message));
    return void res.end();
  }
  if (withText) send(eventFrame('contentBlockStop', { contentBlockIndex: 0, p: p(5) }));
  const size = o.inputChunkSize ?? 7;
  for (const [k, c] of calls.entries()) {
    const contentBlockIndex = k + (withText ? 1 : 0);
    send(
      eventFrame('contentBlockStart', {
        contentBlockIndex,
        start: { toolUse: { toolUseId: c.toolUseId, name: c.name } },
        p: p(4),
      }),
    );
    const json = JSON.stringify(c.input);
    for (let i = 0; i < json.length; i += size)
      send(
        eventFrame('contentBlockDelta', {
          contentBlockIndex,
          delta: { toolUse: { input: json.slice(i, i + size) } },
          p: p(2),
        }),
      );
    send(eventFrame('contentBlockStop', { contentBlockIndex, p: p(5) }));
  }
  send(eventFrame('messageStop', { stopReason, p: p(9) }));
  send(eventFrame('metadata', { usage, metrics: { latencyMs: 42 }, p: p(3) }));
  res.end();
}

const TOP_LEVEL = new Set([
  'messages',
  'system',
  'inferenceConfig',
  'toolConfig',
  'guardrailConfig',
  'additionalModelRequestFields',
  'promptVariables',
  'additionalModelResponseFieldPaths',
  'requestMetadata',
  'performanceConfig',
]);
const INFERENCE = new Set(['maxTokens', 'temperature', 'topP', 'stopSequences']);

/** The Converse request rules the real service enforces (its messages as it words them). */
function validate(body: any): string | undefined {
  for (const k of Object.keys(body))
    if (!TOP_LEVEL.has(k))
      return `Malformed input request: extraneous key [${k}] is not permitted, please reformat your input and try again.`;
  if (!Array.isArray(body.messages) || body.messages.length === 0)
    return 'A conversation must start with a user message. Try again with a conversation that starts with a user message.';
  for (const [i, msg] of body.messages.entries()) {
    if (msg?.role !== 'user' && msg?.role !== 'assistant')
      return `1 validation error detected: Value '${msg?.role}' at 'messages.${i + 1}.member.role' failed to satisfy constraint: Member must satisfy enum value set: [user, assistant]`;
    if (!Array.isArray(msg.content) || msg.content.length === 0)
      return `The content field in the Message object at messages.${i}.content is empty. Add a ContentBlock object to the content field and try again.`;
    for (const [j, b] of msg.content.entries()) {
      const kinds = b && typeof b === 'object' ? Object.keys(b) : [];
      if (kinds.length !== 1 || !['text', 'toolUse', 'toolResult', 'image', 'document'].includes(kinds[0]))
        return `Malformed input request: #/messages/${i}/content/${j}: a ContentBlock must be exactly one of text, toolUse, toolResult, image, document (this server's subset), please reformat your input and try again.`;
      const media = mediaProblem(b, `#/messages/${i}/content/${j}`);
      if (media) return media;
      if (kinds[0] === 'text' && (typeof b.text !== 'string' || b.text === ''))
        return `The text field in the ContentBlock object at messages.${i}.content.${j} is blank. Add text to the text field, and try again.`;
      if (kinds[0] === 'toolUse' && msg.role !== 'assistant')
        return `messages.${i}.content.${j}: toolUse blocks are only allowed in assistant messages.`;
      if (kinds[0] === 'toolResult' && msg.role !== 'user')
        return `messages.${i}.content.${j}: toolResult blocks are only allowed in user messages.`;
      const invalid =
        kinds[0] === 'toolUse'
          ? checkToolUse(b.toolUse, i, j)
          : kinds[0] === 'toolResult'
            ? checkToolResult(b.toolResult, i, j)
            : undefined;
      if (invalid) return invalid;
    }
  }
  const tools = checkToolConfig(body);
  if (tools) return tools;
  if (body.messages[0].role !== 'user')
    return 'A conversation must start with a user message. Try again with a conversation that starts with a user message.';
  for (let i = 1; i < body.messages.length; i++) {
    if (body.messages[i].role === body.messages[i - 1].role)
      return 'A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again.';
  }
  if (
    body.system !== undefined &&
    (!Array.isArray(body.system) || body.system.some((b: any) => typeof b?.text !== 'string'))
  )
    return 'Malformed input request: system must be a list of SystemContentBlock, please reformat your input and try again.';
  const ic = body.inferenceConfig;
  if (ic !== undefined) {
    for (const k of Object.keys(ic))
      if (!INFERENCE.has(k))
        return `Malformed input request: extraneous key [${k}] is not permitted, please reformat your input and try again.`;
    if (ic.maxTokens !== undefined && (!Number.isInteger(ic.maxTokens) || ic.maxTokens < 1))
      return `1 validation error detected: Value '${ic.maxTokens}' at 'inferenceConfig.maxTokens' failed to satisfy constraint: Member must have value greater than or equal to 1`;
    if (
      ic.temperature !== undefined &&
      (typeof ic.temperature !== 'number' || ic.temperature < 0 || ic.temperature > 1)
    )
      return `1 validation error detected: Value '${ic.temperature}' at 'inferenceConfig.temperature' failed to satisfy constraint: Member must have value less than or equal to 1`;
  }
  return undefined;
}

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

function checkToolUse(u: any, i: number, j: number): string | undefined {
  if (typeof u?.toolUseId !== 'string' || !/^[a-zA-Z0-9_-]{1,64}$/.test(u.toolUseId))
    return `1 validation error detected: Value at 'messages.${i + 1}.member.content.${j + 1}.member.toolUse.toolUseId' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+`;
  if (typeof u.name !== 'string' || !TOOL_NAME.test(u.name))
    return `1 validation error detected: Value at 'messages.${i + 1}.member.content.${j + 1}.member.toolUse.name' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+`;
  if (u.input === null || typeof u.input !== 'object' || Array.isArray(u.input))
    return `Malformed input request: #/messages/${i}/content/${j}/toolUse/input: expected type: JSONObject, please reformat your input and try again.`;
  return undefined;
}

function checkToolResult(r: any, i: number, j: number): string | undefined {
  if (typeof r?.toolUseId !== 'string')
    return `Malformed input request: #/messages/${i}/content/${j}/toolResult: required key [toolUseId] not found, please reformat your input and try again.`;
  if (!Array.isArray(r.content) || r.content.length === 0)
    return `The content field in the ToolResultBlock object at messages.${i}.content.${j} is empty. Add a content block and try again.`;
  for (const c of r.content) {
    const kinds = c && typeof c === 'object' ? Object.keys(c) : [];
    if (kinds.length !== 1 || !['text', 'json', 'image', 'document'].includes(kinds[0]))
      return `Malformed input request: #/messages/${i}/content/${j}/toolResult/content: a ToolResultContentBlock is one of text, json, image, document, please reformat your input and try again.`;
    if (kinds[0] === 'text' && (typeof c.text !== 'string' || c.text === ''))
      return `The text field in the ToolResultContentBlock object at messages.${i}.content.${j} is blank. Add text to the text field, and try again.`;
  }
  if (r.status !== undefined && r.status !== 'success' && r.status !== 'error')
    return `1 validation error detected: Value '${r.status}' at 'messages.${i + 1}.member.content.${j + 1}.member.toolResult.status' failed to satisfy constraint: Member must satisfy enum value set: [success, error]`;
  return undefined;
}

/** toolConfig's shape, and the pairing of toolUse and toolResult blocks across turns. */
function checkToolConfig(body: any): string | undefined {
  const blocks = (m: any, kind: string): any[] =>
    (Array.isArray(m?.content) ? m.content : []).filter((b: any) => b?.[kind] !== undefined).map((b: any) => b[kind]);
  const usesTools = body.messages.some(
    (m: any) => blocks(m, 'toolUse').length > 0 || blocks(m, 'toolResult').length > 0,
  );
  const tc = body.toolConfig;
  if (tc === undefined) {
    if (usesTools) return 'The toolConfig field must be defined when using toolUse and toolResult content blocks.';
  } else {
    if (!Array.isArray(tc.tools) || tc.tools.length === 0)
      return "1 validation error detected: Value '[]' at 'toolConfig.tools' failed to satisfy constraint: Member must have length greater than or equal to 1";
    for (const k of Object.keys(tc))
      if (k !== 'tools' && k !== 'toolChoice')
        return `Malformed input request: #/toolConfig: extraneous key [${k}] is not permitted, please reformat your input and try again.`;
    const names = new Set<string>();
    for (const [i, t] of tc.tools.entries()) {
      const spec = t?.toolSpec;
      if (!spec || Object.keys(t).length !== 1)
        return `Malformed input request: #/toolConfig/tools/${i}: a Tool must be exactly one of toolSpec, cachePoint, please reformat your input and try again.`;
      if (typeof spec.name !== 'string' || !TOOL_NAME.test(spec.name))
        return `1 validation error detected: Value at 'toolConfig.tools.${i + 1}.member.toolSpec.name' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+`;
      if (names.has(spec.name)) return `The toolConfig field contains duplicate tool names: ${spec.name}.`;
      names.add(spec.name);
      const json = spec.inputSchema?.json;
      if (
        json === null ||
        typeof json !== 'object' ||
        Array.isArray(json) ||
        Object.keys(spec.inputSchema).length !== 1
      )
        return `Malformed input request: #/toolConfig/tools/${i}/toolSpec/inputSchema: required key [json] not found, please reformat your input and try again.`;
      if (json.type !== 'object')
        return `The value at toolConfig.tools.${i}.toolSpec.inputSchema.json.type must be 'object'.`;
    }
    const choice = tc.toolChoice;
    if (choice !== undefined) {
      const kinds = choice && typeof choice === 'object' ? Object.keys(choice) : [];
      if (kinds.length !== 1 || !['auto', 'any', 'tool'].includes(kinds[0]))
        return 'Malformed input request: #/toolConfig/toolChoice: a ToolChoice must be exactly one of auto, any, tool, please reformat your input and try again.';
      if (kinds[0] === 'tool' && !names.has(choice.tool?.name))
        return `The tool named in toolConfig.toolChoice.tool (${String(choice.tool?.name)}) is not in toolConfig.tools.`;
    }
  }
  for (const [i, m] of body.messages.entries()) {
    if (m.role !== 'assistant') continue;
    const asked = blocks(m, 'toolUse').map((u) => u.toolUseId);
    const next = body.messages[i + 1];
    const answered = blocks(next, 'toolResult').map((r) => r.toolUseId);
    if (asked.length > 0 && !next) continue; // a history may end on the model's calls only when it asks the model to go on: not checked here
    const missing = asked.filter((id) => !answered.includes(id));
    if (missing.length > 0)
      return `Expected toolResult blocks at messages.${i + 1}.content for the following Ids: ${missing.join(', ')}`;
    const extra = answered.filter((id) => !asked.includes(id));
    if (extra.length > 0 || answered.length > asked.length)
      return `The number of toolResult blocks at messages.${i + 1}.content exceeds the number of toolUse blocks of previous turn.`;
  }
  if (body.messages[0] && blocks(body.messages[0], 'toolResult').length > 0)
    return 'The number of toolResult blocks at messages.0.content exceeds the number of toolUse blocks of previous turn.';
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// SigV4, recomputed from the spec (AWS General Reference, "Create a signed AWS API request")

/** RFC 3986 encoding as SigV4 wants it: everything but A-Z a-z 0-9 - _ . ~ is percent-encoded. */
const uriEscape = (s: string) =>
  encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
const sha256Hex = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');
const hmac = (key: string | Buffer, s: string) => createHmac('sha256', key).update(s, 'utf8').digest();

export interface SigV4Input {
  method: string;
  /** The path as received (already percent-encoded once). */
  rawPath: string;
  /** The query's pairs, decoded. */
  query: [string, string][];
  headers: Record<string, string | string[] | undefined>;
  signedHeaders: string[];
  payloadHash: string;
  amzDate: string;
  scope: string;
  secret: string;
}

export function sigv4Signature(i: SigV4Input): string {
  // Every service but S3 encodes each path segment again (so %3A becomes %253A).
  const canonicalUri = i.rawPath.split('/').map(uriEscape).join('/') || '/';
  const canonicalQuery = i.query
    .map(([k, v]) => [uriEscape(k), uriEscape(v)] as const)
    .sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
  const canonicalHeaders = i.signedHeaders
    .map((name) => {
      const v = i.headers[name];
      return `${name}:${(Array.isArray(v) ? v.join(',') : (v ?? '')).trim().replace(/\s+/g, ' ')}\n`;
    })
    .join('');
  const canonicalRequest = [
    i.method,
    canonicalUri,
    canonicalQuery,
    canonicalHeaders,
    i.signedHeaders.join(';'),
    i.payloadHash,
  ].join('\n');
  const stringToSign = ['AWS4-HMAC-SHA256', i.amzDate, i.scope, sha256Hex(canonicalRequest)].join('\n');
  const [date, region, service] = i.scope.split('/');
  const key = hmac(hmac(hmac(hmac(`AWS4${i.secret}`, date), region), service), 'aws4_request');
  return createHmac('sha256', key).update(stringToSign, 'utf8').digest('hex');
}

const SIGNATURE_MISMATCH =
  'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.';

function checkAuth(
  req: IncomingMessage,
  path: string,
  search: string,
  raw: string,
  o: BedrockWireOptions,
): { type: string; message: string } | undefined {
  const header = req.headers.authorization ?? '';
  if (/^Bearer\s/i.test(header)) {
    const token = header.replace(/^Bearer\s+/i, '');
    if (o.bearerToken !== undefined && token === o.bearerToken) return undefined;
    // A short-term key made from the known credentials is as good as a listed one.
    if (
      token.startsWith('bedrock-api-key-') &&
      verifyBedrockApiKey(token, o.secretAccessKey ?? TEST_SECRET, o.accessKeyId ?? TEST_ACCESS_KEY_ID)
    )
      return undefined;
    return {
      type: 'UnrecognizedClientException',
      message: 'Invalid API Key format: Must start with pre-defined prefix',
    };
  }
  const m =
    /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8}\/[^/]+\/[^/]+\/aws4_request), SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$/.exec(
      header,
    );
  if (!m) return { type: 'MissingAuthenticationTokenException', message: 'Missing Authentication Token' };
  const [, keyId, scope, signed, signature] = m;
  const [, region, service] = scope.split('/');
  if (keyId !== (o.accessKeyId ?? TEST_ACCESS_KEY_ID))
    return { type: 'UnrecognizedClientException', message: 'The security token included in the request is invalid.' };
  if (service !== 'bedrock' || region !== (o.region ?? 'us-east-1')) {
    return {
      type: 'InvalidSignatureException',
      message: `Credential should be scoped to a valid region and service: got ${region}/${service}.`,
    };
  }
  const signedHeaders = signed.split(';');
  const amzDate = req.headers['x-amz-date'];
  if (
    !signedHeaders.includes('host') ||
    typeof amzDate !== 'string' ||
    !signedHeaders.includes('x-amz-date') ||
    amzDate.slice(0, 8) !== scope.slice(0, 8)
  ) {
    return {
      type: 'IncompleteSignatureException',
      message:
        'Signature must cover the host and x-amz-date headers, and x-amz-date must match the credential scope date.',
    };
  }
  if (
    o.sessionToken !== undefined &&
    (req.headers['x-amz-security-token'] !== o.sessionToken || !signedHeaders.includes('x-amz-security-token'))
  ) {
    return { type: 'UnrecognizedClientException', message: 'The security token included in the request is invalid.' };
  }
  // The payload hash is the server's own, over the bytes it received.
  const expected = sigv4Signature({
    method: req.method ?? '',
    rawPath: path,
    query: [...new URLSearchParams(search)],
    headers: req.headers,
    signedHeaders,
    payloadHash: sha256Hex(raw),
    amzDate,
    scope,
    secret: o.secretAccessKey ?? TEST_SECRET,
  });
  return expected === signature ? undefined : { type: 'InvalidSignatureException', message: SIGNATURE_MISMATCH };
}

/**
 * A short-term Bedrock API key: `bedrock-api-key-` + base64 of a presigned
 * `bedrock.amazonaws.com/?Action=CallWithBearerToken&…&Version=1`; true when its signature holds.
 */
export function verifyBedrockApiKey(token: string, secret: string, accessKeyId: string): boolean {
  const decoded = Buffer.from(token.slice('bedrock-api-key-'.length), 'base64').toString('utf8');
  if (!decoded.startsWith('bedrock.amazonaws.com/?') || !decoded.endsWith('&Version=1')) return false;
  const params = [...new URLSearchParams(decoded.slice('bedrock.amazonaws.com/?'.length, -'&Version=1'.length))];
  const get = (k: string) => params.find(([name]) => name === k)?.[1];
  const credential = get('X-Amz-Credential');
  if (
    get('Action') !== 'CallWithBearerToken' ||
    !credential?.startsWith(`${accessKeyId}/`) ||
    get('X-Amz-Algorithm') !== 'AWS4-HMAC-SHA256'
  )
    return false;
  const expected = sigv4Signature({
    method: 'POST',
    rawPath: '/',
    query: params.filter(([k]) => k !== 'X-Amz-Signature'),
    headers: { host: 'bedrock.amazonaws.com' },
    signedHeaders: (get('X-Amz-SignedHeaders') ?? '').split(';'),
    payloadHash: sha256Hex(''),
    amzDate: get('X-Amz-Date') ?? '',
    scope: credential.slice(accessKeyId.length + 1),
    secret,
  });
  return expected === get('X-Amz-Signature');
}

function sendError(
  res: ServerResponse,
  status: number,
  type: string,
  message: string,
  headers: Record<string, string> = {},
): void {
  sendJson(
    res,
    status,
    { message },
    { 'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`, ...headers },
  );
}

const sendJson = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
  writeJson(res, status, body, { 'content-type': 'application/json', 'x-amzn-requestid': 'wire-request', ...headers });

/** Converse's rules for image and document blocks: a known format, base64 bytes, a document name of its allowed characters. */
function mediaProblem(b: any, at: string): string | undefined {
  const block = b.image ?? b.document;
  if (!block) return undefined;
  const formats = b.image
    ? ['png', 'jpeg', 'gif', 'webp']
    : ['pdf', 'csv', 'doc', 'docx', 'xls', 'xlsx', 'html', 'txt', 'md'];
  if (!formats.includes(block.format))
    return `Malformed input request: ${at}: format ${block.format} is not one of ${formats.join(', ')}`;
  const bytes = block.source?.bytes;
  if (typeof bytes !== 'string' || bytes === '' || Buffer.from(bytes, 'base64').toString('base64') !== bytes)
    return `Malformed input request: ${at}: source.bytes must be base64`;
  if (b.document && (typeof block.name !== 'string' || !/^[A-Za-z0-9 ()[\]-]+$/.test(block.name)))
    return `Malformed input request: ${at}: the document name may only contain alphanumeric characters, whitespace, hyphens, parentheses and square brackets`;
  return undefined;
}
