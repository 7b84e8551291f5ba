/**
 * The plan step of a run: its interaction and environment resolved (from a short-lived cache while
 * nothing changed), its model and options chosen and checked, its document and row described, and
 * the plan its call step follows (which provider, which request, which cache entry).
 */
import type { CallBounds } from './call-bounds.ts';
import { nowIso, newId } from '../db/ids.ts';
import { actorOf, scopeOf, type Principal } from '../auth/principal.ts';
import { BadRequest, NotFound } from '../util/errors.ts';
import { checkInlineJson } from '../limits/inline-json.ts';
import { getDriver, isImplemented, PROVIDERS } from '../providers/registry.ts';
import type { ChatMessage, CompletionRequest, ModelDriver, ProviderConnection } from '../providers/driver.ts';
import type { EnvironmentService, ResolvedEnvironment } from '../interactions/environments.ts';
import type { InteractionDto, InteractionService } from '../interactions/interactions.ts';
import type { ChangeClock } from '../interactions/change-clock.ts';
import { compileSchema } from '../interactions/json-schema.ts';
import { resolveSchemaRef, type ObjectTypeSchemas } from '../interactions/schema-ref.ts';
import { isVirtualProvider, parseVirtualConfig, type VirtualConfig } from '../interactions/virtual-config.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import { docOf, type RunDoc, type RunRow, type RunSource } from './model.ts';
import { buildRequest, type SamplingOptions } from './call.ts';
import { decideOptions } from '../providers/option-sets.ts';
import { validateInput } from './render.ts';
import { mediaObjectsOf, mediaTargetOf, type RunMediaHook } from './run-media.ts';
import type { CacheDecision, CachedAnswer, ResultCache } from './result-cache.ts';
import type { RunsInFlight } from './in-flight.ts';
import * as store from './store.ts';
import { runTools, type RunTools } from '../conversations/run-tools.ts';
import { ConversationTurnLost } from '../conversations/errors.ts';
import { rebuildHistory } from '../conversations/history.ts';
import { stripHistory } from '../conversations/strip.ts';
import { turnLoader } from './conversation-turns.ts';

export interface RunCreateInput {
  interaction: string;
  stream?: boolean;
  data?: unknown;
  tags?: string | string[];
  config?: Record<string, unknown>;
  result_schema?: Record<string, unknown> | null;
  parent?: string;
  ttl?: number;
  tool_definitions?: unknown;
  /** true, or a conversation passed back (conversations/conversation.ts). */
  conversation?: unknown;
  /** false: the answer is kept even when it does not match result_schema (as `config.do_validate`). */
  do_validate?: boolean;
}

export interface CallerInfo {
  ip: string;
  userAgent?: string;
  /** The door a stored interaction was run through (`mcp`): the run's `source.type`. */
  door?: string;
}

/** What every plan may carry: the run's cache decision, and the cached answer it is served from. */
interface CachePlan {
  cache?: CacheDecision;
  cached?: CachedAnswer;
  /** An async run's: what stops its call, and each attempt's timeout (runs/call-bounds.ts). */
  bounds?: CallBounds;
  /** false (`do_validate: false`): an answer that does not match result_schema is kept, not failed. */
  validate?: false;
}

/** Everything needed to call the provider, fixed when the run is created. */
export interface ProviderPlan extends CachePlan {
  kind: 'provider';
  driver: ModelDriver;
  connection: ProviderConnection;
  request: CompletionRequest;
}

/** A run on a virtual environment: its entries' environments, resolved when the run is created. */
export interface VirtualPlan extends CachePlan {
  kind: 'virtual';
  config: VirtualConfig;
  targets: Map<string, ResolvedEnvironment>;
  connection: ProviderConnection;
  request: CompletionRequest;
}

export type Plan = ProviderPlan | VirtualPlan;

