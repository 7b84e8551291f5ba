/**
 * The Responses API's rules: a request checked and turned into a run of the built-in interaction
 * `sys:responses` (runs/door-runs.ts) on the environment and model it addresses, through the
 * normal run path. `previous_response_id` continues from that run: the provider is sent the
 * history, the run stores only the new input and links the run it continues. Every call is
 * stored: `store: false` is accepted and recorded in the run's config.
 */
import type { Principal } from '../../auth/principal.ts';
import type { ChatMessage } from '../../providers/driver.ts';
import type { CallerInfo, RunService } from '../../runs/service.ts';
import type { Run } from '../../runs/model.ts';
import type { ModelAddressing } from '../openai/addressing.ts';
import { OpenAIRequestError, unsupported } from '../openai/errors.ts';
import { tagsOf } from '../openai/service.ts';
import type { Echo } from './answers.ts';
import { historyOf } from './history.ts';
import { readInput, readTextFormat, readToolChoice, readTools } from './input.ts';

const DOOR = 'responses';

type Json = Record<string, unknown>;

/** Parameters the door applies. */
const APPLIED = new Set([
  'model',
  'input',
  'instructions',
  'previous_response_id',
  'store',
  'stream',
  'temperature',
  'top_p',
  'max_output_tokens',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'text',
  'metadata',
  'user',
  'truncation',
  'include',
  'background',
  'reasoning',
  'service_tier',
  'stream_options',
]);

/** OpenAI parameters the door does not apply, and why (a 400 naming them, when set). */
const NOT_APPLIED: Record<string, string> = {
  conversation: "OpenAI's conversation objects; continue with previous_response_id",
  prompt: "OpenAI's stored prompt templates; send instructions and input",
  top_logprobs: 'Orrery does not return log probabilities',
  max_tool_calls: 'not every provider behind Orrery has it',
  prompt_cache_key: "OpenAI's prompt cache key does not apply behind Orrery",
  prompt_cache_retention: "OpenAI's prompt cache does not apply behind Orrery",
  safety_identifier: "use 'user' (recorded as a user:<value> tag)",
};

export interface ResponsesCall {
  run: Run;
  stream: boolean;
  echo: Echo;
}

export interface ResponsesDoorDeps {
  runs: RunService;
  addressing: ModelAddressing;
}

export class ResponsesDoor {
  constructor(private readonly deps: ResponsesDoorDeps) {}

  /** POST /v1/responses: the run, blocking (ended) or streamed (created, to follow). */
  async create(p: Principal, body: Json, caller: CallerInfo, tagHeader: unknown): Promise<ResponsesCall> {
    checkParameters(body);
    const { env, model } = await this.deps.addressing.resolve(p, body.model);
    const previousId = body.previous_response_id ?? null;
    const history = previousId === null ? undefined : await historyOf(this.deps.runs, p, previousId);
    const input = readInput(body.input, history?.calls ?? new Set());
    const instructions = readInstructions(body.instructions);
    const tools = readTools(body.tools);
    const toolChoice = readToolChoice(body.tool_choice, Boolean(tools?.length));
    const resultSchema = readTextFormat(body.text);
    const stream = flag(body.stream, 'stream') ?? false;
    const store = flag(body.store, 'store') ?? true;
    const options = samplingOf(body);
    if (toolChoice) options.tool_choice = toolChoice;
    const tags = tagsOf(tagHeader, body.metadata, body.user);
    const messages: ChatMessage[] = [
      ...(instructions ? [{ role: 'system' as const, content: instructions }] : []),
      ...(history?.messages ?? []),
      ...input,
    ];
    const run = await this.deps.runs.executeMessages(
      p,
      {
        interaction: `sys:${DOOR}`,
        stream,
        tags,
        // Instructions and store in the run's config: the prompt holds the input alone (history.ts).
        config: {
          environment: env.id,
          model,
          model_options: options,
          store,
          ...(instructions ? { instructions } : {}),
        },
        ...(resultSchema ? { result_schema: resultSchema } : {}),
        ...(tools ? { tool_definitions: tools } : {}),
      },
      caller,
      { door: DOOR, messages, stored: input, ...(history ? { previousRun: history.runId } : {}) },
    );
    const echo: Echo = {
      model: body.model as string,
      created_at: Math.floor(Date.parse(run.created_at) / 1000),
      instructions: instructions ?? null,
      previous_response_id: typeof previousId === 'string' ? previousId : null,
      temperature: options.temperature as number,
      top_p: (options.top_p as number | undefined) ?? null,
      max_output_tokens: (options.max_tokens as number | undefined) ?? null,
      tools: (body.tools as unknown[] | undefined) ?? [],
      tool_choice: body.tool_choice ?? 'auto',
      parallel_tool_calls: true,
      text: body.text ?? { format: { type: 'text' } },
      store,
      metadata: (body.metadata as Record<string, string> | undefined) ?? {},
      user: typeof body.user === 'string' ? body.user : null,
    };
    return { run, stream, echo };
  }
}

