import { Type } from '@sinclair/typebox';
import { OpenObject, ShortString, TagList } from '../http/schemas.ts';
import { CONTENT_TYPES, PROMPT_ROLES } from './prompts.ts';

const lit = <T extends readonly string[]>(xs: T) => Type.Union(xs.map((x) => Type.Literal(x)));
const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);

export const EnvironmentBody = OpenObject({
  name: Type.Optional(ShortString({ minLength: 1 })),
  provider: Type.Optional(Type.String({ description: 'openai, openai_compatible, anthropic, test, … (GET /providers lists them)' })),
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

export const ModelSchema = OpenObject({ id: Type.String(), name: Type.String(), description: Type.Optional(Type.String()) });

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
  inputSchema: Type.Optional(Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()], { description: 'jst: its top-level properties are the template\'s globals' })),
});

/** Vertesia's CachePolicy (runs/result-cache.ts); `ttl` in seconds. */
export const CachePolicySchema = Type.Object({
  type: Type.Union([Type.Literal('cache'), Type.Literal('no_cache'), Type.Literal('cache_and_refresh')]),
  ttl: Type.Optional(Type.Number({ minimum: 0, maximum: 31_536_000, description: 'Seconds an answer is kept; 0 or absent: a day' })),
  varies_on: Type.Optional(Type.Array(Type.String({ maxLength: 200 }), { maxItems: 50, description: 'Fields of the run data (top-level names or dotted paths) that key the cache besides the rendered prompt' })),
  refresh_probability: Type.Optional(Type.Number({ minimum: 0, maximum: 1, description: 'cache_and_refresh: the chance that a hit is run again to refresh the answer' })),
}, { additionalProperties: false });

export const InteractionBody = OpenObject({
  name: Type.Optional(ShortString({ minLength: 1 })),
  endpoint: Type.Optional(Type.String()),
  description: Type.Optional(Nullable(Type.String())),
  status: Type.Optional(Type.String()),
  prompts: Type.Optional(Type.Array(OpenObject({
    type: Type.Optional(Type.Union([Type.Literal('template'), Type.Literal('chat')])),
    template: Type.Optional(Type.Union([Type.String({ description: 'A prompt template id' }), InlineTemplate])),
    configuration: Type.Optional(Type.Unknown()),
  }))),
  environment: Type.Optional(Nullable(Type.String({ description: 'Default environment id' }))),
  model: Type.Optional(Nullable(Type.String())),
  model_options: Type.Optional(Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()])),
  result_schema: Type.Optional(Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()])),
  interaction_schema: Type.Optional(Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()])),
  cache_policy: Type.Optional(Type.Union([CachePolicySchema, Type.Null()])),
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

export const PublishBody = Type.Optional(OpenObject({
  visibility: Type.Optional(Type.Union([Type.Literal('public'), Type.Literal('private')])),
  tags: Type.Optional(Type.Array(Type.String(), { description: 'Tags naming this version (Name@tag)' })),
}));

export const PromptRenderSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  role: Type.String(),
  content_type: Type.String(),
  rendered: Type.String({ description: 'The prompt text' }),
});
