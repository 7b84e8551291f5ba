import { Type, type TSchema } from '@sinclair/typebox';
import { OpenObject, ShortString, TagList } from '../http/schemas.ts';
import { CONTENT_TYPES, PROMPT_ROLES } from './prompts.ts';

const lit = <T extends readonly string[]>(xs: T) => Type.Union(xs.map((x) => Type.Literal(x)));
const INTERACTION_STATUS_LITERALS = [Type.Literal('draft'), Type.Literal('published'), Type.Literal('archived')];
const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);

export const EnvironmentBody = OpenObject({
  name: Type.Optional(ShortString({ minLength: 1 })),
  provider: Type.Optional(
    Type.String({ description: 'openai, openai_compatible, anthropic, test, … (GET /providers lists them)' }),
  ),
  description: Type.Optional(Nullable(Type.String())),
  endpoint_url: Type.Optional(Nullable(Type.String({ description: 'Base URL of the provider API' }))),
  default_model: Type.Optional(Nullable(Type.String())),
  enabled_models: Type.Optional(Type.Union([Type.Array(Type.Unknown()), Type.Null()])),
  apiKey: Type.Optional(Nullable(Type.String({ description: 'Provider API key; encrypted at rest, never returned' }))),
  api_key: Type.Optional(Nullable(Type.String({ description: 'Alias of apiKey' }))),
  config: Type.Optional(Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()])),
});

export const EnvironmentSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  provider: Type.String(),
  description: Type.Optional(Type.String()),
  endpoint_url: Type.Optional(Type.String()),
  default_model: Type.Optional(Type.String()),
  enabled_models: Type.Array(Type.Unknown()),
  apikey_hint: Type.Optional(Type.String({ description: 'Last characters of the provider key' })),
  has_api_key: Type.Boolean(),
  config: Type.Record(Type.String(), Type.Unknown()),
  account: Type.String(),
  project: Type.String(),
  created_by: Type.String(),
  updated_by: Type.String(),
  created_at: Type.String(),
  updated_at: Type.String(),
});

export const ProviderSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.String(),
  test: Type.Boolean({ description: 'True for the offline test provider' }),
  requires_endpoint_url: Type.Boolean(),
  requires_api_key: Type.Boolean(),
});

export const ModelSchema = OpenObject({
  id: Type.String(),
  name: Type.String(),
  description: Type.Optional(Type.String()),
});

export const PromptBody = OpenObject({
  name: Type.Optional(ShortString({ minLength: 1 })),
  role: Type.Optional(lit(PROMPT_ROLES)),
  content: Type.Optional(Type.String()),
  content_type: Type.Optional(lit(CONTENT_TYPES)),
  description: Type.Optional(Nullable(Type.String())),
  inputSchema: Type.Optional(Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()])),
  tags: Type.Optional(TagList()),
  test_data: Type.Optional(Type.Unknown()),
  expected_edit_revision: Type.Optional(Type.Integer()),
});

export const PromptSchema = OpenObject({
  id: Type.String(),
  name: Type.String(),
  role: lit(PROMPT_ROLES),
  content: Type.String(),
  content_type: lit(CONTENT_TYPES),
  status: Type.String(),
  version: Type.Integer(),
  edit_revision: Type.Integer(),
  tags: Type.Array(Type.String()),
  created_at: Type.String(),
  updated_at: Type.String(),
});

const InlineTemplate = OpenObject({
  id: Type.Optional(Type.String()),
  name: Type.Optional(Type.String()),
  role: Type.Optional(lit(PROMPT_ROLES)),
  content: Type.Optional(Type.String()),
  content_type: Type.Optional(lit(CONTENT_TYPES)),
  inputSchema: Type.Optional(
    Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()], {
      description: "jst: its top-level properties are the template's globals",
    }),
  ),
});

/** Vertesia's CachePolicy (runs/result-cache.ts); `ttl` in seconds. */
const CachePolicySchema = Type.Object(
  {
    type: Type.Union([Type.Literal('cache'), Type.Literal('no_cache'), Type.Literal('cache_and_refresh')]),
    ttl: Type.Optional(
      Type.Number({ minimum: 0, maximum: 31_536_000, description: 'Seconds an answer is kept; 0 or absent: a day' }),
    ),
    varies_on: Type.Optional(
      Type.Array(Type.String({ maxLength: 200 }), {
        maxItems: 50,
        description:
          'Fields of the run data (top-level names or dotted paths) that key the cache besides the rendered prompt',
      }),
    ),
    refresh_probability: Type.Optional(
      Type.Number({
        minimum: 0,
        maximum: 1,
        description: 'cache_and_refresh: the chance that a hit is run again to refresh the answer',
      }),
    ),
  },
  { additionalProperties: false },
);

