import { Type } from '@sinclair/typebox';
import { ListParam, OpenObject, PageQuery, RefSchema } from '../http/schemas.ts';
import { RUN_STATUSES } from './model.ts';

export const RunStatusSchema = Type.Union(RUN_STATUSES.map((s) => Type.Literal(s)));

export const RunCreateBody = OpenObject({
  interaction: Type.String({ minLength: 1, description: 'Interaction id (POST /runs) or endpoint selector Name, Name@draft, Name@3, Name@tag (POST /execute)' }),
  stream: Type.Optional(Type.Boolean({ default: false })),
  data: Type.Optional(Type.Unknown({ description: 'Input data for the prompt templates' })),
  tags: Type.Optional(Type.Union([Type.String(), Type.Array(Type.String())], { description: 'Comma-separated string or array' })),
  config: Type.Optional(OpenObject({
    environment: Type.Optional(Type.String()),
    model: Type.Optional(Type.String()),
    temperature: Type.Optional(Type.Number()),
    max_tokens: Type.Optional(Type.Integer()),
    formatter: Type.Optional(Type.Unknown()),
    model_options: Type.Optional(OpenObject({}, { description: 'temperature, max_tokens, top_p, stop; wins over the fields above' })),
  })),
  result_schema: Type.Optional(Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()])),
  parent: Type.Optional(Type.String({ description: 'Id of the parent run (records a child run)' })),
  ttl: Type.Optional(Type.Number({ minimum: 0, description: 'Seconds to keep the run; 0 or absent: forever' })),
});

const TokenUse = Type.Object({
  prompt: Type.Optional(Type.Number()),
  result: Type.Optional(Type.Number()),
  total: Type.Optional(Type.Number()),
});

export const RunSchema = OpenObject({
  id: Type.String(),
  status: RunStatusSchema,
  result: Type.Array(Type.Unknown()),
  parameters: Type.Unknown(),
  interaction: Type.Unknown({ description: 'Id string in the POST answer, expanded object in GET' }),
  environment: Type.Unknown(),
  modelId: Type.Union([Type.String(), Type.Null()]),
  model: Type.Union([Type.String(), Type.Null()]),
  ttl: Type.Number(),
  token_use: TokenUse,
  execution_time: Type.Optional(Type.Number()),
  finish_reason: Type.Optional(Type.String()),
  created_at: Type.String(),
  updated_at: Type.String(),
  account: Type.Unknown(),
  project: Type.Unknown(),
  config: Type.Record(Type.String(), Type.Unknown()),
  error: Type.Optional(Type.Object({ code: Type.String(), message: Type.String(), data: Type.Optional(Type.Unknown()) })),
  tags: Type.Array(Type.String()),
  source: Type.Record(Type.String(), Type.String()),
  prompt: Type.Unknown(),
  parent: Type.Optional(Type.String()),
}, { $id: 'Run' });

export const RunRefSchema = OpenObject({
  id: Type.String(),
  status: RunStatusSchema,
  interaction: RefSchema,
  environment: Type.Union([RefSchema, Type.Null()]),
  modelId: Type.Union([Type.String(), Type.Null()]),
  model: Type.Union([Type.String(), Type.Null()]),
  tags: Type.Array(Type.String()),
  parent: Type.Optional(Type.String()),
  finish_reason: Type.Optional(Type.String()),
  token_use: TokenUse,
  execution_time: Type.Optional(Type.Number()),
  source: Type.Record(Type.String(), Type.String()),
  account: RefSchema,
  project: RefSchema,
  created_at: Type.String(),
  updated_at: Type.String(),
}, { $id: 'RunRef' });

export const RunListQuery = Type.Object({
  ...PageQuery,
  interaction: ListParam('Interaction id(s), comma-separated or repeated'),
  model: ListParam('Model id(s)'),
  environment: ListParam('Environment id(s)'),
  status: ListParam('created, processing, completed or failed'),
  tag: ListParam('Tag(s): a run matches when it has any of them'),
  anchorDate: Type.Optional(Type.String({ description: 'ISO date: anchor of the updated_at filter' })),
  anchorDateDirection: Type.Optional(Type.Union([Type.Literal('before'), Type.Literal('after')], { description: 'after (default): updated_at >= anchorDate; before: updated_at < anchorDate' })),
  parent: ListParam('A parent run id (its children), or false (top-level runs only)'),
}, { additionalProperties: true });

export const StreamQuery = Type.Object({
  access_token: Type.Optional(Type.String({ description: 'The bearer token (EventSource cannot send headers)' })),
  lastEventId: Type.Optional(Type.String()),
}, { additionalProperties: true });
