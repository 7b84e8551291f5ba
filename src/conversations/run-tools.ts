/**
 * The tools of a run request: `tool_definitions` (the request's, else the interaction's stored
 * options) and `config.model_options.tool_choice`, checked before anything is stored or sent.
 */
import { BadRequest } from '../util/errors.ts';
import type { CacheControl, ToolChoice, ToolDefinition } from '../providers/driver.ts';
import { assertCanCallTools, type ToolTarget } from '../providers/tool-capabilities.ts';

/** Bound on the tools of one request (OpenAI's own limit is 128). */
const MAX_TOOLS = 128;
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const CHOICES: readonly ToolChoice[] = ['auto', 'none', 'any', 'required'];

export interface RunTools {
  tools: ToolDefinition[];
  tool_choice?: ToolChoice;
}

function readToolDefinitions(value: unknown): ToolDefinition[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value))
    throw new BadRequest('tool_definitions must be a list of {name, description?, input_schema}');
  if (value.length > MAX_TOOLS)
    throw new BadRequest(`tool_definitions has ${value.length} tools; at most ${MAX_TOOLS}`);
  const names = new Set<string>();
  return value.map((t, i) => {
    const at = `tool_definitions[${i}]`;
    if (t === null || typeof t !== 'object' || Array.isArray(t)) throw new BadRequest(`${at} must be an object`);
    const { name, description, input_schema, cache_control } = t as Record<string, unknown>;
    if (typeof name !== 'string' || !TOOL_NAME.test(name))
      throw new BadRequest(`${at}.name must be 1 to 64 letters, digits, _ or -`);
    if (names.has(name)) throw new BadRequest(`${at}.name "${name}" is given twice`);
    names.add(name);
    if (description !== undefined && typeof description !== 'string')
      throw new BadRequest(`${at}.description must be a string`);
    if (input_schema === null || typeof input_schema !== 'object' || Array.isArray(input_schema))
      throw new BadRequest(`${at}.input_schema must be a JSON Schema object`);
    if ((input_schema as Record<string, unknown>).type !== 'object')
      throw new BadRequest(`${at}.input_schema must have type "object": a tool takes named arguments`);
    const cache = cacheControlOf(cache_control, `${at}.cache_control`);
    return {
      name,
      ...(description !== undefined ? { description } : {}),
      input_schema: input_schema as Record<string, unknown>,
      ...(cache ? { cache_control: cache } : {}),
    };
  });
}

/** A tool's prompt-cache breakpoint (Anthropic's cache_control), sent to Claude providers. */
function cacheControlOf(value: unknown, at: string): CacheControl | undefined {
  if (value === undefined || value === null) return undefined;
  const c = value as Record<string, unknown>;
  if (typeof value !== 'object' || Array.isArray(value) || c.type !== 'ephemeral')
    throw new BadRequest(`${at} must be {type: "ephemeral", ttl?: "5m" | "1h"}`);
  if (Object.keys(c).some((k) => k !== 'type' && k !== 'ttl')) throw new BadRequest(`${at} takes only type and ttl`);
  if (c.ttl !== undefined && c.ttl !== '5m' && c.ttl !== '1h') throw new BadRequest(`${at}.ttl must be "5m" or "1h"`);
  return c.ttl ? { type: 'ephemeral', ttl: c.ttl as '5m' | '1h' } : { type: 'ephemeral' };
}

function readToolChoice(modelOptions: unknown): ToolChoice | undefined {
  const choice = (modelOptions as { tool_choice?: unknown } | null | undefined)?.tool_choice;
  if (choice === undefined || choice === null) return undefined;
  if (typeof choice !== 'string' || !CHOICES.includes(choice as ToolChoice))
    throw new BadRequest(`config.model_options.tool_choice must be one of ${CHOICES.join(', ')}`);
  return choice as ToolChoice;
}

/** Where a run's tools may go: its environment and model, or each entry of a virtual environment. */
export interface ToolDestination {
  env: ToolTarget;
  model: string;
}

/**
 * The run's tools, or undefined when it has none; refuses a model that cannot call tools, or a
 * streamed run on a model that cannot stream its calls (400 tools_unsupported), before any
 * provider call, for every destination the run may reach.
 */
export function runTools(
  requested: unknown,
  stored: unknown,
  modelOptions: unknown,
  destinations: ToolDestination[],
  stream: boolean,
): RunTools | undefined {
  const tools = readToolDefinitions(requested) ?? readToolDefinitions(stored);
  const tool_choice = readToolChoice(modelOptions);
  if (!tools || tools.length === 0) {
    if (tool_choice && tool_choice !== 'auto' && tool_choice !== 'none')
      throw new BadRequest(`config.model_options.tool_choice is "${tool_choice}" but the run has no tool_definitions`);
    return undefined;
  }
  for (const d of destinations) assertCanCallTools(d.env, d.model, stream);
  return tool_choice ? { tools, tool_choice } : { tools };
}
