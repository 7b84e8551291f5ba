/**
 * The MCP door (src/doors/mcp): an MCP server at {origin}/mcp, in its own authenticated context
 * so that what Orrery refuses before the protocol (a key, a role, a limit, a body) answers in
 * JSON-RPC's shape while the rest of the API keeps its own. A key's project scopes everything.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AuthService } from '../../auth/service.ts';
import { installPermissions, type Permission } from '../../auth/permissions.ts';
import { authenticate, principalOf } from '../../http/auth-hook.ts';
import { parseJsonBody } from '../../http/json-body.ts';
import type { Limiter } from '../../limits/limiter.ts';
import type { Interactions } from '../../interactions/register.ts';
import type { Objects } from '../../objects/register.ts';
import type { BlobService } from '../../blobs/blob-service.ts';
import type { Runs } from '../../runs/register.ts';
import { installRunReadBarrier } from '../../runs/read-barrier.ts';
import { JsonRpcParseError, toMcpHttpError } from './errors.ts';
import { mcpRoutes } from './routes.ts';
import { DOOR_SERVERS, methodNotAllowed } from './schemas.ts';
import { McpDoor } from './service.ts';

/**
 * What the route needs (auth/permissions.ts): every role may list and read what it may read; a
 * call that executes an interaction checks interaction:execute itself (service.ts).
 */
const DOOR_PERMISSIONS: Record<string, Permission> = { 'POST /mcp': 'interaction:read' };

export interface McpDoorDeps {
  auth: AuthService;
  limiter: Limiter;
  interactions: Interactions;
  runs: Runs;
  objects: Objects;
  blobs: BlobService;
}

type Json = Record<string, unknown>;

/** Whether a JSON-RPC body calls a tool that runs a model (counted by the limiter as an execution). */
function executes(door: McpDoor, body: unknown): boolean {
  const messages = Array.isArray(body) ? body : [body];
  return messages.some(
    (m) => (m as Json)?.method === 'tools/call' && door.executes(((m as Json).params as Json | undefined)?.name),
  );
}

export function createMcpDoor(deps: McpDoorDeps) {
  const { auth, limiter } = deps;
  const runs = deps.runs.runs;
  const { objects, listing, similarity } = deps.objects;
  const door = new McpDoor({
    interactions: deps.interactions.interactions,
    runs,
    content: { objects, listing, similarity },
    resources: { objects, listing, runs, blobs: deps.blobs },
  });
  return {
    door,
    /** Registers /mcp on the app (outside /api/v1: MCP clients take the server's URL as given). */
    async register(app: FastifyInstance): Promise<void> {
      await app.register(async (mcp) => {
        mcp.setErrorHandler((err, req, reply) => {
          const { status, headers, body } = toMcpHttpError(err);
          if (status >= 500) req.log.error({ err }, 'mcp door: unhandled error');
          return reply.code(status).headers(headers).send(body);
        });
        // JSON only (anything else is a 415), with the door's own parser: a body that is not JSON
        // is JSON-RPC's parse error.
        mcp.removeAllContentTypeParsers();
        mcp.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
          try {
            done(null, parseJsonBody(typeof body === 'string' ? body : body.toString('utf8')));
          } catch (err) {
            done(new JsonRpcParseError((err as Error).message), undefined);
          }
        });
        // Stateless: no stream for the server to push on, no session to end (before authentication: nothing is read).
        const notAllowed = (req: FastifyRequest, reply: FastifyReply) =>
          reply
            .code(405)
            .header('allow', 'POST')
            .send({
              jsonrpc: '2.0',
              id: null,
              error: {
                code: -32000,
                message: `Method not allowed: ${req.method} /mcp; this server is stateless and answers POST /mcp only`,
              },
            });
        for (const method of ['GET', 'DELETE'] as const)
          mcp.route({
            method,
            url: '/mcp',
            schema: {
              tags: ['mcp'],
              servers: DOOR_SERVERS,
              summary: `${method} /mcp: 405 (a stateless server)`,
              response: methodNotAllowed,
            },
            handler: notAllowed,
          });
        await mcp.register(async (authed) => {
          authed.addHook('onRequest', authenticate(auth));
          installPermissions(authed, DOOR_PERMISSIONS);
          installRunReadBarrier(authed, runs);
          // Limits once the body says whether the call executes (limits/hook.ts does it before the body).
          authed.addHook('preHandler', async (req, reply) => {
            const p = principalOf(req);
            if (limiter.unlimited(p)) return;
            const headers = await limiter.admit(p, executes(door, req.body));
            if (headers) reply.headers(headers);
          });
          await authed.register(mcpRoutes, { door });
        });
      });
    },
  };
}
