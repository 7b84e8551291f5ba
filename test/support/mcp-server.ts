/**
 * A local MCP server for tests, built with the SDK's own server classes (McpServer over the
 * stateless Streamable HTTP transport) on a loopback port. It has a `forecast` tool
 * ({city} → "Sunny in <city>") and records each request's headers and each tool call.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';

export interface TestMcpServer {
  url: string;
  /** Headers of every HTTP request it received. */
  requests: Array<IncomingMessage['headers']>;
  /** Tool calls: the tool, its arguments and its _meta. */
  calls: Array<{ name: string; args: unknown; meta: unknown }>;
  close(): Promise<void>;
}

export async function startMcpServer(): Promise<TestMcpServer> {
  const requests: TestMcpServer['requests'] = [];
  const calls: TestMcpServer['calls'] = [];
  const build = () => {
    const mcp = new McpServer({ name: 'test-mcp', version: '1.0.0' });
    mcp.registerTool(
      'forecast',
      { description: 'The weather forecast of a city', inputSchema: { city: z.string() } },
      async ({ city }, extra) => {
        calls.push({ name: 'forecast', args: { city }, meta: extra._meta });
        return { content: [{ type: 'text', text: `Sunny in ${city}` }] };
      },
    );
    return mcp;
  };
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    requests.push(req.headers);
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
    const mcp = build();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      void transport.close();
      void mcp.close();
    });
    await mcp.connect(transport);
    await transport.handleRequest(req, res, body);
  };
  const http: Server = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    requests,
    calls,
    close: () =>
      new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}
