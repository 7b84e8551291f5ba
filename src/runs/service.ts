/**
 * Executes interactions and records every execution as a run. A run row exists (`processing` for
 * blocking, `created` for streaming) before any provider call, and every failure ends as a
 * `failed` run with an `error` (DESIGN, principle 3). On SQLite, a lone blocking run's row may be
 * in the intent log when its provider call starts, and in the database a moment later; so may its
 * end when it is answered (reads wait for that commit: runs/read-barrier.ts). A process that dies
 * in between leaves the entries, which the lost-run sweep stores: a run still in its provider call
 * as `failed`, an answered one as it was answered (runs/run-intents.ts).
 */
import type { Updateable } from 'kysely';
import type { RunTable } from '../db/schema.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import { newId, nowIso } from '../db/ids.ts';
import { actorOf, scopeOf, type Principal } from '../auth/principal.ts';
import { BadRequest, NotFound, OrreryError } from '../http/errors.ts';
import { checkInlineJson } from '../limits/inline-json.ts';
import { getDriver, isImplemented, PROVIDERS } from '../providers/registry.ts';
import { boundErrorMessage } from '../util/error-message.ts';
import {
  ProviderError,
  type ChatMessage,
  type CompletionRequest,
  type ModelDriver,
  type ProviderConnection,
  type TokenUsage,
  type ToolUse,
} from '../providers/driver.ts';
import type { EnvironmentService } from '../interactions/environments.ts';
import type { InteractionDto, InteractionService } from '../interactions/interactions.ts';
import { compileSchema } from '../interactions/json-schema.ts';
import { InvalidResult, parseResult, repairMessages } from './result-schema.ts';
import { buildMessages, validateInput } from './prompt-builder.ts';
import { runTools } from '../conversations/run-tools.ts';
import {
  toRun,
  docOf,
  hasEnded,
  outcomeOf,
  tagsOf,
  type Run,
  type RunDoc,
  type RunError,
  type RunOutcome,
  type RunRow,
  type ResultPart,
  type RunSource,
} from './model.ts';
import * as store from './store.ts';
import { getProject } from '../auth/store.ts';
import type { StreamHub, LiveRun } from './stream-hub.ts';
import { RunSearch, type FacetsAnswer, type SearchAnswer } from './search.ts';
import { RunWriter, type AheadWrite, type RunWrites } from './run-writer.ts';
import type { RecordedRun, RunIntentLog } from './run-intents.ts';
import type { ChangeClock } from '../interactions/change-clock.ts';
import type { ResolvedEnvironment } from '../interactions/environments.ts';
import type { ReplicaRegistry } from '../cluster/replicas.ts';
import { RUN_CHANNEL, type Notifier } from '../db/notify.ts';
import { RunMirrors, type RunSignal } from './run-mirrors.ts';
import type { Metrics } from '../http/metrics.ts';
import type { RunEmbeddingHook, RunVectors } from '../embeddings/run-embeddings.ts';
import { TemplateError, type TemplateEngine } from '../templates/render.ts';
import { templateErrorCode } from '../interactions/prompts.ts';
import { nextDelay, retryPolicyOf, type Attempt } from './retry.ts';
import {
  isVirtualProvider,
  parseVirtualConfig,
  type VirtualConfig,
  type VirtualEntry,
} from '../interactions/virtual-config.ts';
import { VirtualRunner, textOf, type ChildOutcome, type ChunkSink } from './virtual.ts';
import { ResultCache, type CacheDecision, type CachedAnswer } from './result-cache.ts';
import { costOf, type RunCost } from '../pricing/cost.ts';
import { setTimeout as sleep } from 'node:timers/promises';

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
}

export interface RunServiceDeps {
  db: store.Db;
  dialect: OrreryDialect;
  interactions: InteractionService;
  environments: EnvironmentService;
  /** Renders the prompt templates (src/templates). */
  templates: TemplateEngine;
  hub: StreamHub;
  changes: ChangeClock;
  replica: ReplicaRegistry;
  notifier: Notifier;
  metrics: Metrics;
  streamTimeoutSeconds: number;
  /** Largest `data` a run stores inline, in bytes of JSON (src/limits/inline-json.ts); 1 MiB when absent. */
  maxInlineJson?: number;
  /** input_embedding / result_embedding of new runs (src/embeddings); absent: none. */
  embeddings?: RunEmbeddingHook;
  /** Where run rows are written: in this thread by default; server.ts gives SQLite its own thread. */
  writer?: RunWrites;
  /** The intent logs the writer records rows in (SQLite): the lost-run sweep restores the runs of those that processes left. */
  intents?: RunIntentLog;
  /** Told the tokens and cost of every run that called a provider once it ended (rate limits and quotas, src/limits). */
  onRunEnded?: (run: { account: string; project: string; keyId: string | null; tokens: number; cost: number }) => void;
}

export interface CallerInfo {
  ip: string;
  userAgent?: string;
}

/** What every plan may carry: the run's cache decision, and the cached answer it is served from. */
interface CachePlan {
  cache?: CacheDecision;
  cached?: CachedAnswer;
}

/** Everything needed to call the provider, fixed when the run is created. */
interface ProviderPlan extends CachePlan {
  kind: 'provider';
  driver: ModelDriver;
  connection: ProviderConnection;
  request: CompletionRequest;
}

/** A run on a virtual environment: its entries' environments, resolved when the run is created. */
interface VirtualPlan extends CachePlan {
  kind: 'virtual';
  config: VirtualConfig;
  targets: Map<string, ResolvedEnvironment>;
  connection: ProviderConnection;
  request: CompletionRequest;
}

type Plan = ProviderPlan | VirtualPlan;

/** What one execution produced, before it is stored. */
interface Outcome {
  result: ResultPart[];
  error?: RunError;
  usage?: TokenUsage;
  finishReason?: string;
  attempts: Attempt[];
  chunks: number;
  /** Set by a virtual run (its children's) and a cache hit (nothing); a provider call's cost is priced from its usage. */
  cost?: RunCost | null;
  /** The run whose answer a cache hit served. */
  cachedFrom?: string;
  /** The tool calls the model asked for. */
  toolUse?: ToolUse[];
}

const DEFAULT_TEMPERATURE = 0.7;
/** How long a resolved interaction and environment may serve runs before they are read again. */
const CONTEXT_TTL_MS = 1000;
/** The error of a run whose process died before it ended (a dead replica's `processing` row, or an entry of its intent log). */
const EXECUTOR_LOST: RunError = {
  code: 'executor_lost',
  message: 'the server process executing this run stopped before it ended; run it again',
};

/** A `processing` run of this replica that it no longer executes is failed once it is this old. */
const ORPHAN_AFTER_MS = 5000;
/** Chunks of an ended streamed run stay this long for followers on other replicas. */
const CHUNK_KEEP_MS = 5 * 60_000;

/**
 * The config a run records: the caller's, with the environment, model and options it runs with.
 * Those keys are written first and set again after the caller's (which may name them too), rather
 * than `{ ...config, environment, … }`: keys added after a spread cost a hidden class per run
 * (runs/search-index.ts, withColumns).
 */
