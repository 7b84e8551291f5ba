/** In the authenticated context, after the permission check: every request passes the limiter (src/limits/limiter.ts). */
import type { FastifyInstance } from 'fastify';
import type { Limiter } from './limiter.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** true: the route answers from the limits without being counted (requestSlot, src/limits/slot-routes.ts). */
    peeksLimits?: boolean;
  }
}

export function installLimits(app: FastifyInstance, limiter: Limiter): void {
  app.addHook('onRequest', (req, reply, done) => {
    // `/token/issue` may authenticate from its body: exchanging a key is not limited.
    // Without limits (as cached), nothing is counted: the request goes on in the same turn.
    if (!req.principal || limiter.unlimited(req.principal) || req.routeOptions.config?.peeksLimits) return done();
    limiter
      .admit(req.principal, req.routeOptions.config?.permission === 'interaction:execute')
      .then((headers) => {
        if (headers) reply.headers(headers);
      })
      .then(() => done(), done); // whatever fails (the limiter, the headers) reaches Fastify
  });
}
