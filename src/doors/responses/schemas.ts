/**
 * The Responses API's request and answer shapes (TypeBox), for validation and the OpenAPI document.
 * The body is open: the door checks each parameter itself (service.ts, input.ts) so that a refusal
 * names the parameter as OpenAI does, and one it does not apply is refused by name.
 */
import { Type } from '@sinclair/typebox';
import { chatErrors } from '../openai/schemas.ts';

export const ResponsesBody = Type.Object(
  {
    model: Type.String({
      description:
        '"<environment name or id>/<model id>" (split at the first /); a bare model id runs on the project\'s default environment',
    }),
    input: Type.Unknown({
      description: 'A string, or message, function_call and function_call_output items; at most 2048',
    }),
    instructions: Type.Optional(Type.Unknown({ description: 'A system message for this response (not carried over)' })),
    previous_response_id: Type.Optional(Type.Unknown({ description: 'resp_<run id>: continue from that run' })),
    store: Type.Optional(Type.Unknown({ description: 'Accepted and recorded in the run; Orrery stores every call' })),
    stream: Type.Optional(Type.Unknown()),
    temperature: Type.Optional(Type.Unknown({ description: '0 to 2; default 1' })),
    top_p: Type.Optional(Type.Unknown()),
    max_output_tokens: Type.Optional(Type.Unknown()),
    tools: Type.Optional(
      Type.Unknown({ description: 'Function tools {type: "function", name, parameters}, at most 128' }),
    ),
    tool_choice: Type.Optional(Type.Unknown({ description: 'none, auto or required' })),
    text: Type.Optional(Type.Unknown({ description: '{format: text | json_object | json_schema}' })),
    metadata: Type.Optional(Type.Unknown({ description: 'Recorded as key:value tags; at most 16 keys' })),
    user: Type.Optional(Type.Unknown({ description: 'Recorded as the tag user:<value>' })),
  },
  { additionalProperties: true },
);

export const ResponseAnswer = Type.Object(
  {
    id: Type.String({ description: 'resp_<run id>' }),
    object: Type.Literal('response'),
    created_at: Type.Integer(),
    status: Type.String({ description: 'completed or incomplete' }),
    model: Type.String(),
    output: Type.Array(Type.Unknown({ description: 'message and function_call items' })),
    usage: Type.Unknown(),
  },
  {
    additionalProperties: true,
    description: 'A response; with stream: true, text/event-stream of response.created … response.completed events',
  },
);

export const responseErrors = { ...chatErrors, 409: chatErrors[400] };
