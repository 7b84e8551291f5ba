/**
 * A local server that speaks Google Vertex AI's wire as documented, for the `vertexai` driver:
 *  - the OAuth 2.0 token endpoint of a service account (`POST /token`, the JWT bearer grant of
 *    Google's "Using OAuth 2.0 for server to server applications"): the assertion's RS256 signature
 *    is checked with the account's public key, and its iss, aud, scope, iat and exp; the answer is
 *    `{access_token, expires_in, token_type:"Bearer"}` or `{error, error_description}`;
 *  - Gemini: `POST /v1/projects/{p}/locations/{r}/publishers/google/models/{m}:generateContent`
 *    and `:streamGenerateContent` (`?alt=sse`: one GenerateContentResponse per `data:` line; without
 *    it, one JSON array), with Google's `{error:{code,message,status}}` errors;
 *    Function calling as Vertex documents it: `tools[].functionDeclarations` (a name, and
 *    `parameters` or `parametersJsonSchema`, not both), `toolConfig.functionCallingConfig.mode`,
 *    and the history's pairing (a `functionResponse` turn right after its `functionCall` turn, as
 *    many responses as calls, by name and by id when the call had one). Calls come back as
 *    `functionCall` parts, streamed whole in the last piece;
 *  - Claude: `…/publishers/anthropic/models/{m}:rawPredict` and `:streamRawPredict`, Anthropic's
 *    Messages API with `anthropic_version` in the body and the model in the URL; tools and their
 *    history checked and answered as the Anthropic wire server does (anthropic-wire-server.ts).
 * Every model call must carry `Authorization: Bearer <a token this server issued>`. Service
 * accounts are made per test run with a fresh RSA key pair (never a committed key).
 */
import { generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { listenOnLoopback, readBody, sleep, words, writeJson } from './wire-scaffold.ts';
import { jwtVerify, errors as joseErrors } from 'jose';
import {
  checkTools as checkClaudeTools,
  messages as claudeMessages,
  type WireToolUse,
} from './anthropic-wire-server.ts';

export const CLOUD_PLATFORM_SCOPE = 'https://www.googleapis.com/auth/cloud-platform';
const VERTEX_ANTHROPIC_VERSION = 'vertex-2023-10-16';

export interface VertexWireOptions {
  /** The project the accounts may call; others get 403 PERMISSION_DENIED. Default 'orrery-test'. */
  project?: string;
  /** Answer text (Gemini and Claude); a function sees the request body. Default: "Hello from Vertex." */
  text?: string | ((body: any) => string);
  /** Exact stream pieces; default: the text split after each space. */
  chunks?: string[];
  /** Gemini usage; default: word counts. */
  usage?: {
    promptTokenCount: number;
    candidatesTokenCount: number;
    totalTokenCount: number;
    thoughtsTokenCount?: number;
  };
  /** Gemini: answer these function calls after the text (a call without id gets none); a function sees the body. */
  functionCalls?: WireFunctionCall[] | ((body: any) => WireFunctionCall[] | undefined);
  /** Claude: answer these tool_use blocks (the Anthropic wire's answer); a function sees the body. */
  claudeToolUse?: WireToolUse[] | ((body: any) => WireToolUse[] | undefined);
  /** Claude usage; default: word counts. */
  claudeUsage?: { input_tokens: number; output_tokens: number };
  /** Gemini: a thought summary before the answer, sent only when `thinkingConfig.includeThoughts` is true. */
  thoughts?: string;
  /** Gemini finishReason; default STOP. */
  finishReason?: string;
  /** Gemini: answer a blocked prompt (promptFeedback, no candidates). */
  blockPrompt?: { blockReason: string; blockReasonMessage?: string };
  /** Models that exist; others get 404 NOT_FOUND. Default: any. */
  models?: string[];
  /** Answer model calls with this status and a Google error body, `times` times (default: until cleared). */
  fail?: { status: number; message?: string; headers?: Record<string, string>; times?: number };
  /** Seconds an issued token lives (expires_in). Default 3599. */
  tokenLifetimeS?: number;
}

interface WireFunctionCall {
  name: string;
  args: Record<string, unknown>;
  id?: string;
  thoughtSignature?: string;
}

interface RecordedRequest {
  kind: 'token' | 'gemini' | 'claude' | 'other';
  method: string;
  path: string;
  query: Record<string, string>;
  headers: Record<string, string | string[] | undefined>;
  /** Parsed JSON (model calls) or the form fields (token calls). */
  body: any;
  /** For model calls: the URL's parts. */
  project?: string;
  region?: string;
  model?: string;
  action?: string;
}

export interface VertexWireServer {
  origin: string;
  /** The token endpoint the accounts' key files name. */
  tokenUri: string;
  requests: RecordedRequest[];
  /** Tokens this server issued and still accepts. */
  issued: Set<string>;
  options: VertexWireOptions;
  /**
   * A service account key file (its JSON text) for this server. `register: false` makes a key
   * whose public half the server does not know (Google: "Invalid JWT Signature.").
   */
  serviceAccount(opts?: { email?: string; projectId?: string; register?: boolean }): string;
  close(): Promise<void>;
}

const DEFAULT_TEXT = 'Hello from Vertex.';

/** Google's canonical status per HTTP status (google.rpc.Code). */
const GOOGLE_STATUS: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

const MODEL_PATH =
  /^\/v1\/projects\/([^/]+)\/locations\/([^/]+)\/publishers\/(google|anthropic)\/models\/([^/:]+):([A-Za-z]+)$/;
const GENERATION_CONFIG_FIELDS = new Set([
  'temperature',
  'topP',
  'topK',
  'candidateCount',
  'maxOutputTokens',
  'stopSequences',
  'presencePenalty',
  'frequencyPenalty',
  'seed',
  'responseMimeType',
  'responseSchema',
  'responseJsonSchema',
  'responseLogprobs',
  'logprobs',
  'thinkingConfig',
  'responseModalities',
  'mediaResolution',
  'audioTimestamp',
  'routingConfig',
  'speechConfig',
]);
const REQUEST_FIELDS = new Set([
  'contents',
  'systemInstruction',
  'generationConfig',
  'safetySettings',
  'tools',
  'toolConfig',
  'labels',
  'cachedContent',
  'modelArmorConfig',
]);

export async function startVertexWireServer(options: VertexWireOptions = {}): Promise<VertexWireServer> {
  const accounts = new Map<string, KeyObject>();
  const state: VertexWireServer = {
    origin: '',
    tokenUri: '',
    requests: [],
    issued: new Set(),
    options,
    serviceAccount: (opts = {}) => {
      const email =
        opts.email ??
        `orrery-${randomBytes(4).toString('hex')}@${state.options.project ?? 'orrery-test'}.iam.gserviceaccount.com`;
      const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
      if (opts.register !== false) accounts.set(email, publicKey);
      return JSON.stringify({
        type: 'service_account',
        project_id: opts.projectId ?? state.options.project ?? 'orrery-test',
        private_key_id: randomBytes(20).toString('hex'),
        private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
        client_email: email,
        client_id: '1' + randomBytes(10).readBigUInt64BE().toString().slice(0, 20),
        auth_uri: 'https://accounts.google.com/o/oauth2/auth',
        token_uri: state.tokenUri,
        auth_provider_x509_cert_url: 'https://www.googleapis.com/oauth2/v1/certs',
        universe_domain: 'googleapis.com',
      });
    },
    close: async () => {},
  };
  const listening = await listenOnLoopback(
    (req, res) => handle(req, res, state, accounts),
    (res, message) => sendGoogleError(res, 500, message),
  );
  state.origin = listening.origin;
  state.tokenUri = `${state.origin}/token`;
  state.close = listening.close;
  return state;
}

async function handle(
  req: IncomingMessage,
  res: ServerResponse,
  state: VertexWireServer,
  accounts: Map<string, KeyObject>,
): Promise<void> {
  const raw = await readBody(req);
  const url = new URL(req.url ?? '/', 'http://wire');
  const path = url.pathname;
  const query = Object.fromEntries(url.searchParams);
  const headers = { ...req.headers };

  if (path === '/token') {
    const form = Object.fromEntries(new URLSearchParams(raw));
    state.requests.push({ kind: 'token', method: req.method ?? '', path, query, headers, body: form });
    return token(req, res, form, state, accounts);
  }

  const m = MODEL_PATH.exec(path);
  let body: any = raw;
  let parsed = false;
  try {
    body = raw === '' ? undefined : JSON.parse(raw);
    parsed = true;
  } catch {
    // answered below
  }
  if (!m) {
    state.requests.push({ kind: 'other', method: req.method ?? '', path, query, headers, body });
    return sendGoogleError(res, 404, `The requested URL ${path} was not found on this server.`);
  }
  const [, project, region, publisher, modelRaw, action] = m;
  const model = decodeURIComponent(modelRaw);
  const kind = publisher === 'google' ? 'gemini' : 'claude';
  state.requests.push({ kind, method: req.method ?? '', path, query, headers, body, project, region, model, action });
  const o = state.options;

  if (req.method !== 'POST')
    return sendGoogleError(res, 404, `The requested URL ${path} was not found on this server.`);
  const auth = req.headers.authorization;
  if (!auth) {
    return sendGoogleError(
      res,
      401,
      'Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.',
    );
  }
  const bearer = /^Bearer (.+)$/.exec(auth)?.[1];
  if (!bearer || !state.issued.has(bearer)) {
    return sendGoogleError(
      res,
      401,
      'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.',
    );
  }
  const resource = `projects/${project}/locations/${region}/publishers/${publisher}/models/${model}`;
  if (project !== (o.project ?? 'orrery-test')) {
    return sendGoogleError(
      res,
      403,
      `Permission 'aiplatform.endpoints.predict' denied on resource '//aiplatform.googleapis.com/${resource}' (or it may not exist).`,
    );
  }
  if (o.fail) {
    const f = o.fail;
    if (f.times !== undefined) {
      f.times--;
      if (f.times <= 0) o.fail = undefined;
    }
    return sendGoogleError(res, f.status, f.message ?? 'Internal error encountered.', f.headers);
  }
  if (!parsed || typeof body !== 'object' || body === null || Array.isArray(body)) {
    return sendGoogleError(res, 400, `Invalid JSON payload received. Unexpected token.\n${String(raw).slice(0, 40)}`);
  }
  if (o.models && !o.models.includes(model)) {
    return sendGoogleError(
      res,
      404,
      `Publisher Model \`${resource}\` was not found or your project does not have access to it. Please ensure you are using a valid model version. For more information, see: https://cloud.google.com/vertex-ai/generative-ai/docs/learn/model-versions`,
    );
  }
  if (kind === 'gemini') {
    if (action !== 'generateContent' && action !== 'streamGenerateContent')
      return sendGoogleError(res, 400, `Unknown method ${action} for a Gemini model.`);
    const invalid = validateGemini(body);
    if (invalid) return sendGoogleError(res, 400, invalid);
    return gemini(
      res,
      body,
      model,
      action === 'streamGenerateContent' ? (query.alt === 'sse' ? 'sse' : 'array') : 'json',
      o,
    );
  }
  if (action !== 'rawPredict' && action !== 'streamRawPredict')
    return sendGoogleError(res, 400, `Unknown method ${action} for an Anthropic model.`);
  const invalid = validateClaude(body) ?? checkClaudeTools(body);
  if (invalid) return sendAnthropicError(res, 400, 'invalid_request_error', invalid);
  return claude(res, body, model, action === 'streamRawPredict', o);
}

// ------------------------------------------------------------------------------------------------
// The token endpoint

async function token(
  req: IncomingMessage,
  res: ServerResponse,
  form: Record<string, string>,
  state: VertexWireServer,
  accounts: Map<string, KeyObject>,
): Promise<void> {
  const oauthError = (status: number, error: string, description: string) =>
    sendJson(res, status, { error, error_description: description });
  if (req.method !== 'POST') return oauthError(405, 'invalid_request', 'Method not allowed');
  if (!String(req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded')) {
    return oauthError(400, 'invalid_request', 'Invalid Content-Type: expected application/x-www-form-urlencoded');
  }
  if (form.grant_type !== 'urn:ietf:params:oauth:grant-type:jwt-bearer') {
    return oauthError(400, 'unsupported_grant_type', `Invalid grant_type: ${form.grant_type ?? ''}`);
  }
  const assertion = form.assertion ?? '';
  let claims: Record<string, unknown>;
  try {
    const [, payload] = assertion.split('.');
    claims = JSON.parse(Buffer.from(payload ?? '', 'base64url').toString('utf8'));
  } catch {
    return oauthError(400, 'invalid_grant', 'Invalid JWT: Unable to parse the assertion.');
  }
  const email = typeof claims.iss === 'string' ? claims.iss : '';
  const key = accounts.get(email);
  if (!key) return oauthError(400, 'invalid_grant', 'Invalid grant: account not found');
  try {
    await jwtVerify(assertion, key, {
      algorithms: ['RS256'],
      issuer: email,
      audience: state.tokenUri,
      requiredClaims: ['iat', 'exp'],
    });
  } catch (err) {
    if (err instanceof joseErrors.JWSSignatureVerificationFailed)
      return oauthError(400, 'invalid_grant', 'Invalid JWT Signature.');
    if (err instanceof joseErrors.JWTClaimValidationFailed && err.claim === 'aud')
      return oauthError(400, 'invalid_grant', 'Invalid JWT: Failed audience check.');
    return oauthError(
      400,
      'invalid_grant',
      'Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.',
    );
  }
  const iat = Number(claims.iat);
  const exp = Number(claims.exp);
  const now = Math.floor(Date.now() / 1000);
  if (!(exp > now) || exp - iat > 3600 || iat > now + 300) {
    return oauthError(
      400,
      'invalid_grant',
      'Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.',
    );
  }
  const scopes = typeof claims.scope === 'string' ? claims.scope.split(' ') : [];
  if (!scopes.includes(CLOUD_PLATFORM_SCOPE)) {
    return oauthError(400, 'invalid_scope', 'Invalid OAuth scope or ID token audience provided.');
  }
  const accessToken = `ya29.c.wire-${randomBytes(24).toString('base64url')}`;
  state.issued.add(accessToken);
  return sendJson(res, 200, {
    access_token: accessToken,
    expires_in: state.options.tokenLifetimeS ?? 3599,
    token_type: 'Bearer',
  });
}

// ------------------------------------------------------------------------------------------------
// Gemini

/** The checks Vertex makes before generating, with its wording. */
function validateGemini(body: any): string | undefined {
  for (const k of Object.keys(body)) {
    if (!REQUEST_FIELDS.has(k)) return `Invalid JSON payload received. Unknown name "${k}": Cannot find field.`;
  }
  if (!Array.isArray(body.contents) || body.contents.length === 0) {
    return 'Unable to submit request because it must include at least one parts field, which describes the prompt input. Learn more: https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/gemini';
  }
  for (const c of body.contents) {
    if (c?.role !== 'user' && c?.role !== 'model') return 'Please use a valid role: user, model.';
    if (!Array.isArray(c.parts) || c.parts.length === 0) {
      return 'Unable to submit request because it must include at least one parts field, which describes the prompt input. Learn more: https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/gemini';
    }
  }
  const functions = validateFunctions(body);
  if (functions) return functions;
  if (body.systemInstruction !== undefined && !Array.isArray(body.systemInstruction?.parts)) {
    return 'Invalid JSON payload received. Unknown name "" at \'system_instruction\': Proto field is not repeating, cannot start list.';
  }
  const g = body.generationConfig;
  if (g !== undefined) {
    for (const k of Object.keys(g)) {
      if (!GENERATION_CONFIG_FIELDS.has(k))
        return `Invalid JSON payload received. Unknown name "${k}" at 'generation_config': Cannot find field.`;
    }
    if (g.temperature !== undefined && (typeof g.temperature !== 'number' || g.temperature < 0 || g.temperature > 2)) {
      return (
        'Unable to submit request because it has a temperature value of ' +
        g.temperature +
        ' but the supported range is from 0 (inclusive) to 2.0001 (exclusive). Update the value and try again.'
      );
    }
    const t = g.thinkingConfig;
    if (t !== undefined) {
      for (const k of Object.keys(t))
        if (!['includeThoughts', 'thinkingBudget', 'thinkingLevel'].includes(k))
          return `Invalid JSON payload received. Unknown name "${k}" at 'generation_config.thinking_config': Cannot find field.`;
      if (t.thinkingLevel !== undefined && !['MINIMAL', 'LOW', 'MEDIUM', 'HIGH'].includes(t.thinkingLevel))
        return `Invalid value at 'generation_config.thinking_config.thinking_level' (type.googleapis.com/google.cloud.aiplatform.v1.GenerationConfig.ThinkingConfig.ThinkingLevel), "${t.thinkingLevel}"`;
      if (t.thinkingLevel !== undefined && t.thinkingBudget !== undefined)
        return 'Unable to submit request because thinking_budget and thinking_level are not supported together.';
    }
    if (g.responseSchema !== undefined && g.responseJsonSchema !== undefined) {
      return 'Unable to submit request because responseSchema and responseJsonSchema cannot both be set.';
    }
  }
  return undefined;
}

const FUNCTION_NAME = /^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$/;
const MODES = ['MODE_UNSPECIFIED', 'AUTO', 'ANY', 'NONE', 'VALIDATED'];

/** Function declarations, the calling config, and the pairing of calls and responses across turns. */
function validateFunctions(body: any): string | undefined {
  const declared = new Set<string>();
  if (body.tools !== undefined) {
    if (!Array.isArray(body.tools))
      return 'Invalid JSON payload received. Unknown name "tools": Proto field is not repeating, cannot start list.';
    for (const [i, t] of body.tools.entries()) {
      for (const [j, f] of (Array.isArray(t?.functionDeclarations) ? t.functionDeclarations : []).entries()) {
        if (typeof f?.name !== 'string' || !FUNCTION_NAME.test(f.name))
          return `Unable to submit request because function declaration name \`${String(f?.name)}\` at tools[${i}].function_declarations[${j}] is invalid. It must start with a letter or an underscore, contain only a-z, A-Z, 0-9, underscores, dots, colons or dashes, and be at most 64 characters.`;
        if (f.parameters !== undefined && f.parametersJsonSchema !== undefined)
          return `Unable to submit request because tools[${i}].function_declarations[${j}] sets both parameters and parameters_json_schema; set only one.`;
        for (const k of Object.keys(f))
          if (
            !['name', 'description', 'parameters', 'parametersJsonSchema', 'response', 'responseJsonSchema'].includes(k)
          )
            return `Invalid JSON payload received. Unknown name "${k}" at 'tools[${i}].function_declarations[${j}]': Cannot find field.`;
        declared.add(f.name);
      }
    }
  }
  const mode = body.toolConfig?.functionCallingConfig?.mode;
  if (body.toolConfig !== undefined) {
    if (mode !== undefined && !MODES.includes(mode))
      return `Invalid value at 'tool_config.function_calling_config.mode' (type.googleapis.com/google.cloud.aiplatform.v1.FunctionCallingConfig.Mode), "${String(mode)}"`;
    if (declared.size === 0)
      return 'Unable to submit request because tool_config is set but no function declarations are given in tools.';
  }
  const parts = (c: any, kind: string): any[] =>
    (Array.isArray(c?.parts) ? c.parts : []).filter((p: any) => p?.[kind] !== undefined).map((p: any) => p[kind]);
  for (const [i, c] of body.contents.entries()) {
    const calls = parts(c, 'functionCall');
    const responses = parts(c, 'functionResponse');
    if (calls.length > 0 && c.role !== 'model')
      return `Please ensure that function call turns come from the model: contents[${i}] has role ${c.role}.`;
    if (responses.length > 0 && c.role !== 'user')
      return `Please ensure that function response turns have the user role: contents[${i}] has role ${c.role}.`;
    if ((calls.length > 0 || responses.length > 0) && declared.size === 0)
      return 'Unable to submit request because the contents have function parts but tools declare no function.';
    for (const call of calls) {
      if (!declared.has(call?.name))
        return `Unable to submit request because contents[${i}] calls function ${String(call?.name)}, which tools do not declare.`;
      if (call.args !== undefined && (call.args === null || typeof call.args !== 'object' || Array.isArray(call.args)))
        return `Invalid value at 'contents[${i}].parts.function_call.args' (type.googleapis.com/google.protobuf.Struct).`;
    }
    for (const r of responses)
      if (r?.response === null || typeof r?.response !== 'object' || Array.isArray(r.response))
        return `Invalid value at 'contents[${i}].parts.function_response.response' (type.googleapis.com/google.protobuf.Struct).`;
    if (responses.length > 0) {
      const asked = i > 0 ? parts(body.contents[i - 1], 'functionCall') : [];
      if (asked.length === 0)
        return 'Please ensure that function response turn comes immediately after a function call turn.';
      if (asked.length !== responses.length)
        return 'Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.';
      const names = asked.map((a) => a.name).sort();
      if (JSON.stringify(responses.map((r) => r.name).sort()) !== JSON.stringify(names))
        return 'Please ensure that the function response parts name the functions of the function call turn.';
      for (const a of asked)
        if (a.id !== undefined && !responses.some((r) => r.id === a.id))
          return `Please ensure that each function call with an id has a function response with that id: ${a.id} has none.`;
    }
    if (
      calls.length > 0 &&
      i + 1 < body.contents.length &&
      parts(body.contents[i + 1], 'functionResponse').length === 0
    )
      return 'Please ensure that function call turn comes immediately after a user turn or after a function response turn, and is followed by a function response turn.';
  }
  return undefined;
}

async function gemini(
  res: ServerResponse,
  body: any,
  model: string,
  mode: 'json' | 'sse' | 'array',
  o: VertexWireOptions,
): Promise<void> {
  const base = {
    modelVersion: model,
    createTime: new Date().toISOString(),
    responseId: randomBytes(9).toString('base64url'),
  };
  const inputWords =
    words((body.systemInstruction?.parts ?? []).map((p: any) => p?.text ?? '').join(' ')) +
    body.contents.reduce((n: number, c: any) => n + words(c.parts.map((p: any) => p?.text ?? '').join(' ')), 0);
  if (o.blockPrompt) {
    const blocked = {
      ...base,
      promptFeedback: { ...o.blockPrompt },
      usageMetadata: { promptTokenCount: inputWords, totalTokenCount: inputWords, trafficType: 'ON_DEMAND' },
    };
    if (mode === 'json') return sendJson(res, 200, blocked);
    if (mode === 'array') return sendJson(res, 200, [blocked]);
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end(`data: ${JSON.stringify(blocked)}\r\n\r\n`);
    return;
  }
  const calls = (typeof o.functionCalls === 'function' ? o.functionCalls(body) : o.functionCalls) ?? [];
  const text = typeof o.text === 'function' ? o.text(body) : (o.text ?? (calls.length > 0 ? '' : DEFAULT_TEXT));
  const callParts = calls.map((c) => ({
    functionCall: { name: c.name, args: c.args, ...(c.id ? { id: c.id } : {}) },
    ...(c.thoughtSignature ? { thoughtSignature: c.thoughtSignature } : {}),
  }));
  const usage = o.usage ?? {
    promptTokenCount: inputWords,
    candidatesTokenCount: words(text),
    totalTokenCount: inputWords + words(text),
  };
  const finishReason = o.finishReason ?? 'STOP';
  const thought =
    o.thoughts !== undefined && body.generationConfig?.thinkingConfig?.includeThoughts === true ? o.thoughts : '';
  // The thought summary comes whole, in the first piece, before any text.
  const candidate = (t: string, last: boolean, first = true) => ({
    content: {
      role: 'model',
      parts: [
        ...(first && thought !== '' ? [{ text: thought, thought: true }] : []),
        ...(t !== '' ? [{ text: t }] : []),
        ...(last ? callParts : []),
      ],
    },
    ...(last ? { finishReason } : {}),
  });
  if (mode === 'json') {
    return sendJson(res, 200, {
      ...base,
      candidates: [{ ...candidate(text, true), avgLogprobs: -0.12 }],
      usageMetadata: { ...usage, trafficType: 'ON_DEMAND' },
    });
  }
  const pieces = [...(o.chunks ?? text.split(/(?<= )/).filter((p) => p !== ''))];
  // The calls come whole, in a piece of their own after the text.
  if (calls.length > 0 || pieces.length === 0) pieces.push('');
  // Vertex sends usageMetadata on every piece; only the last carries the counts of the answer.
  const responses = pieces.map((p, i) => {
    const last = i === pieces.length - 1;
    return {
      ...base,
      candidates: [candidate(p, last, i === 0)],
      usageMetadata: last ? { ...usage, trafficType: 'ON_DEMAND' } : { trafficType: 'ON_DEMAND' },
    };
  });
  if (mode === 'array') return sendJson(res, 200, responses);
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    'transfer-encoding': 'chunked',
  });
  for (const r of responses) {
    if (res.destroyed) return;
    res.write(`data: ${JSON.stringify(r)}\r\n\r\n`);
    await sleep(2);
  }
  res.end();
}