function runConfig(
  config: Record<string, unknown>,
  environment: string,
  model: string,
  options: SamplingOptions,
): Record<string, unknown> {
  const out: Record<string, unknown> = { environment, model, temperature: options.temperature, ...config };
  out.environment = environment;
  out.model = model;
  out.temperature = options.temperature;
  if (options.max_tokens !== undefined) out.max_tokens = options.max_tokens;
  return out;
}

interface ExecutionContext {
  interaction: InteractionDto;
  env: ResolvedEnvironment;
}

export class RunService {
  /** Streamed runs that this process created, as written, with their plans, kept until their stream starts. */
  private readonly pending = new Map<string, { row: RunRow; plan: Plan }>();
  /**
   * Runs this process executes, from just before their `processing` row is written until their
   * outcome is stored. A `processing` row of this replica that is not here was orphaned by a write
   * that failed (sweepLost fails it). Subscribers of this process share one claim (claim()), so an
   * id is held once.
   */
  private readonly executingHere = new Set<string>();
  /** The storing of runs answered before their commit (endAhead); each settles once, stored or not. */
  private readonly storing = new Set<Promise<void>>();
  /** Runs answered before their commit whose storing failed: each lost-run sweep tries again (sweepLost). */
  private readonly unstored = new Map<string, RecordedRun & { stored(): void }>();
  /** The lost-run sweep in progress (sweepLost). */
  private lostSweep: Promise<number> | undefined;
  /** Calls of start() in flight (a blocking run is in executingHere only once its row is written). */
  private starting = 0;
  /** Claims of streamed runs in progress in this process, by run id (see claim()). */
  private readonly claims = new Map<string, Promise<LiveRun | undefined>>();
  /** Resolved interaction + environment by project, interaction and environment override. */
  private readonly contexts = new Map<string, { ctx: ExecutionContext; version: number; until: number }>();
  private readonly mirrors: RunMirrors;
  private readonly virtualRunner = new VirtualRunner();
  private readonly cache: ResultCache;

  private readonly searcher: RunSearch;

  private readonly db: store.Db;
  private readonly dialect: OrreryDialect;
  private readonly interactions: InteractionService;
  private readonly environments: EnvironmentService;
  private readonly templates: TemplateEngine;
  private readonly hub: StreamHub;
  private readonly changes: ChangeClock;
  private readonly replica: ReplicaRegistry;
  private readonly intents: RunIntentLog | undefined;
  private readonly notifier: Notifier;
  private readonly metrics: Metrics;
  private readonly streamTimeoutSeconds: number;
  private readonly embeddings?: RunEmbeddingHook;
  private readonly onRunEnded: RunServiceDeps['onRunEnded'];
  private readonly writer: RunWrites;
  private readonly maxInlineJson: number | undefined;

  constructor(deps: RunServiceDeps) {
    this.db = deps.db;
    this.dialect = deps.dialect;
    this.interactions = deps.interactions;
    this.environments = deps.environments;
    this.templates = deps.templates;
    this.hub = deps.hub;
    this.changes = deps.changes;
    this.replica = deps.replica;
    this.notifier = deps.notifier;
    this.metrics = deps.metrics;
    this.streamTimeoutSeconds = deps.streamTimeoutSeconds;
    this.maxInlineJson = deps.maxInlineJson;
    this.embeddings = deps.embeddings;
    this.writer = deps.writer ?? new RunWriter(deps.db, deps.dialect);
    this.intents = deps.intents;
    this.onRunEnded = deps.onRunEnded;
    this.searcher = new RunSearch(this.db, this.dialect);
    this.cache = new ResultCache(this.db, this.dialect);
    this.mirrors = new RunMirrors(this.notifier);
    if (this.notifier.crossProcess) this.mirrors.start();
  }

  /** POST /runs: `interaction` is an id. */
  create(p: Principal, input: RunCreateInput, caller: CallerInfo): Promise<Run> {
    return this.start(p, input, caller, () => this.interactions.get(p, input.interaction), `id:${input.interaction}`);
  }

  /** POST /execute: `interaction` is an endpoint selector (`Name`, `Name@draft`, `Name@3`, `Name@tag`). */
  executeByName(p: Principal, input: RunCreateInput, caller: CallerInfo): Promise<Run> {
    return this.start(p, input, caller, () => this.interactions.resolveSelector(p, input.interaction));
  }

  /** Counted from the request's arrival, so that shutdown waits for a run still being prepared too. */
  private async start(
    p: Principal,
    input: RunCreateInput,
    caller: CallerInfo,
    load: () => Promise<InteractionDto>,
    cacheKey?: string,
  ): Promise<Run> {
    this.starting++;
    try {
      return await this.startRun(p, input, caller, load, cacheKey);
    } finally {
      this.starting--;
    }
  }

