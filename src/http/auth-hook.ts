/**
 * Authentication by plugin context (style F1): every route registered inside the API context is
 * authenticated; public routes live in a sibling context. A route may accept the token in the
 * `access_token` query parameter (the SSE stream: EventSource cannot send headers).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AuthService } from '../auth/service.ts';
import type { Principal } from '../auth/principal.ts';
import { Unauthorized } from '../util/errors.ts';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
  }
  interface FastifyContextConfig {
    /** Accept `?access_token=` as well as the Authorization header. */
    queryToken?: boolean;
    /** Without an Authorization header, the route authenticates from its body (`/token/issue`'s `key`). */
    bodyToken?: boolean;
  }
}

export const installPrincipal = (app: FastifyInstance): void => {
  app.decorateRequest('principal', null);
};

function bearerToken(req: FastifyRequest): string | undefined {
  const header = req.headers.authorization;
  if (header) {
    const m = /^Bearer\s+(.+)$/i.exec(header.trim());
    if (!m) throw new Unauthorized('Authorization header must be "Bearer <token>"');
    return m[1].trim();
  }
  if (req.routeOptions.config?.queryToken) {
    const q = (req.query as Record<string, unknown> | undefined)?.access_token;
    if (typeof q === 'string' && q) return q;
  }
  return undefined;
}

export const authenticate = (auth: AuthService) => async (req: FastifyRequest) => {
  const token = bearerToken(req);
  // The body is not parsed yet (onRequest): such a route authenticates once it is.
  if (token === undefined && req.routeOptions.config?.bodyToken) return;
  req.principal = forRequest(await auth.authenticate(token), req);
};

/** The (cached, shared) principal with this request's address and id, for the audit trail. */
export const forRequest = (p: Principal, req: FastifyRequest): Principal =>
  // Added keys before the spread, not after it: a hidden class per request otherwise (runs/search-index.ts, withColumns).
  ({ ip: req.ip, requestId: String(req.id), ...p });

/** The principal of an authenticated route (the hook guarantees it is set). */
export const principalOf = (req: FastifyRequest): Principal => {
  if (!req.principal) throw new Unauthorized('not authenticated');
  return req.principal;
};
