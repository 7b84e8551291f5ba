/**
 * The MCP door's rules: which tools a key sees (the built-in ones its role may use, and the
 * project's published interactions when it may execute), what a call does and how it answers,
 * and the resources. The protocol (protocol.ts) only hands requests here; nothing here sees HTTP.
 */
import type { Tool, CallToolResult, ListResourcesResult, ReadResourceResult } from '@modelcontextprotocol/sdk/types.js';
import type { Principal } from '../../auth/principal.ts';
import { can } from '../../auth/permissions.ts';
import type { CallerInfo } from '../../runs/plan.ts';
import { OrreryError } from '../../util/errors.ts';
import { boundErrorMessage } from '../../util/error-message.ts';
import { ToolInputError } from './arguments.ts';
import { contentTools, type ContentReads } from './content-tools.ts';
import { runTools, type RunReads } from './run-tools.ts';
import {
  callInteraction,
  definitionOf,
  interactionTools,
  type InteractionReads,
  type InteractionTool,
  type RunStarts,
} from './interaction-tools.ts';
import { listResources, readResource, type ResourceReads } from './resources.ts';
import { RESOURCE_TEMPLATES } from './uris.ts';
import { McpRefusal } from './errors.ts';
import type { BuiltInTool } from './tool-model.ts';

export interface McpDoorDeps {
  interactions: InteractionReads;
  runs: RunReads & RunStarts;
  content: ContentReads;
  resources: ResourceReads;
}

/** Tools per tools/list page. */
const TOOL_PAGE = 100;

/** A cursor is the offset of the next page, opaque to the client. */
const encodeCursor = (offset: number): string => Buffer.from(`o:${offset}`).toString('base64url');

function decodeCursor(cursor: unknown, max: number): number {
  if (cursor === undefined || cursor === null) return 0;
  const m =
    typeof cursor === 'string' && cursor.length <= 64
      ? /^o:(\d{1,7})$/.exec(Buffer.from(cursor, 'base64url').toString())
      : null;
  const offset = m ? Number(m[1]) : NaN;
  if (!(offset >= 0 && offset <= max))
    throw McpRefusal.invalidParams('cursor is not one this server answered: pass the nextCursor of the previous page');
  return offset;
}

const toolError = (message: string): CallToolResult => ({
  content: [{ type: 'text', text: boundErrorMessage(message) }],
  isError: true,
});

export class McpDoor {
  private readonly builtIns: BuiltInTool[];
  private readonly builtInNames: ReadonlySet<string>;

  constructor(private readonly deps: McpDoorDeps) {
    this.builtIns = [...contentTools(deps.content), ...runTools(deps.runs)];
    this.builtInNames = new Set(this.builtIns.map((t) => t.definition.name));
  }

  /** Whether calling `name` runs a model (an interaction tool): the limiter counts it as an execution. */
  executes(name: unknown): boolean {
    return typeof name === 'string' && !this.builtInNames.has(name);
  }

  /** tools/list: the built-in tools the role may use, then the published interactions (interaction:execute). */
  async listTools(p: Principal, cursor: unknown): Promise<{ tools: Tool[]; nextCursor?: string }> {
    const builtIn = this.builtIns.filter((t) => can(p.role, t.permission)).map((t) => t.definition);
    const interactions = can(p.role, 'interaction:execute')
      ? await interactionTools(this.deps.interactions, p, this.builtInNames)
      : [];
    const entries: Array<Tool | InteractionTool> = [...builtIn, ...interactions];
    const offset = decodeCursor(cursor, entries.length);
    const page = entries.slice(offset, offset + TOOL_PAGE);
    // An interaction whose input is not an object schema cannot be an MCP tool (definitionOf).
    const defined = await Promise.all(
      page.map((e): Promise<Tool | undefined> =>
        'endpoint' in e ? definitionOf(this.deps.interactions, p, e as InteractionTool) : Promise.resolve(e),
      ),
    );
    const tools = defined.filter((t): t is Tool => t !== undefined);
    const next = offset + TOOL_PAGE;
    return { tools, ...(next < entries.length ? { nextCursor: encodeCursor(next) } : {}) };
  }

  /**
   * tools/call. An unknown tool is a JSON-RPC error (the protocol's); what goes wrong in a call
   * (a role without the permission, arguments refused, a failed run) is a result with `isError`.
   */
  async callTool(p: Principal, name: string, args: unknown, caller: CallerInfo): Promise<CallToolResult> {
    const builtIn = this.builtIns.find((t) => t.definition.name === name);
    if (builtIn) {
      if (!can(p.role, builtIn.permission)) return refused(p, builtIn.permission, name);
      return answered(() => builtIn.call(p, args, caller));
    }
    const tool = (await interactionTools(this.deps.interactions, p, this.builtInNames)).find((t) => t.name === name);
    if (!tool)
      throw McpRefusal.invalidParams(
        `unknown tool ${JSON.stringify(name.slice(0, 200))}: tools/list names the tools of this project (its published interactions and the built-in ones)`,
      );
    if (!can(p.role, 'interaction:execute')) return refused(p, 'interaction:execute', name);
    if (args !== undefined && (typeof args !== 'object' || args === null || Array.isArray(args)))
      return toolError(`${name}: arguments must be an object`);
    return answered(() => callInteraction(this.deps.runs, p, tool, args, caller));
  }

  listResources(p: Principal, cursor: unknown): Promise<ListResourcesResult> {
    const offset = decodeCursor(cursor, 10_000);
    return listResources(this.deps.resources, p, offset).then(({ resources, next }) => ({
      resources,
      ...(next !== undefined ? { nextCursor: encodeCursor(next) } : {}),
    }));
  }

  resourceTemplates() {
    return { resourceTemplates: RESOURCE_TEMPLATES };
  }

  readResource(p: Principal, uri: string): Promise<ReadResourceResult> {
    return readResource(this.deps.resources, p, uri);
  }
}

function refused(p: Principal, permission: string, name: string): CallToolResult {
  return toolError(
    `this key's role (${p.role}) does not have the permission ${permission}, which the tool ${name} needs`,
  );
}

/** A call's answer; its refusals (arguments, a 4xx of Orrery's, a failed run) as tool errors the model reads. */
async function answered(call: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await call();
  } catch (err) {
    if (err instanceof ToolInputError) return toolError(err.message);
    // 4xx: the caller's to fix (data that does not match the input schema, an unknown id); 502: the run failed.
    if (err instanceof OrreryError && (err.status < 500 || err.status === 502)) return toolError(err.message);
    throw err;
  }
}
