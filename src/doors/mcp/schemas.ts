/** The MCP door's route schemas: JSON-RPC 2.0 envelopes (the SDK checks each message in full). */
import { Type } from '@sinclair/typebox';

/** JSON-RPC messages in one POST, at most (the SDK's own bound on a batch). */
const MAX_BATCH = 100;

const Message = Type.Object(
  {
    jsonrpc: Type.Literal('2.0'),
    id: Type.Optional(Type.Union([Type.String({ maxLength: 200 }), Type.Integer()])),
    method: Type.Optional(Type.String({ maxLength: 200 })),
    params: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  },
  { additionalProperties: true, description: 'A JSON-RPC 2.0 request, notification or response' },
);

export const McpBody = Type.Union([Message, Type.Array(Message, { minItems: 1, maxItems: MAX_BATCH })]);

const RpcError = Type.Object({
  jsonrpc: Type.Literal('2.0'),
  id: Type.Union([Type.String(), Type.Integer(), Type.Null()]),
  error: Type.Object({ code: Type.Integer(), message: Type.String(), data: Type.Optional(Type.Unknown()) }),
});

const RpcAnswer = Type.Object(
  {
    jsonrpc: Type.Literal('2.0'),
    id: Type.Union([Type.String(), Type.Integer(), Type.Null()]),
    result: Type.Optional(Type.Unknown()),
    error: Type.Optional(Type.Unknown()),
  },
  { description: 'The JSON-RPC response (an array of them for a batch)' },
);

export const mcpAnswers = {
  200: Type.Union([RpcAnswer, Type.Array(RpcAnswer)]),
  202: Type.Null({ description: 'Notifications and responses only: accepted, no body' }),
  400: RpcError,
  401: RpcError,
  403: RpcError,
  406: RpcError,
  413: RpcError,
  415: RpcError,
  429: RpcError,
};

export const methodNotAllowed = { 405: RpcError };

/** The door is at {origin}/mcp, not under the document's /api/v1: its operations name the origin. */
export const DOOR_SERVERS = [
  { url: '/', description: "The server's origin (MCP clients take {origin}/mcp as the server's URL)" },
];
