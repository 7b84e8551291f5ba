/**
 * The OpenAI door's rules: a Chat Completions request checked and turned into a run of the
 * built-in interaction `sys:openai` (runs/door-runs.ts) on the environment and model it
 * addresses, through the normal run path (virtual environments, retries, the result cache,
 * limits, cost, audit); embeddings recorded as runs too; the models of every environment.
 */
import type { Principal } from '../../auth/principal.ts';
import type { CallerInfo, RunService } from '../../runs/service.ts';
import type { Run } from '../../runs/model.ts';
import type { EnvironmentService } from '../../interactions/environments.ts';
import { normaliseTags } from '../../runs/plan.ts';
import type { ModelAddressing } from './addressing.ts';
import { OpenAIRequestError, unsupported } from './errors.ts';
import { readMessages, readResponseFormat, readStop, readToolChoice, readTools } from './messages.ts';
import type { ConversationLinks } from './conversation-links.ts';

const DOOR = 'openai';

type Json = Record<string, unknown>;

/** Parameters the door applies (the rest of OpenAI's are refused by name, or accepted when they change nothing). */
const APPLIED = new Set([
  'model',
  'messages',
  'temperature',
  'top_p',
  'max_tokens',
  'max_completion_tokens',
  'stop',
  'seed',
  'presence_penalty',
  'frequency_penalty',
  'n',
  'stream',
  'stream_options',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'response_format',
  'user',
  'metadata',
  'store',
  'logprobs',
  'reasoning_effort',
]);

/** OpenAI parameters the door does not apply, and why (a 400 naming them). */
const NOT_APPLIED: Record<string, string> = {
  top_logprobs: 'Orrery does not return log probabilities',
  logit_bias: 'not every provider behind Orrery has it',
  modalities: 'the door answers text',
  audio: 'the door answers text',
  prediction: 'predicted outputs are OpenAI-only',
  service_tier: "OpenAI's service tiers do not apply behind Orrery",
  web_search_options: 'web search is not a provider-neutral tool',
  functions: "the deprecated 'functions'; use 'tools'",
  function_call: "the deprecated 'function_call'; use 'tool_choice'",
  verbosity: 'not every provider behind Orrery has it',
  prompt_cache_key: "OpenAI's prompt cache key does not apply behind Orrery",
  safety_identifier: "use 'user' (recorded as a user:<value> tag)",
};

/** Bounds on what becomes tags: OpenAI's own for metadata. */
const MAX_METADATA_KEYS = 16;
const MAX_METADATA_KEY = 64;
const MAX_METADATA_VALUE = 512;
const MAX_USER = 256;
/** Bound on the x-orrery-tags header's tags. */
const MAX_HEADER_TAGS = 32;

export interface ChatCall {
  run: Run;
  /** The model as the request named it (answered back as `model`). */
  model: string;
  stream: boolean;
  includeUsage: boolean;
  /** Records the run's conversation once it completed, for the next turn to extend (conversation-links.ts). */
  ended(final: Run): void;
}

export interface OpenAIDoorDeps {
  runs: RunService;
  environments: EnvironmentService;
  addressing: ModelAddressing;
  links: ConversationLinks;
}

export class OpenAIDoor {
  constructor(private readonly deps: OpenAIDoorDeps) {}

  /** POST /v1/chat/completions: the run, blocking (ended) or streamed (created, to follow). */
  async chat(p: Principal, body: Json, caller: CallerInfo, tagHeader: unknown): Promise<ChatCall> {
    checkParameters(body);
    const { env, model } = await this.deps.addressing.resolve(p, body.model);
    const messages = readMessages(body.messages);
    const tools = readTools(body.tools);
    const toolChoice = readToolChoice(body.tool_choice, Boolean(tools?.length));
    const resultSchema = readResponseFormat(body.response_format);
    const stream = readFlag(body.stream, 'stream');
    const options = samplingOf(body);
    if (toolChoice) options.tool_choice = toolChoice;
    const tags = tagsOf(tagHeader, body.metadata, body.user);
    const link = await this.deps.links.find(p, env.id, model, messages);
    const run = await this.deps.runs.executeMessages(
      p,
      {
        interaction: 'sys:openai',
        stream,
        tags,
        config: { environment: env.id, model, model_options: options },
        ...(resultSchema ? { result_schema: resultSchema } : {}),
        ...(tools ? { tool_definitions: tools } : {}),
      },
      caller,
      {
        door: DOOR,
        messages,
        ...(link ? { stored: messages.slice(link.length), previousRun: link.runId } : {}),
      },
    );
    const includeUsage = stream && readStreamOptions(body.stream_options);
    const ended = (final: Run) => this.deps.links.remember(p, env.id, model, messages, final);
    if (!stream) ended(run);
    return { run, model: body.model as string, stream, includeUsage, ended };
  }

