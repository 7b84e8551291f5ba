/**
 * Executes interactions and records every execution as a run. A run row exists (`processing` for
 * blocking, `created` for streaming) before any provider call, and every failure ends as a
 * `failed` run with an `error` (DESIGN, principle 3). On SQLite, a lone blocking run's row may be
 * in the intent log when its provider call starts, and in the database a moment later; so may its
 * end when it is answered (reads wait for that commit: runs/read-barrier.ts). A process that dies
 * in between leaves the entries, which the lost-run sweep stores: a run still in its provider call
 * as `failed`, an answered one as it was answered (runs/run-intents.ts).
 *
 * This is the facade the routes call. A run goes its way through one module per step:
 * plan (runs/plan.ts), render (runs/render.ts), call (runs/call.ts, runs/call-virtual.ts), finish
 * (runs/finish.ts); a streamed run through runs/stream.ts; the periodic sweeps are runs/sweep.ts.
 * What the steps share of the runs in flight here is runs/in-flight.ts.
 */
import type { OrreryDialect } from '../db/dialect.ts';
import { nowIso } from '../db/ids.ts';
import { scopeOf, type Principal } from '../auth/principal.ts';
import { OrreryError } from '../util/errors.ts';
import type { EnvironmentService } from '../interactions/environments.ts';
import type { InteractionDto, InteractionService } from '../interactions/interactions.ts';
import type { ChangeClock } from '../interactions/change-clock.ts';
import type { ReplicaRegistry } from '../cluster/replicas.ts';
import type { Notifier } from '../db/notify.ts';
import type { Metrics } from '../http/metrics.ts';
import type { RunEmbeddingHook } from '../embeddings/run-embeddings.ts';
import type { TemplateEngine } from '../templates/render.ts';
import type { ObjectTypeSchemas } from '../interactions/schema-ref.ts';
import { docOf, type Run, type RunDoc, type RunRow } from './model.ts';
import * as store from './store.ts';
import { refuseUnappliedContinuationFields, refuseUnappliedRunFields } from './payload-fields.ts';
import type { StreamHub } from './stream-hub.ts';
import { RunSearch, type FacetsAnswer, type SearchAnswer } from './search.ts';
import { RunWriter, type AheadWrite, type RunWrites } from './run-writer.ts';
import type { RunIntentLog } from './run-intents.ts';
import type { ChunkSink } from './virtual.ts';
import { ResultCache } from './result-cache.ts';
import { RunsInFlight } from './in-flight.ts';
import { RunSignals } from './run-signals.ts';
import { RunViews } from './run-views.ts';
import {
  RunPlanner,
  describeRun,
  newRunRow,
  normaliseTags,
  type CallerInfo,
  type Plan,
  type RunCreateInput,
} from './plan.ts';
import { renderPrompt, type RenderedPrompt } from './render.ts';
import { mediaTargetOf, withMedia, type RunMediaHook } from './run-media.ts';
import { RunCaller } from './call.ts';
import { VirtualCaller } from './call-virtual.ts';
import { RunFinisher, forCreation, type RunEndedListener } from './finish.ts';
import { RunStreams, type Followed } from './stream.ts';
import { RunSweeper, type ProjectExists } from './sweep.ts';
import {
  doorInteraction,
  markDoorRun,
  recordDoorCall,
  type DoorTurn,
  type RecordedCall,
  type RecordedOutcome,
} from './door-runs.ts';
import { RunContinuer, conversationAfter, planTurn, type ContinuationKind, type PlannedTurn } from './continue.ts';
import {
  checkBytes,
  checkTurns,
  conversationRef,
  readConversation,
  type ConversationBounds,
} from '../conversations/conversation.ts';
import { InvalidConversation } from '../conversations/errors.ts';
import { jsonBytes } from '../conversations/messages.ts';
import type { ChatMessage, ContentPart } from '../providers/driver.ts';
import type { ConversationMark } from './model.ts';
import { NO_TELEMETRY, type RunTrace, type Telemetry } from '../telemetry/hooks.ts';
import { runEndOf, runStartOf } from '../telemetry/runs.ts';
import type { JobQueue } from '../jobs/queue.ts';
import { mergedPromptSchema, paramsSchemaOf } from '../interactions/params-schema.ts';
import { DelegatedRuns } from './delegated-runs.ts';
import { AsyncRunner, type AsyncExtras, type AsyncRunnerDeps } from './async.ts';

