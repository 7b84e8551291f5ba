/**
 * Schemas of the object and object-type routes. Request bodies accept the official client's
 * shapes and keep unknown fields out of the way (they are ignored, never an error); records
 * are declared field by field, all optional because `select` may project any of them away.
 */
import { Type, type TSchema } from '@sinclair/typebox';
import { FIND_LIMITS } from '../query/find/ast.ts';
import { ListParam, Offset, OpenObject, PageQuery, ShortString, TagList, Description } from '../http/schemas.ts';
import { OBJECT_STATUSES } from './model.ts';
import { EmbeddingMapInputSchema, EmbeddingMapSchema } from '../embeddings/schemas.ts';

const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);
const Json = Type.Record(Type.String(), Type.Unknown());

/** The longest ttl an object or a run may have: 100 years. */
const MAX_TTL_SECONDS = 3_153_600_000;

export const ContentSourceSchema = OpenObject({
  source: Type.Optional(
    Type.String({ description: 'Storage URI <scheme>://<bucket>/<key> of an uploaded file of this project' }),
  ),
  type: Type.Optional(Type.String({ description: 'MIME type' })),
  name: Type.Optional(Type.String({ description: 'File name' })),
  etag: Type.Optional(Type.String()),
});

const TokensSchema = OpenObject({
  count: Type.Optional(Type.Number()),
  encoding: Type.Optional(Type.String()),
  etag: Type.Optional(Type.String()),
});

export const ObjectBody = OpenObject({
  id: Type.Optional(
    Type.String({ description: 'Create only: the id of an existing object that the new record replaces' }),
  ),
  name: Type.Optional(ShortString()),
  description: Type.Optional(Nullable(Description())),
  tags: Type.Optional(Nullable(TagList())),
  type: Type.Optional(Nullable(Type.String({ description: 'Object type id (or name)' }))),
  content: Type.Optional(Nullable(ContentSourceSchema)),
  external_id: Type.Optional(Nullable(ShortString())),
  properties: Type.Optional(Nullable(Json)),
  metadata: Type.Optional(Nullable(Json)),
  tokens: Type.Optional(Nullable(TokensSchema)),
  run: Type.Optional(Nullable(Type.String({ description: 'Id of the run that created the object' }))),
  parent: Type.Optional(Nullable(Type.String({ description: 'Id of the parent object' }))),
  location: Type.Optional(Nullable(ShortString({ description: 'Path, "/" at top level (the default)' }))),
  status: Type.Optional(
    Type.String({ description: `Update only: ${OBJECT_STATUSES.join(', ')}; new objects are always "created"` }),
  ),
  text: Type.Optional(Nullable(Type.String())),
  text_etag: Type.Optional(Nullable(Type.String())),
  embeddings: Type.Optional(Nullable(EmbeddingMapInputSchema)),
  parts: Type.Optional(Nullable(Type.Array(Type.String()))),
  transcript: Type.Optional(Nullable(Json)),
  ttl: Type.Optional(
    Nullable(
      Type.Integer({
        minimum: 0,
        maximum: MAX_TTL_SECONDS,
        description:
          'Seconds to keep the object from this write on; the retention sweeper deletes it within a minute after. 0 or null: forever',
      }),
    ),
  ),
});

const TypeRefSchema = OpenObject({ id: Type.String(), name: Type.String(), ref_type: Type.Optional(Type.String()) });