/** A virtual environment's config with the environments its entries and mediators name. */
export interface VirtualTargets {
  config: VirtualConfig;
  targets: Map<string, ResolvedEnvironment>;
}

/** A run request resolved: what it runs, where, with which model and options. */
export interface ResolvedRun {
  interaction: InteractionDto;
  env: ResolvedEnvironment;
  virtual?: VirtualTargets;
  model: string;
  options: SamplingOptions;
  /** The tools the model may call, checked against the model (none: a run without tools). */
  tools?: RunTools;
  /** The caller's config (a copy). */
  config: Record<string, unknown>;
}

interface ExecutionContext {
  interaction: InteractionDto;
  env: ResolvedEnvironment;
}

export interface RunPlannerDeps {
  db: store.Db;
  dialect: OrreryDialect;
  interactions: InteractionService;
  environments: EnvironmentService;
  changes: ChangeClock;
  cache: ResultCache;
  inFlight: RunsInFlight;
  /** Largest `data` a run stores inline, in bytes of JSON (src/limits/inline-json.ts); 1 MiB when absent. */
  maxInlineJson?: number;
  /** Reads media references into the bytes a provider is sent (runs/run-media.ts). */
  media?: RunMediaHook;
  /** Object types' schemas, for a result_schema `{ $uri: "store:<typeId>" }` (interactions/schema-ref.ts). */
  typeSchemas?: ObjectTypeSchemas;
}

const DEFAULT_TEMPERATURE = 0.7;
/** How long a resolved interaction and environment may serve runs before they are read again. */
const CONTEXT_TTL_MS = 1000;
/** Resolved contexts kept at most; past this the cache starts over. */
const MAX_CONTEXTS = 10_000;

export class RunPlanner {
  /** Resolved interaction + environment by project, interaction and environment override. */
  private readonly contexts = new Map<string, { ctx: ExecutionContext; version: number; until: number }>();

  constructor(private readonly deps: RunPlannerDeps) {}

  /**
   * A run request's interaction, environment, model and options, checked: a 400 that says what to
   * fix otherwise. `load` reads the interaction (by id or by endpoint selector).
   */
  async resolve(
    p: Principal,
    input: RunCreateInput,
    load: () => Promise<InteractionDto>,
    cacheKey?: string,
  ): Promise<ResolvedRun> {
    if (typeof input.interaction !== 'string' || !input.interaction)
      throw new BadRequest('body must have property "interaction"');
    checkInlineJson(input.data, 'data', this.deps.maxInlineJson);
    const config = { ...(input.config ?? {}) };
    // Vertesia takes do_validate at the top or in config; the run records it in its config.
    if (input.do_validate === false) config.do_validate = false;
    const mode = configModeOf(config);
    const context = await this.context(p, config.environment as string | undefined, load, cacheKey);
    const { env } = context;
    const interaction = interactionConfigFor(mode, context.interaction);
    const virtual = isVirtualProvider(env.dto.provider) ? await this.virtualTargets(p, env) : undefined;
    if (!virtual && !isImplemented(env.dto.provider)) {
      throw new BadRequest(
        `environment "${env.dto.name}" uses provider "${env.dto.provider}", which Orrery cannot execute yet; use one of ${PROVIDERS.map((p) => p.id).join(', ')}`,
      );
    }
    // A virtual environment's entries name their own models; the run is labelled with the provider.
    const model =
      (config.model as string | undefined) ??
      interaction.model ??
      env.dto.default_model ??
      (virtual ? env.dto.provider : undefined);
    if (!model)
      throw new BadRequest(
        `no model: pass config.model, or set a model on interaction "${interaction.name}" or a default_model on environment "${env.dto.name}"`,
      );
    // A virtual run's entries each name their own model: its options are decided per entry.
    const options = modelOptions(interaction, config, virtual ? undefined : { provider: env.dto.provider, model });
    // Checked before anything is stored: a model that cannot call tools never sees the request.
    // A virtual run may reach any of its entries: each one's model must take the tools.
    const tools = runTools(
      input.tool_definitions,
      interaction.model_options?.tool_definitions,
      config.model_options ?? interaction.model_options,
      virtual
        ? virtual.config.entries.map((e) => ({ env: virtual.targets.get(e.environment)!.dto, model: e.model }))
        : [{ env: env.dto, model }],
      input.stream === true,
    );
    validateInput(interaction, input.data);
    return { interaction, env, ...(virtual ? { virtual } : {}), model, options, ...(tools ? { tools } : {}), config };
  }

