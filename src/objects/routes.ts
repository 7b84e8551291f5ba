/** Content objects and object types: parse, call one service, answer (style F2). */
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../http/auth-hook.ts';
import { requirePermission } from '../auth/permissions.ts';
import { BadRequest } from '../util/errors.ts';
import { errorResponses, IdParams } from '../http/schemas.ts';
import { pageOf } from '../http/query.ts';
import type { BlobService } from '../blobs/blob-service.ts';
import { DownloadUrlBody, FileUrlSchema, UploadUrlBody } from '../blobs/schemas.ts';
import { MAX_REVISIONS, type NewRevision, type ObjectService } from './service.ts';
import type { ObjectListing } from './listing.ts';
import { filtersOf } from './listing.ts';
import type { ObjectExporter } from './export.ts';
import type { ObjectTypeService } from './types-service.ts';
import type { ObjectSimilarity } from './similarity.ts';
import {
  ContentSourceSchema,
  CountBody,
  ExportBody,
  ExportResponse,
  FacetsBody,
  FacetsResponse,
  FindBody,
  MAX_BULK_OBJECTS,
  ObjectBody,
  ObjectListQuery,
  OperationBody,
  OperationResponse,
  ObjectTypeBody,
  SearchBody,
  SearchResponse,
  SelectQuery,
  TypeListQuery,
} from './schemas.ts';

const Record_ = Type.Ref('ContentObject');
const Deleted = Type.Object({ id: Type.String(), count: Type.Integer() });