export const ObjectRecordSchema = Type.Object(
  {
    id: Type.String(),
    name: Type.Optional(Type.String()),
    description: Type.Optional(Nullable(Type.String())),
    tags: Type.Optional(Type.Array(Type.String())),
    status: Type.Optional(Type.String({ description: OBJECT_STATUSES.join(', ') })),
    location: Type.Optional(Type.String()),
    parent: Type.Optional(
      Type.Union([Type.String(), OpenObject({ id: Type.String(), name: Type.String() })], {
        description: 'An id in records, {id, name} in list and search items',
      }),
    ),
    root: Type.Optional(Type.String()),
    type: Type.Optional(TypeRefSchema),
    content: Type.Optional(ContentSourceSchema),
    external_id: Type.Optional(Nullable(ShortString())),
    properties: Type.Optional(Json),
    metadata: Type.Optional(Json),
    tokens: Type.Optional(Nullable(TokensSchema)),
    run: Type.Optional(Nullable(Type.String())),
    error: Type.Optional(
      OpenObject(
        { code: Type.String(), message: Type.String(), step: Type.String() },
        { description: 'Why content processing failed (status failed)' },
      ),
    ),
    expires_at: Type.Optional(Type.String({ description: 'When the object is deleted (it was written with a ttl)' })),
    revision: Type.Optional(
      OpenObject({
        root: Type.String({
          description: 'Id of the first object of its history of revisions (its own id when it has none)',
        }),
        head: Type.Boolean({
          description: 'Whether this is the newest revision (listings show heads only unless all_revisions)',
        }),
        parent: Type.Optional(Type.String({ description: 'The revision this one was made from' })),
        label: Type.Optional(Type.String()),
      }),
    ),
    score: Type.Optional(Type.Number()),
    created_by: Type.Optional(Type.String()),
    updated_by: Type.Optional(Type.String()),
    created_at: Type.Optional(Type.String()),
    updated_at: Type.Optional(Type.String()),
    text: Type.Optional(Type.String()),
    text_etag: Type.Optional(Type.String()),
    embeddings: Type.Optional(EmbeddingMapSchema),
    parts: Type.Optional(Type.Array(Type.String())),
    transcript: Type.Optional(Json),
  },
  {
    $id: 'ContentObject',
    additionalProperties: true,
    description: 'A content object (fields may be projected away by select)',
  },
);

export const SelectQuery = Type.Object({
  select: Type.Optional(
    Type.String({
      description:
        'Mongoose projection: "name properties" keeps those (and id), "-description" drops, "+text" adds a hidden field',
    }),
  ),
});

export const ObjectListQuery = Type.Object(
  {
    ...PageQuery,
    select: Type.Optional(Type.String()),
    location: Type.Optional(Type.String()),
    status: ListParam(`Status(es): ${OBJECT_STATUSES.join(', ')}`),
    type: ListParam('Object type id(s) or name(s)'),
    types: ListParam('Object type id(s) or name(s)'),
    parent: Type.Optional(Type.String()),
    name: Type.Optional(Type.String({ description: 'Case-insensitive part of the name' })),
    id: ListParam('Object id(s)'),
    ids: ListParam('Object id(s)'),
    createdFrom: Type.Optional(Type.String()),
    createdTo: Type.Optional(Type.String()),
    updatedFrom: Type.Optional(Type.String()),
    updatedTo: Type.Optional(Type.String()),
    all_revisions: Type.Optional(
      Type.Boolean({ description: 'List earlier revisions too (by default only the head of each history)' }),
    ),
    from_root: Type.Optional(
      Type.String({
        description: 'Only the revisions of the history whose first object has this id (all of them, head or not)',
      }),
    ),
    similarTo: Type.Optional(
      Type.String({
        description:
          'Id of an object: answers the most similar objects of the project (itself excluded), best first, with score',
      }),
    ),
    embeddingType: Type.Optional(
      Type.String({ description: 'Embedding compared with similarTo: text (default), properties or image' }),
    ),
  },
  { additionalProperties: true },
);

/** The official client's FindPayload, closed as Vertesia's is: an unknown field is a 400 naming it. */
export const FindBody = Type.Object(
  {
    query: Type.Record(Type.String(), Type.Unknown(), {
      description: 'Mongo-style match: {"properties.color": "red", "status": {"$in": ["created"]}}',
    }),
    limit: Type.Optional(Type.Integer({ minimum: 0 })),
    offset: Type.Optional(Offset()),
    select: Type.Optional(Type.String()),
    all_revisions: Type.Optional(
      Type.Boolean({ description: 'Match every revision, not only the newest of each history (default false)' }),
    ),
    from_root: Type.Optional(Type.String({ description: 'Match only the revisions of the history with this root id' })),
  },
  { additionalProperties: false },
);

