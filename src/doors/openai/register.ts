/**
 * The OpenAI door (src/doors/openai): an OpenAI-compatible API at {origin}/v1 in its own
 * authenticated context, so its errors (its own, and those Orrery raises on the way: a role, a
 * limit, a body too large) answer in OpenAI's shape while the rest of the API keeps its own.
 */
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { OpenedDatabase } from '../../db/open.ts';
import type { AuthService } from '../../auth/service.ts';
import { installPermissions, type Permission } from '../../auth/permissions.ts';
import { authenticate } from '../../http/auth-hook.ts';
import { installLimits } from '../../limits/hook.ts';
import type { Limiter } from '../../limits/limiter.ts';
import type { Interactions } from '../../interactions/register.ts';
import type { Runs } from '../../runs/register.ts';
import { installRunReadBarrier } from '../../runs/read-barrier.ts';
import { ModelAddressing } from './addressing.ts';
import { ConversationLinks } from './conversation-links.ts';
import { toOpenAIError } from './errors.ts';
import { openAIRoutes } from './routes.ts';
import { OpenAIDoor } from './service.ts';
import { deleteProjectTurns, deleteRunTurns, turnsOf } from './store.ts';

/** What each route of the door needs (auth/permissions.ts): a call is a run, the model list a read. */
const DOOR_PERMISSIONS: Record<string, Permission> = {
  'POST /v1/chat/completions': 'interaction:execute',
  'POST /v1/embeddings': 'interaction:execute',
  'GET /v1/models': 'environment:read',
};

export interface OpenAIDoorDeps {
  database: OpenedDatabase;
  auth: AuthService;
  limiter: Limiter;
  interactions: Interactions;
  runs: Runs;
  log: FastifyBaseLogger;
}

export function createOpenAIDoor(deps: OpenAIDoorDeps) {
  const { auth, limiter, log } = deps;
  const { environments, changes } = deps.interactions;
  const runs = deps.runs.runs;
  const addressing = new ModelAddressing(environments, changes, async (p) => {
    const project = await auth.getProject(p, p.project.id);
    const id = project.configuration.default_environment;
    return typeof id === 'string' && id ? id : undefined;
  });
  const links = new ConversationLinks(deps.database.db, deps.runs.writer, (err) =>
    log.warn({ err }, 'openai door: could not record a conversation turn'),
  );
  const door = new OpenAIDoor({ runs, environments, addressing, links });
  // Its turns go inside a project's deletion, with the runs they link.
  auth.ownsProjectRows((trx, s) => deleteProjectTurns(turnsOf(trx), s));
  // And with each run deleted (DELETE /runs/:id, retention): a turn never outlives its run.
  deps.runs.retention.ownsRunRows((trx, s, ids) => deleteRunTurns(turnsOf(trx), s, ids));
  return {
    door,
    /** Registers /v1 on the app (outside /api/v1: OpenAI's clients take {origin}/v1 as their base URL). */
    async register(app: FastifyInstance): Promise<void> {
      await app.register(
        async (v1) => {
          v1.setErrorHandler((err, req, reply) => {
            const { status, headers, body } = toOpenAIError(err);
            if (status >= 500) req.log.error({ err }, 'openai door: unhandled error');
            return reply.code(status).headers(headers).send(body);
          });
          // Any other /v1 path, in OpenAI's shape (a route: the console's catch-all would answer it otherwise).
          const notFound = (req: FastifyRequest, reply: FastifyReply) =>
            reply.code(404).send({
              error: {
                message: `Invalid URL (${req.method} ${req.url.split('?')[0]}): the doors serve POST /v1/chat/completions, POST /v1/responses, POST /v1/embeddings, GET /v1/models, POST /v1/messages and POST /v1/messages/count_tokens`,
                type: 'invalid_request_error',
                param: null,
                code: null,
              },
            });
          v1.setNotFoundHandler(notFound);
          v1.route({
            method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
            url: '/*',
            schema: { hide: true },
            handler: notFound,
          });
          // The routes in a child context: the not-found answer above passes no authentication.
          await v1.register(async (authed) => {
            authed.addHook('onRequest', authenticate(auth));
            installPermissions(authed, DOOR_PERMISSIONS);
            installLimits(authed, limiter);
            installRunReadBarrier(authed, runs);
            await authed.register(openAIRoutes, { door, runs });
          });
        },
        { prefix: '/v1' },
      );
    },
  };
}