export const objectRoutes: FastifyPluginAsyncTypebox<{
  objects: ObjectService;
  listing: ObjectListing;
  exporter: ObjectExporter;
  types: ObjectTypeService;
  blobs: BlobService;
  /** Similarity search (src/embeddings): `similarTo` and `query.vector`. */
  similarity?: ObjectSimilarity;
}> = async (app, { objects, listing, exporter, types, blobs, similarity }) => {
  const tags = ['objects'];

  app.post(
    '/objects/upload-url',
    {
      schema: {
        tags,
        summary:
          'A signed URL that accepts a PUT of the bytes (no Authorization header); id is the storage URI for content.source',
        body: UploadUrlBody,
        response: { 200: FileUrlSchema, ...errorResponses(400, 401, 404) },
      },
    },
    (req) => blobs.uploadUrl(principalOf(req), req.body),
  );
  app.post(
    '/objects/download-url',
    {
      schema: {
        tags,
        summary: 'A signed, absolute GET URL for a storage URI of this project',
        body: DownloadUrlBody,
        response: { 200: FileUrlSchema, ...errorResponses(400, 401, 404) },
      },
    },
    (req) => blobs.downloadUrl(principalOf(req), req.body),
  );

  app.post(
    '/objects',
    {
      schema: {
        tags,
        summary: 'Create an object (with the id of an existing one: replace it)',
        body: ObjectBody,
        response: { 200: Record_, ...errorResponses(400, 401, 404) },
      },
    },
    async (req, reply) => {
      const { record, etag } = await objects.create(principalOf(req), req.body);
      reply.header('etag', etag);
      return record;
    },
  );
  app.get(
    '/objects',
    {
      schema: {
        tags,
        summary:
          'List objects, newest updated_at first (parent as {id, name}, score 1); with similarTo, the most similar first (score: cosine similarity)',
        querystring: ObjectListQuery,
        response: { 200: Type.Array(Record_), ...errorResponses(400, 401) },
      },
    },
    (req) => {
      const q = req.query;
      if (q.similarTo !== undefined) {
        if (!similarity) throw new BadRequest('similarity search is not enabled on this server');
        const { fullText: _ignored, ...filters } = filtersOf(q as Record<string, unknown>);
        return similarity.similarTo(principalOf(req), q.similarTo, q.embeddingType, {
          filters,
          ...pageOf(q),
          select: q.select,
        });
      }
      if (q.embeddingType !== undefined)
        throw new BadRequest('embeddingType needs similarTo: the id of the object to find similar ones to');
      return listing.list(principalOf(req), {
        ...filtersOf(q as Record<string, unknown>),
        ...pageOf(q),
        select: q.select,
      });
    },
  );
  app.post(
    '/objects/find',
    {
      schema: {
        tags,
        summary: 'Objects matching a Mongo-style query',
        body: FindBody,
        response: { 200: Type.Array(Record_), ...errorResponses(400, 401) },
      },
    },
    (req) =>
      listing.find(principalOf(req), {
        query: req.body.query,
        ...pageOf(req.body),
        select: req.body.select,
        allRevisions: req.body.all_revisions,
        fromRoot: req.body.from_root,
      }),
  );
  app.post(
    '/objects/count',
    {
      schema: {
        tags,
        summary: 'Number of objects matching a Mongo-style query',
        body: CountBody,
        response: { 200: Type.Object({ count: Type.Integer() }), ...errorResponses(400, 401) },
      },
    },
    (req) => listing.count(principalOf(req), { query: req.body.query ?? {} }),
  );
  app.post(
    '/objects/search',
    {
      schema: {
        tags,
        summary:
          'Search objects: filters, full_text, match; vector {objectId | text | values, type} (alone or with full_text: weights, score_aggregation rrf | rsf); facets [{name, field}]',
        body: SearchBody,
        response: { 200: SearchResponse, ...errorResponses(400, 401) },
      },
    },
    (req) => {
      const b = req.body;
      const q = (b.query ?? {}) as Record<string, unknown>;
      const vector = q.vector as Record<string, unknown> | undefined;
      if (vector && ['objectId', 'values', 'text', 'image'].some((k) => vector[k] !== undefined)) {
        if (!similarity) throw new BadRequest('similarity search is not enabled on this server');
        if (b.sort?.length)
          throw new BadRequest(
            'sort does not apply to a similarity search (its results are ordered by score): leave sort out',
          );
        const { fullText, ...filters } = filtersOf(q);
        return similarity.search(principalOf(req), {
          filters,
          vector,
          fullText,
          embeddingType: q.embeddingType as string | undefined,
          weights: q.weights as Record<string, unknown> | undefined,
          aggregation: q.score_aggregation as string | undefined,
          ...pageOf({ limit: b.limit ?? q.limit, offset: b.offset ?? q.offset }),
          select: b.select,
          facets: b.facets,
        });
      }
      return listing.search(principalOf(req), {
        ...filtersOf(q),
        ...pageOf({ limit: b.limit ?? q.limit, offset: b.offset ?? q.offset }),
        select: b.select,
        sort: b.sort,
        facets: b.facets,
      });
    },
  );
  app.post(
    '/objects/facets',
    {
      schema: {
        tags,
        summary:
          'Facets of the objects matching query (the search filters): {<name>: [{_id, count}], total}; 1 to 10 facets, at most 100 buckets each',
        body: FacetsBody,
        response: { 200: FacetsResponse, ...errorResponses(400, 401) },
      },
    },
    (req) => {
      const q = (req.body.query ?? {}) as Record<string, unknown>;
      const { vector: _v, ...filters } = q;
      if (_v !== undefined)
        throw new BadRequest('facets cannot be computed over a similarity query: leave query.vector out');
      return listing.facets(principalOf(req), { ...filtersOf(filters), facets: req.body.facets });
    },
  );
  app.post(
    '/objects/export',
    {
      schema: {
        tags,
        summary: 'Export objects as CSV or JSON: {type, name, data}, streamed',
        body: ExportBody,
        response: { 200: ExportResponse, ...errorResponses(400, 401, 404) },
      },
    },
    async (req, reply) => {
      const { body } = await exporter.start(principalOf(req), req.body as never);
      // The body is the JSON answer itself, written a page at a time (streams skip serialization).
      return reply.type('application/json; charset=utf-8').send(body as never);
    },
  );

  app.get(
    '/objects/:id',
    {
      schema: {
        tags,
        summary: 'Retrieve an object (ETag header: the record version for if-match)',
        params: IdParams,
        querystring: SelectQuery,
        response: { 200: Record_, ...errorResponses(400, 401, 404) },
      },
    },
    async (req, reply) => {
      const { record, etag } = await objects.get(principalOf(req), req.params.id, req.query.select);
      reply.header('etag', etag);
      return record;
    },
  );
  app.put(
    '/objects/:id',
    {
      schema: {
        tags,
        summary:
          'Update the given fields; if-match with the ETag from GET gives 412 on a stale write. With x-create-revision: true the changed object is a new revision (a new id, the head of the history; revision_label names it) and the object named stays as it was',
        params: IdParams,
        body: ObjectBody,
        querystring: Type.Object({ revision_label: Type.Optional(RevisionLabel) }, { additionalProperties: true }),
        headers: Type.Object(
          {
            'if-match': Type.Optional(Type.String()),
            'x-create-revision': Type.Optional(
              Type.String({ description: '"true": keep the object as an earlier revision and answer a new one' }),
            ),
            'x-revision-label': Type.Optional(RevisionLabel),
          },
          { additionalProperties: true },
        ),
        response: { 200: Record_, ...errorResponses(400, 401, 404, 409, 412) },
      },
    },
    async (req, reply) => {
      const revision = revisionOf(
        req.headers['x-create-revision'],
        req.query.revision_label ?? req.headers['x-revision-label'],
      );
      const { record, etag } = await objects.update(
        principalOf(req),
        req.params.id,
        req.body,
        req.headers['if-match'],
        revision,
      );
      reply.header('etag', etag);
      return record;
    },
  );
  app.get(
    '/objects/:id/revisions',
    {
      schema: {
        tags,
        summary: `Every revision of the object's history (any of its revisions names it), newest first, at most ${MAX_REVISIONS}`,
        params: IdParams,
        response: { 200: Type.Array(Record_), ...errorResponses(401, 404) },
      },
    },
    (req) => objects.revisions(principalOf(req), req.params.id),
  );
  app.delete(
    '/objects/:id',
    {
      schema: {
        tags,
        summary: 'Delete an object (and its file when no other object points at it)',
        params: IdParams,
        response: { 200: Deleted, ...errorResponses(401, 404) },
      },
    },
    (req) => objects.delete(principalOf(req), req.params.id),
  );
  app.get(
    '/objects/:id/text',
    {
      schema: {
        tags,
        summary: 'The extracted text of an object',
        params: IdParams,
        response: { 200: Type.Object({ text: Type.Optional(Type.String()) }), ...errorResponses(401, 404) },
      },
    },
    (req) => objects.text(principalOf(req), req.params.id),
  );
  app.get(
    '/objects/:id/content-source',
    {
      schema: {
        tags,
        summary: 'The content of an object: {source (storage URI), type, name, etag}',
        params: IdParams,
        response: { 200: ContentSourceSchema, ...errorResponses(401, 404) },
      },
    },
    (req) => objects.contentSource(principalOf(req), req.params.id),
  );
  app.get(
    '/objects/:id/renditions',
    {
      schema: {
        tags,
        summary: 'Renditions of an object (produced by content processing)',
        params: IdParams,
        response: { 200: Type.Array(Record_), ...errorResponses(401, 404) },
      },
    },
    (req) => objects.renditions(principalOf(req), req.params.id),
  );

  app.post(
    '/operations',
    {
      schema: {
        tags,
        summary: `Bulk operations on objects, at most ${MAX_BULK_OBJECTS} per request: delete (ids; one transaction), update (params {<id>: payload} or {updates: {<id>: payload}}) and create (params {objects: [payload]}); the valid ones are written in one transaction, the others answered in failed`,
        body: OperationBody,
        response: { 200: OperationResponse, ...errorResponses(400, 401) },
      },
    },
    (req) => {
      const { name, ids, params = {} } = req.body;
      const p = principalOf(req);
      switch (name) {
        case 'delete':
          requirePermission(p.role, 'content:delete', 'a bulk delete');
          return objects.bulkDelete(p, ids);
        case 'update':
          requirePermission(p.role, 'content:write', 'a bulk update');
          return objects.bulkUpdate(p, updatesOf(ids, params));
        case 'create': {
          if (!Array.isArray(params.objects))
            throw new BadRequest('params.objects must be an array of object payloads');
          if (params.objects.length > MAX_BULK_OBJECTS)
            throw new BadRequest(
              `at most ${MAX_BULK_OBJECTS} objects per bulk create, got ${params.objects.length}: send them in batches`,
            );
          if (params.collection_id !== undefined)
            throw new BadRequest('collections are not supported by this server: leave collection_id out');
          return objects.bulkCreate(p, params.objects);
        }
        default:
          throw new BadRequest(`operation ${JSON.stringify(name)} is not supported: use delete, update or create`);
      }
    },
  );

  const typeTags = ['types'];
  app.post(
    '/types',
    {
      schema: {
        tags: typeTags,
        summary: 'Create an object type',
        body: ObjectTypeBody,
        response: { 200: Type.Ref('ObjectType'), ...errorResponses(400, 401, 409) },
      },
    },
    (req) => types.create(principalOf(req), req.body as never),
  );
  app.get(
    '/types',
    {
      schema: {
        tags: typeTags,
        summary: 'List object types by name (layout=true adds table_layout, schema=true object_schema)',
        querystring: TypeListQuery,
        response: { 200: Type.Array(Type.Ref('ObjectType')), ...errorResponses(401) },
      },
    },
    (req) =>
      types.list(principalOf(req), {
        ...pageOf(req.query),
        name: req.query.name,
        layout: req.query.layout,
        schema: req.query.schema,
      }),
  );
  app.get(
    '/types/name/:name',
    {
      schema: {
        tags: typeTags,
        summary: 'Retrieve an object type by name',
        params: Type.Object({ name: Type.String({ minLength: 1 }) }),
        response: { 200: Type.Ref('ObjectType'), ...errorResponses(401, 404) },
      },
    },
    (req) => types.getByName(principalOf(req), req.params.name),
  );
  app.get(
    '/types/:id',
    {
      schema: {
        tags: typeTags,
        summary: 'Retrieve an object type',
        params: IdParams,
        response: { 200: Type.Ref('ObjectType'), ...errorResponses(401, 404) },
      },
    },
    (req) => types.get(principalOf(req), req.params.id),
  );
  app.put(
    '/types/:id',
    {
      schema: {
        tags: typeTags,
        summary: 'Update the given fields of an object type; expected_edit_revision gives 409 on a conflict',
        params: IdParams,
        body: ObjectTypeBody,
        response: { 200: Type.Ref('ObjectType'), ...errorResponses(400, 401, 404, 409) },
      },
    },
    (req) => types.update(principalOf(req), req.params.id, req.body as never),
  );
  app.delete(
    '/types/:id',
    {
      schema: {
        tags: typeTags,
        summary: 'Delete an object type that no object uses',
        params: IdParams,
        response: { 200: Type.Object({ id: Type.String() }), ...errorResponses(401, 404, 409) },
      },
    },
    (req) => types.delete(principalOf(req), req.params.id),
  );
};

