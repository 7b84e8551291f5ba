/** Environments, prompt templates and interactions: parse, call the service, answer. */
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../http/auth-hook.ts';
import { errorResponses, IdParams, ListParam, PageQuery } from '../http/schemas.ts';
import { listParam, pageOf } from '../http/query.ts';
import type { EnvironmentService } from './environments.ts';
import type { PromptService } from './prompts.ts';
import type { InteractionService } from './interactions.ts';
import {
  EnvironmentBody, EnvironmentSchema, InteractionBody, InteractionRefSchema, InteractionSchema, ModelSchema, PromptBody,
  PromptSchema, ProviderSchema, PublishBody,
  PromptRenderSchema,
} from './schemas.ts';

const Deleted = Type.Object({ id: Type.String() });

export const interactionRoutes: FastifyPluginAsyncTypebox<{
  environments: EnvironmentService;
  prompts: PromptService;
  interactions: InteractionService;
}> = async (app, { environments, prompts, interactions }) => {
  app.get('/providers', {
    schema: { tags: ['environments'], summary: 'Providers an environment can use (the test provider is marked test: true)', response: { 200: Type.Array(ProviderSchema) } },
  }, () => environments.providers());

  app.post('/environments', {
    schema: { tags: ['environments'], summary: 'Create an execution environment', body: EnvironmentBody, response: { 200: EnvironmentSchema, ...errorResponses(400, 401) } },
  }, (req) => environments.create(principalOf(req), req.body as never));
  app.get('/environments', {
    schema: { tags: ['environments'], summary: 'List environments', querystring: Type.Object({ all: Type.Optional(Type.Boolean()) }), response: { 200: Type.Array(EnvironmentSchema), ...errorResponses(401) } },
  }, (req) => environments.list(principalOf(req)));
  app.get('/environments/:id', {
    schema: { tags: ['environments'], summary: 'Retrieve an environment', params: IdParams, response: { 200: EnvironmentSchema, ...errorResponses(401, 404) } },
  }, (req) => environments.get(principalOf(req), req.params.id));
  app.put('/environments/:id', {
    schema: { tags: ['environments'], summary: 'Update an environment (given fields only)', params: IdParams, body: EnvironmentBody, response: { 200: EnvironmentSchema, ...errorResponses(400, 401, 404) } },
  }, (req) => environments.update(principalOf(req), req.params.id, req.body as never));
  app.delete('/environments/:id', {
    schema: { tags: ['environments'], summary: 'Delete an environment', params: IdParams, response: { 200: Deleted, ...errorResponses(401, 404) } },
  }, (req) => environments.delete(principalOf(req), req.params.id));
  app.get('/environments/:id/models', {
    schema: { tags: ['environments'], summary: "The environment's models", description: "From the provider's API where it lists models, else its documented list; an environment's enabled_models win. A provider's refusal answers 502 with its message.", params: IdParams, response: { 200: Type.Array(ModelSchema), ...errorResponses(401, 404, 502) } },
  }, (req) => environments.models(principalOf(req), req.params.id));

  app.post('/prompts', {
    schema: { tags: ['prompts'], summary: 'Create a prompt template (handlebars, jst or text)', body: PromptBody, response: { 200: PromptSchema, ...errorResponses(400, 401) } },
  }, (req) => prompts.create(principalOf(req), req.body as never));
  app.get('/prompts', {
    schema: { tags: ['prompts'], summary: 'List prompt templates', querystring: Type.Object({ name: Type.Optional(Type.String()), ...PageQuery }), response: { 200: Type.Array(PromptSchema), ...errorResponses(401) } },
  }, (req) => prompts.list(principalOf(req), { name: req.query.name, ...pageOf(req.query) }));
  app.post('/prompts/:id/render', {
    schema: {
      tags: ['prompts'],
      summary: 'Render a prompt template with variables (the body is the variables map itself), as a run would, without a model: {id, name, role, content_type, rendered}',
      params: IdParams,
      querystring: Type.Object({ model: Type.Optional(Type.String({ maxLength: 1000, description: 'The model id jst templates see as _model' })) }),
      body: Type.Record(Type.String(), Type.Unknown(), { description: 'The variables' }),
      response: { 200: PromptRenderSchema, ...errorResponses(400, 401, 404) },
    },
  }, (req) => prompts.render(principalOf(req), req.params.id, req.body, req.query.model));
  app.get('/prompts/:id', {
    schema: { tags: ['prompts'], summary: 'Retrieve a prompt template', params: IdParams, response: { 200: PromptSchema, ...errorResponses(401, 404) } },
  }, (req) => prompts.get(principalOf(req), req.params.id));
  app.put('/prompts/:id', {
    schema: { tags: ['prompts'], summary: 'Update a prompt template', params: IdParams, body: PromptBody, response: { 200: PromptSchema, ...errorResponses(400, 401, 404, 409) } },
  }, (req) => prompts.update(principalOf(req), req.params.id, req.body as never));
  app.delete('/prompts/:id', {
    schema: { tags: ['prompts'], summary: 'Delete a prompt template', params: IdParams, response: { 200: Deleted, ...errorResponses(401, 404) } },
  }, (req) => prompts.delete(principalOf(req), req.params.id));

  app.post('/interactions', {
    schema: { tags: ['interactions'], summary: 'Create an interaction (a draft)', body: InteractionBody, response: { 200: InteractionSchema, ...errorResponses(400, 401, 404, 409) } },
  }, (req) => interactions.create(principalOf(req), req.body as never));
  app.get('/interactions', {
    schema: {
      tags: ['interactions'], summary: 'List interactions (drafts; published versions with status=published)',
      querystring: Type.Object({ name: Type.Optional(Type.String()), status: Type.Optional(Type.String()), tag: ListParam('Tag(s)'), tags: ListParam('Tag(s)'), ...PageQuery }, { additionalProperties: true }),
      response: { 200: Type.Array(InteractionRefSchema), ...errorResponses(401) },
    },
  }, (req) => interactions.list(principalOf(req), { name: req.query.name, status: req.query.status, tag: listParam(req.query.tag ?? req.query.tags), ...pageOf(req.query) }));
  app.get('/interactions/:id', {
    schema: { tags: ['interactions'], summary: 'Retrieve an interaction with its prompt templates', params: IdParams, response: { 200: InteractionSchema, ...errorResponses(401, 404) } },
  }, (req) => interactions.get(principalOf(req), req.params.id));
  app.put('/interactions/:id', {
    schema: { tags: ['interactions'], summary: 'Update an interaction; expected_edit_revision gives 409 on a conflict', params: IdParams, body: InteractionBody, response: { 200: InteractionSchema, ...errorResponses(400, 401, 404, 409) } },
  }, (req) => interactions.update(principalOf(req), req.params.id, req.body as never));
  app.delete('/interactions/:id', {
    schema: { tags: ['interactions'], summary: 'Delete an interaction and its published versions', params: IdParams, querystring: Type.Object({ cascade: Type.Optional(Type.Boolean()) }), response: { 200: Deleted, ...errorResponses(401, 404) } },
  }, (req) => interactions.delete(principalOf(req), req.params.id));
  app.post('/interactions/:id/publish', {
    schema: { tags: ['interactions'], summary: 'Publish the draft as the next version', params: IdParams, body: PublishBody, response: { 200: InteractionSchema, ...errorResponses(400, 401, 404) } },
  }, (req) => interactions.publish(principalOf(req), req.params.id, (req.body ?? {}) as never));
  app.get('/interactions/:id/versions', {
    schema: { tags: ['interactions'], summary: 'Published versions of an interaction, newest first', params: IdParams, response: { 200: Type.Array(InteractionRefSchema), ...errorResponses(401, 404) } },
  }, (req) => interactions.versions(principalOf(req), req.params.id));
};
