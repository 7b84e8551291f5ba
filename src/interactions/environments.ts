/**
 * Execution environments: a provider, an endpoint URL, a default model and an API key that is
 * encrypted at rest and never returned (only a hint of it).
 */
import type { Kysely, Selectable } from 'kysely';
import type { Database, EnvironmentTable } from '../db/schema.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import { ScopedTable } from '../db/scoped.ts';
import type { AuditLog } from '../audit/log.ts';
import { newId, nowIso } from '../db/ids.ts';
import { actorOf, scopeOf, type Principal } from '../auth/principal.ts';
import { decrypt, encrypt } from '../auth/secret.ts';
import { BadRequest, NotFound, OrreryError } from '../util/errors.ts';
import { getDriver, isImplemented, PROVIDERS, SUPPORTED_PROVIDER_IDS } from '../providers/registry.ts';
import type { ModelInfo, ProviderConnection } from '../providers/driver.ts';
import { checkEndpointLiteral, EgressRefused } from '../providers/egress.ts';
import { providerFailure } from '../providers/provider-failure.ts';
import { isVirtualProvider, parseVirtualConfig, VIRTUAL_PROVIDER_INFO } from './virtual-config.ts';
import type { Outbound } from '../providers/outbound.ts';
import type { ChangeClock } from './change-clock.ts';
import { HASHED_NGRAMS_MODEL, HashedNgramsEmbedder } from '../embeddings/hashed-ngrams.ts';
import { requestEmbeddings } from '../embeddings/openai-embeddings.ts';

/** The official client's EmbeddingsApiRequest (text inputs are the ones Orrery embeds). */
export interface EmbeddingsRequest {
  inputs: { type: string; text?: string }[];
  model?: string;
  embedding_type?: string;
  task_type?: string;
  dimensions?: number;
}

/** llumiverse's EmbeddingsResult: one item per input, in order. */
export interface EmbeddingsAnswer {
  model: string;
  results: { outputs: { values: number[]; modality: 'text' }[] }[];
}

const builtinTextEmbedder = new HashedNgramsEmbedder();

export interface EnvironmentInput {
  name?: string;
  provider?: string;
  description?: string | null;
  endpoint_url?: string | null;
  default_model?: string | null;
  enabled_models?: unknown[] | null;
  apiKey?: string | null;
  api_key?: string | null;
  config?: Record<string, unknown> | null;
}

export interface EnvironmentDto {
  id: string;
  name: string;
  provider: string;
  description?: string;
  endpoint_url?: string;
  default_model?: string;
  enabled_models: unknown[];
  apikey_hint?: string;
  has_api_key: boolean;
  config: Record<string, unknown>;
  account: string;
  project: string;
  created_by: string;
  updated_by: string;
  created_at: string;
  updated_at: string;
}

/** What the run service needs to call a provider. */
export interface ResolvedEnvironment {
  dto: EnvironmentDto;
  connection: ProviderConnection;
}

type Row = Selectable<EnvironmentTable>;

export class EnvironmentService {
  private readonly table: ScopedTable<'environments'>;

  constructor(
    db: Kysely<Database>,
    dialect: OrreryDialect,
    private readonly encryptionKey: Buffer,
    private readonly changes: ChangeClock,
    /** Where environments send their requests: its egress policy also vets endpoints as they are saved. */
    private readonly outbound?: Outbound,
    /** The audit trail: every change of an environment, its API key shown only as changed. */
    audit?: AuditLog,
  ) {
    this.table = new ScopedTable(
      db,
      dialect,
      'environments',
      ['enabled_models', 'config'],
      audit && {
        log: audit,
        resourceType: 'environment',
        secret: ['api_key'],
        view: ({ api_key_enc, ...rest }) => ({ ...rest, api_key: api_key_enc ?? null }),
      },
    );
  }

  providers() {
    return [...PROVIDERS, ...VIRTUAL_PROVIDER_INFO];
  }

