import { Type } from '@sinclair/typebox';
import { KEY_ROLES } from './principal.ts';
import { RefSchema } from '../http/schemas.ts';

export const TokenIssueBody = Type.Object({
  type: Type.Optional(Type.Literal('apikey')),
  key: Type.Optional(Type.String({ description: 'The API key; if given it must be the bearer key' })),
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

export const ProjectUpdateBody = Type.Object({
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  description: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  embeddings: Type.Optional(Type.Union([Type.Object({
    environment: Type.Optional(Type.Union([Type.String(), Type.Null()], { description: 'An openai or openai_compatible environment id; null for the built-in orrery-hashed-ngrams-384 embedder' })),
    model: Type.Optional(Type.String({ description: 'The embedding model (required with an environment)' })),
    runs: Type.Optional(Type.Boolean({ description: 'Compute input_embedding / result_embedding of runs (default true)' })),
  }, { additionalProperties: true }), Type.Null()], { description: "The project's embedding provider; null resets to the built-in embedder" })),
}, { additionalProperties: true });

export const ProjectSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  namespace: Type.String(),
  description: Type.Optional(Type.String()),
  account: Type.String(),
  settings: Type.Record(Type.String(), Type.Unknown()),
  created_at: Type.String(),
  updated_at: Type.String(),
});

export const KeyRoleSchema = Type.Union(KEY_ROLES.map((r) => Type.Literal(r)));

export const ApiKeyCreateBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 200 }),
  role: Type.Optional(KeyRoleSchema),
  project: Type.Optional(Type.String({ description: 'Project id; defaults to the caller\'s project' })),
  expires_at: Type.Optional(Type.String({ description: 'ISO 8601 date-time after which the key stops working' })),
});

export const ApiKeySchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  role: KeyRoleSchema,
  project: RefSchema,
  account: Type.String(),
  hint: Type.String({ description: 'The last characters of the key, to recognise it' }),
  expires_at: Type.Union([Type.String(), Type.Null()]),
  created_by: Type.String(),
  created_at: Type.String(),
  value: Type.Optional(Type.String({ description: 'The secret (sk-…); only in the answer of POST /apikeys' })),
});
