/**
 * The Anthropic door's request and answer shapes (TypeBox), for validation and the OpenAPI
 * document. Bodies are open: the door checks each field itself (service.ts, messages.ts) so that a
 * refusal names the field as Anthropic does, and one it does not apply is refused by name.
 */
import { Type } from '@sinclair/typebox';

const AnthropicErrorSchema = Type.Object(
  {
    type: Type.Literal('error'),
    error: Type.Object({
      type: Type.String({ description: 'invalid_request_error, authentication_error, rate_limit_error, api_error, …' }),
      message: Type.String(),
    }),
  },
  { description: "Anthropic's error shape (every failed request of the Anthropic door)" },
);

const anthropicErrors = (...codes: number[]) => Object.fromEntries(codes.map((c) => [c, AnthropicErrorSchema]));

const fields = {
  model: Type.String({
    description:
      '"<environment name or id>/<model id>" (split at the first /); a bare model id runs on the project\'s default environment',
  }),
  messages: Type.Array(Type.Unknown(), {
    description:
      'user and assistant turns: text, image, document, tool_use, tool_result, thinking and redacted_thinking blocks; at most 2048',
  }),
  system: Type.Optional(Type.Unknown({ description: 'A string or text blocks' })),
  tools: Type.Optional(Type.Unknown({ description: 'Custom tools {name, description, input_schema}, at most 128' })),
  tool_choice: Type.Optional(Type.Unknown({ description: '{type: auto | any | none}' })),
  thinking: Type.Optional(
    Type.Unknown({
      description:
        '{type: "enabled", budget_tokens} (at least 1024, less than max_tokens) or {type: "disabled"}; the answer carries thinking blocks with their signature',
    }),
  ),
};

export const MessagesBody = Type.Object(
  {
    ...fields,
    max_tokens: Type.Unknown({ description: 'Required: the most tokens to answer' }),
    metadata: Type.Optional(Type.Unknown({ description: '{user_id}: recorded as the tag user:<id>' })),
    stop_sequences: Type.Optional(Type.Unknown({ description: 'At most 16 strings' })),
    stream: Type.Optional(Type.Unknown()),
    temperature: Type.Optional(Type.Unknown({ description: '0 to 1; default 1' })),
    top_p: Type.Optional(Type.Unknown()),
    top_k: Type.Optional(Type.Unknown()),
  },
  { additionalProperties: true },
);

export const CountTokensBody = Type.Object(fields, { additionalProperties: true });

const Usage = Type.Object({
  input_tokens: Type.Integer(),
  output_tokens: Type.Integer(),
  cache_creation_input_tokens: Type.Integer(),
  cache_read_input_tokens: Type.Integer(),
});

export const MessageAnswer = Type.Object(
  {
    id: Type.String({ description: 'msg_<run id>' }),
    type: Type.Literal('message'),
    role: Type.Literal('assistant'),
    model: Type.String(),
    content: Type.Array(
      Type.Union([
        Type.Object({ type: Type.Literal('text'), text: Type.String() }),
        Type.Object({ type: Type.Literal('thinking'), thinking: Type.String(), signature: Type.String() }),
        Type.Object({ type: Type.Literal('redacted_thinking'), data: Type.String() }),
        Type.Object({
          type: Type.Literal('tool_use'),
          id: Type.String(),
          name: Type.String(),
          input: Type.Record(Type.String(), Type.Unknown()),
        }),
      ]),
    ),
    stop_reason: Type.String({ description: 'end_turn, max_tokens, tool_use or refusal' }),
    stop_sequence: Type.Null(),
    usage: Usage,
  },
  {
    description:
      'A message; with stream: true, text/event-stream of message_start, content_block_* , message_delta and message_stop events',
  },
);

export const CountTokensAnswer = Type.Object({
  input_tokens: Type.Integer({ description: 'An estimate (o200k_base for text, flat figures for images and PDFs)' }),
});

export const messageErrors = anthropicErrors(400, 401, 403, 404, 413, 429, 502);