const RevisionLabel = Type.String({ maxLength: 200, description: 'Label of the new revision ("v1.2", "approved")' });

/** The client's `createRevision` is the header `x-create-revision: true`; anything but true/false is a mistake to say. */
function revisionOf(header: string | undefined, label: string | undefined): NewRevision | undefined {
  const create = header?.trim().toLowerCase();
  if (create !== undefined && create !== 'true' && create !== 'false')
    throw new BadRequest(`x-create-revision must be true or false, got ${JSON.stringify(header)}`);
  if (create !== 'true') {
    if (label !== undefined)
      throw new BadRequest('revision_label names a new revision: send it with x-create-revision: true');
    return undefined;
  }
  return { label: label === undefined || label === '' ? undefined : label };
}

/**
 * The client's bulkUpdate sends `params` as the map `{<id>: payload}` itself, or, with options,
 * as `{updates: {<id>: payload}, processing_priority?, idempotency_key?}`.
 */
function updatesOf(ids: string[], params: Record<string, unknown>): Record<string, unknown> {
  const wrapped = params.updates;
  const isMap = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
  const updates = isMap(wrapped) && !ids.includes('updates') ? wrapped : params;
  const count = Object.keys(updates).length;
  if (count > MAX_BULK_OBJECTS)
    throw new BadRequest(`at most ${MAX_BULK_OBJECTS} objects per bulk update, got ${count}: send them in batches`);
  return updates;
}
