/**
 * Interactions: prompt segments (references to prompt templates, or inline templates), an
 * optional input schema and result schema, a default environment and model. Publishing freezes a
 * copy (templates inlined) as version N; `Name@draft`, `Name@N`, `Name@tag` and `Name` select one.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import { ScopedTable } from '../db/scoped.ts';
import type { AuditLog } from '../audit/log.ts';
import { newId, nowIso } from '../db/ids.ts';
import { actorOf, scopeOf, type Principal } from '../auth/principal.ts';
import { BadRequest, Conflict, NotFound } from '../util/errors.ts';
import { CONTENT_TYPES, PROMPT_ROLES, type PromptService } from './prompts.ts';
import { compileSchema } from './json-schema.ts';
import { resolveSchemaRef, type ObjectTypeSchemas } from './schema-ref.ts';
import type { ChangeClock } from './change-clock.ts';
import { computeFacets, type FacetSpec } from './facets.ts';
import { endpointOf, INTERACTION_STATUSES } from './model.ts';
import type {
  CatalogEntryDto,
  EndpointDto,
  EndpointQuery,
  EnvironmentInfo,
  ExportedDto,
  InteractionDto,
  InteractionInput,
  InteractionQuery,
  InteractionRefDto,
  ResolvedExecutionDto,
  Row,
  SegmentInput,
  StoredSegment,
} from './model.ts';
import { tagsOf, toInteraction, toInteractionRef } from './dto.ts';
import { mergedPromptSchema, paramsSchemaOf } from './params-schema.ts';

// The types of interactions live in model.ts; they are imported from here by the features that use them.
export * from './model.ts';

const MAX_LIST = 1000;

const bounded = (q: { limit?: number; offset?: number }) => ({
  limit: Math.min(Math.max(Math.trunc(q.limit ?? 100), 0), MAX_LIST),
  offset: Math.max(Math.trunc(q.offset ?? 0), 0),
});

export class InteractionService {
  private readonly table: ScopedTable<'interactions'>;

  constructor(
    db: Kysely<Database>,
    dialect: OrreryDialect,
    private readonly prompts: PromptService,
    private readonly environmentExists: (p: Principal, id: string) => Promise<EnvironmentInfo>,
    private readonly changes: ChangeClock,
    audit?: AuditLog,
    /** Object types' schemas, for a result_schema `{ $uri: "store:<typeId>" }` (interactions/schema-ref.ts). */
    private readonly typeSchemas?: ObjectTypeSchemas,
  ) {
    this.table = new ScopedTable(
      db,
      dialect,
      'interactions',
      ['prompts', 'model_options', 'result_schema', 'interaction_schema', 'cache_policy', 'test_data', 'tags'],
      audit && { log: audit, resourceType: 'interaction' },
    );
  }

  async create(p: Principal, input: InteractionInput): Promise<InteractionDto> {
    if (!input.name?.trim()) throw new BadRequest('body must have property "name"');
    const status = input.status ?? 'draft';
    if (status !== 'draft')
      throw new BadRequest('a new interaction is a "draft"; publish it with POST /interactions/:id/publish');
    const segments = await this.segments(p, input.prompts ?? []);
    await this.checkRefs(p, input);
    const now = nowIso();
    const row: Row = {
      id: newId(),
      account_id: p.account.id,
      project_id: p.project.id,
      name: input.name.trim(),
      endpoint: await this.freeEndpoint(p, input.endpoint ?? endpointOf(input.name), undefined),
      description: input.description ?? null,
      status,
      version: 0,
      edit_revision: 1,
      parent_id: null,
      prompts: segments,
      environment_id: input.environment ?? null,
      model: input.model ?? null,
      model_options: input.model_options ?? null,
      result_schema: input.result_schema ?? null,
      interaction_schema: input.interaction_schema ?? null,
      cache_policy: input.cache_policy ?? null,
      temperature: input.temperature ?? null,
      max_tokens: input.max_tokens ?? null,
      restriction: input.restriction ?? null,
      test_data: input.test_data ?? null,
      tags: input.tags ?? [],
      visibility: input.visibility ?? 'private',
      forked_from: null,
      created_by: actorOf(p),
      updated_by: actorOf(p),
      created_at: now,
      updated_at: now,
    };
    await this.table.insert(row, p);
    return toInteraction(this.prompts, p, row);
  }

  async list(
    p: Principal,
    q: { name?: string; status?: string; tag?: string[]; limit: number; offset: number },
  ): Promise<InteractionRefDto[]> {
    const rows = await this.table.select(scopeOf(p), (query) => {
      // Published versions are listed through /interactions/:id/versions, not here.
      query = q.status === 'published' ? query.where('status', '=', 'published') : query.where('parent_id', 'is', null);
      if (q.status && q.status !== 'published') query = query.where('status', '=', q.status);
      if (q.name) query = query.where('name', '=', q.name);
      return query.orderBy('updated_at', 'desc').orderBy('id', 'desc');
    });
    const tagged = q.tag?.length ? rows.filter((r) => tagsOf(r).some((t) => q.tag!.includes(t))) : rows;
    return tagged.slice(q.offset, q.offset + q.limit).map((r) => toInteractionRef(r));
  }

  async get(p: Principal, id: string): Promise<InteractionDto> {
    return toInteraction(this.prompts, p, await this.row(p, id));
  }

  async update(p: Principal, id: string, input: InteractionInput): Promise<InteractionDto> {
    const current = await this.row(p, id);
    if (current.status === 'published')
      throw new BadRequest('a published version cannot be changed; update the draft and publish again');
    if (input.expected_edit_revision !== undefined && input.expected_edit_revision !== current.edit_revision) {
      throw new Conflict(
        `interaction ${id} is at edit_revision ${current.edit_revision}, not ${input.expected_edit_revision}; reload it and retry`,
      );
    }
    if (
      input.status !== undefined &&
      input.status !== current.status &&
      input.status !== 'archived' &&
      input.status !== 'draft'
    ) {
      throw new BadRequest('status may be set to "draft" or "archived"; publish with POST /interactions/:id/publish');
    }
    await this.checkRefs(p, input);
    const patch: Partial<Row> = {
      updated_at: nowIso(),
      updated_by: actorOf(p),
      edit_revision: current.edit_revision + 1,
    };
    if (input.name !== undefined) {
      if (!input.name.trim()) throw new BadRequest('name must not be empty');
      patch.name = input.name.trim();
    }
    if (input.endpoint !== undefined) patch.endpoint = await this.freeEndpoint(p, input.endpoint, id);
    if (input.description !== undefined) patch.description = input.description;
    if (input.status !== undefined) patch.status = input.status;
    if (input.prompts !== undefined) patch.prompts = await this.segments(p, input.prompts);
    if (input.environment !== undefined) patch.environment_id = input.environment;
    if (input.model !== undefined) patch.model = input.model;
    if (input.model_options !== undefined) patch.model_options = input.model_options;
    if (input.result_schema !== undefined) patch.result_schema = input.result_schema;
    if (input.interaction_schema !== undefined) patch.interaction_schema = input.interaction_schema;
    if (input.cache_policy !== undefined) patch.cache_policy = input.cache_policy;
    if (input.temperature !== undefined) patch.temperature = input.temperature;
    if (input.max_tokens !== undefined) patch.max_tokens = input.max_tokens;
    if (input.restriction !== undefined) patch.restriction = input.restriction;
    if (input.test_data !== undefined) patch.test_data = input.test_data;
    if (input.tags !== undefined) patch.tags = input.tags;
    if (input.visibility !== undefined) patch.visibility = input.visibility;
    const ok = await this.table.update(
      scopeOf(p),
      id,
      patch,
      { column: 'edit_revision', value: current.edit_revision },
      p,
    );
    if (!ok) throw new Conflict(`interaction ${id} was changed concurrently; reload it and retry`);
    this.changes.bump(p.project.id);
    return toInteraction(this.prompts, p, { ...current, ...patch });
  }

  /** Deleting a draft also deletes its published versions (`cascade` is implied). */
  async delete(p: Principal, id: string): Promise<{ id: string }> {
    const row = await this.row(p, id);
    const versions = row.parent_id ? [] : await this.versionRows(p, id);
    await this.table.delete(scopeOf(p), [id, ...versions.map((v) => v.id)], p);
    this.changes.bump(p.project.id);
    return { id };
  }

  async publish(
    p: Principal,
    id: string,
    input: { visibility?: 'public' | 'private'; tags?: string[] },
  ): Promise<InteractionDto> {
    const draft = await this.row(p, id);
    if (draft.parent_id)
      throw new BadRequest(`interaction ${id} is already a published version; publish its draft ${draft.parent_id}`);
    const versions = await this.versionRows(p, id);
    const version = versions.reduce((m, v) => Math.max(m, v.version), 0) + 1;
    const tags = input.tags ?? tagsOf(draft);
    // A tag names one version: move it off older versions.
    for (const v of versions) {
      const kept = tagsOf(v).filter((t) => !tags.includes(t));
      if (kept.length !== tagsOf(v).length) await this.table.update(scopeOf(p), v.id, { tags: kept }, undefined, p);
    }
    const expanded = await toInteraction(this.prompts, p, draft);
    const frozen: StoredSegment[] = expanded.prompts.map((s) => ({
      id: s.id,
      type: s.type,
      configuration: s.configuration,
      ...(s.template ? { inline: { ...s.template } } : {}),
    }));
    const now = nowIso();
    const row: Row = {
      ...draft,
      id: newId(),
      status: 'published',
      version,
      edit_revision: 1,
      parent_id: draft.id,
      prompts: frozen,
      tags: tags,
      visibility: input.visibility ?? draft.visibility,
      forked_from: null,
      created_by: actorOf(p),
      updated_by: actorOf(p),
      created_at: now,
      updated_at: now,
    };
    await this.table.insert(row, p, 'publish');
    this.changes.bump(p.project.id);
    return toInteraction(this.prompts, p, row);
  }

  async versions(p: Principal, id: string): Promise<InteractionRefDto[]> {
    const row = await this.row(p, id);
    const draftId = row.parent_id ?? row.id;
    const versions = await this.versionRows(p, draftId);
    return versions.sort((a, b) => b.version - a.version).map((r) => toInteractionRef(r));
  }

  /**
   * Endpoint selectors of the CLI's `run` and POST /execute: `Name@draft` is the draft, `Name@3`
   * version 3, `Name@tag` the version with that tag, bare `Name` the latest published version or
   * the draft when none is published. `Name` matches the endpoint, then the name; an id works too.
   */
  async resolveSelector(p: Principal, selector: string): Promise<InteractionDto> {
    const at = selector.lastIndexOf('@');
    const base = at > 0 ? selector.slice(0, at) : selector;
    const which = at > 0 ? selector.slice(at + 1) : '';
    const scope = scopeOf(p);
    const drafts = await this.table.select(scope, (q) =>
      q
        .where('parent_id', 'is', null)
        .where((eb: any) => eb.or([eb('endpoint', '=', base), eb('name', '=', base), eb('id', '=', base)])),
    );
    const draft = drafts.find((d) => d.id === base) ?? drafts.find((d) => d.endpoint === base) ?? drafts[0];
    if (!draft) throw new NotFound('interaction', selector);
    if (which === 'draft') return toInteraction(this.prompts, p, draft);
    const versions = (await this.versionRows(p, draft.id)).sort((a, b) => b.version - a.version);
    let chosen: Row | undefined;
    if (which === '') chosen = versions[0] ?? draft;
    else if (/^\d+$/.test(which)) chosen = versions.find((v) => v.version === Number(which));
    else chosen = versions.find((v) => tagsOf(v).includes(which));
    if (!chosen) throw new NotFound('interaction', selector);
    return toInteraction(this.prompts, p, chosen);
  }

  /** `GET /interactions/names`: the drafts' ids and names, by name, for a name picker. */
  async names(p: Principal): Promise<{ id: string; name: string }[]> {
    const rows = await this.table.select(scopeOf(p), (q) =>
      q.where('parent_id', 'is', null).orderBy('name').orderBy('id').limit(MAX_LIST),
    );
    return rows.map((r) => ({ id: r.id, name: r.name }));
  }

  /**
   * `GET /interactions/tags`: each tag with its count and the interactions carrying it, most used
   * first. Without a status, drafts and published versions both count (a version tag such as
   * "production" lives on a version).
   */
  async tagList(
    p: Principal,
    q: InteractionQuery,
  ): Promise<{ tag: string; count: number; interactions: InteractionRefDto[] }[]> {
    const rows = await this.matching(p, q, true);
    const byTag = new Map<string, Row[]>();
    for (const r of rows) for (const t of new Set(tagsOf(r))) byTag.set(t, [...(byTag.get(t) ?? []), r]);
    const { limit, offset } = bounded(q);
    return [...byTag]
      .sort(([a, ra], [b, rb]) => rb.length - ra.length || a.localeCompare(b))
      .slice(offset, offset + limit)
      .map(([tag, tagged]) => ({
        tag,
        count: tagged.length,
        interactions: tagged.slice(0, MAX_LIST).map((r) => toInteractionRef(r)),
      }));
  }

  /** `POST /interactions/facets`: `{<name>: [{_id, count}], total}` over the interactions the query matches. */
  async facets(
    p: Principal,
    body: { facets: FacetSpec[]; query?: InteractionQuery },
  ): Promise<Record<string, unknown> & { total: number }> {
    const rows = await this.matching(p, body.query ?? {}, false);
    return computeFacets(
      rows,
      body.facets,
      {
        status: (r) => r.status,
        tags: (r) => tagsOf(r),
        model: (r) => r.model,
        environment: (r) => r.environment_id,
        visibility: (r) => r.visibility,
        name: (r) => r.name,
        endpoint: (r) => r.endpoint,
        version: (r) => r.version,
      },
      'interactions',
    );
  }

  /**
   * `POST /interactions/endpoints`: interactions as endpoints, optionally with their input
   * (`params_schema`, the interaction schema) and result schemas. Without a status, the drafts;
   * `status: published` answers each interaction's latest version, or `version` that version.
   */
  async endpoints(p: Principal, q: EndpointQuery): Promise<EndpointDto[]> {
    const { limit, offset } = bounded(q);
    let rows: Row[];
    if (q.status === 'published') {
      const versions = await this.table.select(scopeOf(p), (query) => query.where('status', '=', 'published'));
      const chosen = new Map<string, Row>();
      for (const v of versions) {
        if (q.version !== undefined ? v.version !== q.version : (chosen.get(v.parent_id!)?.version ?? 0) > v.version)
          continue;
        chosen.set(v.parent_id!, v);
      }
      rows = [...chosen.values()];
    } else {
      rows = await this.matching(p, { status: q.status ? [q.status] : undefined }, false);
      if (q.version !== undefined) rows = rows.filter((r) => r.version === q.version);
    }
    if (q.visibility) rows = rows.filter((r) => r.visibility === q.visibility);
    if (q.tags?.length) rows = rows.filter((r) => tagsOf(r).some((t) => q.tags!.includes(t)));
    if (q.includes?.length) rows = rows.filter((r) => q.includes!.includes(r.endpoint));
    else if (q.excludes?.length) rows = rows.filter((r) => !q.excludes!.includes(r.endpoint));
    rows.sort((a, b) => a.endpoint.localeCompare(b.endpoint) || b.version - a.version);
    const page = rows.slice(offset, offset + limit);
    const promptSchemas = q.include_params_schema ? await this.promptSchemas(p, page) : undefined;
    return page.map((r) => {
      const params = promptSchemas
        ? paramsSchemaOf(r.interaction_schema, promptSchemas.get(r.id) ?? null)
        : (r.interaction_schema as Record<string, unknown> | null);
      const result = r.result_schema as Record<string, unknown> | null;
      return {
        id: r.id,
        name: r.name,
        endpoint: r.endpoint,
        ...(r.description ? { description: r.description } : {}),
        status: r.status,
        visibility: r.visibility,
        version: r.version,
        tags: tagsOf(r),
        ...(q.include_params_schema && params ? { params_schema: params } : {}),
        ...(q.include_result_schema && result ? { result_schema: result } : {}),
      };
    });
  }

  /** The merged prompt schema of each row (params-schema.ts), its templates read in one query. */
  private async promptSchemas(p: Principal, rows: Row[]): Promise<Map<string, Record<string, unknown> | null>> {
    const segments = (r: Row) => (r.prompts as StoredSegment[] | null) ?? [];
    const ids = [
      ...new Set(rows.flatMap((r) => segments(r).map((s) => s.template_id)).filter((x): x is string => !!x)),
    ];
    const templates = new Map((await this.prompts.table.getMany(scopeOf(p), ids)).map((t) => [t.id, t]));
    return new Map(
      rows.map((r) => [
        r.id,
        mergedPromptSchema(
          segments(r).map((s) =>
            s.template_id ? { inputSchema: templates.get(s.template_id)?.input_schema } : s.inline,
          ),
        ),
      ]),
    );
  }

  /** `GET /interactions/versions/:name`: every published version whose endpoint is `name`, newest first. */
  async versionsByName(p: Principal, name: string): Promise<InteractionRefDto[]> {
    const rows = await this.table.select(scopeOf(p), (q) =>
      q
        .where('status', '=', 'published')
        .where('endpoint', '=', name)
        .orderBy('version', 'desc')
        .orderBy('id', 'desc')
        .limit(MAX_LIST),
    );
    return rows.map((r) => toInteractionRef(r));
  }

  /**
   * `GET /interactions/resolve/:nameOrId`: which interaction a selector (an id, `Name`,
   * `Name@draft`, `Name@3`, `Name@tag`) runs, with the environment and model a run would use: the
   * ones given, else the interaction's, else the environment's default model.
   */
  async resolveExecution(
    p: Principal,
    nameOrId: string,
    opts: { environment?: string; model?: string },
  ): Promise<ResolvedExecutionDto> {
    const byId = await this.table.get(scopeOf(p), nameOrId);
    const interaction = byId ? await toInteraction(this.prompts, p, byId) : await this.resolveSelector(p, nameOrId);
    const envId = opts.environment ?? interaction.environment;
    if (!envId) {
      throw new BadRequest(
        `interaction "${interaction.endpoint}" has no environment; pass ?environment=<environment id> or set one on the interaction`,
      );
    }
    const env = await this.environmentExists(p, envId);
    const [model, source] = opts.model
      ? [opts.model, 'config']
      : interaction.model
        ? [interaction.model, 'interaction']
        : [env.default_model, 'environmentDefault'];
    return {
      id: interaction.id,
      name: interaction.endpoint,
      version: interaction.version,
      status: interaction.status,
      tags: interaction.tags,
      resolved: {
        environment: { id: env.id, name: env.name, provider: env.provider },
        ...(model ? { model } : {}),
        model_source: source,
      },
    };
  }

  /**
   * `POST /interactions/export`: interactions with their result schema and each segment's input
   * schema. `versions` picks, per interaction: `draft`, `latest` (the newest published version, or
   * the draft when none is published; the default) or a version number.
   */
  async exportRefs(
    p: Principal,
    q: { name?: string; tags?: string[]; versions?: (number | 'draft' | 'latest')[] },
  ): Promise<ExportedDto[]> {
    const wanted = q.versions?.length ? q.versions : ['latest' as const];
    const drafts = await this.table.select(scopeOf(p), (query) => {
      query = query.where('parent_id', 'is', null);
      if (q.name) query = query.where((eb: any) => eb.or([eb('name', '=', q.name), eb('endpoint', '=', q.name)]));
      return query.orderBy('endpoint').orderBy('id');
    });
    const versions = drafts.length
      ? await this.table.select(scopeOf(p), (query) =>
          query.where(
            'parent_id',
            'in',
            drafts.map((d) => d.id),
          ),
        )
      : [];
    const out: Row[] = [];
    for (const d of drafts) {
      const mine = versions.filter((v) => v.parent_id === d.id).sort((a, b) => b.version - a.version);
      const picked = new Map<string, Row>();
      for (const w of wanted) {
        const r = w === 'draft' ? d : w === 'latest' ? (mine[0] ?? d) : mine.find((v) => v.version === w);
        if (r) picked.set(r.id, r);
      }
      out.push(...picked.values());
    }
    const tagged = q.tags?.length ? out.filter((r) => tagsOf(r).some((t) => q.tags!.includes(t))) : out;
    const result: ExportedDto[] = [];
    for (const r of tagged.slice(0, MAX_LIST)) {
      const full = await toInteraction(this.prompts, p, r);
      result.push({
        ...toInteractionRef(r),
        ...(full.result_schema ? { result_schema: full.result_schema } : {}),
        prompts: full.prompts.map((s) => ({
          id: s.id,
          type: s.type,
          ...(s.template
            ? {
                template: {
                  id: s.template.id,
                  ...(s.template.inputSchema ? { inputSchema: s.template.inputSchema } : {}),
                },
              }
            : {}),
          ...(s.configuration !== undefined ? { configuration: s.configuration } : {}),
        })),
      });
    }
    return result;
  }

  /**
   * `POST /interactions/:id/fork`: a new draft copied from a draft or a published version, named
   * "<name> (fork)" with a free endpoint; `keepTags` keeps the tags, `forkPrompts` forks the prompt
   * templates it references too (else the fork shares them). Forks stay in the caller's project.
   */
  async fork(
    p: Principal,
    id: string,
    input: { keepTags?: boolean; forkPrompts?: boolean; targetProject?: string },
  ): Promise<InteractionDto> {
    if (input.targetProject !== undefined && input.targetProject !== p.project.id) {
      throw new BadRequest(
        `targetProject must be this project (${p.project.id}) or absent: to fork into another project, export the interaction and create it there with that project's API key`,
      );
    }
    const source = await this.row(p, id);
    const stored = (source.prompts as StoredSegment[] | null) ?? [];
    const forkedPrompts = new Map<string, string>();
    if (input.forkPrompts) {
      for (const ref of new Set(stored.map((s) => s.template_id).filter((x): x is string => !!x))) {
        forkedPrompts.set(ref, (await this.prompts.fork(p, ref, { keepTags: input.keepTags })).id);
      }
    }
    const segments: StoredSegment[] = stored.map((s) => ({
      ...s,
      id: newId(),
      ...(s.template_id ? { template_id: forkedPrompts.get(s.template_id) ?? s.template_id } : {}),
    }));
    const now = nowIso();
    const row: Row = {
      ...source,
      id: newId(),
      name: `${source.name} (fork)`,
      endpoint: await this.forkEndpoint(p, source.endpoint),
      status: 'draft',
      version: 0,
      edit_revision: 1,
      parent_id: null,
      prompts: segments,
      tags: input.keepTags ? tagsOf(source) : [],
      forked_from: source.id,
      created_by: actorOf(p),
      updated_by: actorOf(p),
      created_at: now,
      updated_at: now,
    };
    await this.table.insert(row, p);
    this.changes.bump(p.project.id);
    return toInteraction(this.prompts, p, row);
  }

  /** `GET /interactions/:id/forks`: the drafts forked from this interaction, newest first. */
  async forks(p: Principal, id: string): Promise<InteractionRefDto[]> {
    await this.row(p, id);
    const rows = await this.table.select(scopeOf(p), (q) =>
      q.where('forked_from', '=', id).orderBy('created_at', 'desc').orderBy('id', 'desc').limit(MAX_LIST),
    );
    return rows.map((r) => toInteractionRef(r));
  }

  /**
   * `GET /interactions/catalog`: the project's stored interactions as catalog entries: each
   * interaction's newest published version (`stored`), or its draft (`draft`) when none is published;
   * `status` draft or published picks one kind. Orrery has no system or app interactions.
   */
  async catalog(p: Principal, q: { status?: string; tag?: string }): Promise<CatalogEntryDto[]> {
    if (q.status !== undefined && q.status !== 'draft' && q.status !== 'published') {
      throw new BadRequest(`status must be "draft" or "published", got ${JSON.stringify(q.status)}`);
    }
    const all = await this.table.select(scopeOf(p), (query) => query.orderBy('endpoint').orderBy('version', 'desc'));
    const latest = new Map<string, Row>();
    for (const r of all)
      if (r.parent_id && (latest.get(r.parent_id)?.version ?? -1) < r.version) latest.set(r.parent_id, r);
    const out: CatalogEntryDto[] = [];
    for (const d of all.filter((r) => !r.parent_id)) {
      const published = latest.get(d.id);
      const r = q.status === 'draft' ? d : q.status === 'published' ? published : (published ?? d);
      if (!r || (q.tag && !tagsOf(r).includes(q.tag))) continue;
      out.push(
        r.parent_id
          ? { type: 'stored', id: r.id, name: r.endpoint, version: r.version, published: true }
          : { type: 'draft', id: r.id, name: r.endpoint, version: r.version, published: false },
      );
      if (out.length >= MAX_LIST) break;
    }
    return out;
  }

  /** `GET /prompts/:id/interactions`: the interactions whose draft or published versions use the prompt. */
  async promptUsage(
    p: Principal,
    promptId: string,
  ): Promise<{ prompt: string; interactions: { id: string; name: string; versions: { version: number }[] }[] }> {
    await this.prompts.get(p, promptId);
    const rows = await this.table.select(scopeOf(p), (q) => q.orderBy('name').orderBy('version'));
    const uses = (r: Row) =>
      ((r.prompts as StoredSegment[] | null) ?? []).some(
        (s) => s.template_id === promptId || s.inline?.id === promptId,
      );
    const byDraft = new Map<string, { id: string; name: string; versions: { version: number }[] }>();
    const names = new Map(rows.filter((r) => !r.parent_id).map((r) => [r.id, r.name]));
    for (const r of rows.filter(uses)) {
      const draftId = r.parent_id ?? r.id;
      const entry = byDraft.get(draftId) ?? { id: draftId, name: names.get(draftId) ?? r.name, versions: [] };
      if (r.parent_id) entry.versions.push({ version: r.version });
      byDraft.set(draftId, entry);
    }
    return { prompt: promptId, interactions: [...byDraft.values()].slice(0, MAX_LIST) };
  }

  /** The rows an InteractionSearchQuery matches; without a status the drafts, or with `allByDefault` every row. */
  private async matching(p: Principal, q: InteractionQuery, allByDefault: boolean): Promise<Row[]> {
    const statuses = q.status === undefined ? [] : Array.isArray(q.status) ? q.status : [q.status];
    for (const s of statuses) {
      if (!(INTERACTION_STATUSES as readonly string[]).includes(s))
        throw new BadRequest(`status must be one of ${INTERACTION_STATUSES.join(', ')}; got ${JSON.stringify(s)}`);
    }
    const rows = await this.table.select(scopeOf(p), (query) => {
      if (statuses.length) query = query.where('status', 'in', statuses);
      else if (!allByDefault) query = query.where('parent_id', 'is', null);
      if (q.model) query = query.where('model', '=', q.model);
      if (q.environment) query = query.where('environment_id', '=', q.environment);
      return query.orderBy('updated_at', 'desc').orderBy('id', 'desc');
    });
    const name = q.name?.toLowerCase();
    const tags = q.tags === undefined ? [] : Array.isArray(q.tags) ? q.tags : [q.tags];
    return rows.filter(
      (r) =>
        (!name || r.name.toLowerCase().includes(name) || r.endpoint.toLowerCase().includes(name)) &&
        (!tags.length || tagsOf(r).some((t) => tags.includes(t))),
    );
  }

  /** `<endpoint>_fork`, then `_fork2`, `_fork3`…: the first no draft of the project uses. */
  private async forkEndpoint(p: Principal, endpoint: string): Promise<string> {
    const taken = new Set(
      (await this.table.select(scopeOf(p), (q) => q.where('parent_id', 'is', null))).map((r) => r.endpoint),
    );
    for (let i = 1; ; i++) {
      const suffix = i === 1 ? '_fork' : `_fork${i}`;
      const candidate = endpoint.slice(0, 128 - suffix.length) + suffix;
      if (!taken.has(candidate)) return candidate;
    }
  }

  private versionRows(p: Principal, draftId: string): Promise<Row[]> {
    return this.table.select(scopeOf(p), (q) => q.where('parent_id', '=', draftId));
  }

  private async row(p: Principal, id: string): Promise<Row> {
    const row = await this.table.get(scopeOf(p), id);
    if (!row) throw new NotFound('interaction', id);
    return row;
  }

  private async checkRefs(p: Principal, input: InteractionInput) {
    if (input.environment) await this.environmentExists(p, input.environment);
    checkRestriction(input.restriction);
    // A reference to an object type's schema is stored as the schema it names.
    if (input.result_schema)
      input.result_schema = await resolveSchemaRef(p, 'result_schema', input.result_schema, this.typeSchemas);
    for (const [field, schema] of [
      ['result_schema', input.result_schema],
      ['interaction_schema', input.interaction_schema],
    ] as const) {
      if (schema) {
        try {
          compileSchema(schema);
        } catch (err) {
          throw new BadRequest(`${field} is not a valid JSON Schema: ${(err as Error).message}`);
        }
      }
    }
  }

  private async freeEndpoint(p: Principal, endpoint: string, self: string | undefined): Promise<string> {
    if (!/^[A-Za-z0-9_.:-]{1,128}$/.test(endpoint)) {
      throw new BadRequest(
        'endpoint must be 1-128 letters, digits, "_", "-", "." or ":" (no "@", which selects a version)',
      );
    }
    const clash = await this.table.select(scopeOf(p), (q) =>
      q.where('endpoint', '=', endpoint).where('parent_id', 'is', null),
    );
    if (clash.some((r) => r.id !== self))
      throw new Conflict(`another interaction of this project already has endpoint "${endpoint}"; choose another`);
    return endpoint;
  }

  private async segments(p: Principal, input: SegmentInput[]): Promise<StoredSegment[]> {
    if (!Array.isArray(input)) throw new BadRequest('prompts must be an array of {type, template}');
    const ids = input.map((s) => s.template).filter((t): t is string => typeof t === 'string');
    const found = new Set((await this.prompts.table.getMany(scopeOf(p), [...new Set(ids)])).map((r) => r.id));
    const segments = input.map((s, i) => {
      const type = s.type ?? 'template';
      if (type !== 'template' && type !== 'chat')
        throw new BadRequest(`prompts[${i}].type must be "template" or "chat"`);
      const seg: StoredSegment = {
        id: newId(),
        type,
        ...(s.configuration !== undefined ? { configuration: s.configuration } : {}),
      };
      if (typeof s.template === 'string') {
        if (!found.has(s.template)) throw new NotFound('prompt', s.template);
        seg.template_id = s.template;
      } else if (s.template && typeof s.template === 'object') {
        const t = s.template;
        if (t.id && !t.content) {
          if (!found.has(t.id) && !ids.includes(t.id)) return this.refById(seg, t.id, found);
          seg.template_id = t.id;
        } else {
          if (!PROMPT_ROLES.includes(t.role))
            throw new BadRequest(`prompts[${i}].template.role must be one of ${PROMPT_ROLES.join(', ')}`);
          if (!CONTENT_TYPES.includes(t.content_type))
            throw new BadRequest(`prompts[${i}].template.content_type must be one of ${CONTENT_TYPES.join(', ')}`);
          if (typeof t.content !== 'string') throw new BadRequest(`prompts[${i}].template.content must be a string`);
          const name = t.name ?? `segment ${i + 1}`;
          const inputSchema = t.inputSchema && typeof t.inputSchema === 'object' ? { inputSchema: t.inputSchema } : {};
          seg.inline = { name, role: t.role, content: t.content, content_type: t.content_type, ...inputSchema };
        }
      } else if (type === 'template') {
        throw new BadRequest(
          `prompts[${i}].template must be a prompt id or an inline template {role, content, content_type}`,
        );
      }
      return seg;
    });
    for (const seg of segments) if (seg.inline) await this.prompts.checkSyntax(seg.inline);
    return segments;
  }

  private refById(seg: StoredSegment, id: string, found: Set<string>): StoredSegment {
    if (!found.has(id)) throw new NotFound('prompt', id);
    return { ...seg, template_id: id };
  }
}

/**
 * `restriction`: Vertesia's RunDataStorageLevel. STANDARD is what every Orrery run does; a level
 * that stores less (RESTRICTED) or more (DEBUG) is refused by name rather than kept and ignored.
 */
function checkRestriction(level: unknown): void {
  if (level === undefined || level === null || level === 'STANDARD') return;
  if (level === 'RESTRICTED' || level === 'DEBUG')
    throw new BadRequest(
      `restriction ${level} is not applied by Orrery yet: every run stores its parameters, prompt and result (STANDARD); remove it or set STANDARD`,
    );
  throw new BadRequest(`restriction must be STANDARD, RESTRICTED or DEBUG, got ${JSON.stringify(level)}`);
}
