/** Environments, prompt templates and interactions: parse, call the service, answer. */
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../http/auth-hook.ts';
import { errorResponses, IdParams, ListParam, PageQuery } from '../http/schemas.ts';
import { listParam, pageOf } from '../http/query.ts';
import type { EnvironmentService } from './environments.ts';
import type { PromptService } from './prompts.ts';
import type { InteractionQuery, InteractionService } from './interactions.ts';
import {
  EnvironmentBody,
  EnvironmentSchema,
  InteractionBody,
  InteractionRefSchema,
  InteractionSchema,
  ModelSchema,
  PromptBody,
  PromptSchema,
  ProviderSchema,
  PublishBody,
  PromptRenderSchema,
  InteractionNameSchema,
  InteractionSearchQuery,
  InteractionTagsSchema,
  FacetsBody,
  FacetsAnswer,
  EndpointQueryBody,
  InteractionEndpointSchema,
  ResolvedExecutionSchema,
  ExportBody,
  ExportedInteractionSchema,
  InteractionForkBody,
  CatalogQuery,
  CatalogEntrySchema,
  PromptRefSchema,
  PromptForkBody,
  PromptSearchQuery,
  PromptUsageSchema,
  EnableModelBody,
  EnvironmentConfigBody,
  EmbeddingsBody,
  EmbeddingsAnswerSchema,
  PromptDraftRenderBody,
  PromptDraftRenderSchema,
} from './schemas.ts';

const Deleted = Type.Object({ id: Type.String() });

/** resolve's options; hasImage and hasVideo are accepted and change nothing (Orrery picks no model by modality). */
const ResolveQuery = Type.Object({
  environment: Type.Optional(Type.String()),
  model: Type.Optional(Type.String()),
  hasImage: Type.Optional(Type.Boolean()),
  hasVideo: Type.Optional(Type.Boolean()),
});

const INTERACTION_FACET_FIELDS = 'status, tags, model, environment, visibility, name, endpoint or version';
const PROMPT_FACET_FIELDS = 'role, content_type, tags, status or name';

/** A query string's InteractionSearchQuery: list fields may come repeated or comma-joined. */
const searchQueryOf = (q: Record<string, unknown>): InteractionQuery => ({
  ...(q as InteractionQuery),
  status: listParam(q.status as string | string[] | undefined),
  tags: listParam(q.tags as string | string[] | undefined),
});