  private async startRun(
    p: Principal,
    input: RunCreateInput,
    caller: CallerInfo,
    load: () => Promise<InteractionDto>,
    cacheKey?: string,
  ): Promise<Run> {
    if (typeof input.interaction !== 'string' || !input.interaction)
      throw new BadRequest('body must have property "interaction"');
    checkInlineJson(input.data, 'data', this.maxInlineJson);
    const config = { ...(input.config ?? {}) };
    const { interaction, env } = await this.context(p, config.environment as string | undefined, load, cacheKey);
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
    const options = modelOptions(interaction, config);
    // Checked before anything is stored: a model that cannot call tools never sees the request.
    const tools = runTools(
      input.tool_definitions,
      undefined,
      config.model_options ?? interaction.model_options,
      env.dto,
      model,
    );
    if (tools && virtual)
      throw new BadRequest(`environment "${env.dto.name}" is virtual; Orrery does not send tools through one yet`);
    validateInput(interaction, input.data);
    // A template that fails on this data fails the run, which is recorded (not the request's 400).
    let messages: ChatMessage[] = [];
    let templateFailure: RunError | undefined;
    try {
      messages = await buildMessages(this.templates, interaction, input.data, model, p.project.id);
    } catch (err) {
      if (!(err instanceof TemplateError)) throw err;
      templateFailure = {
        code: templateErrorCode(err),
        message: boundErrorMessage(err.message),
        ...(err.position ? { data: { line: err.position.line, column: err.position.column } } : {}),
      };
    }
    const resultSchema = input.result_schema ?? interaction.result_schema ?? undefined;
    if (input.result_schema) {
      try {
        compileSchema(input.result_schema);
      } catch (err) {
        throw new BadRequest(`result_schema is not a valid JSON Schema: ${(err as Error).message}`);
      }
    }
    if (input.parent !== undefined) {
      // Run creation does not wait for runs answered before their commit (runs/read-barrier.ts), except to read a parent.
      await this.whenStored();
      if (!(await store.getRun(this.db, this.dialect, scopeOf(p), input.parent)))
        throw new NotFound('run', input.parent);
    }
    const ttl = input.ttl ?? 0;
    if (!Number.isFinite(ttl) || ttl < 0) throw new BadRequest('ttl must be a number of seconds, 0 or more');

    const stream = input.stream === true;
    const now = nowIso();
    const tags = normaliseTags(input.tags);
    const source: RunSource = {
      type: /vertesia[-/ ]?cli/i.test(caller.userAgent ?? '') ? 'cli' : 'api',
      label: `apikey:${p.keyId}`,
      principal_type: 'apikey',
      principal_id: p.keyId,
      client_ip: caller.ip,
    };
    const doc: RunDoc = {
      result: [],
      parameters: input.data ?? {},
      prompt: messages,
      config: runConfig(config, env.dto.id, model, options),
      source,
      ttl,
      stream,
      interaction: {
        id: interaction.id,
        name: interaction.name,
        endpoint: interaction.endpoint,
        version: interaction.version,
      },
      environment: { id: env.dto.id, name: env.dto.name, provider: env.dto.provider },
      ...(resultSchema ? { result_schema: resultSchema } : {}),
      ...(tools ? { tools: tools.tools, ...(tools.tool_choice ? { tool_choice: tools.tool_choice } : {}) } : {}),
      account: p.account,
      project: p.project,
      created_by: actorOf(p),
    };
    if (templateFailure)
      return this.failOnTemplate(
        p,
        doc,
        {
          interaction: interaction.id,
          environment: env.dto.id,
          model,
          parent: input.parent,
          tags,
          now,
          stream,
          provider: env.dto.provider,
        },
        templateFailure,
      );
    const row: RunRow = {
      id: newId(),
      account_id: p.account.id,
      project_id: p.project.id,
      interaction_id: interaction.id,
      environment_id: env.dto.id,
      model_id: model,
      status: stream ? 'created' : 'processing',
      parent_id: input.parent ?? null,
      finish_reason: null,
      execution_time: null,
      token_prompt: null,
      token_result: null,
      token_total: null,
      tags,
      created_at: now,
      updated_at: now,
      doc,
      executor: stream ? null : this.replica.id,
    };
    // A blocking run alone in this process, whose row the writer would commit alone, is recorded in
    // the intent log instead of waiting (runs/run-intents.ts). Under load, not waiting broke up the
    // group commits: 91 % of the runs/s, with the writer's check alone (bench/README.md, issue 17).
    const alone = !stream && this.executingHere.size === 0;
    if (!stream) this.executingHere.add(row.id);
    const ahead = alone && this.writer.insertAhead ? this.writer.insertAhead(row, tags) : undefined;
    try {
      if (ahead?.recorded)
        ahead.committed.catch(() => {}); // execute() waits for it before storing the outcome
      else await (ahead?.committed ?? this.writer.insert(row, tags));
    } catch (err) {
      // Maybe committed after all (a writer thread that stopped): sweepLost fails such a row.
      this.executingHere.delete(row.id);
      throw err;
    }

    const request: CompletionRequest = {
      model,
      messages,
      ...options,
      ...(resultSchema ? { result_schema: resultSchema } : {}),
      ...tools,
    };
    const plan: Plan = virtual
      ? { kind: 'virtual', ...virtual, connection: env.connection, request }
      : { kind: 'provider', driver: getDriver(env.dto.provider), connection: env.connection, request };
    plan.cache = this.cache.decide(interaction.cache_policy, {
      environment: env.dto.id,
      model,
      // The tools are part of the question: the same prompt with other tools is another answer.
      options: tools ? { ...options, ...tools } : options,
      messages,
      resultSchema,
      data: input.data,
    });
    if (plan.cache && !plan.cache.refresh) plan.cached = await this.cache.lookup(scopeOf(p), plan.cache.key);
    if (stream) {
      this.pending.set(row.id, { row, plan });
      return this.forCreation(row);
    }
    const final = await this.execute(row, doc, plan, undefined, ahead?.recorded ? { ahead } : {});
    if (final.status === 'failed') {
      const err = docOf(final).error!;
      throw new OrreryError(err.code, 502, `run ${final.id} failed: ${err.message}`, err.data, {
        id: final.id,
        run: this.forCreation(final),
      });
    }
    return this.withEmbeddings(final, this.forCreation(final));
  }

  /**
   * A run whose template failed on its data: stored `failed` at once with the template's error
   * (template_error, template_timeout, template_memory, template_output_too_large), never sent to
   * the provider. A blocking request answers 422 with the run's id; a streamed run answers the
   * failed run, and its stream closes with it.
   */
  private async failOnTemplate(
    p: Principal,
    doc: RunDoc,
    at: {
      interaction: string;
      environment: string;
      model: string;
      parent?: string;
      tags: string[];
      now: string;
      stream: boolean;
      provider: string;
    },
    error: RunError,
  ): Promise<Run> {
    const row: RunRow = {
      id: newId(),
      account_id: p.account.id,
      project_id: p.project.id,
      interaction_id: at.interaction,
      environment_id: at.environment,
      model_id: at.model,
      status: 'failed',
      parent_id: at.parent ?? null,
      finish_reason: null,
      execution_time: 0,
      token_prompt: null,
      token_result: null,
      token_total: null,
      tags: at.tags,
      created_at: at.now,
      updated_at: at.now,
      doc: { ...doc, error },
      executor: null,
    };
    await this.writer.insert(row, at.tags);
    this.metrics.runs.inc({ status: 'failed', provider: at.provider, mode: at.stream ? 'stream' : 'blocking' });
    const run = this.forCreation(row);
    if (at.stream) return run;
    throw new OrreryError(
      error.code,
      422,
      `run ${row.id} failed: ${error.message}`,
      { run_id: row.id, ...(error.data ?? {}) },
      { id: row.id, run },
    );
  }

  /** The interaction and environment of a run, from the cache while nothing changed. */
  private async context(
    p: Principal,
    envOverride: string | undefined,
    load: () => Promise<InteractionDto>,
    cacheKey?: string,
  ): Promise<ExecutionContext> {
    const key = cacheKey && `${p.project.id}|${cacheKey}|${envOverride ?? ''}`;
    const version = this.changes.version(p.project.id);
    const now = Date.now();
    const hit = key ? this.contexts.get(key) : undefined;
    if (hit && hit.version === version && hit.until > now) return hit.ctx;
    const interaction = await load();
    const envId = envOverride ?? interaction.environment;
    if (!envId)
      throw new BadRequest(`interaction "${interaction.name}" has no default environment; pass config.environment`);
    const ctx = { interaction, env: await this.environments.resolve(p, envId) };
    if (key) {
      if (this.contexts.size > 10_000) this.contexts.clear();
      this.contexts.set(key, { ctx, version, until: now + CONTEXT_TTL_MS });
    }
    return ctx;
  }

  /** GET /runs/:id: interaction and environment expanded as objects. */
  async get(p: Principal, id: string): Promise<Run> {
    const row = await this.row(p, id);
    return this.expand(p, row);
  }

  /** GET /runs: the query parameters as they came (runs/search.ts reads them). */
  list(p: Principal, query: Record<string, unknown>) {
    return this.searcher.list(scopeOf(p), query);
  }

  /** POST /runs/search, in the interface's shape or the official client's. */
  search(p: Principal, body: Record<string, unknown>): Promise<SearchAnswer> {
    return this.searcher.search(scopeOf(p), body);
  }

  /** POST /runs/facets (the official client's computeFacets). */
  facets(p: Principal, body: Record<string, unknown>): Promise<FacetsAnswer> {
    return this.searcher.facets(scopeOf(p), body);
  }

