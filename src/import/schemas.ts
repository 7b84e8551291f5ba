/**
 * The body of POST /import/runs. Every field the service reads has its type here, so a run of the
 * wrong shape is refused with a 400 naming the field instead of failing in the store. Nullable
 * where the official client answers null; extra fields are allowed (a newer source may add some).
 */
import { Type } from '@sinclair/typebox';
import { OpenObject, TagList } from '../http/schemas.ts';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);
const Str = Type.String({ maxLength: 1000 });
const Num = Type.Number();

export const ImportedRunSchema = OpenObject({
  status: Type.String(),
  interaction: OpenObject({
    id: Type.String({ minLength: 1 }),
    name: Type.Optional(Str),
    endpoint: Type.Optional(Str),
    version: Type.Optional(Num),
  }),
  environment: Type.Optional(
    Nullable(OpenObject({ id: Type.String(), name: Type.Optional(Str), provider: Type.Optional(Str) })),
  ),
  modelId: Type.Optional(Nullable(Str)),
  parent: Type.Optional(Nullable(Str)),
  finish_reason: Type.Optional(Nullable(Str)),
  execution_time: Type.Optional(Nullable(Num)),
  token_use: Type.Optional(
    Nullable(
      OpenObject({
        prompt: Type.Optional(Nullable(Num)),
        result: Type.Optional(Nullable(Num)),
        total: Type.Optional(Nullable(Num)),
      }),
    ),
  ),
  tags: Type.Optional(TagList()),
  result: Type.Optional(Type.Unknown()),
  parameters: Type.Optional(Type.Unknown()),
  prompt: Type.Optional(Type.Unknown()),
  config: Type.Optional(OpenObject({})),
  error: Type.Optional(
    Nullable(OpenObject({ code: Type.String(), message: Type.String(), data: Type.Optional(Type.Unknown()) })),
  ),
  source: Type.Optional(Nullable(OpenObject({}))),
  ttl: Type.Optional(Nullable(Num)),
  result_schema: Type.Optional(Nullable(OpenObject({}))),
  cost: Type.Optional(Type.Unknown()),
  tool_use: Type.Optional(
    Type.Array(
      OpenObject({ id: Type.String({ minLength: 1, maxLength: 1000 }), tool_name: Str, tool_input: Type.Unknown() }),
      { maxItems: 1000 },
    ),
  ),
  previous_run: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 100 }))),
  created_by: Type.Optional(Str),
  created_at: Type.String(),
  updated_at: Type.String(),
});
