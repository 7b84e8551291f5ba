/** In the authenticated context, after the permission check: every request passes the limiter (src/limits/limiter.ts). */
import type { FastifyInstance } from 'fastify';
import type { Limiter } from './limiter.ts';

export function installLimits(app: FastifyInstance, limiter: Limiter): void {
  app.addHook('onRequest', async (req, reply) => {
    // `/token/issue` may authenticate from its body: exchanging a key is not limited.
    if (!req.principal) return;
    const headers = await limiter.admit(req.principal, req.routeOptions.config?.permission === 'interaction:execute');
    if (headers) reply.headers(headers);
  });
}
