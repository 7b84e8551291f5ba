/** The interactions feature: environments, prompt templates and interactions, with their routes. */
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.ts';
import type { OpenedDatabase } from '../db/open.ts';
import type { AuditLog } from '../audit/log.ts';
import type { Outbound } from '../providers/outbound.ts';
import { TemplateEngine } from '../templates/render.ts';
import { EnvironmentService } from './environments.ts';
import { PromptService } from './prompts.ts';
import { InteractionService } from './interactions.ts';
import { ChangeClock } from './change-clock.ts';
import { interactionRoutes } from './routes.ts';
import type { ObjectTypeSchemas } from './schema-ref.ts';
import { deleteProjectInteractions } from './store.ts';

export interface InteractionsDeps {
  config: Config;
  database: OpenedDatabase;
  /** Encrypts provider keys at rest (auth/secret.ts). */
  encryptionKey: Buffer;
  outbound: Outbound;
  audit: AuditLog;
  /** Object types' schemas (src/objects), for result_schema references; called once requests arrive. */
  typeSchemas?: ObjectTypeSchemas;
}

export function createInteractions({
  config,
  database,
  encryptionKey,
  outbound,
  audit,
  typeSchemas,
}: InteractionsDeps) {
  const { db, dialect } = database;
  const changes = new ChangeClock();
  const environments = new EnvironmentService(db, dialect, encryptionKey, changes, outbound, audit);
  const templates = new TemplateEngine({
    workers: config.templateWorkers,
    limits: {
      cpuMs: config.templateCpuMs,
      memoryBytes: config.templateMemoryBytes,
      maxOutput: config.templateMaxOutput,
    },
  });
  const prompts = new PromptService(db, dialect, changes, templates, audit);
  const interactions = new InteractionService(
    db,
    dialect,
    prompts,
    (p, id) => environments.get(p, id),
    changes,
    audit,
    typeSchemas,
  );
  return {
    changes,
    /** Deletes its rows of a project, inside the project's deletion (auth.ownsProjectRows). */
    deleteProjectRows: deleteProjectInteractions,
    environments,
    templates,
    prompts,
    interactions,
    typeSchemas,
    /** Its routes, behind authentication. */
    register: (authed: FastifyInstance) => authed.register(interactionRoutes, { environments, prompts, interactions }),
    /** Ends the template workers (shutdown). */
    close: () => templates.close(),
  };
}

export type Interactions = ReturnType<typeof createInteractions>;
