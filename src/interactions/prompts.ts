/** Prompt templates: handlebars, jst or text, each with a role. Syntax is checked on write. */
import type { Kysely, Selectable } from 'kysely';
import type { Database, PromptTable } from '../db/schema.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import { ScopedTable } from '../db/scoped.ts';
import type { AuditLog } from '../audit/log.ts';
import { newId, nowIso } from '../db/ids.ts';
import { actorOf, scopeOf, type Principal } from '../auth/principal.ts';
import { BadRequest, Conflict, NotFound, OrreryError } from '../util/errors.ts';
import { TemplateError, type TemplateEngine } from '../templates/render.ts';
import type { ChangeClock } from './change-clock.ts';
import { computeFacets, type FacetSpec } from './facets.ts';

export const PROMPT_ROLES = ['safety', 'system', 'user', 'assistant', 'negative', 'mask', 'tool'] as const;
export const CONTENT_TYPES = ['jst', 'handlebars', 'text'] as const;
export type PromptRole = (typeof PROMPT_ROLES)[number];
export type ContentType = (typeof CONTENT_TYPES)[number];

export interface PromptInput {
  name?: string;
  role?: PromptRole;
  content?: string;
  content_type?: ContentType;
  description?: string | null;
  inputSchema?: Record<string, unknown> | null;
  tags?: string[];
  test_data?: unknown;
  expected_edit_revision?: number;
}

export interface PromptDto {
  id: string;
  name: string;
  role: PromptRole;
  content: string;
  content_type: ContentType;
  description?: string;
  inputSchema?: Record<string, unknown>;
  tags: string[];
  test_data?: unknown;
  status: string;
  version: number;
  edit_revision: number;
  project: string;
  account: string;
  created_by: string;
  updated_by: string;
  created_at: string;
  updated_at: string;
}

type Row = Selectable<PromptTable>;

/** The official client's PromptTemplateRef. */
export interface PromptRefDto {
  id: string;
  name: string;
  description?: string;
  role: PromptRole;
  version: number;
  status: string;
  content_type: ContentType;
  tags: string[];
  created_at: string;
  updated_at: string;
}

/** The official client's PromptSearchQuery (the fields Orrery filters on). */
export interface PromptQuery {
  name?: string;
  role?: string;
  tags?: string[];
}

const MAX_LIST = 1000;

/** The fields prompt options and facets read. */
const PROMPT_FIELDS: Record<string, (r: Row) => unknown> = {
  role: (r) => r.role,
  content_type: (r) => r.content_type,
  tags: (r) => (r.tags as string[] | null) ?? [],
  status: (r) => r.status,
  name: (r) => r.name,
};

export class PromptService {
  readonly table: ScopedTable<'prompts'>;

  constructor(
    db: Kysely<Database>,
    dialect: OrreryDialect,
    private readonly changes: ChangeClock,
    readonly templates: TemplateEngine,
    audit?: AuditLog,
  ) {
    this.table = new ScopedTable(
      db,
      dialect,
      'prompts',
      ['input_schema', 'tags', 'test_data'],
      audit && { log: audit, resourceType: 'prompt' },
    );
  }

  async create(p: Principal, input: PromptInput): Promise<PromptDto> {
    for (const f of ['name', 'role', 'content', 'content_type'] as const) {
      if (input[f] === undefined || input[f] === null) throw new BadRequest(`body must have property "${f}"`);
    }
    await this.checkSyntax({
      name: input.name!,
      content_type: input.content_type!,
      content: input.content!,
      inputSchema: input.inputSchema,
    });
    const now = nowIso();
    const row: Row = {
      id: newId(),
      account_id: p.account.id,
      project_id: p.project.id,
      name: input.name!,
      role: input.role!,
      content: input.content!,
      content_type: input.content_type!,
      description: input.description ?? null,
      input_schema: input.inputSchema ?? null,
      tags: input.tags ?? [],
      test_data: input.test_data ?? null,
      status: 'draft',
      version: 1,
      edit_revision: 1,
      forked_from: null,
      created_by: actorOf(p),
      updated_by: actorOf(p),
      created_at: now,
      updated_at: now,
    };
    await this.table.insert(row, p);
    return this.toDto(row);
  }

  async list(p: Principal, q: { name?: string; limit: number; offset: number }): Promise<PromptDto[]> {
    const rows = await this.table.select(scopeOf(p), (query) =>
      (q.name ? query.where('name', '=', q.name) : query)
        .orderBy('updated_at', 'desc')
        .orderBy('id', 'desc')
        .limit(q.limit)
        .offset(q.offset),
    );
    return rows.map((r) => this.toDto(r));
  }

  async get(p: Principal, id: string): Promise<PromptDto> {
    return this.toDto(await this.row(p, id));
  }

