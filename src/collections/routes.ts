/** Collections of content objects (`store.collections` of the official client): parse, call one service, answer (style F2). */
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../http/auth-hook.ts';
import { OrreryError } from '../util/errors.ts';
import { errorResponses, IdParams } from '../http/schemas.ts';
import { FacetsBody, FacetsResponse, SearchResponse } from '../objects/schemas.ts';
import type { CollectionService } from './service.ts';
import {
  ChildrenBody,
  CollectionFacetsBody,
  CollectionRef,
  CollectionSearchBody,
  CountOnly,
  CreateCollectionBody,
  IdOnly,
  MAX_IDS_PER_CALL,
  MemberSearchBody,
  MembersBody,
  MembersQuery,
  UpdateCollectionBody,
} from './schemas.ts';

const NO_ACL =
  'Orrery has no per-object access control: every key of a project reaches all of its objects and collections';

export const collectionRoutes: FastifyPluginAsyncTypebox<{ collections: CollectionService }> = async (
  app,
  { collections },
) => {
  const tags = ['collections'];

  app.post(
    '/collections',
    {
      schema: {
        tags,
        summary: 'Create a collection: static (members added by id) or dynamic (members: the objects matching query)',
        body: CreateCollectionBody,
        response: { 200: CollectionRef, ...errorResponses(400, 401, 404, 409) },
      },
    },
    (req) => collections.create(principalOf(req), req.body),
  );
  app.post(
    '/collections/search',
    {
      schema: {
        tags,
        summary:
          'List collections, newest updated_at first: filters parent (null: top level), dynamic, status, name, type(s), match; limit default 1,000, at most 1,000',
        body: CollectionSearchBody,
        response: { 200: Type.Array(CollectionRef), ...errorResponses(400, 401) },
      },
    },
    (req) => collections.search(principalOf(req), req.body),
  );
  app.post(
    '/collections/facets',
    {
      schema: {
        tags,
        summary:
          'Facets of the collections matching query: {<name>: [{_id, count}], total}; fields status, dynamic, type; 1 to 10 facets, at most 100 buckets each',
        body: CollectionFacetsBody,
        response: { 200: FacetsResponse, ...errorResponses(400, 401) },
      },
    },
    (req) => collections.facets(principalOf(req), req.body),
  );

  app.get(
    '/objects/:id/collections',
    {
      schema: {
        tags,
        summary:
          "The collections that list the object as a member (static and dynamic), newest first (the client's objects.getCollections)",
        params: IdParams,
        response: { 200: Type.Array(CollectionRef), ...errorResponses(401, 404) },
      },
    },
    (req) => collections.containing(principalOf(req), req.params.id),
  );
  app.get(
    '/collections/:id',
    {
      schema: {
        tags,
        summary: 'Retrieve a collection (without its members)',
        params: IdParams,
        response: { 200: CollectionRef, ...errorResponses(401, 404) },
      },
    },
    (req) => collections.get(principalOf(req), req.params.id),
  );
  app.put(
    '/collections/:id',
    {
      schema: {
        tags,
        summary:
          'Update the given fields (null clears one); parent moves the collection under that one (null: to the top level). Answers the collection',
        params: IdParams,
        body: UpdateCollectionBody,
        response: { 200: CollectionRef, ...errorResponses(400, 401, 404, 409) },
      },
    },
    (req) => collections.update(principalOf(req), req.params.id, req.body),
  );
  app.delete(
    '/collections/:id',
    {
      schema: {
        tags,
        summary: 'Delete a collection (never its member objects; nested collections stay, without this parent)',
        params: IdParams,
        response: { 200: Type.Object({ id: Type.String(), count: Type.Integer() }), ...errorResponses(401, 404) },
      },
    },
    (req) => collections.delete(principalOf(req), req.params.id),
  );

  app.post(
    '/collections/:id/members',
    {
      schema: {
        tags,
        summary: `Add or remove members of a static collection: {action: add | delete, members: [object id]}, at most ${MAX_IDS_PER_CALL} ids per call; adding is all or nothing (an id that is not an object of the project: 404), removing ignores non-members`,
        params: IdParams,
        body: MembersBody,
        response: { 200: IdOnly, ...errorResponses(400, 401, 404, 409) },
      },
    },
    (req) => collections.updateMembers(principalOf(req), req.params.id, req.body.action, req.body.members),
  );
  app.get(
    '/collections/:id/members',
    {
      schema: {
        tags,
        summary:
          'List the members (list items, newest updated_at first); filters status, type; limit default 100, at most 1,000',
        params: IdParams,
        querystring: MembersQuery,
        response: { 200: Type.Array(Type.Ref('ContentObject')), ...errorResponses(400, 401, 404) },
      },
    },
    (req) => collections.listMembers(principalOf(req), req.params.id, req.query),
  );
  app.post(
    '/collections/:id/search',
    {
      schema: {
        tags,
        summary: 'Search the members: the body and answer of POST /objects/search, restricted to the collection',
        params: IdParams,
        body: MemberSearchBody,
        response: { 200: SearchResponse, ...errorResponses(400, 401, 404) },
      },
    },
    (req) => collections.searchMembers(principalOf(req), req.params.id, req.body as never),
  );
  app.post(
    '/collections/:id/facets',
    {
      schema: {
        tags,
        summary: 'Facets of the members: the body and answer of POST /objects/facets, restricted to the collection',
        params: IdParams,
        body: FacetsBody,
        response: { 200: FacetsResponse, ...errorResponses(400, 401, 404) },
      },
    },
    (req) => collections.memberFacets(principalOf(req), req.params.id, req.body as never),
  );

  app.post(
    '/collections/:id/children',
    {
      schema: {
        tags,
        summary: `Nest collections under this one or take them out: {action: add | delete, children: [collection id]}, at most ${MAX_IDS_PER_CALL} ids per call; answers {count} links made or removed`,
        params: IdParams,
        body: ChildrenBody,
        response: { 200: CountOnly, ...errorResponses(400, 401, 404, 409) },
      },
    },
    (req) => collections.updateChildren(principalOf(req), req.params.id, req.body.action, req.body.children),
  );
  app.post(
    '/collections/:id/children/search',
    {
      schema: {
        tags,
        summary: 'The collections nested directly under this one, with the filters of POST /collections/search',
        params: IdParams,
        body: CollectionSearchBody,
        response: { 200: Type.Array(CollectionRef), ...errorResponses(400, 401, 404) },
      },
    },
    (req) => collections.searchChildren(principalOf(req), req.params.id, req.body),
  );

  // Access control and property propagation belong to Vertesia features Orrery does not have.
  const refused = { body: Type.Optional(Type.Unknown()), params: IdParams, response: errorResponses(401, 501) };
  app.put(
    '/collections/:id/permissions',
    {
      schema: { tags, summary: 'Not supported (501): Orrery has no per-object permissions', ...refused },
    },
    () => {
      throw new OrreryError(
        'not_implemented',
        501,
        `collection permissions (updatePermissions) cannot be set: ${NO_ACL}; give access by project with API keys (POST /apikeys)`,
      );
    },
  );
  app.post(
    '/collections/:id/propagate-permissions',
    {
      schema: { tags, summary: 'Not supported (501): Orrery has no per-object permissions', ...refused },
    },
    () => {
      throw new OrreryError(
        'not_implemented',
        501,
        `permission propagation (propagatePermissions) has nothing to propagate: ${NO_ACL}`,
      );
    },
  );
  app.post(
    '/collections/:id/propagate-shared-props',
    {
      schema: {
        tags,
        summary: 'Not supported (501): shared_properties are stored, not injected into members',
        ...refused,
      },
    },
    () => {
      throw new OrreryError(
        'not_implemented',
        501,
        "shared property propagation (propagateSharedProperties) is not supported: Orrery stores a collection's shared_properties but does not copy them into member objects; read them from the collection (collections.retrieve)",
      );
    },
  );
};