export const InteractionBody = OpenObject({
  name: Type.Optional(ShortString({ minLength: 1 })),
  endpoint: Type.Optional(Type.String()),
  description: Type.Optional(Nullable(Type.String())),
  status: Type.Optional(Type.String()),
  prompts: Type.Optional(
    Type.Array(
      OpenObject({
        type: Type.Optional(Type.Union([Type.Literal('template'), Type.Literal('chat')])),
        template: Type.Optional(Type.Union([Type.String({ description: 'A prompt template id' }), InlineTemplate])),
        configuration: Type.Optional(Type.Unknown()),
      }),
    ),
  ),
  environment: Type.Optional(Nullable(Type.String({ description: 'Default environment id' }))),
  model: Type.Optional(Nullable(Type.String())),
  model_options: Type.Optional(Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()])),
  result_schema: Type.Optional(Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()])),
  interaction_schema: Type.Optional(Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()])),
  cache_policy: Type.Optional(Type.Union([CachePolicySchema, Type.Null()])),
  temperature: Type.Optional(
    Nullable(Type.Number({ minimum: 0, maximum: 2, description: "Under model_options.temperature and the run's" })),
  ),
  max_tokens: Type.Optional(
    Nullable(
      Type.Integer({ minimum: 1, maximum: 10_000_000, description: "Under model_options.max_tokens and the run's" }),
    ),
  ),
  restriction: Type.Optional(
    Nullable(
      Type.String({
        description:
          'RunDataStorageLevel: STANDARD (what Orrery does: a run stores its parameters, prompt and result); RESTRICTED and DEBUG are refused',
      }),
    ),
  ),
  test_data: Type.Optional(Type.Unknown()),
  tags: Type.Optional(Type.Array(Type.String())),
  visibility: Type.Optional(Type.Union([Type.Literal('public'), Type.Literal('private')])),
  expected_edit_revision: Type.Optional(Type.Integer()),
});

export const InteractionSchema = OpenObject({
  id: Type.String(),
  name: Type.String(),
  endpoint: Type.String(),
  status: Type.String(),
  version: Type.Integer(),
  edit_revision: Type.Integer(),
  tags: Type.Array(Type.String()),
  prompts: Type.Array(OpenObject({ id: Type.String(), type: Type.String(), template: Type.Optional(OpenObject({})) })),
  created_at: Type.String(),
  updated_at: Type.String(),
});

export const InteractionRefSchema = OpenObject({
  id: Type.String(),
  name: Type.String(),
  endpoint: Type.String(),
  status: Type.String(),
  version: Type.Integer(),
  tags: Type.Array(Type.String()),
  updated_at: Type.String(),
});

export const PublishBody = Type.Optional(
  OpenObject({
    visibility: Type.Optional(Type.Union([Type.Literal('public'), Type.Literal('private')])),
    tags: Type.Optional(Type.Array(Type.String(), { description: 'Tags naming this version (Name@tag)' })),
  }),
);

export const PromptRenderSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  role: Type.String(),
  content_type: Type.String(),
  rendered: Type.String({ description: 'The prompt text' }),
});

/** `POST /prompts/render`: a template not (yet) saved, as the console's playground edits it. */
export const PromptDraftRenderBody = Type.Object(
  {
    content: Type.String({
      maxLength: 256 * 1024,
      description: 'The template text (at most 256 KiB, as a stored prompt)',
    }),
    content_type: lit(CONTENT_TYPES),
    role: Type.Optional(lit(PROMPT_ROLES)),
    name: Type.Optional(Type.String({ maxLength: 200 })),
    inputSchema: Type.Optional(Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()])),
    data: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'The variables' })),
  },
  { additionalProperties: false },
);

export const PromptDraftRenderSchema = Type.Object({
  name: Type.String(),
  role: Type.String(),
  content_type: Type.String(),
  rendered: Type.String({ description: 'The prompt text' }),
});

