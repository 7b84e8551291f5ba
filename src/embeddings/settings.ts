/**
 * Which embedder a project uses (decisions.md, Embeddings): the built-in offline embedder unless
 * `PUT /projects/:id {embeddings: {environment, model, runs}}` picked an environment whose
 * provider has an embeddings endpoint (openai, openai_compatible). Kept in the project's
 * `settings.embeddings`; read through a short cache, because runs ask on every execution.
 */
import type { AuthReads } from '../auth/reads.ts';
import type { Principal, Scope } from '../auth/principal.ts';
import { BadRequest, NotFound, OrreryError } from '../util/errors.ts';
import { providerFailure } from '../providers/provider-failure.ts';
import type { EnvironmentService } from '../interactions/environments.ts';
import type { Embedder } from './embedder.ts';
import { HASHED_NGRAMS_MODEL, HashedNgramsEmbedder } from './hashed-ngrams.ts';
import { OpenAIEmbedder, requestEmbeddings } from './openai-embeddings.ts';

export interface EmbeddingSettings {
  /** null: the built-in embedder. */
  environment: string | null;
  model: string;
  dimensions: number;
  /** input_embedding / result_embedding on runs. */
  runs: boolean;
  /** Object embedding types turned off (the client's `embeddings.disable(type)`): none computed, none searched. */
  disabled?: EmbeddingKind[];
}

/** The object embedding types a project can turn on and off. */
export const EMBEDDING_KINDS = ['text', 'image', 'properties'] as const;
export type EmbeddingKind = (typeof EMBEDDING_KINDS)[number];

const BUILTIN: EmbeddingSettings = {
  environment: null,
  model: HASHED_NGRAMS_MODEL,
  dimensions: 384,
  runs: true,
};

/** Providers whose environments can embed (an OpenAI-compatible `/embeddings` endpoint). */
const EMBEDDING_PROVIDERS = ['openai', 'openai_compatible'] as const;

export interface ResolvedEmbedder {
  settings: EmbeddingSettings;
  embedder: Embedder;
}

/** How long a project's settings (and its environment's key) serve before they are read again. */
const CACHE_MS = 5000;

const builtinEmbedder = new HashedNgramsEmbedder();

/** The principal-shaped scope the environment service needs, for background work. */
export const systemPrincipal = (s: Scope): Principal => ({
  account: { id: s.account, name: '' },
  project: { id: s.project, name: '' },
  keyId: 'system',
  role: 'developer',
  via: 'apikey',
});

export class EmbeddingSettingsStore {
  private readonly cache = new Map<string, { value: Promise<ResolvedEmbedder>; until: number }>();

  constructor(
    /** A project's settings (auth's rows, read through auth/reads.ts). */
    private readonly projectSettings: AuthReads['projectSettings'],
    private readonly environments: EnvironmentService,
  ) {}

  /** The project's embedder (cached for a few seconds). */
  resolve(s: Scope): Promise<ResolvedEmbedder> {
    const now = Date.now();
    const hit = this.cache.get(s.project);
    if (hit && hit.until > now) return hit.value;
    const value = this.load(s);
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(s.project, { value, until: now + CACHE_MS });
    value.catch(() => this.cache.delete(s.project));
    return value;
  }

  /** The cached value, if fresh, without waiting (the run hot path). */
  peek(s: Scope): Promise<ResolvedEmbedder> | undefined {
    const hit = this.cache.get(s.project);
    return hit && hit.until > Date.now() ? hit.value : undefined;
  }

  forget(projectId: string): void {
    this.cache.delete(projectId);
  }

  async settings(s: Scope): Promise<EmbeddingSettings> {
    const all = (await this.projectSettings(s.project, s.account)) ?? {};
    return parseStored(all.embeddings);
  }

