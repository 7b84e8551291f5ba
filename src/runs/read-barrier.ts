/**
 * Reads see a run as it was answered. On SQLite, a lone blocking run is answered once its end is in
 * the intent log (runs/run-intents.ts), while the run writer commits it, about half a millisecond
 * later. Every authenticated request waits for those commits before it starts, unless its route
 * says it reads no run (`readsRuns: false`: run creation, which waits only to read a parent). Most
 * of the time there is none and the request goes on in the same turn. One process serves SQLite, so
 * no other process can read the database between an answer and its commit.
 */
import type { FastifyInstance } from 'fastify';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** false: the route reads no run before it starts its work, so it need not wait for runs answered before their commit. */
    readsRuns?: boolean;
  }
}

export function installRunReadBarrier(app: FastifyInstance, runs: { whenStored(): Promise<void> | undefined }): void {
  app.addHook('onRequest', (req, _reply, done) => {
    if (req.routeOptions.config?.readsRuns === false) return done();
    const stored = runs.whenStored();
    if (!stored) return done();
    stored.then(() => done(), done);
  });
}
