/**
 * The request an expensive read serves, as far as the database layer needs it: a signal that
 * fires when its client goes away before the answer (the connection closed with the reply
 * unfinished), so that a PostgreSQL query still running for it is cancelled (db/read-budget.ts)
 * instead of running to its timeout for no one.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { FastifyInstance } from 'fastify';

const requests = new AsyncLocalStorage<AbortSignal>();

/** The signal of the request being served, if any. */
export const requestSignal = (): AbortSignal | undefined => requests.getStore();

export function installReadCancellation(app: FastifyInstance): void {
  app.addHook('onRequest', (req, reply, done) => {
    const gone = new AbortController();
    reply.raw.once('close', () => {
      if (!reply.raw.writableFinished) gone.abort();
    });
    requests.run(gone.signal, done);
  });
}