  /**
   * What is checked once the prompt is rendered (a template's failure is recorded as a failed run
   * before these 400s are): the caller's result_schema, the parent run, the ttl.
   */
  async check(
    p: Principal,
    input: RunCreateInput,
    interaction: InteractionDto,
  ): Promise<{ resultSchema: Record<string, unknown> | undefined; ttl: number }> {
    const given = input.result_schema
      ? await resolveSchemaRef(p, 'result_schema', input.result_schema, this.deps.typeSchemas)
      : input.result_schema;
    const resultSchema = given ?? interaction.result_schema ?? undefined;
    if (given) {
      try {
        compileSchema(given);
      } catch (err) {
        throw new BadRequest(`result_schema is not a valid JSON Schema: ${(err as Error).message}`);
      }
    }
    if (input.parent !== undefined) {
      // Run creation does not wait for runs answered before their commit (runs/read-barrier.ts), except to read a parent.
      await this.deps.inFlight.whenStored();
      if (!(await store.getRun(this.deps.db, this.deps.dialect, scopeOf(p), input.parent)))
        throw new NotFound('run', input.parent);
    }
    const ttl = input.ttl ?? 0;
    if (!Number.isFinite(ttl) || ttl < 0) throw new BadRequest('ttl must be a number of seconds, 0 or more');
    return { resultSchema, ttl };
  }

  /** The plan of a run whose row is written: its request, its provider (or entries), its cache entry. */
  async plan(
    p: Principal,
    run: ResolvedRun,
    messages: ChatMessage[],
    resultSchema: Record<string, unknown> | undefined,
    data: unknown,
    /** The messages as the provider is sent them (media read in), when they differ from the stored ones. */
    sending: ChatMessage[] = messages,
  ): Promise<Plan> {
    const { env, model, options, virtual, tools } = run;
    const request = buildRequest({ model, messages: sending, options, resultSchema, tools });
    const plan: Plan = virtual
      ? { kind: 'virtual', ...virtual, connection: env.connection, request }
      : { kind: 'provider', driver: getDriver(env.dto.provider), connection: env.connection, request };
    plan.cache = this.deps.cache.decide(run.interaction.cache_policy, {
      environment: env.dto.id,
      model,
      // The tools are part of the question: the same prompt with other tools is another answer.
      options: tools ? { ...options, ...tools } : options,
      messages,
      resultSchema,
      data,
    });
    if (plan.cache && !plan.cache.refresh) plan.cached = await this.deps.cache.lookup(scopeOf(p), plan.cache.key);
    if (run.config.do_validate === false) plan.validate = false;
    return plan;
  }

