/**
 * Schemas of the collection routes (`store.collections` of the official client). Bodies accept
 * the client's shapes (`CreateCollectionPayload`, `UpdateCollectionPayload`,
 * `ComplexCollectionSearchQuery`); unknown fields are ignored, never an error.
 */
import { Type, type TSchema } from '@sinclair/typebox';
import { Description, OpenObject, Offset, ShortString, TagList } from '../http/schemas.ts';
import { SearchBody } from '../objects/schemas.ts';

const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);
const Json = Type.Record(Type.String(), Type.Unknown());

export const COLLECTION_STATUSES = ['active', 'archived'] as const;

/** Member or child ids per add/remove call. */
/** `GET /objects/:id/collections` looks at this many collections at most (the newest). */
export const MAX_COLLECTIONS_CHECKED = 1000;
export const MAX_IDS_PER_CALL = 1000;
/** Default page of `POST /collections/search` (the client's UI expects up to 1,000 at once). */
export const DEFAULT_COLLECTION_PAGE = 1000;

const Status = Type.Union(
  COLLECTION_STATUSES.map((s) => Type.Literal(s)),
  { description: COLLECTION_STATUSES.join(' or ') },
);

const ColumnLayoutSchema = OpenObject({
  field: Type.String({ description: 'Dotted path, e.g. properties.title' }),
  name: Type.String({ description: 'Column header' }),
  type: Type.Optional(Type.String()),
  fallback: Type.Optional(Type.String()),
  default: Type.Optional(Type.Unknown()),
});

const fields = {
  description: Type.Optional(Nullable(Description())),
  tags: Type.Optional(Nullable(TagList())),
  type: Type.Optional(Nullable(ShortString({ description: 'Object type id (or name) of the collection itself' }))),
  query: Type.Optional(
    Nullable(
      Type.Record(Type.String(), Type.Unknown(), {
        description:
          'Dynamic collections: a Mongo-style match on object fields, as objects.find takes it (e.g. {"properties.color": "red"}); {} matches every object of the project',
      }),
    ),
  ),
  properties: Type.Optional(Nullable(Json)),
  parent: Type.Optional(
    Nullable(ShortString({ description: 'Id of a collection of this project to nest the new one under' })),
  ),
  table_layout: Type.Optional(Nullable(Type.Array(ColumnLayoutSchema, { maxItems: 200 }))),
  allowed_types: Type.Optional(
    Nullable(
      Type.Array(ShortString(), {
        maxItems: 1000,
        description: 'Object type ids or names a static collection accepts as members (empty or absent: any)',
      }),
    ),
  ),
  skip_head_sync: Type.Optional(Type.Boolean()),
  shared_properties: Type.Optional(
    Nullable(
      Type.Array(ShortString(), {
        maxItems: 1000,
        description: 'Stored and answered; Orrery does not inject them into members',
      }),
    ),
  ),
  sensitivity: Type.Optional(Nullable(Type.Number())),
  compartments: Type.Optional(Nullable(Type.Array(ShortString(), { maxItems: 1000 }))),
  status: Type.Optional(Status),
  updated_by: Type.Optional(Type.String({ description: 'Ignored: the caller is recorded' })),
};

export const CreateCollectionBody = OpenObject({
  ...fields,
  name: ShortString({ minLength: 1 }),
  dynamic: Type.Boolean({
    description: 'true: the members are the objects matching query; false: members are added and removed explicitly',
  }),
});

export const UpdateCollectionBody = OpenObject({
  ...fields,
  name: Type.Optional(ShortString({ minLength: 1 })),
  dynamic: Type.Optional(
    Type.Boolean({ description: 'Turning a static collection dynamic drops its explicit members' }),
  ),
});

const TypeRefSchema = OpenObject({ id: Type.String(), name: Type.String(), ref_type: Type.Optional(Type.String()) });