  /**
   * Opens the stream of a run: a `created` run starts executing (once, whoever asks first); a run
   * executing here is followed live after a replay; a finished run just closes.
   */
  async follow(
    p: Principal,
    id: string,
  ): Promise<{ live?: LiveRun; finished?: Run; poll?: () => Promise<Run | undefined> }> {
    // A run this process created and nobody streams yet is as it was written: no need to read it.
    const mine = this.pending.get(id)?.row;
    const row =
      mine && mine.account_id === p.account.id && mine.project_id === p.project.id ? mine : await this.row(p, id);
    if (hasEnded(row.status)) return { finished: await this.expand(p, row) };
    // A claim in progress here (another subscriber's): its stream, once the claim is stored.
    const live = this.hub.get(id) ?? (await this.claims.get(id));
    if (live) return { live };
    if (row.status === 'created') {
      const started = await this.claim(p, row);
      if (started) return { live: started };
      const raced = this.hub.get(id);
      if (raced) return { live: raced };
    }
    // Executing on another replica: mirror its stored and signalled chunks.
    if (this.notifier.crossProcess) {
      return {
        live: this.mirrors.follow(id, {
          chunksAfter: (runId, seq) => store.chunksAfter(this.db, runId, seq),
          finalRun: async (runId) => {
            const r = await store.getRun(this.db, this.dialect, scopeOf(p), runId);
            return r && hasEnded(r.status) ? this.expand(p, r) : undefined;
          },
        }),
      };
    }
    // A single process (SQLite) that did not create the run (e.g. after a restart): poll until it ends.
    return {
      poll: async () => {
        const r = await store.getRun(this.db, this.dialect, scopeOf(p), id);
        return r && hasEnded(r.status) ? this.expand(p, r) : undefined;
      },
    };
  }

  /**
   * Claims a `created` run and starts it (its stream), or answers undefined if another claim won.
   * Subscribers of this process share one claim: between the claim's commit and the stream's
   * opening, another subscriber would otherwise see a `processing` run with no stream here.
   */
  private claim(p: Principal, row: RunRow): Promise<LiveRun | undefined> {
    let claim = this.claims.get(row.id);
    if (!claim) {
      claim = this.claimAndStart(p, row).finally(() => this.claims.delete(row.id));
      this.claims.set(row.id, claim);
    }
    return claim;
  }

  private async claimAndStart(p: Principal, row: RunRow): Promise<LiveRun | undefined> {
    const id = row.id;
    const mine = this.pending.get(id);
    const plan = mine?.plan ?? (await this.replan(p, row));
    this.executingHere.add(id);
    const claim = this.writer.update(
      id,
      { status: 'processing', updated_at: nowIso(), executor: this.replica.id },
      'created',
    );
    // One process (SQLite) that created the run and holds its plan: no other process can claim it,
    // and this one claims it once (claim()), so it starts at once and its claim is written
    // meanwhile, ahead of its outcome. The row was `created` before any provider call (principle
    // 3); the claim decides only whether the outcome is stored (execute()). Waiting for the claim's
    // commit was most of the time a subscriber waited for the first chunk (bench/README.md, issue
    // 17, seventh pass). Elsewhere the run starts once its claim is stored.
    const meanwhile = mine !== undefined && !this.notifier.crossProcess;
    if (!meanwhile) {
      const claimed = await claim.catch((err) => {
        this.executingHere.delete(id);
        throw err;
      });
      if (!claimed) {
        this.executingHere.delete(id);
        return undefined;
      }
    }
    this.pending.delete(id);
    const started = this.hub.open(id);
    // A claim written meanwhile that failed to be written is no other claim's win: the outcome is
    // written anyway (if that fails too, the row stays `created` and sweepUnconsumed fails it).
    this.runStream(p, row, plan, started, meanwhile ? claim.catch(() => true) : undefined);
    return started;
  }

  /** Executes a claimed streamed run; its stream closes with the final run (undefined: subscribers read it). */
  private runStream(p: Principal, row: RunRow, plan: Plan, live: LiveRun, claim?: Promise<boolean>): void {
    void this.execute({ ...row, status: 'processing' }, docOf(row), plan, live, { claim }).then(
      async (final) =>
        this.hub.close(
          row.id,
          await this.withEmbeddings(final, await this.expand(p, final).catch(() => this.forCreation(final))),
        ),
      () => this.hub.close(row.id, undefined),
    );
  }

  /** Runs being created or executing in this process, and streams open (shutdown waits for them). */
  get executing(): number {
    return this.starting + this.executingHere.size + this.hub.size;
  }

  /** Waits for queued run writes (shutdown). */
  async close(): Promise<void> {
    this.mirrors.close();
    await this.whenStored();
    await this.writer.close();
    this.intents?.close();
  }

  /** Drops the stored chunks of runs that ended a while ago (their result holds the text). */
  async sweepChunks(): Promise<void> {
    if (this.notifier.crossProcess)
      await store.deleteEndedChunks(this.db, new Date(Date.now() - CHUNK_KEEP_MS).toISOString());
  }

  /** Fails streamed runs that nobody streamed in time (`stream_not_consumed`). */
  async sweepUnconsumed(): Promise<number> {
    const before = new Date(Date.now() - this.streamTimeoutSeconds * 1000).toISOString();
    const stale = await store.staleCreatedRuns(this.db, this.dialect, before);
    let failed = 0;
    for (const row of stale) {
      const doc = docOf(row);
      const error: RunError = {
        code: 'stream_not_consumed',
        message: `the run was created with stream: true and not streamed within ${this.streamTimeoutSeconds} s`,
      };
      const ok = await store.updateRun(
        this.db,
        this.dialect,
        row.id,
        { status: 'failed', updated_at: nowIso(), doc: { ...doc, error } },
        'created',
      );
      if (ok) {
        failed++;
        this.pending.delete(row.id);
      }
    }
    return failed;
  }

  /**
   * The answer against result_schema: parsed, mended (jsonrepair), validated; when it still fails,
   * asked again once with the validator's words, unless the answer stopped on length (a longer
   * answer would be cut off again). The re-ask is an attempt of the run (`repair: true`).
   */
  private async structuredResult(
    plan: ProviderPlan,
    text: string,
    finishReason: string | undefined,
    attempts: Attempt[],
  ): Promise<
    | { value: unknown; usage?: TokenUsage; finishReason?: string }
    | { error: RunError; text: string; usage?: TokenUsage; finishReason?: string }
  > {
    const schema = plan.request.result_schema!;
    let problem: InvalidResult;
    try {
      return { value: parseResult(text, schema).value };
    } catch (err) {
      if (!(err instanceof InvalidResult)) throw err;
      problem = err;
    }
    if (finishReason === 'length') {
      return {
        error: {
          code: 'invalid_result',
          message: `${problem.message} (the answer stopped on max_tokens, so it was not asked again)`,
        },
        text,
      };
    }
    const started = performance.now();
    let second;
    try {
      second = await plan.driver.complete(plan.connection, {
        ...plan.request,
        messages: repairMessages(plan.request.messages, text, problem),
      });
    } catch (err) {
      const failure = toRunError(err);
      attempts.push({
        status: 'failed',
        repair: true,
        error: { code: failure.code, message: failure.message },
        duration_ms: Math.round(performance.now() - started),
      });
      return {
        error: { code: 'invalid_result', message: `${problem.message}; asking again failed: ${failure.message}` },
        text,
      };
    }
    const more = { usage: second.token_use, finishReason: second.finish_reason };
    try {
      const { value } = parseResult(second.text, schema);
      attempts.push({ status: 'completed', repair: true, duration_ms: Math.round(performance.now() - started) });
      return { value, ...more };
    } catch (err) {
      if (!(err instanceof InvalidResult)) throw err;
      const message = `${err.message} (asked again once after: ${problem.message})`;
      attempts.push({
        status: 'failed',
        repair: true,
        error: { code: 'invalid_result', message },
        duration_ms: Math.round(performance.now() - started),
      });
      return { error: { code: 'invalid_result', message }, text: second.text, ...more };
    }
  }

