/** The MCP door's route: POST /mcp (Streamable HTTP, stateless: JSON answers, no session). */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../../http/auth-hook.ts';
import type { McpDoor } from './service.ts';
import { MCP_BODY_LIMIT } from './errors.ts';
import { DOOR_SERVERS, McpBody, mcpAnswers } from './schemas.ts';

/** The headers of the Streamable HTTP transport the SDK reads. */
const TRANSPORT_HEADERS = ['accept', 'content-type', 'mcp-protocol-version', 'mcp-session-id', 'last-event-id'];

/** The exchange and the SDK it runs on, loaded at the first request: a server no MCP client uses never loads them. */
let protocol: Promise<typeof import('./protocol.ts')> | undefined;

export const mcpRoutes: FastifyPluginAsyncTypebox<{ door: McpDoor }> = async (app, { door }) => {
  app.post(
    '/mcp',
    {
      bodyLimit: MCP_BODY_LIMIT,
      schema: {
        tags: ['mcp'],
        servers: DOOR_SERVERS,
        summary:
          "MCP server (Streamable HTTP, stateless): the project's published interactions and Orrery's search tools as MCP tools, objects and runs as resources",
        body: McpBody,
        response: mcpAnswers,
      },
    },
    async (req, reply) => {
      const headers = new Headers();
      for (const name of TRANSPORT_HEADERS) {
        const v = req.headers[name];
        if (typeof v === 'string') headers.set(name, v);
      }
      const request = new Request('http://orrery/mcp', { method: 'POST', headers });
      const caller = { ip: req.ip, userAgent: req.headers['user-agent'] };
      const { exchange } = await (protocol ??= import('./protocol.ts'));
      const answer = await exchange(door, principalOf(req), caller, request, req.body, (err) =>
        req.log.error({ err }, 'mcp door: unhandled error'),
      );
      reply.code(answer.status as 200);
      answer.headers.forEach((value, name) => void reply.header(name, value));
      return reply.send((answer.body || undefined) as never);
    },
  );
};
