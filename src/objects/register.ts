/**
 * The objects feature: object types, content objects (create, update, list, find, export), the
 * type catalog, similarity search over their embeddings, and their routes.
 */
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { Config } from '../config.ts';
import type { OpenedDatabase } from '../db/open.ts';
import type { Principal } from '../auth/principal.ts';
import type { AuditLog } from '../audit/log.ts';
import type { BlobService } from '../blobs/blob-service.ts';
import type { EmbeddingService } from '../embeddings/service.ts';
import { ObjectSimilarity } from './similarity.ts';
import type { ObjectProcessingHook } from './processing-hook.ts';
import { ObjectService, type ObjectServiceDeps } from './service.ts';
import { ObjectListing } from './listing.ts';
import { ObjectExporter } from './export.ts';
import { ObjectTypeService } from './types-service.ts';
import { TypeCatalog } from './type-catalog.ts';
import { objectRoutes } from './routes.ts';
import { typeCatalogRoutes } from './type-catalog-routes.ts';
import { deleteProjectObjects } from './store.ts';

export interface ObjectsDeps {
  config: Config;
  database: OpenedDatabase;
  audit: AuditLog;
  blobs: BlobService;
  embeddings: EmbeddingService;
  processing: ObjectProcessingHook;
  renditions: ObjectServiceDeps['renditions'];
  /** Whether a run of the caller's project exists (an object's `run`). */
  runExists: (p: Principal, id: string) => Promise<boolean>;
  log: FastifyBaseLogger;
}

export function createObjects(deps: ObjectsDeps) {
  const { config, database, audit, blobs, embeddings, log } = deps;
  const { db, dialect } = database;
  const types = new ObjectTypeService(db, dialect, audit);
  const listing = new ObjectListing(db, dialect, types, embeddings, config.queryTimeoutMs);
  const exporter = new ObjectExporter(db, dialect, types, listing);
  const objects = new ObjectService({
    db,
    dialect,
    blobs,
    types,
    processing: deps.processing,
    renditions: deps.renditions,
    audit,
    maxInlineJson: config.maxInlineJsonBytes,
    runExists: deps.runExists,
    onBackgroundError: (err, what) => log.error({ err }, `objects: could not ${what}`),
    embeddings,
  });
  const similarity = new ObjectSimilarity(db, listing, embeddings, config.vectorExactThreshold);
  return {
    types,
    listing,
    /** Deletes its rows of a project, inside the project's deletion (auth.ownsProjectRows). */
    deleteProjectRows: deleteProjectObjects,
    objects,
    similarity,
    /** Its routes, behind authentication. */
    register: (authed: FastifyInstance) =>
      authed.register(objectRoutes, { objects, listing, exporter, types, blobs, similarity }),
    /** The type catalog's routes, behind authentication. */
    registerCatalog: (authed: FastifyInstance) =>
      authed.register(typeCatalogRoutes, { catalog: new TypeCatalog(db, dialect) }),
  };
}

export type Objects = ReturnType<typeof createObjects>;