  /**
   * A virtual environment's config, read and checked, with every environment its entries and
   * mediators name resolved in the caller's project: a 400 that says what to fix otherwise.
   */
  private async virtualTargets(
    p: Principal,
    env: ResolvedEnvironment,
  ): Promise<{ config: VirtualConfig; targets: Map<string, ResolvedEnvironment> }> {
    const config = parseVirtualConfig(env.dto.provider as VirtualConfig['provider'], env.dto.config);
    const targets = new Map<string, ResolvedEnvironment>();
    for (const entry of [...config.entries, ...config.mediators]) {
      if (targets.has(entry.environment)) continue;
      const target = await this.environments.resolve(p, entry.environment).catch((err) => {
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

  /** A cache hit: the stored answer, streamed whole to a live run; no provider call, no tokens, no cost. */
  private fromCache(row: RunRow, cached: CachedAnswer, live: ChunkSink | undefined): Outcome {
    const text = textOf(cached.result);
    let chunks = 0;
    if (live && text) {
      live.push(text);
      chunks = 1;
      if (this.notifier.crossProcess) void this.writer.run(this.storeChunk(row.id, 1, text)).catch(() => {});
    }
    return {
      result: cached.result,
      usage: { prompt: 0, result: 0, total: 0 },
      ...(cached.finishReason ? { finishReason: cached.finishReason } : {}),
      attempts: [],
      chunks,
      cost: {
        input: 0,
        output: 0,
        cache_read: 0,
        cache_write: 0,
        reasoning: 0,
        total: 0,
        currency: 'USD',
        price_table: 'result cache',
      },
      cachedFrom: cached.runId,
    };
  }

  /** Drops expired entries of the result cache (the periodic sweep). */
  sweepCache(): Promise<number> {
    return this.cache.sweep();
  }

  /** A virtual run: its entries run as child runs (runs/virtual.ts); it keeps the chosen one's answer. */
  private async callVirtual(
    row: RunRow,
    doc: RunDoc,
    plan: VirtualPlan,
    live: ChunkSink | undefined,
  ): Promise<Outcome> {
    let chunks = 0;
    const sink = live && {
      push: (text: string) => {
        chunks++;
        live.push(text);
        if (this.notifier.crossProcess) void this.writer.run(this.storeChunk(row.id, chunks, text)).catch(() => {});
      },
    };
    const childDocs = new Map<string, RunDoc>();
    const outcome = await this.virtualRunner.run(plan.config, plan.request.messages, sink, {
      runChild: async (entry, childSink) => {
        const child = await this.runChild(row, doc, plan, entry, childSink);
        childDocs.set(child.id, child.doc);
        return child.outcome;
      },
      ask: async (mediator, messages, schema) => {
        const target = plan.targets.get(mediator.environment)!;
        const options = modelOptions({ model_options: plan.config.modelOptions } as unknown as InteractionDto, {
          temperature: plan.config.modelOptions.temperature ?? 0,
        });
        const answer = await getDriver(target.dto.provider).complete(target.connection, {
          model: mediator.model,
          messages,
          ...options,
          result_schema: schema,
        });
        return parseResult(answer.text, schema).value;
      },
      evaluate: async (childId, evaluation) => {
        await this.writer.update(childId, { doc: { ...childDocs.get(childId)!, evaluation } });
      },
    });
    const chosen = outcome.chosen;
    return {
      result: chosen?.result ?? [],
      ...(outcome.error ? { error: outcome.error } : {}),
      ...(chosen?.usage ? { usage: chosen.usage } : {}),
      ...(chosen?.finishReason ? { finishReason: chosen.finishReason } : {}),
      attempts: outcome.attempts,
      chunks,
      cost: sumCosts(outcome.attempts.map((a) => (a.run ? childDocs.get(a.run)?.cost : null))),
    };
  }

  /** One attempt of a virtual run: a child run (parent = the virtual run) on the entry's environment and model. */
  private async runChild(
    parent: RunRow,
    parentDoc: RunDoc,
    plan: VirtualPlan,
    entry: VirtualEntry,
    sink: ChunkSink | undefined,
  ): Promise<{ id: string; doc: RunDoc; outcome: ChildOutcome }> {
    const target = plan.targets.get(entry.environment)!;
    const now = nowIso();
    const tags = tagsOf(parent);
    const doc: RunDoc = {
      ...parentDoc,
      result: [],
      stream: sink !== undefined,
      config: { ...parentDoc.config, environment: target.dto.id, model: entry.model },
      environment: { id: target.dto.id, name: target.dto.name, provider: target.dto.provider },
    };
    const row: RunRow = {
      id: newId(),
      account_id: parent.account_id,
      project_id: parent.project_id,
      interaction_id: parent.interaction_id,
      environment_id: target.dto.id,
      model_id: entry.model,
      status: 'processing',
      parent_id: parent.id,
      finish_reason: null,
      execution_time: null,
      token_prompt: null,
      token_result: null,
      token_total: null,
      tags,
      created_at: now,
      updated_at: now,
      doc,
      executor: this.replica.id,
    };
    this.executingHere.add(row.id);
    try {
      await this.writer.insert(row, tags);
    } catch (err) {
      this.executingHere.delete(row.id);
      const message = (err as Error)?.message ?? String(err);
      return {
        id: row.id,
        doc,
        outcome: {
          id: row.id,
          entry,
          result: [],
          error: { code: 'storage_error', message: `the child run could not be stored: ${message}` },
          durationMs: 0,
        },
      };
    }
    const started = performance.now();
    const childPlan: ProviderPlan = {
      kind: 'provider',
      driver: getDriver(target.dto.provider),
      connection: target.connection,
      request: { ...plan.request, model: entry.model },
    };
    const final = await this.execute(row, doc, childPlan, sink);
    const finalDoc = docOf(final);
    const usage = {
      prompt: final.token_prompt ?? undefined,
      result: final.token_result ?? undefined,
      total: final.token_total ?? undefined,
    };
    return {
      id: row.id,
      doc: finalDoc,
      outcome: {
        id: row.id,
        entry,
        result: finalDoc.result,
        ...(finalDoc.error ? { error: finalDoc.error } : {}),
        ...(final.token_total !== null || final.token_prompt !== null ? { usage } : {}),
        ...(final.finish_reason ? { finishReason: final.finish_reason } : {}),
        durationMs: Math.round(performance.now() - started),
      },
    };
  }

  /** The provider call with its retries (runs/retry.ts), then the answer against result_schema. */
  private async callProvider(
    row: RunRow,
    plan: ProviderPlan,
    live: ChunkSink | undefined,
    provider: string,
  ): Promise<Outcome> {
    const started = performance.now();
    let text = '';
    let usage: TokenUsage | undefined;
    let finishReason: string | undefined;
    let toolUse: ToolUse[] | undefined;
    let chunks = 0;
    let error: RunError | undefined;
    let result: ResultPart[] = [];
    const policy = retryPolicyOf(plan.connection.config);
    const attempts: Attempt[] = [];
    // One retry loop (runs/retry.ts); a stream is never retried once a chunk reached a subscriber.
    for (let retry = 0; ; retry++) {
      const attemptStart = performance.now();
      try {
        if (live) {
          for await (const chunk of plan.driver.stream(plan.connection, plan.request)) {
            if (chunk.text) {
              text += chunk.text;
              chunks++;
              live.push(chunk.text);
              if (this.notifier.crossProcess)
                void this.writer.run(this.storeChunk(row.id, chunks, chunk.text)).catch(() => {});
            }
            if (chunk.token_use) usage = chunk.token_use;
            if (chunk.finish_reason) finishReason = chunk.finish_reason;
            if (chunk.tool_use) toolUse = chunk.tool_use;
          }
        } else {
          const completion = await plan.driver.complete(plan.connection, plan.request);
          text = completion.text;
          usage = completion.token_use;
          finishReason = completion.finish_reason;
          toolUse = completion.tool_use;
        }
        attempts.push({ status: 'completed', duration_ms: Math.round(performance.now() - attemptStart) });
        result = [{ type: 'text', value: text }];
        break;
      } catch (err) {
        const failure = toRunError(err);
        attempts.push({
          status: 'failed',
          error: { code: failure.code, message: failure.message },
          duration_ms: Math.round(performance.now() - attemptStart),
        });
        const delay = chunks > 0 ? undefined : nextDelay(err, retry + 1, performance.now() - started, policy);
        if (delay === undefined) {
          error = failure;
          if (text) result = [{ type: 'text', value: text }];
          break;
        }
        this.metrics.providerRetries.inc({ provider, code: failure.code });
        await sleep(delay);
      }
    }
    if (!error && plan.request.result_schema) {
      const structured = await this.structuredResult(plan, text, finishReason, attempts);
      if ('error' in structured) {
        error = structured.error;
        result = [{ type: 'text', value: structured.text }];
      } else {
        result = [{ type: 'json', value: structured.value }];
      }
      if (structured.usage) usage = addUsage(usage, structured.usage);
      if (structured.finishReason) finishReason = structured.finishReason;
    }
    return { result, error, usage, finishReason, attempts, chunks, ...(toolUse ? { toolUse } : {}) };
  }

  /**
   * Calls the provider (or a virtual environment's entries) and stores the outcome; never throws for
   * a provider or result failure. With `claim` (a claim written meanwhile, claimAndStart): the
   * outcome is stored only if the claim won, else this throws and the run stays as stored. With
   * `ahead` (an insert recorded in the intent log, not yet known committed): see endAhead.
   */
  private async execute(
    row: RunRow,
    doc: RunDoc,
    plan: Plan,
    live: ChunkSink | undefined,
    { claim, ahead }: { claim?: Promise<boolean>; ahead?: AheadWrite } = {},
  ): Promise<RunRow> {
    const started = performance.now();
    const provider = doc.environment?.provider ?? 'unknown';
    const { result, error, usage, finishReason, attempts, chunks, cost, cachedFrom, toolUse } = plan.cached
      ? this.fromCache(row, plan.cached, live)
      : plan.kind === 'virtual'
        ? await this.callVirtual(row, doc, plan, live)
        : await this.callProvider(row, plan, live, provider);
    const executionTime = Math.round(performance.now() - started);
    // A cache hit made no provider call: it would only drag the provider's latency down.
    if (!cachedFrom)
      this.metrics.providerLatency.observe({ provider, outcome: error ? 'error' : 'ok' }, executionTime / 1000);
    this.metrics.runs.inc({ status: error ? 'failed' : 'completed', provider, mode: live ? 'stream' : 'blocking' });
    const runCost =
      cost !== undefined
        ? cost
        : costOf({ provider, model: plan.request.model, usage, prices: plan.connection.config?.prices });
    // A virtual run's usage is its children's, which are charged as they end.
    if (this.onRunEnded && plan.kind !== 'virtual' && !cachedFrom) {
      const createdBy =
        typeof doc.created_by === 'string' && doc.created_by.startsWith('apikey:')
          ? doc.created_by.slice('apikey:'.length)
          : null;
      const tokens = usage?.total ?? (usage?.prompt ?? 0) + (usage?.result ?? 0);
      this.onRunEnded({
        account: row.account_id,
        project: row.project_id,
        keyId: createdBy,
        tokens,
        cost: runCost?.total ?? 0,
      });
    }
    // The keys a run's end adds come before the document's (none of them is in it before its end):
    // keys added after a spread cost a hidden class per run (runs/search-index.ts, withColumns).
    const finalDoc: RunDoc = {
      cost: runCost,
      ...(error ? { error } : {}),
      ...(live ? { chunks } : {}),
      ...(attempts.length > 1 ? { attempts } : {}),
      ...(cachedFrom ? { cached: true, cached_from: cachedFrom } : {}),
      ...(toolUse ? { tool_use: toolUse } : {}),
      ...doc,
      result,
    };
    const patch = {
      status: error ? 'failed' : 'completed',
      updated_at: nowIso(),
      finish_reason: finishReason ?? null,
      execution_time: executionTime,
      token_prompt: usage?.prompt ?? null,
      token_result: usage?.result ?? null,
      token_total:
        usage?.total ??
        (usage?.prompt !== undefined && usage?.result !== undefined ? usage.prompt + usage.result : null),
      doc: finalDoc,
      executor: null,
    } satisfies RunOutcome;
    // A provider's answer may go before its run is stored; not under a cache policy (a cache entry is written once its run is stored).
    if (ahead) await this.endAhead({ ...row, ...patch }, patch, ahead, plan.kind === 'provider' && !plan.cache);
    else {
      const storeOutcome = () =>
        live && this.notifier.crossProcess
          ? // The end of a streamed run: stored and signalled; its chunks stay a while for late followers.
            this.writer.run(async (trx) => {
              const ok = await store.updateRun(trx, this.dialect, row.id, patch);
              await this.notifier.publish(RUN_CHANNEL, JSON.stringify({ r: row.id, d: 1 } satisfies RunSignal), trx);
              return ok;
            })
          : this.writer.update(row.id, patch);
      try {
        if (claim && !(await claim))
          throw new Error(
            `run ${row.id} left 'created' before this process's claim was written; its stored state stands`,
          );
        // Once more if the first write was lost (a writer thread that stopped, a dropped connection):
        // the same outcome, so writing it twice is harmless.
        await storeOutcome().catch(storeOutcome);
      } finally {
        // Stored, left as another write made it, or orphaned for sweepLost to fail.
        this.executingHere.delete(row.id);
      }
    }
    if (plan.cache && !error && !cachedFrom) {
      // A cache that cannot be written costs a later hit, never this run.
      await this.cache
        .store({ account: row.account_id, project: row.project_id }, plan.cache, row.id, result, finishReason)
        .catch(() => {});
    }
    return { ...row, ...patch };
  }

  /**
   * The end of a run whose insert was recorded ahead. Its update is sent at once: the writer
   * applies it after the insert. When `answerFirst` and the intent log takes the run as it ended,
   * this resolves at once and the run is stored meanwhile: reads of this process wait for that
   * (whenStored, runs/read-barrier.ts), and a crash leaves the entry for the lost-run sweep of the
   * next process, which stores the run as it was answered. Else this resolves once it is stored.
   */
  private endAhead(ended: RunRow, patch: Updateable<RunTable>, ahead: AheadWrite, answerFirst: boolean): Promise<void> {
    const end = answerFirst && this.writer.updateAhead ? this.writer.updateAhead(ended, patch) : undefined;
    const update = () => this.writer.update(ended.id, patch);
    const stored = this.storeAhead(ended, ahead, end?.committed ?? update(), update);
    if (!end?.recorded) {
      // Stored, or orphaned for sweepLost to fail (storage_error).
      return stored.finally(() => this.executingHere.delete(ended.id));
    }
    const done = stored.then(
      () => {
        end.stored();
        this.executingHere.delete(ended.id);
      },
      // Answered, so never failed as storage_error: the run stays executing here, and each lost-run
      // sweep tries to store it from its entry until one does (sweepLost).
      () =>
        void this.unstored.set(ended.id, {
          kind: 'end',
          row: ended,
          doc: docOf(ended),
          stored: () => (ahead.stored(), end.stored()),
        }),
    );
    this.storing.add(done);
    void done.finally(() => this.storing.delete(done));
    return Promise.resolve();
  }

  /**
   * The outcome of a run whose insert was recorded ahead, once `update` (sent after the insert)
   * and the insert are done. If the update failed, it is tried once more. If the insert failed (or
   * its answer was lost with a writer thread that stopped), the update found the row if it was
   * committed after all, and else the run is inserted whole, as it ended, and its start entry is
   * settled. If that fails too, the entry stays, and the lost-run sweep of the next process
   * restores the run.
   */
  private async storeAhead(
    ended: RunRow,
    ahead: AheadWrite,
    update: Promise<boolean>,
    retry: () => Promise<boolean>,
  ): Promise<void> {
    const updated = update.catch(retry).then(
      (ok) => ({ ok }),
      (err: unknown) => ({ ok: false, err }),
    );
    const inserted = await ahead.committed.then(
      () => true,
      () => false,
    );
    const outcome = await updated;
    if (inserted) {
      if ('err' in outcome) throw outcome.err;
      return;
    }
    if (!outcome.ok) await this.writer.insert(ended, tagsOf(ended));
    ahead.stored();
  }

  /**
   * Resolves once every run this process answered before its row was committed has been stored
   * (or its write failed); undefined when there is none. Reads wait for it (runs/read-barrier.ts),
   * so that a run is read as it was answered.
   */
  whenStored(): Promise<void> | undefined {
    return this.storing.size ? Promise.all(this.storing).then(() => {}) : undefined;
  }

  /** A chunk for followers on other replicas: stored, then signalled when committed. */
  private storeChunk(runId: string, seq: number, text: string) {
    return async (trx: store.Db) => {
      await store.insertChunk(trx, runId, seq, text);
      await this.notifier.publish(RUN_CHANNEL, JSON.stringify({ r: runId, s: seq } satisfies RunSignal), trx);
      return true;
    };
  }

  /**
   * Stores the runs of stopped processes' intent logs, then fails `processing` runs whose executing
   * replica stopped beating (`executor_lost`), and those of this replica that it no longer
   * executes: their outcome could not be stored (`storage_error`). Throws, once all that is done,
   * if a run of an intent log could not be stored (its log is kept for the next sweep). A sweep
   * asked for while one runs (a slow one outlasting the sweeper's interval) is that one: two at
   * once would read the same logs and rows and store or fail the same runs twice.
   */
  sweepLost(): Promise<number> {
    this.lostSweep ??= this.sweepLostOnce().finally(() => (this.lostSweep = undefined));
    return this.lostSweep;
  }

  private async sweepLostOnce(): Promise<number> {
    const alive = await this.replica.alive();
    // First the intent logs of dead processes: a run answered there whose insert had committed has
    // a `processing` row, which must be stored as answered, not failed as executor_lost below; one
    // whose entry could not be stored yet is left for the next sweep.
    const swept = this.intents ? await this.intents.sweep(alive, (run) => this.restoreLost(run)) : undefined;
    let failed = swept?.restored ?? 0;
    const lost = (await store.runsExecutedBy(this.db, this.dialect, alive)).filter((r) => !swept?.unrestored.has(r.id));
    const settled = new Date(Date.now() - ORPHAN_AFTER_MS).toISOString();
    const mine = (await store.runsOfExecutor(this.db, this.dialect, this.replica.id, settled)).filter(
      (r) => !this.executingHere.has(r.id),
    );
    for (const row of [...lost, ...mine]) {
      const doc = docOf(row);
      const error: RunError =
        row.executor === this.replica.id
          ? { code: 'storage_error', message: 'the server could not store how this run ended; run it again' }
          : EXECUTOR_LOST;
      const ok = await this.writer.run(async (trx) => {
        const updated = await store.updateRun(
          trx,
          this.dialect,
          row.id,
          { status: 'failed', updated_at: nowIso(), executor: null, doc: { ...doc, error } },
          'processing',
        );
        if (updated) {
          await this.notifier.publish(RUN_CHANNEL, JSON.stringify({ r: row.id, d: 1 } satisfies RunSignal), trx);
        }
        return updated;
      });
      if (ok) failed++;
    }
    // Runs this process answered and could not store yet: from their entries, as a sweep would after a crash.
    for (const [id, run] of this.unstored) {
      try {
        await this.restoreLost(run);
      } catch {
        continue; // the next sweep tries again
      }
      this.unstored.delete(id);
      run.stored();
      this.executingHere.delete(id);
    }
    if (swept?.error) {
      // Said once the rest is done: the server logs it, and the next sweep tries again.
      throw new Error(
        `could not store ${swept.unrestored.size} run(s) from the intent log of a stopped process (kept for the next sweep): ${(swept.error as Error)?.message ?? swept.error}`,
        { cause: swept.error },
      );
    }
    return failed;
  }

  /**
   * A run of an intent log (runs/run-intents.ts) whose process died, or could not store it. Its
   * start with no row (that process died before its insert committed): stored `failed`. Its end
   * (answered before its commit): its `processing` row updated, or the run inserted as it ended.
   * Never inserted into a project deleted meanwhile (its runs went with it).
   */
  private restoreLost(run: RecordedRun): Promise<boolean> {
    const row: RunRow =
      run.kind === 'end'
        ? { ...run.row, doc: run.doc }
        : {
            ...run.row,
            status: 'failed',
            updated_at: nowIso(),
            executor: null,
            doc: { ...run.doc, error: EXECUTOR_LOST },
          };
    return this.writer.run(async (trx) => {
      if (await store.runExists(trx, row.id)) {
        if (run.kind !== 'end') return false;
        if (!(await store.updateRun(trx, this.dialect, row.id, outcomeOf(row), 'processing'))) return false;
      } else if (await getProject(trx, row.account_id, row.project_id)) {
        await store.insertRun(trx, this.dialect, row, tagsOf(row));
      } else return false;
      await this.notifier.publish(RUN_CHANNEL, JSON.stringify({ r: row.id, d: 1 } satisfies RunSignal), trx);
      return true;
    });
  }

  /** A streamed run created by another process (or before a restart): rebuild its plan. */
  private async replan(p: Principal, row: RunRow): Promise<Plan> {
    const doc = docOf(row);
    const env = await this.environments.resolve(p, doc.environment?.id ?? '');
    const c = doc.config;
    const request: CompletionRequest = {
      model: row.model_id ?? '',
      messages: doc.prompt.map((m) => ({ role: m.role as 'system' | 'user' | 'assistant', content: m.content })),
      temperature: c.temperature as number | undefined,
      ...(c.max_tokens !== undefined ? { max_tokens: c.max_tokens as number } : {}),
      ...(doc.result_schema ? { result_schema: doc.result_schema } : {}),
      ...(doc.tools ? { tools: doc.tools, ...(doc.tool_choice ? { tool_choice: doc.tool_choice } : {}) } : {}),
    };
    if (isVirtualProvider(env.dto.provider))
      return { kind: 'virtual', ...(await this.virtualTargets(p, env)), connection: env.connection, request };
    return { kind: 'provider', driver: getDriver(env.dto.provider), connection: env.connection, request };
  }

  private async row(p: Principal, id: string): Promise<RunRow> {
    const row = await store.getRun(this.db, this.dialect, scopeOf(p), id);
    if (!row) throw new NotFound('run', id);
    return row;
  }

  /** The run as answered at its creation (and on the stream's close): with its prompt's and result's vectors. */
  private async withEmbeddings(row: RunRow, run: Run): Promise<Run> {
    if (!this.embeddings || row.status !== 'completed') return run;
    const doc = docOf(row);
    const vectors = await this.embeddings.embedRun(
      { account: row.account_id, project: row.project_id },
      { id: row.id, prompt: doc.prompt, result: doc.result },
    );
    // Added keys first, the run spread after them (runs/search-index.ts, withColumns).
    if (!vectors) return run;
    const withVectors: Run & RunVectors = {
      input_embedding: vectors.input_embedding,
      result_embedding: vectors.result_embedding,
      ...run,
    };
    return withVectors;
  }

  /** The POST /runs answer: account, project and interaction as id strings (the client's InteractionExecutionResult). */
  private forCreation(row: RunRow): Run {
    const run = toRun(row);
    const doc = docOf(row);
    return {
      ...run,
      account: doc.account.id,
      project: doc.project.id,
      interaction: doc.interaction.id,
      environment: doc.environment ? { id: doc.environment.id, name: doc.environment.name } : null,
    };
  }

  private async expand(p: Principal, row: RunRow): Promise<Run> {
    const run = toRun(row);
    const doc = docOf(row);
    const interaction = await this.interactions.get(p, doc.interaction.id).catch(() => doc.interaction);
    const environment = doc.environment
      ? await this.environments.get(p, doc.environment.id).catch(() => doc.environment)
      : null;
    return { ...run, interaction, environment };
  }
}

type SamplingOptions = Pick<
  CompletionRequest,
  'temperature' | 'max_tokens' | 'top_p' | 'top_k' | 'presence_penalty' | 'frequency_penalty' | 'seed' | 'stop'
>;

/**
 * Options from the interaction, then config, then config.model_options (which wins: decisions.md).
 * Vertesia's names are accepted too: `stop_sequence` for `stop`.
 */
function modelOptions(interaction: InteractionDto, config: Record<string, unknown>): SamplingOptions {
  const fromModelOptions = (config.model_options ?? {}) as Record<string, unknown>;
  // Copied with Object.assign, not a spread: keys added to a spread copy cost a hidden class per run.
  const merged: Record<string, unknown> = Object.assign({}, interaction.model_options);
  for (const k of ['temperature', 'max_tokens', 'top_p', 'stop']) if (config[k] !== undefined) merged[k] = config[k];
  Object.assign(merged, fromModelOptions);
  if (merged.stop === undefined && merged.stop_sequence !== undefined) merged.stop = merged.stop_sequence;
  const given = (k: string) => merged[k] !== undefined && merged[k] !== null;
  const temperature = merged.temperature ?? DEFAULT_TEMPERATURE;
  if (typeof temperature !== 'number' || !(temperature >= 0 && temperature <= 2))
    throw new BadRequest('temperature must be a number from 0 to 2');
  const out: SamplingOptions = { temperature };
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

function toRunError(err: unknown): RunError {
  if (err instanceof ProviderError)
    return {
      code: err.code,
      message: boundErrorMessage(err.message),
      ...(err.upstreamStatus ? { data: { upstream_status: err.upstreamStatus } } : {}),
    };
  return { code: 'execution_error', message: boundErrorMessage((err as Error)?.message ?? String(err)) };
}

/** Token use of two calls (a run and its re-ask), unknown where either is unknown. */
function addUsage(a: TokenUsage | undefined, b: TokenUsage): TokenUsage | undefined {
  if (!a) return undefined;
  const sum = (x?: number, y?: number) => (x === undefined || y === undefined ? undefined : x + y);
  // Absent cache and reasoning counts are zero, not unknown: the provider reports them only when used.
  const extra = (x?: number, y?: number) => (x || y ? (x ?? 0) + (y ?? 0) : undefined);
  const out: TokenUsage = {
    prompt: sum(a.prompt, b.prompt),
    result: sum(a.result, b.result),
    total: sum(a.total, b.total),
  };
  for (const k of ['cache_read', 'cache_write', 'reasoning'] as const) {
    const v = extra(a[k], b[k]);
    if (v !== undefined) out[k] = v;
  }
  return out;
}

/** A virtual run's cost: what its child runs cost together; unknown when any of theirs is. */
function sumCosts(costs: Array<RunCost | null | undefined>): RunCost | null {
  if (costs.length === 0 || costs.some((c) => !c)) return null;
  const known = costs as RunCost[];
  const add = (k: 'input' | 'output' | 'cache_read' | 'cache_write' | 'reasoning' | 'total') =>
    Math.round(known.reduce((t, c) => t + c[k], 0) * 1e9) / 1e9;
  const tables = [...new Set(known.map((c) => c.price_table))];
  return {
    input: add('input'),
    output: add('output'),
    cache_read: add('cache_read'),
    cache_write: add('cache_write'),
    reasoning: add('reasoning'),
    total: add('total'),
    currency: 'USD',
    price_table: tables.join(', '),
  };
}
