/**
 * The OpenAI door's request and answer shapes (TypeBox), for validation and the OpenAPI document.
 * Bodies are open: the door checks each parameter itself (service.ts, messages.ts) so that a
 * refusal names the parameter as OpenAI does, and one it does not apply is refused by name.
 */
import { Type } from '@sinclair/typebox';

const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);

const OpenAIErrorSchema = Type.Object(
  {
    error: Type.Object({
      message: Type.String(),
      type: Type.String({ description: 'invalid_request_error, rate_limit_error, api_error, …' }),
      param: Type.Union([Type.String(), Type.Null()], { description: 'The parameter at fault' }),
      code: Type.Union([Type.String(), Type.Null()]),
    }),
  },
  { description: "OpenAI's error shape (every failed /v1 request)" },
);

const openAIErrors = (...codes: number[]) => Object.fromEntries(codes.map((c) => [c, OpenAIErrorSchema]));

export const ChatCompletionBody = Type.Object(
  {
    model: Type.String({
      description:
        '"<environment name or id>/<model id>" (split at the first /); a bare model id runs on the project\'s default environment',
    }),
    messages: Type.Array(Type.Unknown(), {
      description:
        'system, developer, user (text and image_url parts), assistant (with tool_calls) and tool messages; at most 2048',
    }),
    temperature: Type.Optional(Type.Unknown({ description: '0 to 2; default 1' })),
    top_p: Type.Optional(Type.Unknown()),
    max_tokens: Type.Optional(Type.Unknown()),
    max_completion_tokens: Type.Optional(Type.Unknown()),
    stop: Type.Optional(Type.Unknown({ description: 'A string or up to 4 strings' })),
    seed: Type.Optional(Type.Unknown()),
    presence_penalty: Type.Optional(Type.Unknown()),
    frequency_penalty: Type.Optional(Type.Unknown()),
    n: Type.Optional(Type.Unknown({ description: '1 only (a 400 otherwise)' })),
    stream: Type.Optional(Type.Unknown()),
    stream_options: Type.Optional(Type.Unknown({ description: '{include_usage}: a last chunk with the usage' })),
    tools: Type.Optional(Type.Unknown({ description: 'Function tools, at most 128' })),
    tool_choice: Type.Optional(Type.Unknown({ description: 'none, auto or required' })),
    parallel_tool_calls: Type.Optional(Type.Unknown()),
    response_format: Type.Optional(Type.Unknown({ description: 'text, json_object or json_schema' })),
    user: Type.Optional(Type.Unknown({ description: 'Recorded as the tag user:<value>' })),
    metadata: Type.Optional(Type.Unknown({ description: 'Recorded as key:value tags; at most 16 keys' })),
    store: Type.Optional(Type.Unknown({ description: 'Accepted; every call is stored as a run' })),
  },
  { additionalProperties: true },
);

const ToolCall = Type.Object({
  id: Type.String(),
  type: Type.Literal('function'),
  function: Type.Object({ name: Type.String(), arguments: Type.String() }),
});

const Usage = Type.Object({
  prompt_tokens: Type.Integer(),
  completion_tokens: Type.Integer(),
  total_tokens: Type.Integer(),
  prompt_tokens_details: Type.Object({ cached_tokens: Type.Integer() }),
  completion_tokens_details: Type.Object({ reasoning_tokens: Type.Integer() }),
});

export const ChatCompletionAnswer = Type.Object(
  {
    id: Type.String({ description: 'chatcmpl-<run id>' }),
    object: Type.Literal('chat.completion'),
    created: Type.Integer(),
    model: Type.String(),
    choices: Type.Array(
      Type.Object({
        index: Type.Integer(),
        message: Type.Object({
          role: Type.Literal('assistant'),
          content: Nullable(Type.String()),
          refusal: Type.Null(),
          tool_calls: Type.Optional(Type.Array(ToolCall)),
        }),
        logprobs: Type.Null(),
        finish_reason: Type.String({ description: 'stop, length, tool_calls or content_filter' }),
      }),
    ),
    usage: Usage,
    system_fingerprint: Type.Null(),
  },
  {
    description:
      'A chat.completion; with stream: true, text/event-stream of chat.completion.chunk objects, then data: [DONE]',
  },
);

export const EmbeddingsBody = Type.Object(
  {
    model: Type.String({ description: '"<environment>/<model id>", or a bare model id on the default environment' }),
    input: Type.Unknown({ description: 'A string or up to 2048 strings' }),
    encoding_format: Type.Optional(Type.Unknown({ description: 'float (default) or base64' })),
    dimensions: Type.Optional(Type.Unknown({ description: 'Not supported (a 400)' })),
    user: Type.Optional(Type.Unknown()),
  },
  { additionalProperties: true },
);

export const EmbeddingsAnswer = Type.Object({
  object: Type.Literal('list'),
  data: Type.Array(
    Type.Object({
      object: Type.Literal('embedding'),
      index: Type.Integer(),
      embedding: Type.Union([Type.Array(Type.Number()), Type.String({ description: 'base64 of float32 values' })]),
    }),
  ),
  model: Type.String(),
  usage: Type.Object({ prompt_tokens: Type.Integer(), total_tokens: Type.Integer() }),
});

export const ModelsAnswer = Type.Object({
  object: Type.Literal('list'),
  data: Type.Array(
    Type.Object({
      id: Type.String({ description: '<environment name>/<model id>' }),
      object: Type.Literal('model'),
      created: Type.Integer(),
      owned_by: Type.String({ description: "The environment's provider" }),
    }),
  ),
});

export const chatErrors = openAIErrors(400, 401, 403, 404, 413, 429, 502);
export const readErrors = openAIErrors(401, 403, 429);
