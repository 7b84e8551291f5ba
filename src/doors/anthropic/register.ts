/**
 * The Anthropic door (src/doors/anthropic): Anthropic's Messages API at {origin}/v1/messages in
 * its own authenticated context, so its errors (its own, and those Orrery raises on the way: a
 * key, a role, a limit, a body too large) answer in Anthropic's shape. A key comes as `x-api-key`
 * (the SDK's apiKey) or as a bearer token (its authToken).
 */
import type { FastifyBaseLogger, FastifyInstance, FastifyRequest } from 'fastify';
import type { OpenedDatabase } from '../../db/open.ts';
import type { AuthService } from '../../auth/service.ts';
import { installPermissions, type Permission } from '../../auth/permissions.ts';
import { forRequest } from '../../http/auth-hook.ts';
import { installLimits } from '../../limits/hook.ts';
import type { Limiter } from '../../limits/limiter.ts';
import type { Interactions } from '../../interactions/register.ts';
import type { Runs } from '../../runs/register.ts';
import { installRunReadBarrier } from '../../runs/read-barrier.ts';
import { Unauthorized } from '../../util/errors.ts';
import { ModelAddressing } from '../openai/addressing.ts';
import { ConversationLinks } from '../openai/conversation-links.ts';
import { toAnthropicError } from './errors.ts';
import { anthropicRoutes } from './routes.ts';
import { AnthropicDoor } from './service.ts';
import type { TokenCounter } from './token-count.ts';

/** What each route of the door needs (auth/permissions.ts): a call is a run, and so is counting toward one. */
const DOOR_PERMISSIONS: Record<string, Permission> = {
  'POST /v1/messages': 'interaction:execute',
  'POST /v1/messages/count_tokens': 'interaction:execute',
};

export interface AnthropicDoorDeps {
  database: OpenedDatabase;
  auth: AuthService;
  limiter: Limiter;
  interactions: Interactions;
  runs: Runs;
  log: FastifyBaseLogger;
  /** Tokens of a text, for count_tokens (content/register.ts: a content worker counts them). */
  countTokens: TokenCounter;
}

/** The key of a request: `x-api-key`, else `Authorization: Bearer`. */
function keyOf(req: FastifyRequest): string | undefined {
  const key = req.headers['x-api-key'];
  if (typeof key === 'string' && key.trim()) return key.trim();
  const header = req.headers.authorization;
  if (!header) return undefined;
  const m = /^Bearer\s+(.+)$/i.exec(header.trim());
  if (!m) throw new Unauthorized('Authorization header must be "Bearer <key>"; or send the key as x-api-key');
  return m[1].trim();
}

export function createAnthropicDoor(deps: AnthropicDoorDeps) {
  const { auth, limiter, log } = deps;
  const { environments, changes } = deps.interactions;
  const runs = deps.runs.runs;
  const addressing = new ModelAddressing(environments, changes, async (p) => {
    const project = await auth.getProject(p, p.project.id);
    const id = project.configuration.default_environment;
    return typeof id === 'string' && id ? id : undefined;
  });
  // Turns go in the OpenAI door's table (its register deletes them with their runs and projects).
  const links = new ConversationLinks(deps.database.db, deps.runs.writer, (err) =>
    log.warn({ err }, 'anthropic door: could not record a conversation turn'),
  );
  const door = new AnthropicDoor({ runs, addressing, links, countTokens: deps.countTokens });
  return {
    door,
    /** Registers /v1/messages on the app (Anthropic's clients take the origin as their base URL). */
    async register(app: FastifyInstance): Promise<void> {
      await app.register(
        async (v1) => {
          v1.setErrorHandler((err, req, reply) => {
            const { status, headers, body } = toAnthropicError(err);
            if (status >= 500) req.log.error({ err }, 'anthropic door: unhandled error');
            return reply.code(status).headers(headers).send(body);
          });
          v1.addHook('onRequest', async (req) => {
            req.principal = forRequest(await auth.authenticate(keyOf(req)), req);
          });
          installPermissions(v1, DOOR_PERMISSIONS);
          installLimits(v1, limiter);
          installRunReadBarrier(v1, runs);
          await v1.register(anthropicRoutes, { door, runs });
        },
        { prefix: '/v1' },
      );
    },
  };
}
