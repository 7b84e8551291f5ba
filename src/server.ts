/**
 * The composition root (style F5): opens the stores, builds the services with explicit
 * dependencies, registers routes. `cli.ts` calls `listen`; tests call `buildServer` and listen.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Config } from './config.ts';
import { openDatabase, type OpenedDatabase } from './db/open.ts';
import { deriveKeys, resolveSecret } from './auth/secret.ts';
import { AuthService, type BootstrapResult } from './auth/service.ts';
import { authRoutes } from './auth/routes.ts';
import { authenticate, installPrincipal } from './http/auth-hook.ts';
import { installErrorHandling, installJsonParser } from './http/error-handler.ts';
import { installValidation } from './http/validation.ts';
import { ErrorSchema } from './http/schemas.ts';
import { EnvironmentService } from './interactions/environments.ts';
import { PromptService } from './interactions/prompts.ts';
import { InteractionService } from './interactions/interactions.ts';
import { ChangeClock } from './interactions/change-clock.ts';
import { interactionRoutes } from './interactions/routes.ts';
import { RunService } from './runs/service.ts';
import { StreamHub } from './runs/stream-hub.ts';
import { runRoutes } from './runs/routes.ts';
import { RunRefSchema, RunSchema } from './runs/schemas.ts';

export interface Orrery {
  app: FastifyInstance;
  config: Config;
  database: OpenedDatabase;
  bootstrap: BootstrapResult;
  services: { auth: AuthService; runs: RunService };
  /** Every API route as `METHOD /path`, for the OpenAPI coverage test. */
  routes: string[];
}

const VERSION = '0.1.0';
const SWEEP_MS = 60_000;

export async function buildServer(config: Config, opts: { logger?: boolean | object } = {}): Promise<Orrery> {
  const database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  const { db, dialect } = database;
  try {
    const keys = deriveKeys(await resolveSecret(config, db, dialect));
    const auth = new AuthService(db, dialect, config, keys.jwt);
    const bootstrap = await auth.bootstrap();
    const changes = new ChangeClock();
    const environments = new EnvironmentService(db, dialect, keys.encryption, changes);
    const prompts = new PromptService(db, dialect, changes);
    const interactions = new InteractionService(db, dialect, prompts, (p, id) => environments.get(p, id), changes);
    const hub = new StreamHub();
    const runs = new RunService(db, dialect, interactions, environments, hub, changes, config.streamTimeoutSeconds);

    const app = Fastify({
      logger: opts.logger ?? { level: config.logLevel },
      bodyLimit: 16 * 1024 * 1024,
      // Ids are opaque strings in paths; keep them intact.
      routerOptions: { maxParamLength: 500 },
    }).withTypeProvider<TypeBoxTypeProvider>();

    const routes: string[] = [];
    app.addHook('onRoute', (r) => {
      if (r.url.startsWith('/api/v1') && !(r.schema as { hide?: boolean } | undefined)?.hide) {
        for (const m of [r.method].flat()) if (m !== 'HEAD') routes.push(`${m} ${r.url}`);
      }
    });
    installJsonParser(app);
    installValidation(app);
    installErrorHandling(app);
    installPrincipal(app);
    app.addSchema(ErrorSchema);
    app.addSchema(RunSchema);
    app.addSchema(RunRefSchema);

    await app.register(swagger, {
      openapi: {
        openapi: '3.1.0',
        info: {
          title: 'Orrery',
          version: VERSION,
          description: 'Execution and Content Object Service Interface: runs (execute interactions, list, search, stream) and the resources needed to define them.',
        },
        servers: [{ url: `${config.publicUrl}/api/v1` }],
        components: { securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', description: 'An API key (sk-…) or a JWT from POST /token/issue' } } },
        security: [{ bearerAuth: [] }],
      },
      refResolver: { buildLocalReference: (json, _base, _fragment, i) => (json.$id as string) ?? `def-${i}` },
    });

    app.get('/health', { schema: { hide: true } }, async () => ({ status: 'ok', version: VERSION }));

    await app.register(async (api) => {
      api.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
      await api.register(async (authed) => {
        authed.addHook('onRequest', authenticate(auth));
        await authed.register(authRoutes, { auth });
        await authed.register(interactionRoutes, { environments, prompts, interactions });
        await authed.register(runRoutes, { runs });
      });
    }, { prefix: '/api/v1' });

    const sweeper = setInterval(() => {
      runs.sweepUnconsumed().catch((err) => app.log.error({ err }, 'stream sweeper failed'));
    }, SWEEP_MS);
    sweeper.unref();
    app.addHook('onClose', async () => {
      clearInterval(sweeper);
      await runs.close();
      await db.destroy();
    });
    await app.ready();
    return { app, config, database, bootstrap, services: { auth, runs }, routes };
  } catch (err) {
    await db.destroy().catch(() => {});
    throw err;
  }
}
