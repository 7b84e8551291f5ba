/**
 * The tools of an agent: chosen when it starts (`tool_names`, `excluded_tools`,
 * `disable_interaction_tools`, as Vertesia defines them) and called by agents/runner.ts.
 *  - built-in tools over Orrery's data (agents/builtin-tools.ts), the default set;
 *  - other interactions of the project, by name: their input schema is the interaction's, and a
 *    call is a run of that interaction, a child of the agent's run;
 *  - tools of the project's remote MCP servers (agents/mcp-*.ts), named `<server>_<tool>`.
 * `tool_names` without a sign replace the default set; `+name` adds to it, `-name` takes away.
 */
import type { Principal } from '../auth/principal.ts';
import { BadRequest } from '../util/errors.ts';
import { OrreryError } from '../util/errors.ts';
import type { InteractionService } from '../interactions/interactions.ts';
import type { RunService } from '../runs/service.ts';
import { MAX_TOOLS, type AgentSpec, type ToolRef } from './spec.ts';
import { boundedText, builtinTools, callBuiltin, type BuiltinSources, type ToolAnswer } from './builtin-tools.ts';

/** What the providers take as a tool name. */
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** The MCP side (agents/mcp-tools.ts): the project's MCP tools, and a call to one. */
export interface McpToolSource {
  /** `<server>_<tool>`: that tool; `<server>`: all its tools; none when no server of the project has that name. */
  find(p: Principal, name: string): Promise<ToolRef[]>;
  call(
    p: Principal,
    tool: ToolRef,
    input: Record<string, unknown>,
    key: string,
    signal: AbortSignal,
  ): Promise<ToolAnswer>;
}

export interface ToolDeps {
  runs: RunService;
  interactions: InteractionService;
  builtins: BuiltinSources;
  mcp?: McpToolSource;
}

/** A tool call of the agent: who calls, and the step it is (its idempotency key). */
export interface ToolCallContext {
  p: Principal;
  agentRunId: string;
  key: string;
  signal: AbortSignal;
}

export class AgentTools {
  constructor(private readonly deps: ToolDeps) {}

  /** The spec's tools resolved; a 400 naming a tool that does not exist or may not be used. */
  async resolve(p: Principal, spec: AgentSpec, agentInteractionId: string): Promise<ToolRef[]> {
    const builtins = builtinTools(this.deps.builtins);
    const names = chosenNames(
      builtins.map((t) => t.name),
      spec.toolNames,
      spec.excludedTools,
    );
    if (names.length > MAX_TOOLS)
      throw new BadRequest(`an agent has at most ${MAX_TOOLS} tools; ${names.length} chosen`);
    const tools: ToolRef[] = [];
    for (const name of names) {
      const builtin = builtins.find((t) => t.name === name);
      if (builtin) {
        tools.push(builtin);
        continue;
      }
      if (!TOOL_NAME.test(name))
        throw new BadRequest(`tool_names: "${name}" is not a tool name (letters, digits, _ and -, at most 64)`);
      const mcp = (await this.deps.mcp?.find(p, name)) ?? [];
      if (mcp.length) {
        tools.push(...mcp);
        continue;
      }
      tools.push(await this.interactionTool(p, name, spec, agentInteractionId));
    }
    if (tools.length > MAX_TOOLS)
      throw new BadRequest(`an agent has at most ${MAX_TOOLS} tools; ${tools.length} chosen`);
    const seen = new Set<string>();
    for (const t of tools) {
      if (seen.has(t.name)) throw new BadRequest(`tool_names: two tools are named ${t.name}`);
      seen.add(t.name);
    }
    return tools;
  }

  private async interactionTool(p: Principal, name: string, spec: AgentSpec, self: string): Promise<ToolRef> {
    let ix;
    try {
      ix = await this.deps.interactions.resolveSelector(p, name);
    } catch (err) {
      if ((err as OrreryError).status === 404)
        throw new BadRequest(
          `tool_names: there is no tool "${name}": not a built-in tool, an MCP tool or an interaction of this project`,
        );
      throw err;
    }
    if (spec.disableInteractionTools)
      throw new BadRequest(`tool_names: "${name}" is an interaction, and disable_interaction_tools is true`);
    const draftId = ix.parent ?? ix.id;
    if (draftId === self || ix.id === self) throw new BadRequest(`tool_names: an agent cannot call itself ("${name}")`);
    const schema = ix.interaction_schema as Record<string, unknown> | null | undefined;
    return {
      kind: 'interaction',
      name,
      description: ix.description || `Runs the interaction ${ix.name}`,
      input_schema: schema && typeof schema === 'object' ? schema : { type: 'object' },
      target: draftId,
    };
  }

  /** Calls a tool; a failure the model can act on is an error result, not a thrown error. */
  async call(tool: ToolRef, input: Record<string, unknown>, ctx: ToolCallContext): Promise<ToolAnswer> {
    switch (tool.kind) {
      case 'builtin':
        return callBuiltin(this.deps.builtins, ctx.p, tool.name, input).catch(asToolError);
      case 'interaction':
        return this.callInteraction(tool, input, ctx).catch(asToolError);
      case 'mcp':
        if (!this.deps.mcp) return { content: 'MCP tools are not available on this server', is_error: true };
        return this.deps.mcp.call(ctx.p, tool, input, ctx.key, ctx.signal).catch(asToolError);
    }
  }

  private async callInteraction(tool: ToolRef, input: Record<string, unknown>, ctx: ToolCallContext) {
    const run = await this.deps.runs.executeByName(
      ctx.p,
      { interaction: tool.target!, data: input, parent: ctx.agentRunId, tags: [`agent-tool:${tool.name}`] },
      { ip: '127.0.0.1', userAgent: 'orrery-agent' },
    );
    const parts = (run.result ?? []) as Array<{ type: string; value: unknown }>;
    const text = parts.map((r) => (typeof r.value === 'string' ? r.value : JSON.stringify(r.value))).join('\n');
    return { content: boundedText(text) };
  }
}

/** The names an agent gets: the defaults, replaced by unsigned names, plus `+`, minus `-` and the excluded. */
function chosenNames(defaults: string[], asked: string[] | undefined, excluded: string[]): string[] {
  const plain = (asked ?? []).filter((n) => !n.startsWith('+') && !n.startsWith('-'));
  const chosen = new Set(plain.length > 0 ? plain : defaults);
  for (const n of asked ?? []) {
    if (n.startsWith('+')) chosen.add(n.slice(1));
    if (n.startsWith('-')) chosen.delete(n.slice(1));
  }
  for (const n of excluded) chosen.delete(n);
  return [...chosen].filter((n) => n !== '');
}

/** A failed tool call as the model's error result: what went wrong, never a stack. */
function asToolError(err: unknown): ToolAnswer {
  const message = err instanceof Error ? err.message : String(err);
  return { content: boundedText(message), is_error: true };
}
