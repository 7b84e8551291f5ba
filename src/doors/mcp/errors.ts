/**
 * Errors on the MCP door in MCP's own shapes. Inside the protocol: a JSON-RPC error for a request
 * the door cannot take (an unknown tool or URI, a missing resource, a role without the
 * permission), and a tool result with `isError` for a call that went wrong (bad arguments, a
 * failed run), which the model reads. At the HTTP level (a key refused, a body too large, a rate
 * limit): the HTTP status with a JSON-RPC error body, as the SDK's transport answers its own.
 */
import { OrreryError, OrreryErrorWithHeaders } from '../../util/errors.ts';
import { boundErrorMessage } from '../../util/error-message.ts';

/** JSON-RPC's codes, as the SDK's ErrorCode names them. */
const ErrorCode = { ParseError: -32700, InvalidRequest: -32600, InvalidParams: -32602, InternalError: -32603 } as const;

/**
 * A JSON-RPC error inside the protocol, as the SDK's McpError makes it (the same code, message and
 * data): the SDK's server answers any error with a numeric `code` that way. The door's own class
 * keeps the SDK (about 200 files, with zod) out of a server until its first MCP request.
 */
export class McpProtocolError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(`MCP error ${code}: ${message}`);
    this.name = 'McpError';
  }
}

/** The internal error of a failure of Orrery's own, answered without its details. */
export const internalProtocolError = () =>
  new McpProtocolError(ErrorCode.InternalError, 'the server had an error while processing the request');

/** MCP's code for a resource that does not exist. */
const RESOURCE_NOT_FOUND = -32002;
/** The door's code for a request the key's role may not make (the server-error range of JSON-RPC). */
const FORBIDDEN = -32003;
/** JSON-RPC's generic server error, which the SDK's transport uses for HTTP-level refusals. */
const SERVER_ERROR = -32000;

/** JSON-RPC errors the door raises inside the protocol. */
export const McpRefusal = {
  invalidParams: (message: string, data?: unknown) => new McpProtocolError(ErrorCode.InvalidParams, message, data),
  notFound: (uri: string, message: string) => new McpProtocolError(RESOURCE_NOT_FOUND, message, { uri }),
  forbidden: (message: string) => new McpProtocolError(FORBIDDEN, message),
};

/** A body that is not JSON (the door's own JSON parser raises it): JSON-RPC's parse error. */
export class JsonRpcParseError extends OrreryError {
  constructor(message: string) {
    super('parse_error', 400, `Parse error: ${message}`);
  }
}

export interface JsonRpcErrorBody {
  jsonrpc: '2.0';
  id: null;
  error: { code: number; message: string; data?: unknown };
}

const rpcError = (code: number, message: string, data?: unknown): JsonRpcErrorBody => ({
  jsonrpc: '2.0',
  id: null,
  error: { code, message, ...(data === undefined ? {} : { data }) },
});

/** Any error raised before the protocol (authentication, permission, limits, the body): its HTTP answer. */
export function toMcpHttpError(err: unknown): {
  status: number;
  headers: Record<string, string>;
  body: JsonRpcErrorBody;
} {
  if (err instanceof OrreryError) {
    const headers: Record<string, string> = err instanceof OrreryErrorWithHeaders ? { ...err.headers } : {};
    const retryAfter = (err as { retryAfterSeconds?: unknown }).retryAfterSeconds;
    if (typeof retryAfter === 'number') headers['retry-after'] = String(retryAfter);
    // RFC 6750: a request without a usable token is told how to authenticate.
    if (err.status === 401) headers['www-authenticate'] = 'Bearer realm="orrery"';
    if (err instanceof JsonRpcParseError)
      return { status: 400, headers, body: rpcError(ErrorCode.ParseError, boundErrorMessage(err.message)) };
    const message =
      err.status >= 500 ? 'the server had an error while processing the request' : boundErrorMessage(err.message);
    return {
      status: err.status,
      headers,
      body: rpcError(SERVER_ERROR, message, { status: err.status, code: err.code }),
    };
  }
  const e = err as { statusCode?: number; code?: string; message?: string; validation?: unknown } | null;
  const status = e?.statusCode ?? 500;
  if (e?.validation)
    return {
      status: 400,
      headers: {},
      body: rpcError(
        ErrorCode.InvalidRequest,
        `Invalid Request: ${boundErrorMessage(e.message ?? 'not a JSON-RPC 2.0 message')}`,
      ),
    };
  if (status >= 400 && status < 500) {
    const message =
      e?.code === 'FST_ERR_CTP_BODY_TOO_LARGE'
        ? `the request body is larger than the MCP door accepts (${MCP_BODY_LIMIT} bytes)`
        : e?.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE'
          ? 'Unsupported Media Type: Content-Type must be application/json'
          : boundErrorMessage(e?.message ?? 'bad request');
    return { status, headers: {}, body: rpcError(SERVER_ERROR, message, { status }) };
  }
  return {
    status: 500,
    headers: {},
    body: rpcError(ErrorCode.InternalError, 'the server had an error while processing the request'),
  };
}

/** The largest JSON-RPC body the door reads (docs/reference/limits.md): the SDK's own default. */
export const MCP_BODY_LIMIT = 4 * 1024 * 1024;