  async create(p: Principal, input: EnvironmentInput): Promise<EnvironmentDto> {
    if (!input.name?.trim()) throw new BadRequest('body must have property "name"');
    if (!input.provider) throw new BadRequest('body must have property "provider"');
    this.checkProvider(input.provider);
    if (isVirtualProvider(input.provider)) parseVirtualConfig(input.provider, input.config);
    const now = nowIso();
    const key = input.apiKey ?? input.api_key ?? null;
    const row: Row = {
      id: newId(),
      account_id: p.account.id,
      project_id: p.project.id,
      name: input.name.trim(),
      provider: input.provider,
      description: input.description ?? null,
      endpoint_url: this.checkUrl(input.endpoint_url ?? null),
      default_model: input.default_model ?? null,
      enabled_models: input.enabled_models ?? [],
      api_key_enc: key ? encrypt(this.encryptionKey, key) : null,
      apikey_hint: key ? hint(key) : null,
      config: input.config ?? {},
      created_by: actorOf(p),
      updated_by: actorOf(p),
      created_at: now,
      updated_at: now,
    };
    await this.table.insert(row, p);
    this.changes.bump(p.project.id);
    return this.toDto(row);
  }

  async list(p: Principal): Promise<EnvironmentDto[]> {
    const rows = await this.table.select(scopeOf(p), (q) => q.orderBy('updated_at', 'desc').orderBy('id', 'desc'));
    return rows.map((r) => this.toDto(r));
  }

  async get(p: Principal, id: string): Promise<EnvironmentDto> {
    return this.toDto(await this.row(p, id));
  }

  async update(p: Principal, id: string, input: EnvironmentInput): Promise<EnvironmentDto> {
    const current = await this.row(p, id);
    if (input.provider !== undefined) this.checkProvider(input.provider);
    if (input.name !== undefined && !input.name.trim()) throw new BadRequest('name must not be empty');
    const provider = input.provider ?? current.provider;
    if (isVirtualProvider(provider))
      parseVirtualConfig(provider, input.config !== undefined ? input.config : current.config);
    const key = input.apiKey !== undefined ? input.apiKey : input.api_key;
    const patch: Partial<Row> = { updated_at: nowIso(), updated_by: actorOf(p) };
    if (input.name !== undefined) patch.name = input.name.trim();
    if (input.provider !== undefined) patch.provider = input.provider;
    if (input.description !== undefined) patch.description = input.description;
    if (input.endpoint_url !== undefined) patch.endpoint_url = this.checkUrl(input.endpoint_url);
    if (input.default_model !== undefined) patch.default_model = input.default_model;
    if (input.enabled_models !== undefined) patch.enabled_models = input.enabled_models ?? [];
    if (input.config !== undefined) patch.config = input.config ?? {};
    if (key !== undefined) {
      patch.api_key_enc = key ? encrypt(this.encryptionKey, key) : null;
      patch.apikey_hint = key ? hint(key) : null;
    }
    await this.table.update(scopeOf(p), id, patch, undefined, p);
    this.changes.bump(p.project.id);
    return this.toDto({ ...current, ...patch });
  }

  async delete(p: Principal, id: string): Promise<{ id: string }> {
    if (!(await this.table.delete(scopeOf(p), [id], p))) throw new NotFound('environment', id);
    this.changes.bump(p.project.id);
    return { id };
  }

  async models(p: Principal, id: string): Promise<ModelInfo[]> {
    const env = await this.resolve(p, id);
    const enabled = env.dto.enabled_models
      .map((m) => (typeof m === 'string' ? { id: m, name: m } : (m as ModelInfo)))
      .filter((m) => m && typeof m.id === 'string');
    if (enabled.length) return enabled;
    if (isVirtualProvider(env.dto.provider)) {
      return parseVirtualConfig(env.dto.provider, env.dto.config).entries.map((e) => ({ id: e.ref, name: e.ref }));
    }
    const driver = isImplemented(env.dto.provider) ? getDriver(env.dto.provider) : undefined;
    const listed = await driver?.listModels?.(env.connection).catch((err: unknown) => {
      throw providerFailure(err, `list the models of environment "${env.dto.name}"`, false);
    });
    if (listed) return listed;
    return env.dto.default_model ? [{ id: env.dto.default_model, name: env.dto.default_model }] : [];
  }