export type { CallerInfo, RunCreateInput } from './plan.ts';

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
  /** Spans of runs (src/telemetry); absent: none. */
  telemetry?: Telemetry;
  streamTimeoutSeconds: number;
  /** Whether a project still exists (the lost-run sweep restores no run into a deleted one). */
  projectExists: ProjectExists;
  /** Largest `data` a run stores inline, in bytes of JSON (src/limits/inline-json.ts); 1 MiB when absent. */
  maxInlineJson?: number;
  /** input_embedding / result_embedding of new runs (src/embeddings); absent: none. */
  embeddings?: RunEmbeddingHook;
  /** Where run rows are written: in this thread by default; server.ts gives SQLite its own thread. */
  writer?: RunWrites;
  /** The intent logs the writer records rows in (SQLite): the lost-run sweep restores the runs of those that processes left. */
  intents?: RunIntentLog;
  /** Told the tokens and cost of every run that called a provider once it ended (rate limits and quotas, src/limits). */
  onRunEnded?: RunEndedListener;
  /** ORRERY_CONVERSATION_MAX_TURNS and ORRERY_CONVERSATION_MAX_BYTES; 200 turns and 8 MiB when absent. */
  conversationBounds?: ConversationBounds;
  /** Media inputs (src/media): store: objects and data: URLs as prompt parts; absent: none. */
  media?: RunMediaHook;
  /** Object types' schemas, for result_schema references (interactions/schema-ref.ts); absent: none. */
  typeSchemas?: ObjectTypeSchemas;
  /** The durable queue that executes async runs (POST /execute/async, runs/async.ts); absent: none. */
  asyncQueue?: JobQueue;
  /** Timeouts and cancellation checks of async runs (runs/async.ts); defaults when absent. */
  asyncTimeouts?: AsyncRunnerDeps['timeouts'];
  /** Told once an async run ended (src/events: its events and notify_endpoints). */
  onAsyncEnded?: AsyncRunnerDeps['onEnded'];
}

/** How a new run executes: called in its request, left for its first subscriber, or queued for a job. */
type Mode = 'blocking' | 'stream' | 'async';

const DEFAULT_CONVERSATION_BOUNDS: ConversationBounds = { maxTurns: 200, maxBytes: 8 * 1024 ** 2 };

export class RunService {
  private readonly inFlight = new RunsInFlight();
  private readonly hub: StreamHub;
  private readonly writer: RunWrites;
  private readonly templates: TemplateEngine;
  private readonly replica: ReplicaRegistry;
  private readonly intents: RunIntentLog | undefined;
  private readonly interactions: InteractionService;
  private readonly searcher: RunSearch;
  private readonly views: RunViews;
  private readonly planner: RunPlanner;
  private readonly caller: RunCaller;
  private readonly finisher: RunFinisher;
  private readonly streams: RunStreams;
  private readonly sweeper: RunSweeper;
  private readonly onRunEnded: RunEndedListener | undefined;
  private readonly continuer: RunContinuer;
  private readonly bounds: ConversationBounds;
  private readonly telemetry: Telemetry;
  private readonly media: RunMediaHook | undefined;
  private readonly asyncRunner: AsyncRunner | undefined;
  /** Runs another feature's job executes (agents): claimed and ended there (runs/delegated-runs.ts). */
  readonly delegated: DelegatedRuns;