// ------------------------------------------------------------------------------------------------
// Claude on Vertex

function validateClaude(body: any): string | undefined {
  if (body.anthropic_version === undefined) return 'anthropic_version: Field required';
  if (body.anthropic_version !== VERTEX_ANTHROPIC_VERSION)
    return `anthropic_version: Input should be '${VERTEX_ANTHROPIC_VERSION}'`;
  if (body.model !== undefined) return 'model: Extra inputs are not permitted';
  if (!Array.isArray(body.messages) || body.messages.length === 0) return 'messages: Field required';
  if (!Number.isInteger(body.max_tokens) || body.max_tokens < 1) return 'max_tokens: Field required';
  for (const [i, m] of body.messages.entries()) {
    if (m?.role !== 'user' && m?.role !== 'assistant')
      return `messages.${i}.role: Input should be 'user' or 'assistant'`;
  }
  return undefined;
}

async function claude(
  res: ServerResponse,
  body: any,
  model: string,
  stream: boolean,
  o: VertexWireOptions,
): Promise<void> {
  if (o.claudeToolUse !== undefined) {
    // With tools, the answer is the Anthropic wire's, byte for byte: blocks, then input_json_delta pieces.
    return claudeMessages(
      res,
      { ...body, model },
      {
        toolUse: o.claudeToolUse,
        ...(o.text !== undefined ? { text: o.text } : {}),
        ...(o.claudeUsage ? { usage: o.claudeUsage } : {}),
      },
    );
  }
  const text = typeof o.text === 'function' ? o.text(body) : (o.text ?? DEFAULT_TEXT);
  const inputWords =
    words(typeof body.system === 'string' ? body.system : '') +
    body.messages.reduce((n: number, m: any) => n + words(typeof m.content === 'string' ? m.content : ''), 0);
  const usage = o.claudeUsage ?? { input_tokens: inputWords, output_tokens: words(text) };
  const id = `msg_vrtx_${randomBytes(12).toString('hex')}`;
  if (body.stream !== true) {
    return sendJson(res, 200, {
      id,
      type: 'message',
      role: 'assistant',
      model,
      content: [{ type: 'text', text }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { ...usage, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
    });
  }
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  const send = (type: string, data: Record<string, unknown>) =>
    res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  send('message_start', {
    message: {
      id,
      type: 'message',
      role: 'assistant',
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: {
        input_tokens: usage.input_tokens,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        output_tokens: 1,
      },
    },
  });
  send('content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
  send('ping', {});
  for (const piece of o.chunks ?? text.split(/(?<= )/).filter((p) => p !== '')) {
    if (res.destroyed) return;
    send('content_block_delta', { index: 0, delta: { type: 'text_delta', text: piece } });
    await sleep(2);
  }
  send('content_block_stop', { index: 0 });
  send('message_delta', {
    delta: { stop_reason: 'end_turn', stop_sequence: null },
    usage: { output_tokens: usage.output_tokens },
  });
  send('message_stop', {});
  res.end();
}

// ------------------------------------------------------------------------------------------------

function sendGoogleError(
  res: ServerResponse,
  status: number,
  message: string,
  headers: Record<string, string> = {},
): void {
  sendJson(res, status, { error: { code: status, message, status: GOOGLE_STATUS[status] ?? 'UNKNOWN' } }, headers);
}

function sendAnthropicError(res: ServerResponse, status: number, type: string, message: string): void {
  sendJson(res, status, { type: 'error', error: { type, message } });
}

const sendJson = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
  writeJson(res, status, body, { 'content-type': 'application/json; charset=UTF-8', ...headers });