export const CountBody = OpenObject({
  query: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
});

const SearchQuery = OpenObject({
  name: Type.Optional(Type.String()),
  full_text: Type.Optional(Type.String()),
  match: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  status: Type.Optional(Type.Union([Type.String(), Type.Array(Type.String())])),
  type: Type.Optional(Type.String()),
  types: Type.Optional(Type.Array(Type.String())),
  id: Type.Optional(Type.String()),
  ids: Type.Optional(Type.Array(Type.String())),
  parent: Type.Optional(Type.String()),
  location: Type.Optional(Type.String()),
  createdFrom: Type.Optional(Type.String()),
  createdTo: Type.Optional(Type.String()),
  updatedFrom: Type.Optional(Type.String()),
  updatedTo: Type.Optional(Type.String()),
  vector: Type.Optional(
    Type.Unknown({
      description:
        "Similarity: {objectId | text | values, type?: text | properties | image} or the client's {…, config: {text, properties, image}}",
    }),
  ),
  weights: Type.Optional(
    Type.Record(Type.String(), Type.Number(), {
      description: 'Weight of each ranked list: text, image, properties, full_text (default 1)',
    }),
  ),
  score_aggregation: Type.Optional(Type.String({ description: 'rrf (default), rsf; smart is answered as rrf' })),
  dynamic_scaling: Type.Optional(
    Type.String({ description: 'Accepted; lists absent from an object contribute nothing either way' }),
  ),
  embeddingType: Type.Optional(Type.String()),
  limit: Type.Optional(Type.Integer({ minimum: 0 })),
  offset: Type.Optional(Offset()),
});

const FacetSpecs = (options: { minItems?: number } = {}) =>
  Type.Array(OpenObject({ name: ShortString({ minLength: 1 }), field: ShortString({ minLength: 1 }) }), {
    maxItems: 10,
    ...options,
  });

export const SearchBody = OpenObject({
  query: Type.Optional(SearchQuery),
  limit: Type.Optional(Type.Integer({ minimum: 0 })),
  offset: Type.Optional(Offset()),
  select: Type.Optional(Type.String()),
  sort: Type.Optional(
    Type.Array(
      OpenObject({
        field: ShortString(),
        order: Type.Optional(Type.Union([Type.Literal('asc'), Type.Literal('desc')])),
      }),
      { maxItems: FIND_LIMITS.sortKeys },
    ),
  ),
  facets: Type.Optional(FacetSpecs()),
});

/** `POST /objects/facets` (the client's computeFacets): 1 to 10 facets over the objects matching `query`. */
export const FacetsBody = OpenObject({
  facets: FacetSpecs({ minItems: 1 }),
  query: Type.Optional(SearchQuery),
});

export const FacetsResponse = Type.Record(Type.String(), Type.Unknown(), {
  description: '{<facet name>: [{_id, count}], total: <number of matching objects>}',
});

export const SearchResponse = Type.Object({
  results: Type.Array(Type.Ref('ContentObject')),
  facets: Type.Record(Type.String(), Type.Unknown(), { description: '{<facet name>: [{_id, count}], total}' }),
});

const ColumnLayoutSchema = OpenObject({
  field: Type.String({ description: 'Dotted path, e.g. properties.title' }),
  name: Type.String({ description: 'Column header' }),
  type: Type.Optional(Type.String()),
  fallback: Type.Optional(Type.String({ description: 'Path used when field is absent' })),
  default: Type.Optional(Type.Unknown()),
});

export const ExportBody = OpenObject({
  objectIds: Type.Optional(Type.Array(Type.String())),
  type: Type.String({ description: 'CSV or JSON, any case' }),
  layout: Type.Optional(
    Type.String({ description: 'Id or name of an object type whose table_layout gives the columns' }),
  ),
  table_layout: Type.Optional(Type.Array(ColumnLayoutSchema)),
  query: Type.Optional(
    Type.Record(Type.String(), Type.Unknown(), { description: 'Filters (ComplexSearchQuery) when objectIds is empty' }),
  ),
});