  async update(p: Principal, id: string, input: PromptInput): Promise<PromptDto> {
    const current = await this.row(p, id);
    if (input.expected_edit_revision !== undefined && input.expected_edit_revision !== current.edit_revision) {
      throw new Conflict(
        `prompt ${id} is at edit_revision ${current.edit_revision}, not ${input.expected_edit_revision}; reload it and retry`,
      );
    }
    const patch: Partial<Row> = {
      updated_at: nowIso(),
      updated_by: actorOf(p),
      edit_revision: current.edit_revision + 1,
    };
    if (input.name !== undefined) patch.name = input.name;
    if (input.role !== undefined) patch.role = input.role;
    if (input.content !== undefined) patch.content = input.content;
    if (input.content_type !== undefined) patch.content_type = input.content_type;
    if (input.description !== undefined) patch.description = input.description;
    if (input.inputSchema !== undefined) patch.input_schema = input.inputSchema;
    if (input.tags !== undefined) patch.tags = input.tags;
    if (input.test_data !== undefined) patch.test_data = input.test_data;
    const next = { ...current, ...patch };
    await this.checkSyntax({
      name: next.name,
      content_type: next.content_type as ContentType,
      content: next.content,
      inputSchema: next.input_schema as Record<string, unknown> | null,
    });
    const ok = await this.table.update(
      scopeOf(p),
      id,
      patch,
      { column: 'edit_revision', value: current.edit_revision },
      p,
    );
    if (!ok) throw new Conflict(`prompt ${id} was changed concurrently; reload it and retry`);
    this.changes.bump(p.project.id);
    return this.toDto(next);
  }

  async delete(p: Principal, id: string): Promise<{ id: string }> {
    if (!(await this.table.delete(scopeOf(p), [id], p))) throw new NotFound('prompt', id);
    this.changes.bump(p.project.id);
    return { id };
  }

  /**
   * `GET /prompts/:id/versions`: prompt templates are not versioned in Orrery (an interaction's
   * published version freezes a copy of its templates), so the answer is always empty.
   */
  async versions(p: Principal, id: string): Promise<PromptRefDto[]> {
    await this.row(p, id);
    return [];
  }

  /** `POST /prompts/:id/fork`: a copy named "<name> (fork)"; `keepTags` keeps the tags. Forks stay in the caller's project. */
  async fork(p: Principal, id: string, input: { keepTags?: boolean; targetProject?: string }): Promise<PromptDto> {
    if (input.targetProject !== undefined && input.targetProject !== p.project.id) {
      throw new BadRequest(
        `targetProject must be this project (${p.project.id}) or absent: to copy a prompt into another project, create it there with that project's API key`,
      );
    }
    const source = await this.row(p, id);
    const now = nowIso();
    const row: Row = {
      ...source,
      id: newId(),
      name: `${source.name} (fork)`,
      tags: input.keepTags ? source.tags : [],
      status: 'draft',
      version: 1,
      edit_revision: 1,
      forked_from: source.id,
      created_by: actorOf(p),
      updated_by: actorOf(p),
      created_at: now,
      updated_at: now,
    };
    await this.table.insert(row, p);
    this.changes.bump(p.project.id);
    return this.toDto(row);
  }

  /** `GET /prompts/:id/forks`: the prompts forked from this one, newest first. */
  async forks(p: Principal, id: string): Promise<PromptRefDto[]> {
    await this.row(p, id);
    const rows = await this.table.select(scopeOf(p), (q) =>
      q.where('forked_from', '=', id).orderBy('created_at', 'desc').orderBy('id', 'desc').limit(MAX_LIST),
    );
    return rows.map((r) => this.toRef(r));
  }

  /** `GET /prompts/options/:field`: the distinct values of a field across the project's prompts, sorted. */
  async options(p: Principal, field: string): Promise<string[]> {
    const get = Object.hasOwn(PROMPT_FIELDS, field) ? PROMPT_FIELDS[field] : undefined;
    if (!get)
      throw new BadRequest(`field "${field}" has no options; use one of ${Object.keys(PROMPT_FIELDS).join(', ')}`);
    const rows = await this.table.select(scopeOf(p));
    const values = new Set<string>();
    for (const r of rows)
      for (const v of [get(r)].flat()) if (v !== null && v !== undefined && v !== '') values.add(String(v));
    return [...values].sort((a, b) => a.localeCompare(b)).slice(0, MAX_LIST);
  }

  /** `POST /prompts/facets`: `{<name>: [{_id, count}], total}` over the prompts the query matches. */
  async facets(
    p: Principal,
    body: { facets: FacetSpec[]; query?: PromptQuery },
  ): Promise<Record<string, unknown> & { total: number }> {
    const q = body.query ?? {};
    const name = q.name?.toLowerCase();
    const tags = q.tags ?? [];
    const rows = (
      await this.table.select(scopeOf(p), (query) => (q.role ? query.where('role', '=', q.role) : query))
    ).filter(
      (r) =>
        (!name || r.name.toLowerCase().includes(name)) &&
        (!tags.length || ((r.tags as string[] | null) ?? []).some((t) => tags.includes(t))),
    );
    return computeFacets(rows, body.facets, PROMPT_FIELDS, 'prompts');
  }