  /**
   * `POST /environments/:id/models/enabled`: adds a model to `enabled_models`, as the provider
   * lists it (an unknown id is a 400 naming the listed ones; a provider that lists no models takes
   * the id as given). Enabling an enabled model changes nothing.
   */
  async enableModel(p: Principal, id: string, modelId: string): Promise<EnvironmentDto> {
    if (!modelId?.trim())
      throw new BadRequest('body must have property "model_id", the id of a model the environment lists');
    const env = await this.resolve(p, id);
    const enabled = env.dto.enabled_models;
    if (enabled.some((m) => modelIdOf(m) === modelId)) return env.dto;
    const available = await this.available(env);
    let model: ModelInfo = { id: modelId, name: modelId };
    if (available) {
      const found = available.find((m) => m.id === modelId);
      if (!found) {
        const shown = available
          .slice(0, 50)
          .map((m) => m.id)
          .join(', ');
        throw new BadRequest(
          `model "${modelId}" is not among the models of environment "${env.dto.name}": ${shown}${available.length > 50 ? ', …' : ''}`,
        );
      }
      model = found;
    }
    return this.update(p, id, { enabled_models: [...enabled, model] });
  }

  /** `DELETE /environments/:id/models/enabled/:modelId`: removes a model from `enabled_models`. */
  async disableModel(p: Principal, id: string, modelId: string): Promise<EnvironmentDto> {
    const env = await this.get(p, id);
    const kept = env.enabled_models.filter((m) => modelIdOf(m) !== modelId);
    if (kept.length === env.enabled_models.length) {
      throw new OrreryError(
        'not_found',
        404,
        `model "${modelId}" is not enabled in environment "${env.name}"; enabled: ${env.enabled_models.map(modelIdOf).join(', ') || 'none'}`,
      );
    }
    return this.update(p, id, { enabled_models: kept });
  }

  /**
   * `PUT /environments/:id/config`: replaces `enabled_models` when given and merges `config` into
   * the stored one (fields not given are kept).
   */
  async updateConfig(
    p: Principal,
    id: string,
    input: { enabled_models?: unknown[]; config?: Record<string, unknown> },
  ): Promise<EnvironmentDto> {
    const current = await this.get(p, id);
    if (input.enabled_models !== undefined) {
      input.enabled_models.forEach((m, i) => {
        if (!modelIdOf(m)) throw new BadRequest(`enabled_models[${i}] must be a model {id, name?} or a model id`);
      });
    }
    return this.update(p, id, {
      ...(input.enabled_models !== undefined ? { enabled_models: input.enabled_models } : {}),
      ...(input.config !== undefined ? { config: { ...current.config, ...input.config } } : {}),
    });
  }

  /** The models the provider (or a virtual environment's entries) offers, whatever is enabled; undefined when it lists none. */
  private async available(env: ResolvedEnvironment): Promise<ModelInfo[] | undefined> {
    if (isVirtualProvider(env.dto.provider)) {
      return parseVirtualConfig(env.dto.provider, env.dto.config).entries.map((e) => ({ id: e.ref, name: e.ref }));
    }
    const driver = isImplemented(env.dto.provider) ? getDriver(env.dto.provider) : undefined;
    return driver?.listModels?.(env.connection).catch((err: unknown) => {
      throw providerFailure(err, `list the models of environment "${env.dto.name}"`, false);
    });
  }