  constructor(deps: RunServiceDeps) {
    const { db, dialect, notifier, metrics, replica } = deps;
    const inFlight = this.inFlight;
    const writer = (this.writer = deps.writer ?? new RunWriter(db, dialect));
    this.templates = deps.templates;
    this.hub = deps.hub;
    this.replica = replica;
    this.intents = deps.intents;
    this.interactions = deps.interactions;
    this.onRunEnded = deps.onRunEnded;
    this.media = deps.media;
    const telemetry = (this.telemetry = deps.telemetry ?? NO_TELEMETRY);
    const cache = new ResultCache(db, dialect);
    const signals = new RunSignals(writer, notifier);
    this.searcher = new RunSearch(db, dialect);
    this.views = new RunViews({
      db,
      dialect,
      interactions: deps.interactions,
      environments: deps.environments,
      embeddings: deps.embeddings,
    });
    this.planner = new RunPlanner({
      db,
      dialect,
      interactions: deps.interactions,
      environments: deps.environments,
      changes: deps.changes,
      cache,
      inFlight,
      maxInlineJson: deps.maxInlineJson,
      ...(deps.media ? { media: deps.media } : {}),
      ...(deps.typeSchemas ? { typeSchemas: deps.typeSchemas } : {}),
    });
    const virtual = new VirtualCaller({
      writer,
      signals,
      inFlight,
      replicaId: replica.id,
      telemetry,
      execute: (row, doc, plan, live, trace) => this.execute(row, doc, plan, live, { trace }),
    });
    this.caller = new RunCaller({ metrics, signals, virtual, telemetry });
    this.finisher = new RunFinisher({
      dialect,
      writer,
      signals,
      metrics,
      cache,
      inFlight,
      onRunEnded: deps.onRunEnded,
    });
    this.streams = new RunStreams({
      db,
      dialect,
      hub: deps.hub,
      notifier,
      writer,
      inFlight,
      planner: this.planner,
      views: this.views,
      replicaId: replica.id,
      execute: (row, doc, plan, live, opts) => this.execute(row, doc, plan, live, opts),
    });
    this.bounds = deps.conversationBounds ?? DEFAULT_CONVERSATION_BOUNDS;
    this.continuer = new RunContinuer({
      db,
      dialect,
      environments: deps.environments,
      inFlight,
      bounds: this.bounds,
    });
    this.asyncRunner = deps.asyncQueue
      ? new AsyncRunner({
          db,
          dialect,
          queue: deps.asyncQueue,
          writer,
          signals,
          hub: deps.hub,
          inFlight,
          planner: this.planner,
          views: this.views,
          replicaId: replica.id,
          timeouts: deps.asyncTimeouts ?? { stepMs: 600_000, runMs: 3_600_000, cancelPollMs: 1000 },
          ...(deps.onAsyncEnded ? { onEnded: deps.onAsyncEnded } : {}),
          execute: (row, doc, plan, live) => this.execute(row, doc, plan, live),
        })
      : undefined;
    this.delegated = new DelegatedRuns({ db, dialect, writer, signals, hub: deps.hub, replicaId: replica.id });
    this.sweeper = new RunSweeper({
      db,
      dialect,
      writer,
      signals,
      replica,
      inFlight,
      cache,
      intents: deps.intents,
      streamTimeoutSeconds: deps.streamTimeoutSeconds,
      projectExists: deps.projectExists,
    });
  }

  /** POST /runs: `interaction` is an id. */
  create(p: Principal, input: RunCreateInput, caller: CallerInfo): Promise<Run> {
    refuseUnappliedRunFields(input as unknown as Record<string, unknown>);
    return this.start(p, input, caller, () => this.interactions.get(p, input.interaction), `id:${input.interaction}`);
  }

  /** POST /execute: `interaction` is an endpoint selector (`Name`, `Name@draft`, `Name@3`, `Name@tag`). */
  executeByName(p: Principal, input: RunCreateInput, caller: CallerInfo): Promise<Run> {
    refuseUnappliedRunFields(input as unknown as Record<string, unknown>);
    return this.start(p, input, caller, () => this.interactions.resolveSelector(p, input.interaction));
  }

  /**
   * POST /execute/async: answers the run `created` at once; a durable job executes it
   * (runs/async.ts). `interaction` is an endpoint selector, as for POST /execute.
   */
  executeAsync(p: Principal, input: RunCreateInput, caller: CallerInfo, extras: AsyncExtras): Promise<Run> {
    if (!this.asyncRunner) throw new OrreryError('not_implemented', 501, 'this server executes no async runs');
    return this.start(
      p,
      { ...input, stream: false },
      caller,
      () => this.interactions.resolveSelector(p, input.interaction),
      undefined,
      undefined,
      extras,
    );
  }

  /** Cancels an async run (runs/async.ts): true when it ended at once (it was queued). */
  cancelAsync(p: Principal, id: string, reason: string | null): Promise<boolean> {
    if (!this.asyncRunner) throw new OrreryError('not_implemented', 501, 'this server executes no async runs');
    return this.asyncRunner.cancel(scopeOf(p), id, reason);
  }

