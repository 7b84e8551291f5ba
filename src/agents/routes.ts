/**
 * Routes of agents: the stop signal (Vertesia's `agents/:id/signal/stop`). An agent is started
 * with POST /execute/async (`type: "conversation"`) and read as its run (GET /runs/:id).
 */
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../http/auth-hook.ts';
import { errorResponses } from '../http/schemas.ts';
import { BadRequest } from '../util/errors.ts';
import type { AgentRunner } from './runner.ts';
import type { McpServers } from './mcp-servers.ts';

export const agentRoutes: FastifyPluginAsyncTypebox<{ runner: AgentRunner }> = async (app, { runner }) => {
  app.post(
    '/agents/:id/signal/:signal',
    {
      schema: {
        tags: ['agents'],
        summary:
          "Signals an agent: only stop, which ends it (failed, code cancelled) before its next step; the agent's id is its run's",
        params: Type.Object({ id: Type.String({ maxLength: 200 }), signal: Type.String({ maxLength: 100 }) }),
        body: Type.Optional(Type.Object({}, { additionalProperties: false })),
        response: {
          200: Type.Object({ id: Type.String(), stop_requested: Type.Boolean() }),
          ...errorResponses(400, 401, 404, 409),
        },
      },
    },
    async (req) => {
      if (req.params.signal !== 'stop')
        throw new BadRequest(`signal ${JSON.stringify(req.params.signal)} is not supported: only stop is`);
      return runner.stop(principalOf(req), req.params.id);
    },
  );
};

const McpServer = Type.Object({
  id: Type.String(),
  name: Type.String(),
  url: Type.String(),
  headers: Type.Array(Type.String(), { description: 'The names of its headers; their values are never answered' }),
  created_at: Type.String(),
  updated_at: Type.String(),
});
const Headers = Type.Record(Type.String({ maxLength: 100 }), Type.String({ maxLength: 8192 }), {
  description: 'Sent with every request to the server (an API key); encrypted at rest, never answered',
});
const McpServerBody = Type.Object(
  {
    name: Type.String({ maxLength: 32, description: 'Letters, digits or -: its tools are <name>_<tool>' }),
    url: Type.String({ maxLength: 2048, description: 'The Streamable HTTP endpoint' }),
    headers: Type.Optional(Headers),
  },
  { additionalProperties: false },
);
const McpServerPatch = Type.Object(
  {
    name: Type.Optional(McpServerBody.properties.name),
    url: Type.Optional(McpServerBody.properties.url),
    headers: Type.Optional(Type.Union([Headers, Type.Null()], { description: 'Replaces them all; null removes them' })),
  },
  { additionalProperties: false },
);
const Id = Type.Object({ id: Type.String({ minLength: 1, maxLength: 200 }) });

/** CRUD of a project's remote MCP servers, whose tools agents call (agents/mcp-tools.ts). */
export const mcpServerRoutes: FastifyPluginAsyncTypebox<{ servers: McpServers }> = async (app, { servers }) => {
  const tags = ['agents'];
  app.post(
    '/mcp-servers',
    {
      schema: {
        tags,
        summary: 'Registers a remote MCP server (Streamable HTTP) whose tools agents may call',
        body: McpServerBody,
        response: { 200: McpServer, ...errorResponses(400, 401, 409) },
      },
    },
    (req) => servers.create(principalOf(req), req.body),
  );
  app.get(
    '/mcp-servers',
    {
      schema: {
        tags,
        summary: "The project's MCP servers, by name",
        response: { 200: Type.Array(McpServer), ...errorResponses(401) },
      },
    },
    (req) => servers.list(principalOf(req)),
  );
  app.get(
    '/mcp-servers/:id',
    {
      schema: {
        tags,
        summary: 'One MCP server',
        params: Id,
        response: { 200: McpServer, ...errorResponses(401, 404) },
      },
    },
    (req) => servers.get(principalOf(req), req.params.id),
  );
  app.put(
    '/mcp-servers/:id',
    {
      schema: {
        tags,
        summary: 'Changes an MCP server: its name, url or headers',
        params: Id,
        body: McpServerPatch,
        response: { 200: McpServer, ...errorResponses(400, 401, 404, 409) },
      },
    },
    (req) => servers.update(principalOf(req), req.params.id, req.body),
  );
  app.delete(
    '/mcp-servers/:id',
    {
      schema: {
        tags,
        summary: 'Deletes an MCP server (agents that name its tools fail those calls)',
        params: Id,
        response: { 200: Type.Object({ id: Type.String() }), ...errorResponses(401, 404) },
      },
    },
    (req) => servers.delete(principalOf(req), req.params.id),
  );
};