  /** A streamed run created by another process (or before a restart): rebuild its plan from its document. */
  async replan(p: Principal, row: RunRow): Promise<Plan> {
    const doc = docOf(row);
    const env = await this.deps.environments.resolve(p, doc.environment?.id ?? '');
    const c = doc.config;
    const prompt = doc.prompt as ChatMessage[];
    const request = buildRequest({
      model: row.model_id ?? '',
      messages: doc.previous_run || doc.conversation?.restricted ? await this.historyOf(p, row) : prompt,
      // Every option as the run was first sent it; rows written before runs kept them: the two in config.
      options: doc.options ?? {
        temperature: c.temperature as number | undefined,
        ...(c.max_tokens !== undefined ? { max_tokens: c.max_tokens as number } : {}),
      },
      resultSchema: doc.result_schema,
      ...(doc.tools
        ? { tools: { tools: doc.tools, ...(doc.tool_choice ? { tool_choice: doc.tool_choice } : {}) } }
        : {}),
    });
    // Media references in the prompt are read again here: the process that created the run held their bytes.
    if (this.deps.media)
      request.messages = await this.deps.media.materialize(
        p,
        request.messages,
        undefined,
        mediaTargetOf(env.dto, row.model_id ?? ''),
      );
    const validate = c.do_validate === false ? { validate: false as const } : {};
    if (isVirtualProvider(env.dto.provider))
      return {
        kind: 'virtual',
        ...(await this.virtualTargets(p, env)),
        connection: env.connection,
        request,
        ...validate,
      };
    return { kind: 'provider', driver: getDriver(env.dto.provider), connection: env.connection, request, ...validate };
  }

  /**
   * The request messages of a streamed continuation started by another process: the history rebuilt
   * from its chain (checked against the bounds when it was created), stripped as it was, then its turn.
   * A restricted conversation's history is only in the request that created it: a lost turn (409).
   */
  private async historyOf(p: Principal, row: RunRow): Promise<ChatMessage[]> {
    const doc = docOf(row);
    if (doc.conversation?.restricted || !doc.previous_run)
      throw new ConversationTurnLost(
        `run ${row.id} continues a restricted conversation, whose history only the process that created it held; create the run again`,
      );
    const scope = scopeOf(p);
    const unbounded = { maxTurns: Number.MAX_SAFE_INTEGER, maxBytes: Number.MAX_SAFE_INTEGER };
    const { turns } = await rebuildHistory(
      doc.previous_run,
      turnLoader(this.deps.db, this.deps.dialect, scope, doc.previous_run),
      unbounded,
    );
    const turn = doc.conversation?.turn ?? turns.length + 1;
    return [...stripHistory(turns, turn, doc.conversation?.strip_options), ...(doc.prompt as ChatMessage[])];
  }

  /** The interaction and environment of a run, from the cache while nothing changed. */
  private async context(
    p: Principal,
    envOverride: string | undefined,
    load: () => Promise<InteractionDto>,
    cacheKey?: string,
  ): Promise<ExecutionContext> {
    const key = cacheKey && `${p.project.id}|${cacheKey}|${envOverride ?? ''}`;
    const version = this.deps.changes.version(p.project.id);
    const now = Date.now();
    const hit = key ? this.contexts.get(key) : undefined;
    if (hit && hit.version === version && hit.until > now) return hit.ctx;
    const interaction = await load();
    const envId = envOverride ?? interaction.environment;
    if (!envId)
      throw new BadRequest(`interaction "${interaction.name}" has no default environment; pass config.environment`);
    const ctx = { interaction, env: await this.deps.environments.resolve(p, envId) };
    if (key) {
      if (this.contexts.size > MAX_CONTEXTS) this.contexts.clear();
      this.contexts.set(key, { ctx, version, until: now + CONTEXT_TTL_MS });
    }
    return ctx;
  }

  /**
   * A virtual environment's config, read and checked, with every environment its entries and
   * mediators name resolved in the caller's project: a 400 that says what to fix otherwise.
   */
  private async virtualTargets(p: Principal, env: ResolvedEnvironment): Promise<VirtualTargets> {
    const config = parseVirtualConfig(env.dto.provider as VirtualConfig['provider'], env.dto.config);
    const targets = new Map<string, ResolvedEnvironment>();
    for (const entry of [...config.entries, ...config.mediators]) {
      if (targets.has(entry.environment)) continue;
      const target = await this.deps.environments.resolve(p, entry.environment).catch((err) => {
        if (err instanceof NotFound)
          throw new BadRequest(
            `virtual environment "${env.dto.name}" names environment ${entry.environment} (in "${entry.ref}"), which this project does not have`,
          );
        throw err;
      });
      if (isVirtualProvider(target.dto.provider))
        throw new BadRequest(
          `virtual environment "${env.dto.name}" names "${target.dto.name}", another virtual environment; entries must be real providers`,
        );
      if (!isImplemented(target.dto.provider))
        throw new BadRequest(
          `virtual environment "${env.dto.name}" names "${target.dto.name}", whose provider "${target.dto.provider}" Orrery cannot execute`,
        );
      targets.set(entry.environment, target);
    }
    return { config, targets };
  }
}