  /**
   * A door's call (src/doors, runs/door-runs.ts): the door's built-in interaction, the messages it
   * was sent as the prompt. Streamed (`stream: true`): answers the created run, to `follow`.
   */
  executeMessages(p: Principal, input: RunCreateInput, caller: CallerInfo, turn: DoorTurn): Promise<Run> {
    const interaction = doorInteraction(turn.door, p);
    return this.start(p, input, caller, async () => interaction, `door:${turn.door}`, turn);
  }

  /** A call a door makes itself (embeddings), recorded as a run around it (runs/door-runs.ts). */
  recordCall(
    p: Principal,
    caller: CallerInfo,
    what: RecordedCall,
    call: () => Promise<RecordedOutcome>,
  ): Promise<RunRow> {
    const deps = { writer: this.writer, replicaId: this.replica.id, onRunEnded: this.onRunEnded };
    return recordDoorCall(deps, p, caller, what, call);
  }

  /**
   * POST /runs/tool-results and POST /runs/user-message: a new run that continues `body.run`
   * (runs/continue.ts). `parent`: the run it is a child of (an agent's iteration, src/agents).
   */
  async continueRun(
    p: Principal,
    kind: ContinuationKind,
    body: Record<string, unknown>,
    caller: CallerInfo,
    parent?: string,
  ): Promise<Run> {
    refuseUnappliedContinuationFields(body);
    this.inFlight.starting++;
    try {
      const planned = await this.continuer.plan(p, kind, body);
      return await this.runTurn(p, parent ? { ...planned, parent } : planned, caller);
    } finally {
      this.inFlight.starting--;
    }
  }

  /**
   * Runs a planned turn (runs/continue.ts, PlannedTurn): its row written, then called (blocking) or
   * left for its stream; the answer carries the conversation with this turn.
   */
  async runTurn(p: Principal, planned: PlannedTurn, caller: CallerInfo): Promise<Run> {
    const { row, plan } = planTurn(p, caller, planned);
    // Media of the history are read (and checked) before the turn's row is written.
    if (this.media)
      plan.request.messages = await this.media.materialize(
        p,
        plan.request.messages,
        undefined,
        mediaTargetOf(planned.env.dto, planned.model),
      );
    const answer = await this.launch(row, plan, planned.tags, planned.stream ? 'stream' : 'blocking');
    // A streamed turn is answered before it runs: its conversation names it, without messages.
    const conversation = answer.final
      ? conversationAfter(answer.final, planned.history, planned.input, this.bounds)
      : conversationRef(row.id, planned.turn);
    return { ...answer.run, conversation };
  }

  /** GET /runs/:id: interaction and environment expanded as objects. */
  async get(p: Principal, id: string): Promise<Run> {
    return this.views.expand(p, await this.views.row(p, id));
  }