export const ExportResponse = Type.Object({
  type: Type.String({ description: 'MIME type: text/csv or application/json' }),
  name: Type.String({ description: '<project name>-<timestamp>.<ext>' }),
  data: Type.String({ description: 'The whole file' }),
});

export const ObjectTypeBody = OpenObject({
  name: Type.Optional(ShortString({ minLength: 1 })),
  description: Type.Optional(Nullable(Description())),
  tags: Type.Optional(TagList()),
  object_schema: Type.Optional(Nullable(Json)),
  table_layout: Type.Optional(Nullable(Type.Array(ColumnLayoutSchema))),
  is_chunkable: Type.Optional(Type.Boolean()),
  strict_mode: Type.Optional(Type.Boolean()),
  status: Type.Optional(Type.Union([Type.Literal('active'), Type.Literal('draft')])),
  intake: Type.Optional(Json),
  editing: Type.Optional(Json),
  expected_edit_revision: Type.Optional(Type.Integer()),
});

export const ObjectTypeSchema = OpenObject(
  {
    id: Type.String(),
    edit_revision: Type.Integer(),
    name: Type.String(),
    description: Type.Optional(Type.String()),
    tags: Type.Array(Type.String()),
    created_by: Type.String(),
    updated_by: Type.String(),
    created_at: Type.String(),
    updated_at: Type.String(),
    status: Type.Optional(Type.String()),
    is_chunkable: Type.Optional(Type.Boolean()),
    strict_mode: Type.Optional(Type.Boolean()),
    intake: Type.Optional(Json),
    editing: Type.Optional(Json),
    table_layout: Type.Optional(Type.Array(ColumnLayoutSchema)),
    object_schema: Type.Optional(Json),
  },
  { $id: 'ObjectType' },
);

export const TypeListQuery = Type.Object(
  {
    ...PageQuery,
    name: Type.Optional(Type.String()),
    layout: Type.Optional(Type.Boolean({ description: 'Include table_layout' })),
    schema: Type.Optional(Type.Boolean({ description: 'Include object_schema' })),
  },
  { additionalProperties: true },
);

/** At most this many objects per `POST /operations` (ids, updates or objects). */
export const MAX_BULK_OBJECTS = 1000;

/** `POST /operations`, as the client's objects.delete([ids]), bulkUpdate and bulkCreate send it. */
export const OperationBody = OpenObject({
  name: Type.String({
    maxLength: 64,
    description:
      'delete (ids), update (params: {<id>: payload} or {updates: {<id>: payload}}) or create (params: {objects: [payload]})',
  }),
  ids: Type.Array(Type.String({ maxLength: 200 }), {
    maxItems: MAX_BULK_OBJECTS,
    description: `The objects to operate on (at most ${MAX_BULK_OBJECTS})`,
  }),
  params: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'The operation parameters' })),
});

const CreatedRef = Type.Object({
  id: Type.String(),
  index: Type.Optional(Type.Integer()),
  external_id: Type.Optional(Type.String()),
});
const CreateFailure = Type.Object({
  index: Type.Integer(),
  external_id: Type.Optional(Type.String()),
  error: Type.String(),
});

export const OperationResponse = Type.Object({
  operation: Type.String({ description: 'delete, update or create' }),
  status: Type.String({ description: 'completed, or failed when nothing was written' }),
  deleted: Type.Optional(Type.Integer()),
  updated: Type.Optional(Type.Integer()),
  created: Type.Optional(Type.Integer()),
  objects: Type.Optional(
    Type.Array(CreatedRef, { description: 'create: the objects created, with their index in params.objects' }),
  ),
  failed: Type.Array(Type.Union([Type.String(), CreateFailure]), {
    description: 'delete/update: the ids not written; create: {index, external_id?, error}',
  }),
});
