/**
 * The body of POST /execute/async with `type: "conversation"` (Vertesia's
 * AsyncConversationExecutionPayload) read into what an agent is asked: every field is applied or
 * refused by name with what to do instead; a field the schema does not name is refused too.
 */
import { BadRequest } from '../util/errors.ts';
import { readStripOptions, type StripOptions } from '../conversations/strip.ts';

/** Vertesia's default when max_iterations is absent or <= 0. */
const DEFAULT_MAX_ITERATIONS = 20;
/** The most iterations (model calls) one agent may make (docs/reference/limits.md). */
const MAX_ITERATIONS = 100;
/** The most tool names a payload may carry, and tools an agent may be given. */
export const MAX_TOOLS = 64;
const MAX_TOOL_NAME = 64;
const MAX_TAGS = 100;

/** What the agent was asked, fixed when it starts (stored in agent_runs.spec). */
export interface AgentSpec {
  interaction: string;
  data?: unknown;
  config?: Record<string, unknown>;
  tags?: string[];
  /** The tool names as asked (`+name`, `-name`, or a list that replaces the defaults). */
  toolNames?: string[];
  excludedTools: string[];
  disableInteractionTools: boolean;
  maxIterations: number;
  interactive: boolean;
  stripOptions?: StripOptions;
  /** The tools resolved at the start (agents/tools.ts): the model sees the same ones after a restart. */
  tools: ToolRef[];
}

/** A tool an agent may call, as stored: enough to find it again and describe it to the model. */
export interface ToolRef {
  kind: 'builtin' | 'interaction' | 'mcp';
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
  /** interaction: its id; mcp: the server's id. */
  target?: string;
  /** mcp: the tool's name on its server. */
  remote?: string;
}

/** Fields of Vertesia's payload that Orrery does not apply, and why. */
const REFUSED: Record<string, string> = {
  app_version: 'Orrery has no apps: leave it out',
  conversation:
    'an agent starts its own conversation: leave it out (continue a finished one with POST /runs/user-message)',
  workflow: 'Orrery runs no Temporal workflows: the agent is its own workflow run (runId)',
  prompts: 'ad-hoc prompts are not supported: create an interaction and name it in "interaction"',
  asyncCompletion: 'Temporal async activity completion does not apply: follow the agent with GET /runs/:id',
  task_queue: 'Orrery has no task queues: every replica executes agents',
  tool_approval_mode: 'tools are not approved one by one: choose the tools with tool_names and excluded_tools',
  initial_skills: 'Orrery has no skills: leave it out',
  initial_tool_calls: 'tool calls before the first model turn are not supported: put their inputs in data',
  user_channels: 'only the interactive channel is served: set interactive: true and send POST /runs/user-message',
  search_scope: 'search scopes are not supported: the built-in search tools search the whole project',
  collection_id: 'search scopes are not supported: the built-in search tools search the whole project',
  disabled_mcp_collections: 'choose MCP tools with tool_names and excluded_tools',
  checkpoint_tokens: 'agent checkpoints (history summaries) are not supported: bound the history with strip_options',
  checkpoint: 'agent checkpoints (history summaries) are not supported: bound the history with strip_options',
  task_id: 'Orrery has no child workflows: leave it out',
  launch_id: 'Orrery has no workstreams: leave it out',
  debug_mode: 'there is no debug mode: every step is recorded as a run',
  max_nested_conversation_depth: 'agents do not start agents: leave it out',
  parent_metadata: 'Orrery has no child workflows: leave it out',
  non_blocking_subagents: 'agents do not start agents: leave it out',
  restart_from_workflow_run_id: 'restarting a workflow is not supported: start a new agent',
  source_first_workflow_run_id: 'restarting a workflow is not supported: start a new agent',
  is_fork: 'forking an agent is not supported: start a new agent',
  agent_run_id: 'the agent run id is the runId answered: leave it out',
  schedule_id: 'schedules are not supported: leave it out',
  result_schema: 'an agent answers in text: ask for the shape in its prompt',
};