/* The official client's further interaction, prompt and environment methods (issue 24). */

const Bounded = (description = 'At most 1,000') =>
  Type.Optional(Type.Integer({ minimum: 0, maximum: 1000, description }));
const StringList = (description: string) =>
  Type.Optional(Type.Array(Type.String({ maxLength: 1000 }), { maxItems: 1000, description }));

export const InteractionNameSchema = Type.Object({ id: Type.String(), name: Type.String() });

/** InteractionSearchQuery, as a query string (listTags) or inside a body (computeFacets). */
export const InteractionSearchQuery = OpenObject({
  name: Type.Optional(
    Type.String({ maxLength: 1000, description: 'Case-insensitive substring of the name or endpoint' }),
  ),
  status: Type.Optional(
    Type.Union([Type.String(), Type.Array(Type.String(), { maxItems: 10 })], {
      description: 'draft, published, archived; without it the drafts (listTags: every row)',
    }),
  ),
  tags: Type.Optional(
    Type.Union([Type.String(), Type.Array(Type.String(), { maxItems: 1000 })], { description: 'Any of these tags' }),
  ),
  model: Type.Optional(Type.String()),
  environment: Type.Optional(Type.String({ description: 'An environment id' })),
  limit: Bounded('Tags to answer (listTags), default 100, at most 1,000'),
  offset: Type.Optional(Type.Integer({ minimum: 0 })),
});

export const InteractionTagsSchema = Type.Object({
  tag: Type.String(),
  count: Type.Integer(),
  interactions: Type.Array(InteractionRefSchema),
});

export const FacetsBody = (fields: string, query: ReturnType<typeof OpenObject>) =>
  Type.Object({
    facets: Type.Array(
      Type.Object({ name: Type.String({ minLength: 1, maxLength: 200 }), field: Type.String({ description: fields }) }),
      { minItems: 1, maxItems: 20 },
    ),
    query: Type.Optional(query),
  });

export const FacetsAnswer = Type.Object(
  { total: Type.Integer({ description: 'How many rows the query matched' }) },
  {
    additionalProperties: Type.Array(
      Type.Object({ _id: Type.Union([Type.String(), Type.Number(), Type.Null()]), count: Type.Integer() }),
    ),
    description: '{<facet name>: [{_id, count}], total}',
  },
);

export const EndpointQueryBody = OpenObject({
  limit: Bounded('Default 100, at most 1,000'),
  offset: Type.Optional(Type.Integer({ minimum: 0 })),
  status: Type.Optional(
    Type.Union(INTERACTION_STATUS_LITERALS, {
      description: "published: each interaction's latest version (or `version`); without it the drafts",
    }),
  ),
  visibility: Type.Optional(Type.Union([Type.Literal('public'), Type.Literal('private')])),
  version: Type.Optional(Type.Integer({ minimum: 0 })),
  tags: StringList('Any of these tags'),
  includes: StringList('Only these endpoints'),
  excludes: StringList('Not these endpoints (ignored when includes is given)'),
  include_params_schema: Type.Optional(Type.Boolean()),
  include_result_schema: Type.Optional(Type.Boolean()),
});

export const InteractionEndpointSchema = OpenObject({
  id: Type.String(),
  name: Type.String(),
  endpoint: Type.String(),
  description: Type.Optional(Type.String()),
  status: Type.String(),
  visibility: Type.String(),
  version: Type.Integer(),
  tags: Type.Array(Type.String()),
  params_schema: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  result_schema: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
});

export const ResolvedExecutionSchema = Type.Object({
  id: Type.String(),
  name: Type.String({ description: 'The endpoint' }),
  version: Type.Integer(),
  status: Type.String(),
  tags: Type.Array(Type.String()),
  resolved: Type.Object({
    environment: Type.Object({ id: Type.String(), name: Type.String(), provider: Type.String() }),
    model: Type.Optional(Type.String()),
    model_source: Type.String({ description: 'config, interaction or environmentDefault' }),
  }),
});