/** The document a new run starts with: what it was asked, with what, by whom. */
export function describeRun(
  p: Principal,
  input: RunCreateInput,
  caller: CallerInfo,
  run: ResolvedRun,
  at: { messages: ChatMessage[]; resultSchema: Record<string, unknown> | undefined; ttl: number; stream: boolean },
): RunDoc {
  const { interaction, env } = run;
  const source = runSource(p, caller);
  const objects = mediaObjectsOf(at.messages);
  return {
    result: [],
    parameters: input.data ?? {},
    prompt: at.messages,
    ...(objects.length ? { media: { objects } } : {}),
    config: runConfig(run.config, env.dto.id, run.model, run.options),
    options: sentOptions(run.options),
    source,
    ttl: at.ttl,
    stream: at.stream,
    interaction: {
      id: interaction.id,
      name: interaction.name,
      endpoint: interaction.endpoint,
      version: interaction.version,
    },
    environment: { id: env.dto.id, name: env.dto.name, provider: env.dto.provider },
    ...(at.resultSchema ? { result_schema: at.resultSchema } : {}),
    ...run.tools, // tools, and tool_choice when the run set one
    account: p.account,
    project: p.project,
    created_by: actorOf(p),
  };
}

/** Who asked for a run, and from where. */
export function runSource(p: Principal, caller: CallerInfo): RunSource {
  return {
    type: caller.door ?? (/vertesia[-/ ]?cli/i.test(caller.userAgent ?? '') ? 'cli' : 'api'),
    label: `apikey:${p.keyId}`,
    principal_type: 'apikey',
    principal_id: p.keyId,
    client_ip: caller.ip,
  };
}

/** A new run's row, not yet ended; every run row is built here, so that all have one shape. */
export function newRunRow(r: {
  account_id: string;
  project_id: string;
  interaction_id: string;
  environment_id: string;
  model_id: string;
  status: RunRow['status'];
  parent_id: string | null;
  execution_time?: number;
  tags: string[];
  now?: string;
  doc: RunDoc;
  executor: string | null;
  /** The run's span (src/telemetry). */
  trace?: { traceId: string | null; spanId: string | null };
}): RunRow {
  const now = r.now ?? nowIso();
  return {
    id: newId(),
    account_id: r.account_id,
    project_id: r.project_id,
    interaction_id: r.interaction_id,
    environment_id: r.environment_id,
    model_id: r.model_id,
    status: r.status,
    parent_id: r.parent_id,
    finish_reason: null,
    execution_time: r.execution_time ?? null,
    token_prompt: null,
    token_result: null,
    token_total: null,
    tags: r.tags,
    created_at: now,
    updated_at: now,
    doc: r.doc,
    executor: r.executor,
    trace_id: r.trace?.traceId ?? null,
    span_id: r.trace?.spanId ?? null,
  };
}

/**
 * The config a run records: the caller's, with the environment, model and options it runs with.
 * Those keys are written first and set again after the caller's (which may name them too), rather
 * than `{ ...config, environment, … }`: keys added after a spread cost a hidden class per run
 * (runs/search-index.ts, withColumns).
 */