  /**
   * POST /v1/embeddings: the vectors of the inputs from the addressed environment, recorded as a
   * run whose parameters are the inputs and whose result is their count and dimensions (no vectors).
   */
  async embeddings(p: Principal, body: Json, caller: CallerInfo, tagHeader: unknown) {
    for (const key of Object.keys(body))
      if (!EMBEDDING_PARAMETERS.has(key))
        throw new OpenAIRequestError(`Unrecognized request argument supplied: ${key}`, key, 'unknown_parameter');
    if (body.dimensions !== undefined && body.dimensions !== null)
      throw unsupported('dimensions', "the model's own dimensions are used; omit it");
    const format = body.encoding_format ?? 'float';
    if (format !== 'float' && format !== 'base64')
      throw new OpenAIRequestError(
        "Invalid value for 'encoding_format': supported values are 'float' and 'base64'.",
        'encoding_format',
        'invalid_value',
      );
    const inputs = embeddingInputs(body.input);
    const { env, model } = await this.deps.addressing.resolve(p, body.model);
    const tags = tagsOf(tagHeader, undefined, body.user);
    let vectors: number[][] = [];
    let answeredModel = model;
    await this.deps.runs.recordCall(
      p,
      caller,
      {
        door: DOOR,
        environment: { id: env.id, name: env.name, provider: env.provider },
        model,
        parameters: { input: inputs, encoding_format: format },
        tags: normaliseTags(tags),
      },
      async () => {
        const answer = await this.deps.environments.embeddings(p, env.id, {
          inputs: inputs.map((text) => ({ type: 'text', text })),
          ...(env.provider === 'test' ? {} : { model }),
        });
        answeredModel = answer.model;
        vectors = answer.results.map((r) => r.outputs[0]?.values ?? []);
        return { result: { count: vectors.length, dimensions: vectors[0]?.length ?? 0, model: answer.model } };
      },
    );
    return {
      object: 'list' as const,
      data: vectors.map((v, index) => ({
        object: 'embedding' as const,
        index,
        embedding: format === 'base64' ? Buffer.from(new Float32Array(v).buffer).toString('base64') : v,
      })),
      model: answeredModel === model ? (body.model as string) : answeredModel,
      usage: { prompt_tokens: 0, total_tokens: 0 },
    };
  }

  /** GET /v1/models: every environment's models as `<environment>/<model>`. */
  async models(p: Principal) {
    const envs = (await this.deps.addressing.list(p)).slice(0, MAX_LISTED_ENVIRONMENTS);
    const lists = await Promise.all(
      envs.map((env) =>
        this.deps.environments.models(p, env.id).catch(() =>
          // A provider that cannot list now: the environment's default model still addresses.
          env.default_model ? [{ id: env.default_model, name: env.default_model }] : [],
        ),
      ),
    );
    const created = Math.floor(Date.parse(envs[0]?.created_at ?? '') / 1000) || 0;
    return {
      object: 'list' as const,
      data: envs.flatMap((env, i) =>
        lists[i].slice(0, MAX_LISTED_MODELS).map((m) => ({
          id: `${env.name}/${m.id}`,
          object: 'model' as const,
          created: Math.floor(Date.parse(env.created_at) / 1000) || created,
          owned_by: env.provider,
        })),
      ),
    };
  }
}

const EMBEDDING_PARAMETERS = new Set(['input', 'model', 'encoding_format', 'dimensions', 'user']);
/** OpenAI's own bound on the inputs of one embeddings request. */
const MAX_EMBEDDING_INPUTS = 2048;
/** What GET /v1/models lists at most: environments, and models of each. */
const MAX_LISTED_ENVIRONMENTS = 200;
const MAX_LISTED_MODELS = 1000;

function embeddingInputs(input: unknown): string[] {
  const items = typeof input === 'string' ? [input] : input;
  if (!Array.isArray(items) || items.length === 0)
    throw new OpenAIRequestError(
      "Invalid 'input': expected a string or a non-empty array of strings.",
      'input',
      'invalid_value',
    );
  if (items.length > MAX_EMBEDDING_INPUTS)
    throw new OpenAIRequestError(`Invalid 'input': at most ${MAX_EMBEDDING_INPUTS} inputs.`, 'input', 'invalid_value');
  return items.map((t, i) => {
    if (typeof t === 'number' || Array.isArray(t)) throw unsupported('input', 'token arrays; send the text');
    if (typeof t !== 'string' || t === '')
      throw new OpenAIRequestError(
        `Invalid 'input[${i}]': expected a non-empty string.`,
        `input[${i}]`,
        'invalid_value',
      );
    return t;
  });
}

function checkParameters(body: Json): void {
  for (const key of Object.keys(body)) {
    if (APPLIED.has(key)) continue;
    const why = NOT_APPLIED[key];
    if (why !== undefined) {
      if (body[key] === null || body[key] === undefined) continue;
      throw unsupported(key, why);
    }
    throw new OpenAIRequestError(`Unrecognized request argument supplied: ${key}`, key, 'unknown_parameter');
  }
  if (body.n !== undefined && body.n !== null && body.n !== 1)
    throw unsupported('n', 'one choice per request (n: 1); send several requests for several answers');
  if (body.logprobs === true) throw unsupported('logprobs', 'Orrery does not return log probabilities');
  if (body.parallel_tool_calls === false)
    throw unsupported('parallel_tool_calls', 'not every provider can be kept to one call per turn');
  if (body.store !== undefined && body.store !== null && typeof body.store !== 'boolean')
    throw new OpenAIRequestError("Invalid type for 'store': expected a boolean.", 'store', 'invalid_type');
}

