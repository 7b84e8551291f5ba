/**
 * Remote MCP servers of a project (`/mcp-servers`): a name (the prefix of its tools' names), a
 * Streamable HTTP URL and optional headers (an API key). Headers are sealed with the server
 * secret (AES-256-GCM, as environments keep provider keys) and never answered: only their names.
 * The URL is checked against the egress policy when it is saved, and every call goes through it.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import { newId, nowIso } from '../db/ids.ts';
import { scopeOf, type Principal, type Scope } from '../auth/principal.ts';
import { decrypt, encrypt } from '../auth/secret.ts';
import { BadRequest, Conflict, NotFound } from '../util/errors.ts';
import { checkEndpointLiteral, EgressRefused, type EgressPolicy } from '../providers/egress.ts';

/** A project's MCP servers at most (docs/reference/limits.md). */
const MAX_MCP_SERVERS = 50;
const MAX_HEADERS = 20;
const MAX_HEADER_VALUE = 8192;
const MAX_URL = 2048;
/** No `_`: a tool is named `<server>_<tool>`. */
const SERVER_NAME = /^[a-zA-Z0-9-]{1,32}$/;
const HEADER_NAME = /^[!#$%&'*+.^`|~0-9a-zA-Z-]{1,100}$/;
/** Headers the transport sets itself. */
const RESERVED = new Set([
  'host',
  'content-length',
  'content-type',
  'accept',
  'mcp-session-id',
  'mcp-protocol-version',
]);

export interface McpServerDto {
  id: string;
  name: string;
  url: string;
  /** The names of its headers; their values are never answered. */
  headers: string[];
  created_at: string;
  updated_at: string;
}

/** A server as its client needs it: with its headers in clear. */
export interface McpServerTarget {
  id: string;
  name: string;
  url: string;
  headers: Record<string, string>;
}

export interface McpServerInput {
  name?: string;
  url?: string;
  headers?: Record<string, string> | null;
}

export class McpServers {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly d: OrreryDialect,
    private readonly key: Buffer,
    private readonly policy: EgressPolicy,
  ) {}

  private rows(s: Scope) {
    return this.db
      .selectFrom('mcp_servers')
      .selectAll()
      .where('account_id', '=', s.account)
      .where('project_id', '=', s.project);
  }

  async create(p: Principal, input: McpServerInput): Promise<McpServerDto> {
    const s = scopeOf(p);
    const name = this.readName(input.name);
    const url = this.readUrl(input.url);
    const headers = readHeaders(input.headers ?? undefined);
    const count = await this.db
      .selectFrom('mcp_servers')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('account_id', '=', s.account)
      .where('project_id', '=', s.project)
      .executeTakeFirst();
    if (Number((count as { n?: unknown } | undefined)?.n ?? 0) >= MAX_MCP_SERVERS)
      throw new Conflict(`a project has at most ${MAX_MCP_SERVERS} MCP servers: delete one first`);
    await this.assertFree(s, name);
    const now = nowIso();
    const id = newId();
    await this.db
      .insertInto('mcp_servers')
      .values({
        id,
        account_id: s.account,
        project_id: s.project,
        name,
        url,
        headers_enc: Object.keys(headers).length ? encrypt(this.key, JSON.stringify(headers)) : null,
        header_names: this.d.toJson(Object.keys(headers)) as string,
        created_at: now,
        updated_at: now,
      })
      .execute();
    return this.get(p, id);
  }

  async list(p: Principal): Promise<McpServerDto[]> {
    const rows = await this.rows(scopeOf(p)).orderBy('name').limit(MAX_MCP_SERVERS).execute();
    return rows.map((r) => this.dto(r));
  }

  async get(p: Principal, id: string): Promise<McpServerDto> {
    return this.dto(await this.row(scopeOf(p), id));
  }

  async update(p: Principal, id: string, input: McpServerInput): Promise<McpServerDto> {
    const s = scopeOf(p);
    const row = await this.row(s, id);
    const patch: Record<string, unknown> = { updated_at: nowIso() };
    if (input.name !== undefined && input.name !== row.name) {
      patch.name = this.readName(input.name);
      await this.assertFree(s, patch.name as string);
    }
    if (input.url !== undefined) patch.url = this.readUrl(input.url);
    if (input.headers !== undefined) {
      const headers = readHeaders(input.headers ?? undefined);
      patch.headers_enc = Object.keys(headers).length ? encrypt(this.key, JSON.stringify(headers)) : null;
      patch.header_names = this.d.toJson(Object.keys(headers));
    }
    await this.db
      .updateTable('mcp_servers')
      .set(patch)
      .where('id', '=', row.id)
      .where('project_id', '=', s.project)
      .execute();
    return this.get(p, id);
  }

  async delete(p: Principal, id: string): Promise<{ id: string }> {
    const s = scopeOf(p);
    const row = await this.row(s, id);
    await this.db.deleteFrom('mcp_servers').where('id', '=', row.id).where('project_id', '=', s.project).execute();
    return { id: row.id };
  }

  /** The project's server of that name or id, with its headers, for a call; undefined when none. */
  async target(s: Scope, nameOrId: string): Promise<McpServerTarget | undefined> {
    const row = await this.rows(s)
      .where((eb) => eb.or([eb('name', '=', nameOrId), eb('id', '=', nameOrId)]))
      .executeTakeFirst();
    if (!row) return undefined;
    const headers = row.headers_enc ? (JSON.parse(decrypt(this.key, row.headers_enc)) as Record<string, string>) : {};
    return { id: row.id, name: row.name, url: row.url, headers };
  }

  private async row(s: Scope, id: string) {
    const row = await this.rows(s).where('id', '=', id).executeTakeFirst();
    if (!row) throw new NotFound('MCP server', id);
    return row;
  }

  private async assertFree(s: Scope, name: string): Promise<void> {
    if (await this.rows(s).where('name', '=', name).executeTakeFirst())
      throw new Conflict(`an MCP server named ${name} exists in this project: choose another name`);
  }

  private readName(value: unknown): string {
    if (typeof value !== 'string' || !SERVER_NAME.test(value))
      throw new BadRequest('name is required: 1 to 32 letters, digits or -, the prefix of its tools (<name>_<tool>)');
    return value;
  }

  private readUrl(value: unknown): string {
    if (typeof value !== 'string' || value.length > MAX_URL)
      throw new BadRequest(`url is required: the server's Streamable HTTP endpoint, at most ${MAX_URL} characters`);
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      throw new BadRequest(`url is not a URL: ${JSON.stringify(value.slice(0, 100))}`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new BadRequest(`url must be http or https, got ${url.protocol}`);
    if (url.username || url.password) throw new BadRequest('url must not carry credentials: put them in headers');
    try {
      checkEndpointLiteral(url.toString(), this.policy);
    } catch (err) {
      if (err instanceof EgressRefused) throw new BadRequest(`url: ${err.message}`);
      throw err;
    }
    return url.toString();
  }

  private dto(r: {
    id: string;
    name: string;
    url: string;
    header_names: unknown;
    created_at: string;
    updated_at: string;
  }): McpServerDto {
    return {
      id: r.id,
      name: r.name,
      url: r.url,
      headers: this.d.fromJson<string[]>(r.header_names) ?? [],
      created_at: r.created_at,
      updated_at: r.updated_at,
    };
  }
}

function readHeaders(value: Record<string, string> | undefined): Record<string, string> {
  if (value === undefined) return {};
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new BadRequest('headers must be an object of header names to values');
  const entries = Object.entries(value);
  if (entries.length > MAX_HEADERS)
    throw new BadRequest(`headers has ${entries.length} entries; at most ${MAX_HEADERS}`);
  const out: Record<string, string> = {};
  for (const [k, v] of entries) {
    if (!HEADER_NAME.test(k)) throw new BadRequest(`headers: ${JSON.stringify(k.slice(0, 100))} is not a header name`);
    if (RESERVED.has(k.toLowerCase())) throw new BadRequest(`headers: ${k} is set by the MCP transport itself`);
    if (typeof v !== 'string' || v.length > MAX_HEADER_VALUE || /[\r\n\0]/.test(v))
      throw new BadRequest(`headers.${k} must be a string of at most ${MAX_HEADER_VALUE} characters, on one line`);
    out[k] = v;
  }
  return out;
}
