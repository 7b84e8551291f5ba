import { Type, type TSchema } from '@sinclair/typebox';
import { KEY_ROLE_INPUTS, KEY_ROLES } from './principal.ts';
import { LimitsSchema } from '../limits/schemas.ts';
import { RefSchema } from '../http/schemas.ts';

export const TokenIssueBody = Type.Object({
  type: Type.Optional(Type.Literal('apikey')),
  key: Type.Optional(Type.String({ description: 'The API key; if given it must be the bearer key' })),
  project: Type.Optional(
    Type.String({
      maxLength: 100,
      description:
        "Issue the token for another project of the account (admin keys only: how the console switches project); default: the key's own project",
    }),
  ),
});

export const TokenSchema = Type.Object({
  token: Type.String({ description: 'A JWT (HS256) with exp, account, project and endpoints' }),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer({ description: 'Seconds until the token expires' }),
});

export const ProjectCreateBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 200 }),
  namespace: Type.Optional(Type.String({ description: 'Defaults to a slug of the name' })),
  description: Type.Optional(Type.String()),
});

export const ProjectUpdateBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    description: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    embeddings: Type.Optional(
      Type.Union(
        [
          Type.Object(
            {
              environment: Type.Optional(
                Type.Union([Type.String(), Type.Null()], {
                  description:
                    'An openai or openai_compatible environment id; null for the built-in orrery-hashed-ngrams-384 embedder',
                }),
              ),
              model: Type.Optional(Type.String({ description: 'The embedding model (required with an environment)' })),
              runs: Type.Optional(
                Type.Boolean({ description: 'Compute input_embedding / result_embedding of runs (default true)' }),
              ),
            },
            { additionalProperties: true },
          ),
          Type.Null(),
        ],
        { description: "The project's embedding provider; null resets to the built-in embedder" },
      ),
    ),
  },
  { additionalProperties: true },
);

export const ProjectSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  namespace: Type.String(),
  description: Type.Optional(Type.String()),
  account: Type.String(),
  settings: Type.Record(Type.String(), Type.Unknown()),
  configuration: Type.Record(Type.String(), Type.Unknown(), {
    description: "The official client's project configuration (PUT /projects/:id/configuration)",
  }),
  created_at: Type.String(),
  updated_at: Type.String(),
});

/** `limits` of a key on input: checked by limitsOf (src/limits), which names what to fix. */
const KeyLimitsInput = Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()], {
  description:
    '{requests_per_minute, tokens_per_minute, cost_per_day} (each optional; null: none), or null for no limits of its own',
});

const KeyRoleSchema = Type.Union(
  KEY_ROLES.map((r) => Type.Literal(r)),
  {
    description: 'admin (every project of the account), developer, executor, reader or auditor: see the README, Roles',
  },
);
/** On input `member` is accepted too: the developer role's name before roles existed. */
const KeyRoleInputSchema = Type.Union(
  KEY_ROLE_INPUTS.map((r) => Type.Literal(r)),
  { description: 'admin, developer (the default; member is an alias), executor, reader or auditor' },
);

export const ApiKeyCreateBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 200 }),
  role: Type.Optional(KeyRoleInputSchema),
  project: Type.Optional(Type.String({ description: "Project id; defaults to the caller's project" })),
  expires_at: Type.Optional(Type.String({ description: 'ISO 8601 date-time after which the key stops working' })),
  limits: Type.Optional(KeyLimitsInput),
});

export const ApiKeySchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  role: KeyRoleSchema,
  project: RefSchema,
  account: Type.String(),
  hint: Type.String({ description: 'The last characters of the key, to recognise it' }),
  expires_at: Type.Union([Type.String(), Type.Null()]),
  enabled: Type.Boolean({ description: 'false: the key is refused at authentication (401) until enabled again' }),
  created_by: Type.String(),
  created_at: Type.String(),
  limits: Type.Union([LimitsSchema, Type.Null()], { description: "The key's own rate limits and quotas" }),
  value: Type.Optional(Type.String({ description: 'The secret (sk-…); only in the answer of POST /apikeys' })),
});

export const ApiKeyUpdateBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    role: Type.Optional(KeyRoleInputSchema),
    expires_at: Type.Optional(
      Type.Union([Type.String(), Type.Null()], {
        description: 'ISO 8601 date-time in the future; null: never expires',
      }),
    ),
    enabled: Type.Optional(
      Type.Boolean({ description: 'false disables the key (refused with 401), true enables it again' }),
    ),
    limits: Type.Optional(KeyLimitsInput),
  },
  {
    additionalProperties: true,
    description: "The official client's UpdateApiKeyPayload; fields it has that Orrery does not keep are ignored",
  },
);

export const ApiKeyQuery = Type.Object(
  {
    withValue: Type.Optional(
      Type.Union([Type.Boolean(), Type.String()], {
        description: 'true is refused: secrets are stored hashed and shown only at creation',
      }),
    ),
  },
  { additionalProperties: true },
);

const orNull = <T extends TSchema>(t: T) => Type.Optional(Type.Union([t, Type.Null()]));
const Obj = (description: string) => Type.Record(Type.String(), Type.Unknown(), { description });

export const ProjectConfigurationBody = Type.Object(
  {
    default_environment: orNull(Type.String({ maxLength: 1000 })),
    default_model: orNull(Type.String({ maxLength: 1000 })),
    human_context: orNull(Type.String({ maxLength: 100_000 })),
    defaults: orNull(Obj('Default models by task')),
    default_visibility: orNull(Type.String({ maxLength: 100 })),
    sync_content_properties: orNull(Type.Boolean()),
    embeddings: orNull(
      Obj('{text, image, properties}: recorded; the embedder Orrery uses is set by PUT /projects/:id {embeddings}'),
    ),
    datacenter: orNull(Type.String({ maxLength: 1000 })),
    storage_bucket: orNull(Type.String({ maxLength: 1000 })),
    agent_streaming_enabled: orNull(Type.Boolean()),
    agent: orNull(Obj('Agent runtime configuration')),
    indexing: orNull(Obj('Indexing configuration')),
    intake: orNull(Obj('Content intake configuration')),
    main_language: orNull(Type.String({ maxLength: 100 })),
    browser_use: orNull(Obj('browser_use defaults')),
    pdf_template_object_id: orNull(Type.String({ maxLength: 1000 })),
  },
  {
    additionalProperties: true,
    description:
      "The official client's UpdateProjectConfigurationPayload: keys merged into the stored configuration, null clears one; another key is a 400",
  },
);

export const ProjectConfigurationSchema = Type.Object(
  {
    embeddings: Type.Record(Type.String(), Type.Unknown()),
  },
  { additionalProperties: true, description: 'The whole configuration after the update' },
);

export const AccountSchema = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    email_domains: Type.Array(Type.String()),
    onboarding: Type.Object({ completed: Type.Boolean() }),
    datacenter: Type.String({ description: 'Always "local"' }),
    account_type: Type.String(),
    billing: Type.Object({ method: Type.String() }),
    created_by: Type.String(),
    updated_by: Type.String(),
    created_at: Type.String(),
    updated_at: Type.String(),
  },
  { description: "The key's account, in the official client's Account shape" },
);

export const AccountProjectsSchema = Type.Object(
  {
    data: Type.Array(Type.Object({ id: Type.String(), name: Type.String(), account: Type.String() })),
  },
  { description: 'The projects the key may use: every project of the account for an admin key, its own for a member' },
);