  /**
   * Validates `PUT /projects/:id {embeddings}` and answers the settings to store. An environment
   * is checked by one embeddings call (which also tells the dimensions of an unknown model).
   */
  async prepare(s: Scope, input: unknown, current: EmbeddingSettings): Promise<EmbeddingSettings> {
    if (input === null) return { ...BUILTIN, runs: current.runs };
    if (typeof input !== 'object' || Array.isArray(input))
      throw new BadRequest('embeddings must be an object {environment, model, runs}');
    const i = input as Record<string, unknown>;
    for (const k of Object.keys(i)) {
      if (!['environment', 'model', 'runs', 'disabled'].includes(k))
        throw new BadRequest(`embeddings.${k} is not a setting; use environment, model, runs and disabled`);
    }
    if (i.runs !== undefined && typeof i.runs !== 'boolean')
      throw new BadRequest('embeddings.runs must be true or false');
    const runs = (i.runs as boolean | undefined) ?? current.runs;
    const disabled = i.disabled === undefined ? current.disabled : disabledOf(i.disabled);
    const withDisabled = (x: EmbeddingSettings): EmbeddingSettings =>
      disabled?.length ? { ...x, disabled } : { ...x, disabled: undefined };
    if (!('environment' in i) && !('model' in i)) return withDisabled({ ...current, runs });
    const env = i.environment;
    if (env === null || env === undefined || env === '' || env === 'builtin') {
      if (i.model !== undefined && i.model !== HASHED_NGRAMS_MODEL) {
        throw new BadRequest(
          `without an environment the embedder is the built-in ${HASHED_NGRAMS_MODEL}; pass an environment to use model ${JSON.stringify(i.model)}`,
        );
      }
      return withDisabled({ ...BUILTIN, runs });
    }
    if (typeof env !== 'string')
      throw new BadRequest('embeddings.environment must be an environment id, or null for the built-in embedder');
    if (typeof i.model !== 'string' || !i.model.trim())
      throw new BadRequest(
        'embeddings.model is required with an environment: the embedding model to call, e.g. text-embedding-3-small or nomic-embed-text',
      );
    const model = i.model.trim();
    const resolved = await this.environments.resolve(systemPrincipal(s), env);
    const provider = resolved.dto.provider;
    if (!(EMBEDDING_PROVIDERS as readonly string[]).includes(provider)) {
      throw new BadRequest(
        `environment "${resolved.dto.name}" uses provider "${provider}", which has no embeddings endpoint Orrery can call; use an ${EMBEDDING_PROVIDERS.join(' or ')} environment`,
      );
    }
    let dimensions: number;
    try {
      const [probe] = await requestEmbeddings(
        { provider: provider as 'openai', connection: resolved.connection, model },
        ['Orrery checks that this environment can embed text.'],
      );
      dimensions = probe.length;
    } catch (err) {
      throw providerFailure(err, 'configure embeddings');
    }
    if (!dimensions)
      throw new OrreryError(
        'provider_error',
        502,
        `environment "${resolved.dto.name}" answered an empty embedding for model ${model}`,
      );
    return withDisabled({ environment: resolved.dto.id, model, dimensions, runs });
  }

  private async load(s: Scope): Promise<ResolvedEmbedder> {
    const settings = await this.settings(s);
    if (!settings.environment) return { settings, embedder: builtinEmbedder };
    let resolved;
    try {
      resolved = await this.environments.resolve(systemPrincipal(s), settings.environment);
    } catch (err) {
      if (err instanceof NotFound) {
        throw new OrreryError(
          'embeddings_unavailable',
          409,
          `the project's embedding environment ${settings.environment} was deleted: set embeddings again with PUT /projects/${s.project}`,
        );
      }
      throw err;
    }
    const provider = resolved.dto.provider as 'openai' | 'openai_compatible';
    return {
      settings,
      embedder: new OpenAIEmbedder({
        provider,
        model: settings.model,
        dimensions: settings.dimensions,
        connection: resolved.connection,
      }),
    };
  }
}

export function parseStored(v: unknown): EmbeddingSettings {
  if (!v || typeof v !== 'object') return BUILTIN;
  const o = v as Partial<EmbeddingSettings>;
  const runs = typeof o.runs === 'boolean' ? o.runs : true;
  const disabled = Array.isArray(o.disabled)
    ? o.disabled.filter((t): t is EmbeddingKind => (EMBEDDING_KINDS as readonly string[]).includes(t))
    : [];
  const base =
    !o.environment || typeof o.model !== 'string' || typeof o.dimensions !== 'number'
      ? { ...BUILTIN, runs }
      : { environment: o.environment, model: o.model, dimensions: o.dimensions, runs };
  return disabled.length ? { ...base, disabled } : base;
}

/** `embeddings.disabled`: a list of object embedding types, each at most once. */
function disabledOf(v: unknown): EmbeddingKind[] {
  if (!Array.isArray(v) || v.some((t) => !(EMBEDDING_KINDS as readonly unknown[]).includes(t))) {
    throw new BadRequest(`embeddings.disabled must be a list of ${EMBEDDING_KINDS.join(', ')}`);
  }
  return [...new Set(v as EmbeddingKind[])];
}

export const isDisabled = (settings: EmbeddingSettings, type: string): boolean =>
  !!settings.disabled?.includes(type as EmbeddingKind);