const APPLIED = new Set([
  'type',
  'interaction',
  'data',
  'config',
  'tags',
  'tool_names',
  'excluded_tools',
  'disable_interaction_tools',
  'max_iterations',
  'interactive',
  'strip_options',
  'do_validate',
  'visibility',
  'notify_endpoints',
  'include_previous_error',
  'generate_topic',
  'generate_lessons',
]);

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The payload read, or the 400 that names the field to change. `tools` is left empty for agents/tools.ts. */
export function readAgentPayload(body: Record<string, unknown>): AgentSpec {
  for (const key of Object.keys(body)) {
    if (body[key] === undefined) continue;
    if (REFUSED[key] !== undefined) throw new BadRequest(`${key} is not supported for an agent: ${REFUSED[key]}`);
    if (!APPLIED.has(key))
      throw new BadRequest(`${key} is not a field of an async conversation execution: leave it out`);
  }
  if (typeof body.interaction !== 'string' || body.interaction === '')
    throw new BadRequest('interaction is required: the name of the agent interaction (Name, Name@draft, Name@3)');
  if (body.do_validate === false) throw new BadRequest('do_validate: false is not supported: leave it out or true');
  if (body.visibility !== undefined && body.visibility !== 'project')
    throw new BadRequest(
      `visibility ${JSON.stringify(body.visibility)} is not supported: agents are seen by the project`,
    );
  for (const key of ['generate_topic', 'generate_lessons', 'include_previous_error'] as const)
    if (body[key] !== undefined && body[key] !== false)
      throw new BadRequest(
        `${key}: ${JSON.stringify(body[key])} is not supported for an agent (leave it out or false)`,
      );
  if (Array.isArray(body.notify_endpoints) ? body.notify_endpoints.length > 0 : body.notify_endpoints !== undefined)
    throw new BadRequest('notify_endpoints is not supported for an agent yet: follow it with GET /runs/:id');
  if (body.config !== undefined && !isObject(body.config)) throw new BadRequest('config must be an object');
  return {
    interaction: body.interaction,
    ...(body.data !== undefined ? { data: body.data } : {}),
    ...(body.config !== undefined ? { config: body.config as Record<string, unknown> } : {}),
    ...(body.tags !== undefined ? { tags: readNames('tags', body.tags, MAX_TAGS) } : {}),
    ...(body.tool_names !== undefined ? { toolNames: readNames('tool_names', body.tool_names, MAX_TOOLS) } : {}),
    excludedTools: body.excluded_tools === undefined ? [] : readNames('excluded_tools', body.excluded_tools, MAX_TOOLS),
    disableInteractionTools: readFlag('disable_interaction_tools', body.disable_interaction_tools),
    maxIterations: readMaxIterations(body.max_iterations),
    interactive: readFlag('interactive', body.interactive),
    ...(body.strip_options !== undefined ? { stripOptions: readStripOptions(body.strip_options) } : {}),
    tools: [],
  };
}

function readNames(field: string, value: unknown, max: number): string[] {
  if (!Array.isArray(value)) throw new BadRequest(`${field} must be a list of names`);
  if (value.length > max) throw new BadRequest(`${field} has ${value.length} names; at most ${max}`);
  return value.map((v, i) => {
    if (typeof v !== 'string' || v === '' || v.length > MAX_TOOL_NAME + 1)
      throw new BadRequest(`${field}[${i}] must be a name of 1 to ${MAX_TOOL_NAME} characters`);
    return v;
  });
}

function readFlag(field: string, value: unknown): boolean {
  if (value === undefined || value === null) return false;
  if (typeof value !== 'boolean') throw new BadRequest(`${field} must be true or false`);
  return value;
}

function readMaxIterations(value: unknown): number {
  if (value === undefined || value === null) return DEFAULT_MAX_ITERATIONS;
  if (typeof value !== 'number' || !Number.isInteger(value))
    throw new BadRequest('max_iterations must be a whole number (<= 0 for the default of 20)');
  if (value <= 0) return DEFAULT_MAX_ITERATIONS;
  if (value > MAX_ITERATIONS)
    throw new BadRequest(`max_iterations is ${value}; at most ${MAX_ITERATIONS} model calls per agent`);
  return value;
}
