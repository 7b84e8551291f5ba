/**
 * The agents feature: `type: "conversation"` on POST /execute/async (agents/runner.ts), their
 * tools (built-in, interactions, MCP servers), their routes, and their rows of a project.
 */
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.ts';
import type { OpenedDatabase } from '../db/open.ts';
import { deleteProjectRows, type ProjectScope } from '../db/project-rows.ts';
import type { Database } from '../db/schema.ts';
import type { Kysely } from 'kysely';
import type { Interactions } from '../interactions/register.ts';
import type { Runs } from '../runs/register.ts';
import type { Objects } from '../objects/register.ts';
import { AgentStore } from './store.ts';
import { AgentTools } from './tools.ts';
import { AgentRunner } from './runner.ts';
import { agentRoutes, mcpServerRoutes } from './routes.ts';
import { McpServers } from './mcp-servers.ts';
import { McpTools } from './mcp-tools.ts';
import type { Outbound } from '../providers/outbound.ts';
import type { BuiltinSources } from './builtin-tools.ts';

export interface AgentsDeps {
  config: Config;
  database: OpenedDatabase;
  interactions: Interactions;
  runs: Runs;
  objects: Objects;
  /** Seals MCP servers' headers (the server secret's encryption key, as for provider keys). */
  encryptionKey: Buffer;
  /** Every MCP request goes through it, and so through the egress policy. */
  outbound: Outbound;
}

export function createAgents(deps: AgentsDeps) {
  const { config, database, runs, objects } = deps;
  const { db, dialect } = database;
  const store = new AgentStore(db, dialect);
  const builtins: BuiltinSources = {
    searchObjects: async (p, text, limit) =>
      (await objects.listing.search(p, { fullText: text, limit, offset: 0 })).results.map(objectHit),
    ...(objects.similarity
      ? {
          similarObjects: async (p, text, limit) =>
            (
              await objects.similarity!.search(p, { filters: {}, vector: { text }, limit, offset: 0 }, false)
            ).results.map(objectHit),
        }
      : {}),
    readObject: async (p, id) => {
      const { record } = await objects.objects.get(p, id, '+text');
      return { id: record.id, name: record.name, type: record.type, properties: record.properties, text: record.text };
    },
    searchRuns: async (p, query, interaction, limit) => {
      const q = { ...(query ? { query } : {}), ...(interaction ? { name: [interaction] } : {}) };
      const found = await runs.runs.search(p, { query: q, limit });
      const list = (Array.isArray(found) ? found : ((found as { results?: unknown[] }).results ?? [])) as Array<
        Record<string, unknown>
      >;
      return list.map((r) => ({
        id: r.id,
        status: r.status,
        interaction: (r.interaction as { name?: string } | undefined)?.name,
        created_at: r.created_at,
      }));
    },
  };
  const servers = new McpServers(db, dialect, deps.encryptionKey, deps.outbound.policy);
  const mcp = new McpTools(servers, deps.outbound);
  const tools = new AgentTools({ runs: runs.runs, interactions: deps.interactions.interactions, builtins, mcp });
  const runner = new AgentRunner({
    store,
    tools,
    runs: runs.runs,
    interactions: deps.interactions.interactions,
    queue: runs.asyncQueue,
    stepTimeoutMs: config.agentStepTimeoutMs,
    agentTimeoutMs: config.agentTimeoutMs,
  });
  runs.setConversationAgents({
    start: (p, body, caller) => runner.start(p, body, caller),
    deliver: (p, body) => runner.deliver(p, body),
  });
  return {
    /** Deletes its rows of a project, inside the project's deletion (auth.ownsProjectRows). */
    deleteProjectRows: (trx: Kysely<Database>, s: ProjectScope) =>
      deleteProjectRows(trx, ['agent_steps', 'agent_runs', 'mcp_servers'], s),
    /** Its routes, behind authentication. */
    async register(authed: FastifyInstance): Promise<void> {
      await authed.register(agentRoutes, { runner });
      await authed.register(mcpServerRoutes, { servers });
    },
  };
}

export type Agents = ReturnType<typeof createAgents>;

const objectHit = (o: Record<string, unknown>) => ({
  id: o.id,
  name: o.name,
  type: (o.type as { name?: string } | undefined)?.name ?? o.type,
  description: o.description,
  ...(o.score !== undefined ? { score: o.score } : {}),
});
