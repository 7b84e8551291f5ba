/** `POST /types/find` and the type catalog (`GET /types/catalog`, `/stored`, `/resolve/:type`) of the official client. */
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../http/auth-hook.ts';
import { errorResponses, Offset, OpenObject } from '../http/schemas.ts';
import type { TypeCatalog } from './type-catalog.ts';

const Limit = Type.Integer({
  minimum: 0,
  description: 'Page size, default 100 (catalog: 1,000), at most 1,000 (larger values are clamped)',
});

const TypeFindBody = Type.Object(
  {
    query: Type.Optional(
      Type.Object(
        {},
        {
          additionalProperties: true,
          description: 'Mongo-style {field: condition} on id, name, description, tags, status, created_at, …',
        },
      ),
    ),
    limit: Type.Optional(Limit),
    offset: Type.Optional(Offset()),
    select: Type.Optional(
      Type.String({ maxLength: 1000, description: 'Fields to answer, e.g. "name tags" (id always)' }),
    ),
  },
  { additionalProperties: false },
);

const CatalogQuery = Type.Object(
  {
    tag: Type.Optional(Type.String({ maxLength: 200, description: 'Only types with this tag' })),
    limit: Type.Optional(Limit),
    offset: Type.Optional(Offset()),
    layout: Type.Optional(Type.Boolean({ description: 'Include table_layout' })),
    schema: Type.Optional(Type.Boolean({ description: 'Include object_schema' })),
  },
  { additionalProperties: true },
);

const FoundType = OpenObject({ id: Type.String() }, { description: 'An object type, narrowed by select' });

export const typeCatalogRoutes: FastifyPluginAsyncTypebox<{ catalog: TypeCatalog }> = async (app, { catalog }) => {
  const tags = ['types'];
  app.post(
    '/types/find',
    {
      schema: {
        tags,
        summary: 'Find object types with a Mongo-style query (ordered by name)',
        body: TypeFindBody,
        response: { 200: Type.Array(FoundType), ...errorResponses(400, 401) },
      },
    },
    (req) => catalog.find(principalOf(req), req.body),
  );
  app.get(
    '/types/catalog',
    {
      schema: {
        tags,
        summary: "The project's object types (Orrery has no system or app types), by name",
        querystring: CatalogQuery,
        response: { 200: Type.Array(Type.Ref('ObjectType')), ...errorResponses(400, 401) },
      },
    },
    (req) => catalog.list(principalOf(req), req.query),
  );
  app.get(
    '/types/catalog/stored',
    {
      schema: {
        tags,
        summary: "The project's stored object types (the same as the catalog)",
        querystring: CatalogQuery,
        response: { 200: Type.Array(Type.Ref('ObjectType')), ...errorResponses(400, 401) },
      },
    },
    (req) => catalog.list(principalOf(req), req.query),
  );
  app.get(
    '/types/catalog/resolve/:type',
    {
      schema: {
        tags,
        summary: 'An object type of the project by id, or else by exact name',
        params: Type.Object({ type: Type.String({ minLength: 1 }) }),
        response: { 200: Type.Ref('ObjectType'), ...errorResponses(400, 401, 404) },
      },
    },
    (req) => catalog.resolve(principalOf(req), req.params.type),
  );
};
