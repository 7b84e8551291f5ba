/**
 * A project's published interactions as MCP tools: each interaction's newest published version
 * (drafts are never listed nor called), named after its endpoint, described by its description,
 * taking its merged input schema; a call is a run of that version through the normal run path,
 * recorded with `source.type: "mcp"`, and its result answered as MCP content.
 */
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Principal } from '../../auth/principal.ts';
import type { InteractionService, InteractionDto } from '../../interactions/interactions.ts';
import type { EndpointDto } from '../../interactions/model.ts';
import { mergedPromptSchema, paramsSchemaOf } from '../../interactions/params-schema.ts';
import type { RunService } from '../../runs/service.ts';
import type { CallerInfo } from '../../runs/plan.ts';
import type { Run } from '../../runs/model.ts';
import { runUri } from './uris.ts';
import type { ToolAnswer } from './tool-model.ts';

const DOOR = 'mcp';
/** Published interactions listed as tools, at most (docs/reference/limits.md). */
const MAX_INTERACTION_TOOLS = 1000;

export type InteractionReads = Pick<InteractionService, 'endpoints' | 'get'>;
export type RunStarts = Pick<RunService, 'create'>;

/** An interaction as a tool: the name it is listed and called by, the version it runs. */
export interface InteractionTool {
  name: string;
  endpoint: EndpointDto;
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** MCP's tool name characters; the rest of an endpoint's (`:`) become `_`. */
const toolName = (endpoint: string): string => endpoint.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 120);

/**
 * The project's published interactions with their tool names, in endpoint order. A name already
 * taken (a built-in tool's, or another endpoint's once made a tool name) gets `_2`, `_3`…
 */
export async function interactionTools(
  interactions: InteractionReads,
  p: Principal,
  reserved: ReadonlySet<string>,
): Promise<InteractionTool[]> {
  const published = await interactions.endpoints(p, { status: 'published', limit: MAX_INTERACTION_TOOLS, offset: 0 });
  const taken = new Set(reserved);
  return published.map((endpoint) => {
    const base = toolName(endpoint.endpoint);
    let name = base;
    for (let i = 2; taken.has(name); i++) name = `${base}_${i}`;
    taken.add(name);
    return { name, endpoint };
  });
}

/**
 * The input schema a tool takes: what a run's data is described by (the interaction's schema, with
 * its prompt templates' merged beside it: interactions/params-schema.ts), always an object schema.
 * Undefined for an interaction whose input is not an object, which MCP cannot express.
 */
function mergedInputSchema(interaction: InteractionDto): Tool['inputSchema'] | undefined {
  const own = interaction.interaction_schema;
  if (isObject(own) && own.type !== undefined && own.type !== 'object') return undefined;
  const schema = paramsSchemaOf(own, mergedPromptSchema(interaction.prompts.map((s) => s.template)));
  return { properties: {}, ...schema, type: 'object' } as Tool['inputSchema'];
}

/** The tool's MCP definition, or undefined when its input cannot be an MCP tool's (mergedInputSchema). */
export async function definitionOf(
  interactions: InteractionReads,
  p: Principal,
  tool: InteractionTool,
): Promise<Tool | undefined> {
  const interaction = await interactions.get(p, tool.endpoint.id);
  const inputSchema = mergedInputSchema(interaction);
  if (!inputSchema) return undefined;
  return {
    name: tool.name,
    title: interaction.name,
    description:
      interaction.description?.trim() ||
      `Runs the interaction "${interaction.name}" (version ${interaction.version}) on its environment and model.`,
    inputSchema,
    annotations: { title: interaction.name, openWorldHint: true },
    _meta: {
      'orrery/interaction': { id: interaction.id, endpoint: interaction.endpoint, version: interaction.version },
    },
  };
}

/** Runs the tool's interaction version with `args` as its data (a blocking run, source `mcp`). */
export async function callInteraction(
  runs: RunStarts,
  p: Principal,
  tool: InteractionTool,
  args: unknown,
  caller: CallerInfo,
): Promise<ToolAnswer> {
  const run = await runs.create(p, { interaction: tool.endpoint.id, data: args ?? {} }, { ...caller, door: DOOR });
  return runAnswer(run);
}

/** A completed run as MCP content: its text and JSON parts, then a link to the run. */
function runAnswer(run: Run): ToolAnswer {
  const content: ToolAnswer['content'] = [];
  for (const part of run.result ?? []) {
    if (part.type === 'text') content.push({ type: 'text', text: part.value });
    else content.push({ type: 'text', text: JSON.stringify(part.value, null, 1) });
  }
  if (run.tool_use?.length)
    content.push({
      type: 'text',
      text: `The model asked for tools the interaction defines (${run.tool_use.map((t) => t.tool_name).join(', ')}); continue the run with POST /api/v1/runs/tool-results.`,
    });
  if (!content.length) content.push({ type: 'text', text: '' });
  content.push({ type: 'resource_link', uri: runUri(run.id), name: `run ${run.id}`, mimeType: 'application/json' });
  const only = run.result?.length === 1 ? run.result[0] : undefined;
  return {
    content,
    ...(only?.type === 'json' && isObject(only.value) ? { structuredContent: only.value } : {}),
    _meta: { 'orrery/run': run.id },
  };
}