  toRef(r: Row): PromptRefDto {
    return {
      id: r.id,
      name: r.name,
      ...(r.description ? { description: r.description } : {}),
      role: r.role as PromptRole,
      version: r.version,
      status: r.status,
      content_type: r.content_type as ContentType,
      tags: (r.tags as string[] | null) ?? [],
      created_at: r.created_at,
      updated_at: r.updated_at,
    };
  }

  private async row(p: Principal, id: string): Promise<Row> {
    const row = await this.table.get(scopeOf(p), id);
    if (!row) throw new NotFound('prompt', id);
    return row;
  }

  toDto(r: Row): PromptDto {
    const inputSchema = r.input_schema as Record<string, unknown> | null;
    const testData = r.test_data ?? null;
    return {
      id: r.id,
      name: r.name,
      role: r.role as PromptRole,
      content: r.content,
      content_type: r.content_type as ContentType,
      ...(r.description ? { description: r.description } : {}),
      ...(inputSchema ? { inputSchema } : {}),
      tags: (r.tags as string[] | null) ?? [],
      ...(testData !== null ? { test_data: testData } : {}),
      status: r.status,
      version: r.version,
      edit_revision: r.edit_revision,
      project: r.project_id,
      account: r.account_id,
      created_by: r.created_by,
      updated_by: r.updated_by,
      created_at: r.created_at,
      updated_at: r.updated_at,
    };
  }

  /** A broken template is refused when it is written (a 400 with its position), not when a run first uses it. */
  async checkSyntax(t: {
    name: string;
    content_type: ContentType;
    content: string;
    inputSchema?: Record<string, unknown> | null;
  }): Promise<void> {
    try {
      await this.templates.validate(t);
    } catch (err) {
      if (err instanceof TemplateError)
        throw new BadRequest(
          err.message,
          err.position ? { line: err.position.line, column: err.position.column } : undefined,
        );
      throw err;
    }
  }

  /**
   * `POST /prompts/:id/render` (the official client's `prompts.render(id, variables)`): the
   * prompt rendered with the variables, as a run would render it, without running a model.
   * A template that fails is a 400 with the message and position.
   */
  async render(
    p: Principal,
    id: string,
    variables: unknown,
    model?: string,
  ): Promise<{ id: string; name: string; role: PromptRole; content_type: ContentType; rendered: string }> {
    const prompt = this.toDto(await this.row(p, id));
    const rendered = await this.renderText(
      p,
      {
        name: prompt.name,
        content_type: prompt.content_type,
        content: prompt.content,
        inputSchema: prompt.inputSchema,
      },
      variables,
      model,
    );
    return { id: prompt.id, name: prompt.name, role: prompt.role, content_type: prompt.content_type, rendered };
  }

  /** A template that is not saved (the console's playground): the same rendering, the same bounds. */
  async renderDraft(
    p: Principal,
    input: {
      content: string;
      content_type: ContentType;
      role?: PromptRole;
      name?: string;
      inputSchema?: Record<string, unknown> | null;
      data?: Record<string, unknown>;
    },
    model?: string,
  ): Promise<{ name: string; role: PromptRole; content_type: ContentType; rendered: string }> {
    const name = input.name ?? 'draft';
    const rendered = await this.renderText(
      p,
      { name, content_type: input.content_type, content: input.content, inputSchema: input.inputSchema ?? null },
      input.data,
      model,
    );
    return { name, role: input.role ?? 'user', content_type: input.content_type, rendered };
  }

  private async renderText(
    p: Principal,
    template: {
      name: string;
      content_type: ContentType;
      content: string;
      inputSchema: Record<string, unknown> | null | undefined;
    },
    variables: unknown,
    model?: string,
  ): Promise<string> {
    try {
      return await this.templates.render(template as never, variables ?? {}, model ?? '', p.project.id);
    } catch (err) {
      if (err instanceof TemplateError) {
        throw new OrreryError(
          templateErrorCode(err),
          400,
          err.message,
          err.position ? { line: err.position.line, column: err.position.column } : undefined,
        );
      }
      throw err;
    }
  }
}

/** The error code of a template that failed while rendering (decisions.md, prompt templates). */
export function templateErrorCode(err: TemplateError): string {
  switch (err.kind) {
    case 'timeout':
      return 'template_timeout';
    case 'memory':
      return 'template_memory';
    case 'output':
      return 'template_output_too_large';
    default:
      return 'template_error';
  }
}