function checkParameters(body: Json): void {
  for (const key of Object.keys(body)) {
    if (APPLIED.has(key)) continue;
    const why = NOT_APPLIED[key];
    if (why !== undefined) {
      if (body[key] === null || body[key] === undefined) continue;
      throw unsupported(key, why);
    }
    throw new OpenAIRequestError(`Unknown parameter: '${key.slice(0, 64)}'.`, key.slice(0, 64), 'unknown_parameter');
  }
  // Accepted at the values that change nothing; refused by name otherwise.
  if (body.parallel_tool_calls === false)
    throw unsupported('parallel_tool_calls', 'not every provider can be kept to one call per turn');
  if (body.truncation !== undefined && body.truncation !== null && body.truncation !== 'disabled')
    throw unsupported('truncation', "Orrery sends the whole conversation ('disabled')");
  if (Array.isArray(body.include) ? body.include.length > 0 : body.include !== undefined && body.include !== null)
    throw unsupported('include', 'the door answers no extra output data');
  if (body.background === true)
    throw unsupported('background', 'use POST /api/v1/runs/async for calls in the background');
  if (body.reasoning !== undefined && body.reasoning !== null) {
    const r = body.reasoning as Json;
    if (typeof r !== 'object' || Object.values(r).some((v) => v !== null && v !== undefined))
      throw unsupported('reasoning', 'set reasoning options on the environment instead');
  }
  if (body.service_tier !== undefined && body.service_tier !== null && body.service_tier !== 'auto')
    throw unsupported('service_tier', "OpenAI's service tiers do not apply behind Orrery");
  if (body.stream_options !== undefined && body.stream_options !== null && body.stream !== true)
    throw new OpenAIRequestError(
      "Invalid 'stream_options': only with stream: true.",
      'stream_options',
      'invalid_value',
    );
  if (body.stream_options !== undefined && body.stream_options !== null) {
    const o = body.stream_options as Json;
    if (typeof o !== 'object' || Object.entries(o).some(([k, v]) => !(k === 'include_obfuscation' && v === false)))
      throw unsupported(
        'stream_options',
        'the door adds no obfuscation; send {include_obfuscation: false} or leave it out',
      );
  }
}

function readInstructions(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string')
    throw new OpenAIRequestError("Invalid type for 'instructions': expected a string.", 'instructions', 'invalid_type');
  return value || undefined;
}

function flag(value: unknown, param: string): boolean | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'boolean')
    throw new OpenAIRequestError(`Invalid type for '${param}': expected a boolean.`, param, 'invalid_type');
  return value;
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

/** The sampling parameters as a run's model options; without a temperature, OpenAI's default (1). */
function samplingOf(body: Json): Json {
  const out: Json = { temperature: number(body.temperature, 'temperature', 0, 2) ?? 1 };
  const topP = number(body.top_p, 'top_p', 0, 1);
  if (topP !== undefined) out.top_p = topP;
  const max = body.max_output_tokens;
  if (max !== undefined && max !== null) {
    if (!Number.isSafeInteger(max) || (max as number) < 16)
      throw new OpenAIRequestError(
        "Invalid 'max_output_tokens': expected an integer of at least 16.",
        'max_output_tokens',
        'invalid_value',
      );
    out.max_tokens = max;
  }
  return out;
}