export const interactionRoutes: FastifyPluginAsyncTypebox<{
  environments: EnvironmentService;
  prompts: PromptService;
  interactions: InteractionService;
}> = async (app, { environments, prompts, interactions }) => {
  app.get(
    '/providers',
    {
      schema: {
        tags: ['environments'],
        summary: 'Providers an environment can use (the test provider is marked test: true)',
        response: { 200: Type.Array(ProviderSchema) },
      },
    },
    () => environments.providers(),
  );

  app.post(
    '/environments',
    {
      schema: {
        tags: ['environments'],
        summary: 'Create an execution environment',
        body: EnvironmentBody,
        response: { 200: EnvironmentSchema, ...errorResponses(400, 401) },
      },
    },
    (req) => environments.create(principalOf(req), req.body as never),
  );
  app.get(
    '/environments',
    {
      schema: {
        tags: ['environments'],
        summary: 'List environments',
        querystring: Type.Object({ all: Type.Optional(Type.Boolean()) }),
        response: { 200: Type.Array(EnvironmentSchema), ...errorResponses(401) },
      },
    },
    (req) => environments.list(principalOf(req)),
  );
  app.get(
    '/environments/:id',
    {
      schema: {
        tags: ['environments'],
        summary: 'Retrieve an environment',
        params: IdParams,
        response: { 200: EnvironmentSchema, ...errorResponses(401, 404) },
      },
    },
    (req) => environments.get(principalOf(req), req.params.id),
  );
  app.put(
    '/environments/:id',
    {
      schema: {
        tags: ['environments'],
        summary: 'Update an environment (given fields only)',
        params: IdParams,
        body: EnvironmentBody,
        response: { 200: EnvironmentSchema, ...errorResponses(400, 401, 404) },
      },
    },
    (req) => environments.update(principalOf(req), req.params.id, req.body as never),
  );
  app.delete(
    '/environments/:id',
    {
      schema: {
        tags: ['environments'],
        summary: 'Delete an environment',
        params: IdParams,
        response: { 200: Deleted, ...errorResponses(401, 404) },
      },
    },
    (req) => environments.delete(principalOf(req), req.params.id),
  );
  app.get(
    '/environments/:id/models',
    {
      schema: {
        tags: ['environments'],
        summary: "The environment's models",
        description:
          "From the provider's API where it lists models, else its documented list; an environment's enabled_models win. A provider's refusal answers 502 with its message.",
        params: IdParams,
        response: { 200: Type.Array(ModelSchema), ...errorResponses(401, 404, 502) },
      },
    },
    (req) => environments.models(principalOf(req), req.params.id),
  );

  app.post(
    '/prompts',
    {
      schema: {
        tags: ['prompts'],
        summary: 'Create a prompt template (handlebars, jst or text)',
        body: PromptBody,
        response: { 200: PromptSchema, ...errorResponses(400, 401) },
      },
    },
    (req) => prompts.create(principalOf(req), req.body as never),
  );
  app.get(
    '/prompts',
    {
      schema: {
        tags: ['prompts'],
        summary: 'List prompt templates',
        querystring: Type.Object({ name: Type.Optional(Type.String()), ...PageQuery }),
        response: { 200: Type.Array(PromptSchema), ...errorResponses(401) },
      },
    },
    (req) => prompts.list(principalOf(req), { name: req.query.name, ...pageOf(req.query) }),
  );
  app.post(
    '/prompts/render',
    {
      schema: {
        tags: ['prompts'],
        summary:
          'Render a template that is not saved (the playground of the web console), as a run would, without a model: {name, role, content_type, rendered}',
        querystring: Type.Object({
          model: Type.Optional(
            Type.String({ maxLength: 1000, description: 'The model id jst templates see as _model' }),
          ),
        }),
        body: PromptDraftRenderBody,
        response: { 200: PromptDraftRenderSchema, ...errorResponses(400, 401) },
      },
    },
    (req) => prompts.renderDraft(principalOf(req), req.body as never, req.query.model),
  );
  app.post(
    '/prompts/:id/render',
    {
      schema: {
        tags: ['prompts'],
        summary:
          'Render a prompt template with variables (the body is the variables map itself), as a run would, without a model: {id, name, role, content_type, rendered}',
        params: IdParams,
        querystring: Type.Object({
          model: Type.Optional(
            Type.String({ maxLength: 1000, description: 'The model id jst templates see as _model' }),
          ),
        }),
        body: Type.Record(Type.String(), Type.Unknown(), { description: 'The variables' }),
        response: { 200: PromptRenderSchema, ...errorResponses(400, 401, 404) },
      },
    },
    (req) => prompts.render(principalOf(req), req.params.id, req.body, req.query.model),
  );
  app.get(
    '/prompts/:id',
    {
      schema: {
        tags: ['prompts'],
        summary: 'Retrieve a prompt template',
        params: IdParams,
        response: { 200: PromptSchema, ...errorResponses(401, 404) },
      },
    },
    (req) => prompts.get(principalOf(req), req.params.id),
  );
  app.put(
    '/prompts/:id',
    {
      schema: {
        tags: ['prompts'],
        summary: 'Update a prompt template',
        params: IdParams,
        body: PromptBody,
        response: { 200: PromptSchema, ...errorResponses(400, 401, 404, 409) },
      },
    },
    (req) => prompts.update(principalOf(req), req.params.id, req.body as never),
  );
  app.delete(
    '/prompts/:id',
    {
      schema: {
        tags: ['prompts'],
        summary: 'Delete a prompt template',
        params: IdParams,
        response: { 200: Deleted, ...errorResponses(401, 404) },
      },
    },
    (req) => prompts.delete(principalOf(req), req.params.id),
  );

  app.post(
    '/interactions',
    {
      schema: {
        tags: ['interactions'],
        summary: 'Create an interaction (a draft)',
        body: InteractionBody,
        response: { 200: InteractionSchema, ...errorResponses(400, 401, 404, 409) },
      },
    },
    (req) => interactions.create(principalOf(req), req.body as never),
  );
  app.get(
    '/interactions',
    {
      schema: {
        tags: ['interactions'],
        summary: 'List interactions (drafts; published versions with status=published)',
        querystring: Type.Object(
          {
            name: Type.Optional(Type.String()),
            status: Type.Optional(Type.String()),
            tag: ListParam('Tag(s)'),
            tags: ListParam('Tag(s)'),
            ...PageQuery,
          },
          { additionalProperties: true },
        ),
        response: { 200: Type.Array(InteractionRefSchema), ...errorResponses(401) },
      },
    },
    (req) =>
      interactions.list(principalOf(req), {
        name: req.query.name,
        status: req.query.status,
        tag: listParam(req.query.tag ?? req.query.tags),
        ...pageOf(req.query),
      }),
  );
  app.get(
    '/interactions/:id',
    {
      schema: {
        tags: ['interactions'],
        summary: 'Retrieve an interaction with its prompt templates',
        params: IdParams,
        response: { 200: InteractionSchema, ...errorResponses(401, 404) },
      },
    },
    (req) => interactions.get(principalOf(req), req.params.id),
  );
  app.put(
    '/interactions/:id',
    {
      schema: {
        tags: ['interactions'],
        summary: 'Update an interaction; expected_edit_revision gives 409 on a conflict',
        params: IdParams,
        body: InteractionBody,
        response: { 200: InteractionSchema, ...errorResponses(400, 401, 404, 409) },
      },
    },
    (req) => interactions.update(principalOf(req), req.params.id, req.body as never),
  );
  app.delete(
    '/interactions/:id',
    {
      schema: {
        tags: ['interactions'],
        summary: 'Delete an interaction and its published versions',
        params: IdParams,
        querystring: Type.Object({ cascade: Type.Optional(Type.Boolean()) }),
        response: { 200: Deleted, ...errorResponses(401, 404) },
      },
    },
    (req) => interactions.delete(principalOf(req), req.params.id),
  );
  app.post(
    '/interactions/:id/publish',
    {
      schema: {
        tags: ['interactions'],
        summary: 'Publish the draft as the next version',
        params: IdParams,
        body: PublishBody,
        response: { 200: InteractionSchema, ...errorResponses(400, 401, 404) },
      },
    },
    (req) => interactions.publish(principalOf(req), req.params.id, (req.body ?? {}) as never),
  );
  app.get(
    '/interactions/:id/versions',
    {
      schema: {
        tags: ['interactions'],
        summary: 'Published versions of an interaction, newest first',
        params: IdParams,
        response: { 200: Type.Array(InteractionRefSchema), ...errorResponses(401, 404) },
      },
    },
    (req) => interactions.versions(principalOf(req), req.params.id),
  );
  // The official client's further environment methods (issue 24).
  app.post(
    '/environments/:id/models/enabled',
    {
      schema: {
        tags: ['environments'],
        summary: 'Enable a model the environment lists (adds it to enabled_models)',
        params: IdParams,
        body: EnableModelBody,
        response: { 200: EnvironmentSchema, ...errorResponses(400, 401, 404, 502) },
      },
    },
    (req) => environments.enableModel(principalOf(req), req.params.id, req.body.model_id),
  );
  app.delete(
    '/environments/:id/models/enabled/:modelId',
    {
      schema: {
        tags: ['environments'],
        summary: 'Disable a model (removes it from enabled_models)',
        params: Type.Object({ id: Type.String({ minLength: 1 }), modelId: Type.String({ minLength: 1 }) }),
        response: { 200: EnvironmentSchema, ...errorResponses(401, 404) },
      },
    },
    (req) => environments.disableModel(principalOf(req), req.params.id, req.params.modelId),
  );
  app.put(
    '/environments/:id/config',
    {
      schema: {
        tags: ['environments'],
        summary: 'Replace enabled_models and/or merge into config (fields not given are kept)',
        params: IdParams,
        body: EnvironmentConfigBody,
        response: { 200: EnvironmentSchema, ...errorResponses(400, 401, 404) },
      },
    },
    (req) => environments.updateConfig(principalOf(req), req.params.id, req.body as never),
  );
  app.post(
    '/environments/:id/embeddings',
    {
      schema: {
        tags: ['environments'],
        summary:
          'Embed text inputs with the environment (openai, openai_compatible with model; test: the built-in offline embedder)',
        params: IdParams,
        body: EmbeddingsBody,
        response: { 200: EmbeddingsAnswerSchema, ...errorResponses(400, 401, 404, 502) },
      },
    },
    (req) => environments.embeddings(principalOf(req), req.params.id, req.body as never),
  );

  // The official client's further prompt methods (issue 24). Static paths win over /prompts/:id.
  app.post(
    '/prompts/facets',
    {
      schema: {
        tags: ['prompts'],
        summary: 'Facets of prompt templates: {<name>: [{_id, count}], total}',
        body: FacetsBody(PROMPT_FACET_FIELDS, PromptSearchQuery),
        response: { 200: FacetsAnswer, ...errorResponses(400, 401) },
      },
    },
    (req) => prompts.facets(principalOf(req), req.body as never),
  );
  app.get(
    '/prompts/options/:field',
    {
      schema: {
        tags: ['prompts'],
        summary: `The distinct values of a field across the project's prompts (${PROMPT_FACET_FIELDS})`,
        params: Type.Object({ field: Type.String({ minLength: 1, maxLength: 100 }) }),
        response: { 200: Type.Array(Type.String()), ...errorResponses(400, 401) },
      },
    },
    (req) => prompts.options(principalOf(req), req.params.field),
  );
  app.get(
    '/prompts/:id/versions',
    {
      schema: {
        tags: ['prompts'],
        summary:
          'Versions of a prompt template: always empty (templates are not versioned; published interactions freeze a copy)',
        params: IdParams,
        response: { 200: Type.Array(PromptRefSchema), ...errorResponses(401, 404) },
      },
    },
    (req) => prompts.versions(principalOf(req), req.params.id),
  );
  app.get(
    '/prompts/:id/interactions',
    {
      schema: {
        tags: ['prompts'],
        summary: 'The interactions (drafts, with the published versions) that use the prompt template',
        params: IdParams,
        response: { 200: PromptUsageSchema, ...errorResponses(401, 404) },
      },
    },
    (req) => interactions.promptUsage(principalOf(req), req.params.id),
  );
  app.post(
    '/prompts/:id/fork',
    {
      schema: {
        tags: ['prompts'],
        summary: 'Fork a prompt template into "<name> (fork)"',
        params: IdParams,
        body: PromptForkBody,
        response: { 200: PromptSchema, ...errorResponses(400, 401, 404) },
      },
    },
    (req) => prompts.fork(principalOf(req), req.params.id, (req.body ?? {}) as never),
  );
  app.get(
    '/prompts/:id/forks',
    {
      schema: {
        tags: ['prompts'],
        summary: 'The prompt templates forked from this one',
        params: IdParams,
        response: { 200: Type.Array(PromptRefSchema), ...errorResponses(401, 404) },
      },
    },
    (req) => prompts.forks(principalOf(req), req.params.id),
  );

  // The official client's further interaction methods (issue 24). Static paths win over /interactions/:id.
  app.get(
    '/interactions/names',
    {
      schema: {
        tags: ['interactions'],
        summary: "The interactions' ids and names, by name (at most 1,000)",
        response: { 200: Type.Array(InteractionNameSchema), ...errorResponses(401) },
      },
    },
    (req) => interactions.names(principalOf(req)),
  );
  app.get(
    '/interactions/tags',
    {
      schema: {
        tags: ['interactions'],
        summary:
          'Tags with their counts and interactions, most used first (drafts and published versions unless status is given)',
        querystring: InteractionSearchQuery,
        response: { 200: Type.Array(InteractionTagsSchema), ...errorResponses(400, 401) },
      },
    },
    (req) => interactions.tagList(principalOf(req), searchQueryOf(req.query)),
  );
  app.post(
    '/interactions/facets',
    {
      schema: {
        tags: ['interactions'],
        summary: 'Facets of interactions: {<name>: [{_id, count}], total}',
        body: FacetsBody(INTERACTION_FACET_FIELDS, InteractionSearchQuery),
        response: { 200: FacetsAnswer, ...errorResponses(400, 401) },
      },
    },
    (req) => interactions.facets(principalOf(req), req.body as never),
  );
  app.post(
    '/interactions/endpoints',
    {
      schema: {
        tags: ['interactions'],
        summary: 'Interactions as endpoints, optionally with params_schema and result_schema',
        body: EndpointQueryBody,
        response: { 200: Type.Array(InteractionEndpointSchema), ...errorResponses(400, 401) },
      },
    },
    (req) => interactions.endpoints(principalOf(req), req.body as never),
  );
  app.post(
    '/interactions/export',
    {
      schema: {
        tags: ['interactions'],
        summary: 'Interactions with their result schema and segment input schemas (versions: draft, latest, N)',
        body: ExportBody,
        response: { 200: Type.Array(ExportedInteractionSchema), ...errorResponses(400, 401) },
      },
    },
    (req) => interactions.exportRefs(principalOf(req), req.body as never),
  );
  app.get(
    '/interactions/versions/:name',
    {
      schema: {
        tags: ['interactions'],
        summary: 'Every published version with this endpoint, newest first',
        params: Type.Object({ name: Type.String({ minLength: 1, maxLength: 1000 }) }),
        response: { 200: Type.Array(InteractionRefSchema), ...errorResponses(401) },
      },
    },
    (req) => interactions.versionsByName(principalOf(req), req.params.name),
  );
  app.get(
    '/interactions/resolve/:nameOrId',
    {
      schema: {
        tags: ['interactions'],
        summary:
          'Which interaction an id or selector (Name, Name@draft, Name@3, Name@tag) runs, with its environment and model',
        params: Type.Object({ nameOrId: Type.String({ minLength: 1, maxLength: 1000 }) }),
        querystring: ResolveQuery,
        response: { 200: ResolvedExecutionSchema, ...errorResponses(400, 401, 404) },
      },
    },
    (req) => interactions.resolveExecution(principalOf(req), req.params.nameOrId, req.query),
  );
  for (const path of ['/interactions/catalog', '/interactions/catalog/stored']) {
    app.get(
      path,
      {
        schema: {
          tags: ['interactions'],
          summary:
            "The project's stored interactions as catalog entries: the latest published version (stored) or the draft (draft); no system or app interactions",
          querystring: CatalogQuery,
          response: { 200: Type.Array(CatalogEntrySchema), ...errorResponses(400, 401) },
        },
      },
      (req) => interactions.catalog(principalOf(req), req.query),
    );
  }
  app.post(
    '/interactions/:id/fork',
    {
      schema: {
        tags: ['interactions'],
        summary: 'Fork an interaction (draft or version) into a new draft "<name> (fork)" with a free endpoint',
        params: IdParams,
        body: InteractionForkBody,
        response: { 200: InteractionSchema, ...errorResponses(400, 401, 404) },
      },
    },
    (req) => interactions.fork(principalOf(req), req.params.id, (req.body ?? {}) as never),
  );
  app.get(
    '/interactions/:id/forks',
    {
      schema: {
        tags: ['interactions'],
        summary: 'The drafts forked from this interaction',
        params: IdParams,
        response: { 200: Type.Array(InteractionRefSchema), ...errorResponses(401, 404) },
      },
    },
    (req) => interactions.forks(principalOf(req), req.params.id),
  );
};