  /** The turn of the caller's run in its conversation (1 for a run that continues none); NotFound when it is not there. */
  async turnOf(p: Principal, id: string): Promise<number> {
    return docOf(await this.views.row(p, id)).conversation?.turn ?? 1;
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

  /** GET /runs/:id/stream (runs/stream.ts). */
  follow(p: Principal, id: string): Promise<Followed> {
    return this.streams.follow(p, id);
  }

  /** Runs being created or executing in this process, and streams open (shutdown waits for them). */
  get executing(): number {
    return this.inFlight.starting + this.inFlight.executing.size + this.hub.size;
  }

  /** Waits for queued run writes (shutdown). */
  async close(): Promise<void> {
    this.streams.close();
    await this.whenStored();
    await this.writer.close();
    this.intents?.close();
  }

  /** Resolves once the runs this process answered before their commit are stored (runs/read-barrier.ts). */
  whenStored(): Promise<void> | undefined {
    return this.inFlight.whenStored();
  }

  /** Drops the stored chunks of runs that ended a while ago (their result holds the text). */
  sweepChunks(): Promise<void> {
    return this.sweeper.sweepChunks();
  }

  /** Fails streamed runs that nobody streamed in time (`stream_not_consumed`). */
  sweepUnconsumed(): Promise<number> {
    return this.sweeper.sweepUnconsumed();
  }

  /** Drops expired entries of the result cache (the periodic sweep). */
  sweepCache(): Promise<number> {
    return this.sweeper.sweepCache();
  }

  /** Stores or fails runs lost with their process (runs/sweep.ts). */
  sweepLost(): Promise<number> {
    return this.sweeper.sweepLost();
  }

  /** Counted from the request's arrival, so that shutdown waits for a run still being prepared too. */
  private async start(
    p: Principal,
    input: RunCreateInput,
    caller: CallerInfo,
    load: () => Promise<InteractionDto>,
    cacheKey?: string,
    turn?: DoorTurn,
    extras?: AsyncExtras,
  ): Promise<Run> {
    this.inFlight.starting++;
    try {
      return await this.startRun(p, input, caller, load, cacheKey, turn, extras);
    } finally {
      this.inFlight.starting--;
    }
  }

  /** A run's way: plan, render, its row written, then (blocking) call and finish, or (streamed) wait for a subscriber. */
  private async startRun(
    p: Principal,
    input: RunCreateInput,
    caller: CallerInfo,
    load: () => Promise<InteractionDto>,
    cacheKey?: string,
    turn?: DoorTurn,
    extras?: AsyncExtras,
  ): Promise<Run> {
    const conversation = readConversation(input.conversation, this.bounds);
    const run = await this.planner.resolve(p, input, load, cacheKey);
    const { interaction, env, model } = run;
    // A door's messages are the prompt as sent: nothing to render.
    let prompt: RenderedPrompt = turn
      ? { messages: turn.messages }
      : await renderPrompt(this.templates, interaction, input.data, model, p.project.id);
    const { resultSchema, ttl } = await this.planner.check(p, input, interaction);
    // Media inputs are checked (project, bounds) and read before anything is stored.
    let sent: Map<string, ContentPart> | undefined;
    const target = mediaTargetOf(env.dto, model);
    if (this.media && !turn && !prompt.failure) {
      const media = await this.media.inputs(
        p,
        paramsSchemaOf(interaction.interaction_schema, mergedPromptSchema(interaction.prompts.map((s) => s.template))),
        input.data,
        target,
      );
      if (media.parts.length) prompt = { messages: withMedia(prompt.messages, media.parts) };
      sent = media.sent;
    }
    // A conversation passed back to POST /runs is a fork: its messages go before the prompt, and
    // are not stored (the run is a restricted conversation's: it continues from what the caller holds).
    let before: ChatMessage[] = [];
    let mark: ConversationMark | undefined;
    if (conversation.kind === 'start') mark = { turn: 1 };
    if (conversation.kind === 'continue') {
      if (!conversation.conversation.messages)
        throw new InvalidConversation(
          'conversation has no messages to continue from; pass the conversation an answer carried with its messages, or true to start one',
        );
      before = conversation.conversation.messages;
      checkTurns(conversation.conversation.turns + 1, this.bounds);
      checkBytes(jsonBytes(before) + jsonBytes(prompt.messages), this.bounds);
      mark = { turn: conversation.conversation.turns + 1, restricted: true };
    }
    const mode: Mode = extras ? 'async' : input.stream === true ? 'stream' : 'blocking';
    // An async run is streamed to whoever follows it while its job executes it.
    const stream = mode !== 'blocking';
    const now = nowIso();
    const tags = normaliseTags(input.tags);
    const stored = turn?.stored ?? prompt.messages;
    const described = describeRun(p, input, caller, run, { messages: stored, resultSchema, ttl, stream });
    if (turn) markDoorRun(described, turn);
    const doc = mark ? { ...described, conversation: mark } : described;
    // A run that fails on its template is a span too: the trace shows why the call never happened.
    const trace = this.telemetry.startRun(runStartOf(doc, input.parent));
    if (prompt.failure)
      return this.finisher.failOnTemplate(
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
        prompt.failure,
        trace,
      );
    const row = newRunRow({
      account_id: p.account.id,
      project_id: p.project.id,
      interaction_id: interaction.id,
      environment_id: env.dto.id,
      model_id: model,
      status: stream ? 'created' : 'processing',
      parent_id: input.parent ?? null,
      tags,
      now,
      doc,
      executor: stream ? null : this.replica.id,
      trace,
    });
    const messages = before.length > 0 ? [...before, ...prompt.messages] : prompt.messages;
    const sending = this.media ? await this.media.materialize(p, messages, sent, target) : messages;
    const answer = await this.launch(
      row,
      () => this.planner.plan(p, run, messages, resultSchema, input.data, sending),
      tags,
      mode,
      trace,
      extras && { p, extras },
    );
    if (!mark) return answer.run;
    const kept = answer.final
      ? conversationAfter(answer.final, before, prompt.messages, this.bounds)
      : conversationRef(row.id, mark.turn);
    return { ...answer.run, conversation: kept };
  }

  /**
   * A new run's row written, then (streamed) left for its first subscriber, or (blocking) called and
   * finished: a failed blocking run is a 502 with its id. `final` is the run as it ended (blocking).
   */
  private async launch(
    row: RunRow,
    plan: Plan | (() => Promise<Plan>),
    tags: string[],
    mode: Mode,
    trace?: RunTrace,
    queued?: { p: Principal; extras: AsyncExtras },
  ): Promise<{ run: Run; final?: RunRow }> {
    const stream = mode !== 'blocking';
    const ahead = await this.insert(row, tags, stream);
    const ready = typeof plan === 'function' ? await plan() : plan;
    if (mode === 'async' && queued && this.asyncRunner) {
      await this.asyncRunner.enqueue(queued.p, row, ready, queued.extras);
      return { run: forCreation(row) };
    }
    if (stream) {
      this.inFlight.pending.set(row.id, { row, plan: ready, ...(trace ? { trace } : {}) });
      return { run: forCreation(row) };
    }
    const final = await this.execute(row, docOf(row), ready, undefined, ahead?.recorded ? { ahead, trace } : { trace });
    if (final.status === 'failed') {
      const err = docOf(final).error!;
      throw new OrreryError(err.code, 502, `run ${final.id} failed: ${err.message}`, err.data, {
        id: final.id,
        run: forCreation(final),
      });
    }
    return { run: await this.views.withEmbeddings(final, forCreation(final)), final };
  }

  /** Writes a new run's row; answers the write recorded ahead in the intent log, if it was. */
  private async insert(row: RunRow, tags: string[], stream: boolean): Promise<AheadWrite | undefined> {
    // A blocking run alone in this process, whose row the writer would commit alone, is recorded in
    // the intent log instead of waiting (runs/run-intents.ts). Under load, not waiting broke up the
    // group commits: 91 % of the runs/s, with the writer's check alone (bench/README.md, issue 17).
    const alone = !stream && this.inFlight.executing.size === 0;
    if (!stream) this.inFlight.executing.add(row.id);
    const ahead = alone && this.writer.insertAhead ? this.writer.insertAhead(row, tags) : undefined;
    try {
      if (ahead?.recorded)
        ahead.committed.catch(() => {
          // execute() waits for it before storing the outcome (runs/finish.ts, storeAhead)
        });
      else await (ahead?.committed ?? this.writer.insert(row, tags));
    } catch (err) {
      // Maybe committed after all (a writer thread that stopped): the lost-run sweep fails such a row.
      this.inFlight.executing.delete(row.id);
      throw err;
    }
    return ahead;
  }

  /**
   * A run's call and finish, under its span (src/telemetry; a run started elsewhere gets one here):
   * the run as it ended; never throws for a provider or result failure.
   */
  private execute(
    row: RunRow,
    doc: RunDoc,
    plan: Plan,
    live: ChunkSink | undefined,
    opts: { claim?: Promise<boolean>; ahead?: AheadWrite; trace?: RunTrace } = {},
  ): Promise<RunRow> {
    const { trace: given, ...finishing } = opts;
    const trace =
      given ??
      this.telemetry.resumeRun(runStartOf(doc, row.parent_id), {
        traceId: row.trace_id ?? null,
        spanId: row.span_id ?? null,
      });
    return trace.within(async () => {
      const started = performance.now();
      const outcome = await this.caller.call(row, doc, plan, live);
      const executionTime = Math.round(performance.now() - started);
      const final = await this.finisher.finish(row, doc, plan, outcome, {
        streamed: live !== undefined,
        executionTime,
        ...finishing,
      });
      trace.end(runEndOf(final));
      return final;
    });
  }
}