  /**
   * `POST /environments/:id/embeddings`: vectors of text inputs from the environment's provider:
   * openai and openai_compatible through their `/embeddings` endpoint with the `model` given, the
   * test provider with Orrery's built-in offline embedder. Other inputs (image, video, audio) and
   * other providers are refused with a 400 that says so.
   */
  async embeddings(p: Principal, id: string, body: EmbeddingsRequest): Promise<EmbeddingsAnswer> {
    const env = await this.resolve(p, id);
    const texts = body.inputs.map((input, i) => {
      if (input.type !== 'text')
        throw new BadRequest(`inputs[${i}].type "${input.type}" is not supported: Orrery embeds text inputs only`);
      if (typeof input.text !== 'string' || !input.text)
        throw new BadRequest(`inputs[${i}].text must be a non-empty string`);
      return input.text;
    });
    if (body.dimensions !== undefined)
      throw new BadRequest("dimensions is not supported: the model's own dimensions are used; omit it");
    const provider = env.dto.provider;
    let model: string;
    let vectors: Float32Array[];
    if (provider === 'test') {
      model = HASHED_NGRAMS_MODEL;
      if (body.model !== undefined && body.model !== model)
        throw new BadRequest(
          `a test environment embeds with Orrery's built-in model "${model}"; omit model or give that one`,
        );
      vectors = texts.map((t) => builtinTextEmbedder.embedNow(t));
    } else if (provider === 'openai' || provider === 'openai_compatible') {
      if (!body.model)
        throw new BadRequest(
          `body must have property "model", the embedding model of environment "${env.dto.name}" to use (e.g. text-embedding-3-small)`,
        );
      model = body.model;
      vectors = await requestEmbeddings({ provider, connection: env.connection, model }, texts).catch(
        (err: unknown) => {
          throw providerFailure(err, `embed with environment "${env.dto.name}"`, false);
        },
      );
    } else {
      throw new BadRequest(
        `environment "${env.dto.name}" (provider ${provider}) cannot embed in Orrery; use an openai, openai_compatible or test environment`,
      );
    }
    return {
      model,
      results: vectors.map((v) => ({ outputs: [{ values: Array.from(v), modality: 'text' as const }] })),
    };
  }

  /** The environment with its decrypted key, for execution. */
  async resolve(p: Principal, id: string): Promise<ResolvedEnvironment> {
    const row = await this.row(p, id);
    const dto = this.toDto(row);
    return {
      dto,
      connection: {
        endpoint_url: row.endpoint_url ?? undefined,
        api_key: row.api_key_enc ? decrypt(this.encryptionKey, row.api_key_enc) : undefined,
        config: dto.config,
        outbound: this.outbound,
      },
    };
  }

  private async row(p: Principal, id: string): Promise<Row> {
    const row = await this.table.get(scopeOf(p), id);
    if (!row) throw new NotFound('environment', id);
    return row;
  }

  private checkProvider(provider: string) {
    if (!(SUPPORTED_PROVIDER_IDS as readonly string[]).includes(provider)) {
      throw new BadRequest(`unknown provider "${provider}"; supported providers: ${SUPPORTED_PROVIDER_IDS.join(', ')}`);
    }
  }

  private checkUrl(url: string | null): string | null {
    if (url === null || url === '') return null;
    try {
      const u = new URL(url);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('protocol');
    } catch {
      throw new BadRequest(`endpoint_url must be an absolute http(s) URL, got ${JSON.stringify(url)}`);
    }
    if (this.outbound) {
      try {
        checkEndpointLiteral(url, this.outbound.policy);
      } catch (err) {
        if (err instanceof EgressRefused)
          throw new BadRequest(`endpoint_url: ${err.message}`, { reason: 'egress_refused' });
        throw err;
      }
    }
    return url;
  }

  private toDto(r: Row): EnvironmentDto {
    return {
      id: r.id,
      name: r.name,
      provider: r.provider,
      ...(r.description ? { description: r.description } : {}),
      ...(r.endpoint_url ? { endpoint_url: r.endpoint_url } : {}),
      ...(r.default_model ? { default_model: r.default_model } : {}),
      enabled_models: (r.enabled_models as unknown[] | null) ?? [],
      ...(r.apikey_hint ? { apikey_hint: r.apikey_hint } : {}),
      has_api_key: r.api_key_enc !== null,
      config: (r.config as Record<string, unknown> | null) ?? {},
      account: r.account_id,
      project: r.project_id,
      created_by: r.created_by,
      updated_by: r.updated_by,
      created_at: r.created_at,
      updated_at: r.updated_at,
    };
  }
}

/** A stored enabled model is a model {id, …} or, from older writes, its id. */
const modelIdOf = (m: unknown): string | undefined =>
  typeof m === 'string'
    ? m
    : m && typeof m === 'object' && typeof (m as { id?: unknown }).id === 'string'
      ? (m as { id: string }).id
      : undefined;

const hint = (key: string) => (key.length > 8 ? `…${key.slice(-4)}` : '…');