const CollectionSchema = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    description: Type.Optional(Type.String()),
    tags: Type.Array(Type.String()),
    dynamic: Type.Boolean(),
    status: Type.String({ description: COLLECTION_STATUSES.join(', ') }),
    type: Type.Optional(TypeRefSchema),
    skip_head_sync: Type.Boolean(),
    parents: Type.Array(Type.String(), { description: 'Ids of the collections this one is nested under' }),
    table_layout: Type.Optional(Type.Array(ColumnLayoutSchema)),
    allowed_types: Type.Optional(Type.Array(Type.String())),
    properties: Type.Optional(Json),
    query: Type.Optional(Json),
    shared_properties: Type.Optional(Type.Array(Type.String())),
    sensitivity: Type.Optional(Type.Number()),
    compartments: Type.Optional(Type.Array(Type.String())),
    created_by: Type.String(),
    updated_by: Type.String(),
    created_at: Type.String(),
    updated_at: Type.String(),
  },
  {
    additionalProperties: true,
    description: 'A collection of content objects: static (explicit members) or dynamic (the objects matching query)',
  },
);

export const CollectionRef = CollectionSchema;

/** `ComplexCollectionSearchQuery`: the body of `POST /collections/search` and `/:id/children/search`. */
export const CollectionSearchBody = OpenObject({
  parent: Type.Optional(
    Nullable(ShortString({ description: 'Only the children of this collection; null: only top-level collections' })),
  ),
  dynamic: Type.Optional(Type.Boolean()),
  status: Type.Optional(Status),
  name: Type.Optional(ShortString({ description: 'Case-insensitive part of the name' })),
  type: Type.Optional(ShortString({ description: 'Object type id or name' })),
  types: Type.Optional(Type.Array(ShortString(), { maxItems: 1000 })),
  match: Type.Optional(
    Type.Record(Type.String(), Type.Unknown(), {
      description:
        'Mongo-style match on collection fields: id, name, description, status, type, created_*, updated_*, tags, properties.*',
    }),
  ),
  limit: Type.Optional(
    Type.Integer({
      minimum: 0,
      description: `Page size, default ${DEFAULT_COLLECTION_PAGE}, at most 1,000 (larger values are clamped)`,
    }),
  ),
  offset: Type.Optional(Offset()),
});

export const CollectionFacetsBody = OpenObject({
  facets: Type.Array(
    OpenObject({
      name: ShortString({ minLength: 1 }),
      field: ShortString({ minLength: 1, description: 'status, dynamic or type' }),
    }),
    { minItems: 1, maxItems: 10 },
  ),
  query: Type.Optional(CollectionSearchBody),
});

export const MembersBody = OpenObject({
  action: Type.Union([Type.Literal('add'), Type.Literal('delete')]),
  members: Type.Array(Type.String({ minLength: 1, maxLength: 200 }), {
    description: `Object ids, at most ${MAX_IDS_PER_CALL} per call`,
  }),
});

export const ChildrenBody = OpenObject({
  action: Type.Union([Type.Literal('add'), Type.Literal('delete')]),
  children: Type.Array(Type.String({ minLength: 1, maxLength: 200 }), {
    description: `Collection ids, at most ${MAX_IDS_PER_CALL} per call`,
  }),
});

export const MembersQuery = Type.Object(
  {
    limit: Type.Optional(
      Type.Integer({ minimum: 0, description: 'Page size, default 100, at most 1,000 (larger values are clamped)' }),
    ),
    offset: Type.Optional(Offset()),
    status: Type.Optional(Type.String({ description: 'Object status' })),
    type: Type.Optional(Type.String({ description: 'Object type id or name' })),
    select: Type.Optional(Type.String()),
  },
  { additionalProperties: true },
);

/** The members' search: the body of `POST /objects/search`. */
export const MemberSearchBody = SearchBody;

export const IdOnly = Type.Object({ id: Type.String() });
export const CountOnly = Type.Object({ count: Type.Integer({ description: 'Links added or removed' }) });