function readFlag(value: unknown, param: string): boolean {
  if (value === undefined || value === null) return false;
  if (typeof value !== 'boolean')
    throw new OpenAIRequestError(`Invalid type for '${param}': expected a boolean.`, param, 'invalid_type');
  return value;
}

function readStreamOptions(value: unknown): boolean {
  if (value === undefined || value === null) return false;
  if (typeof value !== 'object' || Array.isArray(value))
    throw new OpenAIRequestError(
      "Invalid type for 'stream_options': expected an object.",
      'stream_options',
      'invalid_type',
    );
  return readFlag((value as Json).include_usage, 'stream_options.include_usage');
}

const number = (value: unknown, param: string, min: number, max: number): number | undefined => {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !(value >= min && value <= max))
    throw new OpenAIRequestError(
      `Invalid '${param}': expected a number from ${min} to ${max}.`,
      param,
      'invalid_value',
    );
  return value;
};

const positiveInteger = (value: unknown, param: string): number | undefined => {
  if (value === undefined || value === null) return undefined;
  if (!Number.isSafeInteger(value) || (value as number) < 1)
    throw new OpenAIRequestError(`Invalid '${param}': expected a positive integer.`, param, 'invalid_value');
  return value as number;
};

/** The sampling parameters as a run's model options. Without a temperature, OpenAI's default (1). */
function samplingOf(body: Json): Json {
  const out: Json = { temperature: number(body.temperature, 'temperature', 0, 2) ?? 1 };
  const maxTokens =
    positiveInteger(body.max_completion_tokens, 'max_completion_tokens') ??
    positiveInteger(body.max_tokens, 'max_tokens');
  if (maxTokens !== undefined) out.max_tokens = maxTokens;
  const topP = number(body.top_p, 'top_p', 0, 1);
  if (topP !== undefined) out.top_p = topP;
  for (const k of ['presence_penalty', 'frequency_penalty'] as const) {
    const v = number(body[k], k, -2, 2);
    if (v !== undefined) out[k] = v;
  }
  if (body.seed !== undefined && body.seed !== null) {
    if (!Number.isSafeInteger(body.seed))
      throw new OpenAIRequestError("Invalid 'seed': expected an integer.", 'seed', 'invalid_value');
    out.seed = body.seed;
  }
  const stop = readStop(body.stop);
  if (stop) out.stop = stop;
  // As the run's `effort`: OpenAI's reasoning_effort, Claude's effort, Gemini's thinking level (providers/option-sets.ts).
  if (body.reasoning_effort !== undefined && body.reasoning_effort !== null) {
    if (typeof body.reasoning_effort !== 'string')
      throw new OpenAIRequestError(
        "Invalid type for 'reasoning_effort': expected a string.",
        'reasoning_effort',
        'invalid_type',
      );
    out.effort = body.reasoning_effort;
  }
  return out;
}

/** Tags of a door run: the x-orrery-tags header's, `metadata` as key:value, `user` as user:<value>. */
export function tagsOf(header: unknown, metadata: unknown, user: unknown): string[] {
  const tags = normaliseTags(typeof header === 'string' ? header : undefined);
  if (tags.length > MAX_HEADER_TAGS)
    throw new OpenAIRequestError(
      `x-orrery-tags has ${tags.length} tags; at most ${MAX_HEADER_TAGS}.`,
      null,
      'invalid_value',
    );
  if (metadata !== undefined && metadata !== null) {
    if (typeof metadata !== 'object' || Array.isArray(metadata))
      throw new OpenAIRequestError("Invalid type for 'metadata': expected an object.", 'metadata', 'invalid_type');
    const entries = Object.entries(metadata as Json);
    if (entries.length > MAX_METADATA_KEYS)
      throw new OpenAIRequestError(
        `Invalid 'metadata': at most ${MAX_METADATA_KEYS} keys.`,
        'metadata',
        'invalid_value',
      );
    for (const [k, v] of entries) {
      if (
        typeof v !== 'string' ||
        k.length > MAX_METADATA_KEY ||
        v.length > MAX_METADATA_VALUE ||
        k.includes(',') ||
        v.includes(',')
      )
        throw new OpenAIRequestError(
          `Invalid 'metadata.${k.slice(0, 64)}': keys of at most ${MAX_METADATA_KEY} characters and string values of at most ${MAX_METADATA_VALUE}, without commas (each becomes a tag key:value).`,
          `metadata.${k.slice(0, 64)}`,
          'invalid_value',
        );
      tags.push(`${k}:${v}`);
    }
  }
  if (user !== undefined && user !== null) {
    if (typeof user !== 'string' || user.length > MAX_USER)
      throw new OpenAIRequestError(
        `Invalid 'user': a string of at most ${MAX_USER} characters.`,
        'user',
        'invalid_value',
      );
    if (user) tags.push(`user:${user}`);
  }
  return tags;
}
