/**
 * Tools of the project's remote MCP servers, for agents (agents/tools.ts, McpToolSource): listed
 * and called through `@modelcontextprotocol/sdk`'s Streamable HTTP client, whose every request goes
 * through Orrery's outbound layer, so the egress policy checks each address it connects to. A tool
 * is named `<server>_<tool>`; naming the server alone gives all its tools. A session is opened for
 * each listing or call and closed after it: nothing is held between an agent's steps. The SDK (with
 * zod and Ajv, about 200 files) is loaded at the first listing or call, so a server whose agents
 * use no MCP server never loads it.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import type { Principal } from '../auth/principal.ts';
import { scopeOf } from '../auth/principal.ts';
import type { Outbound } from '../providers/outbound.ts';
import { BadRequest } from '../util/errors.ts';
import type { McpServers, McpServerTarget } from './mcp-servers.ts';
import type { McpToolSource } from './tools.ts';
import type { ToolRef } from './spec.ts';
import { boundedText, type ToolAnswer } from './builtin-tools.ts';

/** The longest an MCP listing may take, in ms (a call has the agent's step timeout). */
const LIST_TIMEOUT_MS = 30_000;
const MAX_DESCRIPTION = 4000;

type Undici = typeof import('undici');

/** The parts of the MCP SDK a session uses. */
const loadSdk = async () => {
  const [{ Client }, { StreamableHTTPClientTransport }, { AjvJsonSchemaValidator }] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/validation/ajv'),
  ]);
  return { Client, StreamableHTTPClientTransport, AjvJsonSchemaValidator };
};
type Sdk = Awaited<ReturnType<typeof loadSdk>>;

export class McpTools implements McpToolSource {
  private undici: Undici | undefined;
  private sdk: Promise<Sdk> | undefined;
  /**
   * The schema validator of call sessions. A client compiles validators only when it lists tools,
   * which a call session never does, so one validator serves every call instead of building a new
   * Ajv (about 0.6 ms) for each; listings get their own, so no server's schemas pile up in it.
   */
  private callValidator: AjvJsonSchemaValidator | undefined;

  constructor(
    private readonly servers: McpServers,
    private readonly outbound: Outbound,
  ) {}

  async find(p: Principal, name: string): Promise<ToolRef[]> {
    const cut = name.indexOf('_');
    const serverName = cut < 0 ? name : name.slice(0, cut);
    const server = await this.servers.target(scopeOf(p), serverName);
    if (!server) return [];
    const tools = await this.session(
      server,
      async (client) => (await client.listTools({}, { timeout: LIST_TIMEOUT_MS })).tools,
    ).catch((err: Error) => {
      throw new BadRequest(`tool_names: the MCP server ${server.name} could not be listed: ${err.message}`);
    });
    const wanted = cut < 0 ? tools : tools.filter((t) => t.name === name.slice(cut + 1));
    if (cut >= 0 && wanted.length === 0)
      throw new BadRequest(`tool_names: the MCP server ${server.name} has no tool ${name.slice(cut + 1)}`);
    return wanted.map((t) => ({
      kind: 'mcp',
      name: `${server.name}_${t.name}`.slice(0, 64),
      description: (t.description ?? `The tool ${t.name} of the MCP server ${server.name}`).slice(0, MAX_DESCRIPTION),
      input_schema: t.inputSchema as Record<string, unknown>,
      target: server.id,
      remote: t.name,
    }));
  }

  async call(
    p: Principal,
    tool: ToolRef,
    input: Record<string, unknown>,
    key: string,
    signal: AbortSignal,
  ): Promise<ToolAnswer> {
    const server = await this.servers.target(scopeOf(p), tool.target!);
    if (!server) return { content: `the MCP server of ${tool.name} was deleted`, is_error: true };
    // The step's idempotency key travels in the request's _meta: a server that dedupes can use it.
    const result = await this.session(
      server,
      (client) =>
        client.callTool({ name: tool.remote!, arguments: input, _meta: { 'orrery/idempotency_key': key } }, undefined, {
          signal,
          timeout: 24 * 3600_000, // bounded by the agent's step timeout (signal)
        }),
      'call',
    );
    const parts = (result.content ?? []) as Array<{ type: string; text?: string }>;
    const text = parts.map((c) => (c.type === 'text' ? (c.text ?? '') : JSON.stringify(c))).join('\n');
    const content = text || (result.structuredContent ? JSON.stringify(result.structuredContent) : '');
    return { content: boundedText(content), ...(result.isError ? { is_error: true } : {}) };
  }

  private async session<T>(
    server: McpServerTarget,
    work: (client: Client) => Promise<T>,
    kind: 'list' | 'call' = 'list',
  ): Promise<T> {
    const { Client, StreamableHTTPClientTransport, AjvJsonSchemaValidator } = await (this.sdk ??= loadSdk());
    const jsonSchemaValidator =
      kind === 'call' ? (this.callValidator ??= new AjvJsonSchemaValidator()) : new AjvJsonSchemaValidator();
    const undici = (this.undici ??= await import('undici'));
    const dispatcher = this.outbound.agent;
    const transport = new StreamableHTTPClientTransport(new URL(server.url), {
      requestInit: { headers: server.headers },
      // Every request through the outbound layer: its connector checks each address against the egress policy.
      fetch: ((url: string | URL, init?: RequestInit) =>
        undici.fetch(url, { ...(init as object), dispatcher } as never)) as never,
    });
    const client = new Client({ name: 'orrery-agent', version: '1' }, { jsonSchemaValidator });
    await client.connect(transport);
    try {
      return await work(client);
    } finally {
      await client.close().catch(() => undefined);
    }
  }
}