export const ExportBody = OpenObject({
  name: Type.Optional(Type.String({ maxLength: 1000, description: 'Only the interaction with this name or endpoint' })),
  tags: StringList('Only versions carrying any of these tags'),
  versions: Type.Optional(
    Type.Array(Type.Union([Type.Integer({ minimum: 0 }), Type.Literal('draft'), Type.Literal('latest')]), {
      maxItems: 100,
      description: 'Default ["latest"]: the newest published version, or the draft when none is',
    }),
  ),
});

export const ExportedInteractionSchema = OpenObject({
  id: Type.String(),
  name: Type.String(),
  endpoint: Type.String(),
  status: Type.String(),
  version: Type.Integer(),
  tags: Type.Array(Type.String()),
  updated_at: Type.String(),
  result_schema: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  prompts: Type.Array(
    OpenObject({
      id: Type.String(),
      type: Type.String(),
      template: Type.Optional(
        OpenObject({ id: Type.String(), inputSchema: Type.Optional(Type.Record(Type.String(), Type.Unknown())) }),
      ),
    }),
  ),
});

export const InteractionForkBody = Type.Optional(
  OpenObject({
    keepTags: Type.Optional(Type.Boolean()),
    forkPrompts: Type.Optional(
      Type.Boolean({ description: 'Fork the prompt templates it references too (else the fork shares them)' }),
    ),
    targetProject: Type.Optional(Type.String({ description: "Only this project: forks stay in the caller's project" })),
  }),
);

export const CatalogQuery = Type.Object({
  status: Type.Optional(Type.String({ description: 'draft or published' })),
  tag: Type.Optional(Type.String()),
});

export const CatalogEntrySchema = Type.Object({
  type: Type.Union([Type.Literal('stored'), Type.Literal('draft')]),
  id: Type.String(),
  name: Type.String({ description: 'The endpoint' }),
  version: Type.Integer(),
  published: Type.Boolean(),
});

export const PromptRefSchema = OpenObject({
  id: Type.String(),
  name: Type.String(),
  description: Type.Optional(Type.String()),
  role: Type.String(),
  version: Type.Integer(),
  status: Type.String(),
  content_type: Type.String(),
  tags: Type.Array(Type.String()),
  created_at: Type.String(),
  updated_at: Type.String(),
});

export const PromptForkBody = Type.Optional(
  OpenObject({
    keepTags: Type.Optional(Type.Boolean()),
    targetProject: Type.Optional(Type.String({ description: "Only this project: forks stay in the caller's project" })),
  }),
);

export const PromptSearchQuery = OpenObject({
  name: Type.Optional(Type.String({ maxLength: 1000, description: 'Case-insensitive substring of the name' })),
  role: Type.Optional(Type.String()),
  tags: StringList('Any of these tags'),
});

export const PromptUsageSchema = Type.Object({
  prompt: Type.String(),
  interactions: Type.Array(
    Type.Object({
      id: Type.String({ description: 'The draft' }),
      name: Type.String(),
      versions: Type.Array(Type.Object({ version: Type.Integer() })),
    }),
  ),
});

export const EnableModelBody = Type.Object({
  model_id: Type.String({ minLength: 1, maxLength: 1000, description: 'A model id the environment lists' }),
});

export const EnvironmentConfigBody = OpenObject({
  enabled_models: Type.Optional(
    Type.Array(Type.Unknown(), {
      maxItems: 1000,
      description: 'Replaces the enabled models: models {id, name?} or ids',
    }),
  ),
  config: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'Merged into the stored config' })),
});

export const EmbeddingsBody = OpenObject({
  inputs: Type.Array(
    OpenObject({
      type: Type.String({ description: 'text (image, video and audio are refused)' }),
      text: Type.Optional(Type.String({ maxLength: 100_000 })),
    }),
    { minItems: 1, maxItems: 256 },
  ),
  model: Type.Optional(
    Type.String({
      maxLength: 1000,
      description:
        'The embedding model (required for openai and openai_compatible; a test environment uses the built-in one)',
    }),
  ),
  embedding_type: Type.Optional(Type.String()),
  task_type: Type.Optional(Type.String()),
  dimensions: Type.Optional(Type.Integer({ description: 'Not supported: refused' })),
});

export const EmbeddingsAnswerSchema = Type.Object({
  model: Type.String(),
  results: Type.Array(
    Type.Object({ outputs: Type.Array(Type.Object({ values: Type.Array(Type.Number()), modality: Type.String() })) }),
  ),
});