export function runConfig(
  config: Record<string, unknown>,
  environment: string,
  model: string,
  options: SamplingOptions,
): Record<string, unknown> {
  const out: Record<string, unknown> = { environment, model, temperature: options.temperature, ...config };
  out.environment = environment;
  out.model = model;
  // A model that takes no temperature is sent none, and the run records none.
  if (options.temperature === undefined) delete out.temperature;
  else out.temperature = options.temperature;
  if (options.max_tokens !== undefined) out.max_tokens = options.max_tokens;
  if (options.dropped) out.dropped = options.dropped;
  return out;
}

/** The options a request is sent (what `dropped` lists is not sent): a run's plan is rebuilt from them. */
export function sentOptions(options: SamplingOptions): SamplingOptions {
  const { dropped: _dropped, ...sent } = options;
  return sent;
}

/**
 * Options from the interaction, then config, then config.model_options (which wins: decisions.md).
 * Vertesia's names are accepted too: `stop_sequence` for `stop`. With the `target` model known,
 * its option set decides (providers/option-sets.ts): the default temperature only where the model
 * takes one, sampling options it refuses dropped (and listed in `dropped`), reasoning options
 * forwarded or refused by name.
 */
export function modelOptions(
  interaction: InteractionDto,
  config: Record<string, unknown>,
  target?: { provider: string; model: string },
): SamplingOptions {
  const fromModelOptions = (config.model_options ?? {}) as Record<string, unknown>;
  // Copied with Object.assign, not a spread: keys added to a spread copy cost a hidden class per run.
  const merged: Record<string, unknown> = {};
  // The interaction's own temperature and max_tokens, under its model_options (as the run's config is).
  if (interaction.temperature !== undefined) merged.temperature = interaction.temperature;
  if (interaction.max_tokens !== undefined) merged.max_tokens = interaction.max_tokens;
  Object.assign(merged, interaction.model_options);
  for (const k of ['temperature', 'max_tokens', 'top_p', 'stop']) if (config[k] !== undefined) merged[k] = config[k];
  Object.assign(merged, fromModelOptions);
  if (merged.stop === undefined && merged.stop_sequence !== undefined) merged.stop = merged.stop_sequence;
  const decision = target
    ? decideOptions(
        target.provider,
        target.model,
        merged,
        [interaction.model_options, config.model_options as Record<string, unknown> | undefined],
        { mode: config.prompt_cache_mode, key: config.prompt_cache_key },
      )
    : undefined;
  for (const k of decision?.drops ?? []) delete merged[k];
  const given = (k: string) => merged[k] !== undefined && merged[k] !== null;
  const temperature = merged.temperature ?? (decision?.takesTemperature === false ? undefined : DEFAULT_TEMPERATURE);
  if (temperature !== undefined && (typeof temperature !== 'number' || !(temperature >= 0 && temperature <= 2)))
    throw new BadRequest('temperature must be a number from 0 to 2');
  const out: SamplingOptions = temperature === undefined ? {} : { temperature };
  if (decision) {
    Object.assign(out, decision.reasoning);
    if (decision.drops.size > 0) out.dropped = [...decision.drops];
  }
  if (given('max_tokens')) {
    if (!Number.isInteger(merged.max_tokens) || (merged.max_tokens as number) < 1)
      throw new BadRequest('max_tokens must be a positive integer');
    out.max_tokens = merged.max_tokens as number;
  }
  if (given('top_p')) {
    if (typeof merged.top_p !== 'number' || merged.top_p < 0 || merged.top_p > 1)
      throw new BadRequest('top_p must be a number from 0 to 1');
    out.top_p = merged.top_p;
  }
  if (given('top_k')) {
    if (!Number.isInteger(merged.top_k) || (merged.top_k as number) < 1)
      throw new BadRequest('top_k must be a positive integer');
    out.top_k = merged.top_k as number;
  }
  for (const k of ['presence_penalty', 'frequency_penalty'] as const) {
    if (!given(k)) continue;
    const v = merged[k];
    if (typeof v !== 'number' || !(v >= -2 && v <= 2)) throw new BadRequest(`${k} must be a number from -2 to 2`);
    out[k] = v;
  }
  if (given('seed')) {
    if (!Number.isSafeInteger(merged.seed)) throw new BadRequest('seed must be an integer');
    out.seed = merged.seed as number;
  }
  if (given('stop')) {
    const stop = Array.isArray(merged.stop) ? merged.stop : [merged.stop];
    if (!stop.every((s) => typeof s === 'string')) throw new BadRequest('stop must be a string or an array of strings');
    out.stop = stop as string[];
  }
  return out;
}

