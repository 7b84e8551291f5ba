/** /token/issue, /projects, /apikeys: parse, call the auth service, answer. */
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AuthService } from './service.ts';
import { forRequest, principalOf } from '../http/auth-hook.ts';
import { errorResponses, IdParams } from '../http/schemas.ts';
import {
  AccountProjectsSchema,
  AccountSchema,
  ProjectConfigurationBody,
  ProjectConfigurationSchema,
  ApiKeyCreateBody,
  ApiKeyQuery,
  ApiKeySchema,
  ApiKeyUpdateBody,
  ProjectCreateBody,
  ProjectSchema,
  ProjectUpdateBody,
  TokenIssueBody,
  TokenSchema,
} from './schemas.ts';

export const authRoutes: FastifyPluginAsyncTypebox<{ auth: AuthService }> = async (app, { auth }) => {
  app.post(
    '/token/issue',
    {
      schema: {
        tags: ['auth'],
        summary:
          'Exchange an API key for a JWT: the bearer key (what the official client does with sk- keys), or {type: "apikey", key} in the body',
        body: TokenIssueBody,
        response: { 200: TokenSchema, ...errorResponses(400, 401) },
      },
      config: { bodyToken: true },
    },
    async (req) =>
      auth.issueToken(
        req.principal ?? forRequest(await auth.authenticate(req.body?.key), req),
        req.body?.key,
        req.body?.project,
      ),
  );

  app.post(
    '/projects',
    {
      schema: {
        tags: ['projects'],
        summary: 'Create a project (admin keys only)',
        body: ProjectCreateBody,
        response: { 200: ProjectSchema, ...errorResponses(400, 401, 403) },
      },
    },
    (req) => auth.createProject(principalOf(req), req.body),
  );

  app.get(
    '/projects',
    {
      schema: {
        tags: ['projects'],
        summary: "List the account's projects visible to the caller",
        response: { 200: Type.Array(ProjectSchema), ...errorResponses(401) },
      },
    },
    (req) => auth.listProjects(principalOf(req)),
  );

  app.get(
    '/projects/:id',
    {
      schema: {
        tags: ['projects'],
        summary: 'Retrieve a project',
        params: IdParams,
        response: { 200: ProjectSchema, ...errorResponses(401, 404) },
      },
    },
    (req) => auth.getProject(principalOf(req), req.params.id),
  );

  app.put(
    '/projects/:id',
    {
      schema: {
        tags: ['projects'],
        summary: 'Update a project: name, description, embeddings {environment, model, runs}',
        params: IdParams,
        body: ProjectUpdateBody,
        response: { 200: ProjectSchema, ...errorResponses(400, 401, 404, 502) },
      },
    },
    (req) => auth.updateProject(principalOf(req), req.params.id, req.body),
  );

  app.delete(
    '/projects/:id',
    {
      schema: {
        tags: ['projects'],
        summary: "Delete a project and everything in it (admin keys only; not the caller's own project: 409)",
        params: IdParams,
        response: { 200: Type.Object({ id: Type.String() }), ...errorResponses(401, 403, 404, 409) },
      },
    },
    (req) => auth.deleteProject(principalOf(req), req.params.id),
  );

  app.put(
    '/projects/:id/configuration',
    {
      schema: {
        tags: ['projects'],
        summary:
          "Update a project's configuration (the official client's updateConfiguration): keys merged, null clears; answers the whole configuration",
        params: IdParams,
        body: ProjectConfigurationBody,
        response: { 200: ProjectConfigurationSchema, ...errorResponses(400, 401, 404) },
      },
    },
    (req) => auth.updateConfiguration(principalOf(req), req.params.id, req.body as Record<string, unknown>),
  );

  app.get(
    '/account',
    {
      schema: {
        tags: ['account'],
        summary: "The key's account (the official client's account.info)",
        response: { 200: AccountSchema, ...errorResponses(401, 404) },
      },
    },
    (req) => auth.accountInfo(principalOf(req)),
  );

  app.get(
    '/account/projects',
    {
      schema: {
        tags: ['account'],
        summary: "The account's projects the key may use, as {data: [{id, name, account}]} (account.projects)",
        response: { 200: AccountProjectsSchema, ...errorResponses(401) },
      },
    },
    (req) => auth.accountProjects(principalOf(req)),
  );

  app.post(
    '/apikeys',
    {
      schema: {
        tags: ['apikeys'],
        summary: 'Create an API key; the answer is the only one that carries its secret `value`',
        body: ApiKeyCreateBody,
        response: { 200: ApiKeySchema, ...errorResponses(400, 401, 403, 404) },
      },
    },
    (req) => auth.createKey(principalOf(req), req.body),
  );

  app.get(
    '/apikeys',
    {
      schema: {
        tags: ['apikeys'],
        summary: 'List API keys (never their secret)',
        response: { 200: Type.Array(Type.Omit(ApiKeySchema, ['value'])), ...errorResponses(401) },
      },
    },
    (req) => auth.listKeys(principalOf(req)),
  );

  app.get(
    '/apikeys/:id',
    {
      schema: {
        tags: ['apikeys'],
        summary: 'Retrieve an API key (never its secret: withValue=true is a 400)',
        params: IdParams,
        querystring: ApiKeyQuery,
        response: { 200: Type.Omit(ApiKeySchema, ['value']), ...errorResponses(400, 401, 404) },
      },
    },
    (req) =>
      auth.getKey(principalOf(req), req.params.id, req.query.withValue === true || req.query.withValue === 'true'),
  );

  app.put(
    '/apikeys/:id',
    {
      schema: {
        tags: ['apikeys'],
        summary: 'Update an API key: name, role, expires_at, enabled (a disabled key is refused with 401)',
        params: IdParams,
        body: ApiKeyUpdateBody,
        response: { 200: Type.Omit(ApiKeySchema, ['value']), ...errorResponses(400, 401, 403, 404) },
      },
    },
    (req) => auth.updateKey(principalOf(req), req.params.id, req.body),
  );

  app.delete(
    '/apikeys/:id',
    {
      schema: {
        tags: ['apikeys'],
        summary: 'Delete (revoke) an API key',
        params: IdParams,
        response: { 200: Type.Object({ id: Type.String() }), ...errorResponses(401, 403, 404) },
      },
    },
    (req) => auth.deleteKey(principalOf(req), req.params.id),
  );
};
