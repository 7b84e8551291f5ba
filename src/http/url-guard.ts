/**
 * A URL whose path or query decodes to a NUL character is refused before routing: no database
 * text holds NUL (PostgreSQL refuses it outright), so an id or filter with `%00` would otherwise
 * reach SQL and fail there as a 500.
 */
import type { FastifyInstance } from 'fastify';
import { wireError } from '../util/errors.ts';

export function installUrlGuard(app: FastifyInstance): void {
  app.addHook('onRequest', async (req, reply) => {
    if (req.url.includes('%00')) {
      return reply
        .code(400)
        .send(wireError('bad_request', 400, 'the URL contains %00 (NUL), which no path or parameter may hold'));
    }
  });
}