const CONFIG_MODES = ['RUN_AND_INTERACTION_CONFIG', 'RUN_CONFIG_ONLY', 'INTERACTION_CONFIG_ONLY'] as const;
type ConfigMode = (typeof CONFIG_MODES)[number];
/** The run config fields a configMode of INTERACTION_CONFIG_ONLY does not apply. */
const RUN_OPTION_FIELDS = ['environment', 'model', 'model_options', 'temperature', 'max_tokens'] as const;

/**
 * `config.configMode`, Vertesia's ConfigModes: which side's execution options apply.
 * RUN_AND_INTERACTION_CONFIG (the default): the interaction's, then the run's over them.
 * RUN_CONFIG_ONLY: the run's alone (the interaction's environment, model and options are not
 * used, so the run names its environment). INTERACTION_CONFIG_ONLY: the interaction's alone; a run
 * that still sends its own options is refused by name rather than having them ignored.
 */
function configModeOf(config: Record<string, unknown>): ConfigMode {
  const mode = config.configMode ?? 'RUN_AND_INTERACTION_CONFIG';
  if (!CONFIG_MODES.includes(mode as ConfigMode))
    throw new BadRequest(`config.configMode must be one of ${CONFIG_MODES.join(', ')}, got ${JSON.stringify(mode)}`);
  if (mode === 'RUN_CONFIG_ONLY' && typeof config.environment !== 'string')
    throw new BadRequest(
      "config.configMode RUN_CONFIG_ONLY uses the run's config alone, so it needs config.environment; pass one, or use RUN_AND_INTERACTION_CONFIG",
    );
  if (mode === 'INTERACTION_CONFIG_ONLY') {
    const sent = RUN_OPTION_FIELDS.filter((k) => config[k] !== undefined);
    if (sent.length)
      throw new BadRequest(
        `config.configMode INTERACTION_CONFIG_ONLY applies the interaction's options alone, so config.${sent.join(', config.')} would not apply; remove ${sent.length > 1 ? 'them' : 'it'}, or use RUN_AND_INTERACTION_CONFIG`,
      );
  }
  return mode as ConfigMode;
}

/**
 * The interaction as the run's options see it: under RUN_CONFIG_ONLY without its environment,
 * model and sampling options (its prompts, schemas, tools and cache policy still define the run).
 */
function interactionConfigFor(mode: ConfigMode, interaction: InteractionDto): InteractionDto {
  if (mode !== 'RUN_CONFIG_ONLY') return interaction;
  const { environment: _e, model: _m, model_options, temperature: _t, max_tokens: _x, ...rest } = interaction;
  const tools = model_options?.tool_definitions;
  return tools === undefined ? rest : { ...rest, model_options: { tool_definitions: tools } };
}

/** Tags: a comma-separated string or an array whose items may hold commas (`-T a,b`). */
export function normaliseTags(tags: unknown): string[] {
  if (tags === undefined || tags === null) return [];
  const items = Array.isArray(tags) ? tags : [tags];
  const out = new Set<string>();
  for (const item of items) {
    if (typeof item !== 'string') throw new BadRequest('tags must be a string or an array of strings');
    for (const piece of item.includes(',') ? item.split(',') : [item]) {
      const tag = piece.trim();
      if (tag) out.add(tag);
    }
  }
  return [...out];
}
