/**
 * The Fastify app every feature registers on: its logger (which redacts secrets), parsers,
 * validation, error shape, metrics, the shared schemas, the OpenAPI document, and the probes
 * (/health, /ready, /metrics). Features add their routes (src/<feature>/register.ts).
 */
import Fastify, { type FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { TSchema } from '@sinclair/typebox';
import type { Config } from '../config.ts';
import { installPrincipal } from './auth-hook.ts';
import { redactingLoggerOptions } from './log-redaction.ts';
import { installUrlGuard } from './url-guard.ts';
import { clientErrorHandler, installErrorHandling, installJsonParser } from './error-handler.ts';
import { installValidation, schemaController } from './validation.ts';
import { ErrorSchema } from './schemas.ts';
import { wireError } from '../util/errors.ts';
import type { Metrics } from './metrics.ts';

export const VERSION = '0.1.0';

export interface AppOptions {
  logger?: boolean | object;
  metrics: Metrics;
  /** Schemas that routes of several features refer to by `$ref`. */
  schemas: TSchema[];
}

/** The app, and every API route as `METHOD /path` once registered (for the OpenAPI coverage test). */
export async function createApp(config: Config, opts: AppOptions): Promise<{ app: FastifyInstance; routes: string[] }> {
  const app = Fastify({
    // Every logger this server writes with redacts secrets (http/log-redaction.ts); callers may
    // add options (tests give a stream) but not drop the redaction.
    logger:
      opts.logger === false
        ? false
        : {
            level: config.logLevel,
            ...(typeof opts.logger === 'object' ? opts.logger : {}),
            ...redactingLoggerOptions(),
          },
    bodyLimit: 16 * 1024 * 1024,
    // Ids are opaque strings in paths; keep them intact.
    routerOptions: { maxParamLength: 500 },
    clientErrorHandler,
    // Response serializers from the build's compiled table when there (http/validation.ts).
    schemaController,
  }).withTypeProvider<TypeBoxTypeProvider>();

  const routes: string[] = [];
  app.addHook('onRoute', (r) => {
    if (r.url.startsWith('/api/v1') && !(r.schema as { hide?: boolean } | undefined)?.hide) {
      for (const m of [r.method].flat()) if (m !== 'HEAD') routes.push(`${m} ${r.url}`);
    }
  });
  installUrlGuard(app);
  installJsonParser(app);
  installValidation(app);
  opts.metrics.install(app);
  installErrorHandling(app);
  installPrincipal(app);
  app.addSchema(ErrorSchema);
  for (const schema of opts.schemas) app.addSchema(schema);

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Orrery',
        version: VERSION,
        description:
          'Execution and Content Object Service Interface: runs (execute interactions, list, search, stream) and the resources needed to define them.',
      },
      servers: [{ url: `${config.publicUrl}/api/v1` }],
      components: {
        securitySchemes: {
          bearerAuth: {
            type: 'http',
            scheme: 'bearer',
            description: 'An API key (sk-…) or a JWT from POST /token/issue',
          },
        },
      },
      security: [{ bearerAuth: [] }],
    },
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => (json.$id as string) ?? `def-${i}` },
  });
  return { app, routes };
}

export interface ProbeOptions {
  config: Config;
  metrics: Metrics;
  replicaId: string;
  /** Checks behind GET /ready; a check that throws makes the server not ready, with its message. */
  readiness: Array<() => Promise<unknown>>;
  /** True once shutdown began: GET /ready answers 503. */
  draining: () => boolean;
  /** Brings the gauges up to date before GET /metrics answers. */
  refreshMetrics: () => Promise<void>;
}

/** GET /health, GET /ready and GET /metrics: outside the API, hidden from the OpenAPI document. */
export function registerProbes(app: FastifyInstance, opts: ProbeOptions): void {
  const { config, metrics, readiness } = opts;
  app.get('/health', { schema: { hide: true } }, async () => ({ status: 'ok', version: VERSION }));
  app.get('/ready', { schema: { hide: true } }, async (_req, reply) => {
    if (opts.draining()) return reply.code(503).send(wireError('not_ready', 503, 'shutting down'));
    const failures: string[] = [];
    await Promise.all(
      readiness.map((check) => check().catch((err: Error) => failures.push(err.message || String(err)))),
    );
    if (failures.length) return reply.code(503).send(wireError('not_ready', 503, `not ready: ${failures.join('; ')}`));
    return { status: 'ready', replica: opts.replicaId };
  });
  app.get('/metrics', { schema: { hide: true } }, async (req, reply) => {
    if (config.metricsToken && req.headers.authorization !== `Bearer ${config.metricsToken}`) {
      return reply
        .code(401)
        .send(wireError('unauthorized', 401, 'GET /metrics needs "Authorization: Bearer <ORRERY_METRICS_TOKEN>"'));
    }
    await opts.refreshMetrics();
    return reply.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
}
