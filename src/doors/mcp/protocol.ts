/**
 * One MCP exchange: the SDK's Server and its Streamable HTTP transport (stateless, JSON answers)
 * made for one authenticated request, with every method handed to the door's service. Stateless
 * because any replica may take the next request of a client: nothing is kept between requests.
 * Loaded with the SDK at the door's first request (doors/mcp/routes.ts).
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import {
  CallToolRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import type { Principal } from '../../auth/principal.ts';
import type { CallerInfo } from '../../runs/plan.ts';
import { VERSION } from '../../http/app.ts';
import type { McpDoor } from './service.ts';
import { MCP_BODY_LIMIT, McpProtocolError, internalProtocolError } from './errors.ts';

const INSTRUCTIONS =
  "Orrery's tools: the project's published interactions (each call is a recorded run), search_objects, similar_objects and read_object over its content objects, search_runs and read_run over its runs. Resources: orrery://objects/<id> and orrery://runs/<id>.";

/** What an HTTP exchange answers: its status, headers and body. */
export interface Exchange {
  status: number;
  headers: Headers;
  body: string;
}

/** Handles one POST /mcp: its JSON-RPC message(s), answered as JSON. */
export async function exchange(
  door: McpDoor,
  p: Principal,
  caller: CallerInfo,
  request: Request,
  body: unknown,
  onError: (err: unknown) => void,
): Promise<Exchange> {
  const server = new Server(
    { name: 'orrery', title: 'Orrery', version: VERSION },
    { capabilities: { tools: {}, resources: {} }, instructions: INSTRUCTIONS },
  );
  // A failure of Orrery's own is logged and answered without its details.
  const guarded = async <T>(work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (err) {
      if (err instanceof McpProtocolError || err instanceof McpError) throw err;
      onError(err);
      throw internalProtocolError();
    }
  };
  server.setRequestHandler(ListToolsRequestSchema, (req) => guarded(() => door.listTools(p, req.params?.cursor)));
  server.setRequestHandler(CallToolRequestSchema, (req) =>
    guarded(() => door.callTool(p, req.params.name, req.params.arguments, caller)),
  );
  server.setRequestHandler(ListResourcesRequestSchema, (req) =>
    guarded(() => door.listResources(p, req.params?.cursor)),
  );
  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => door.resourceTemplates());
  server.setRequestHandler(ReadResourceRequestSchema, (req) => guarded(() => door.readResource(p, req.params.uri)));

  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
    maxRequestBodySize: MCP_BODY_LIMIT,
  });
  await server.connect(transport);
  try {
    const response = await transport.handleRequest(request, { parsedBody: body });
    return { status: response.status, headers: response.headers, body: await response.text() };
  } finally {
    await server.close();
  }
}
