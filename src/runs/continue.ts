/**
 * Continuations: `POST /runs/tool-results` and `POST /runs/user-message` (the official client's
 * runs.sendToolResults and runs.sendUserMessage). A continuation is a new run linked to the run it
 * continues (`previous_run`); it stores only its own turn (the results or the message), and its
 * provider request is the whole history, rebuilt from the runs of the chain (runs/conversation-turns.ts).
 *
 * Everything here is checked before any row is written or any provider called: the run continued
 * (404 when it is not the caller's), the conversation passed back (409 when it names another run),
 * the results against the calls (400 naming the call), the bounds (413), a lost turn (409).
 *
 * `planTurn` is the request-independent half: a planned history in, a run's document and plan out,
 * so another door (a message list without a stored interaction) can run a turn the same way.
 */
import { scopeOf, actorOf, type Principal } from '../auth/principal.ts';
import { BadRequest, Conflict, NotFound } from '../util/errors.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import type { ChatMessage } from '../providers/driver.ts';
import { getDriver, isImplemented } from '../providers/registry.ts';
import type { EnvironmentService, ResolvedEnvironment } from '../interactions/environments.ts';
import type { InteractionDto } from '../interactions/interactions.ts';
import { isVirtualProvider } from '../interactions/virtual-config.ts';
import {
  assertSameRun,
  checkBytes,
  checkTurns,
  conversationOf,
  readConversation,
  type Conversation,
  type ConversationBounds,
} from '../conversations/conversation.ts';
import { ConversationTurnLost, InvalidConversation } from '../conversations/errors.ts';
import { rebuildHistory } from '../conversations/history.ts';
import { jsonBytes } from '../conversations/messages.ts';
import { runTools, type RunTools } from '../conversations/run-tools.ts';
import { readStripOptions, stripHistory, type StripOptions } from '../conversations/strip.ts';
import { callsOf, matchToolResults, type ToolResultInput } from '../conversations/tool-results.ts';
import { docOf, type ConversationMark, type RunDoc, type RunRow } from './model.ts';
import { buildRequest, type SamplingOptions } from './call.ts';
import {
  modelOptions,
  sentOptions,
  newRunRow,
  normaliseTags,
  runConfig,
  runSource,
  type CallerInfo,
  type ProviderPlan,
} from './plan.ts';
import { answerOf, turnLoader, turnNumberOf } from './conversation-turns.ts';
import type { RunsInFlight } from './in-flight.ts';
import * as store from './store.ts';

export type ContinuationKind = 'tool-results' | 'user-message';

/** A turn ready to run: its history (as stored, and as sent), what it adds, and where it runs. */
export interface PlannedTurn {
  /** The messages before this turn, whole: what the answer's conversation carries. */
  history: ChatMessage[];
  /** The messages before this turn as the provider is sent them (stripped by strip_options). */
  sent: ChatMessage[];
  /** The messages this turn adds: all its run stores of the conversation. */
  input: ChatMessage[];
  turn: number;
  /** The run this turn continues; none for a conversation's first turn. */
  previousRun?: string;
  /** The run this turn is a child of (an agent's run); none for a caller's continuation. */
  parent?: string;
  /** The history before this turn is not stored: it continues only from the conversation passed back. */
  restricted: boolean;
  stripOptions?: StripOptions;
  env: ResolvedEnvironment;
  model: string;
  options: SamplingOptions;
  tools?: RunTools;
  interactionId: string;
  interaction: RunDoc['interaction'];
  parameters: unknown;
  ttl: number;
  tags: string[];
  stream: boolean;
  config: Record<string, unknown>;
}

export interface RunContinuerDeps {
  db: store.Db;
  dialect: OrreryDialect;
  environments: EnvironmentService;
  inFlight: RunsInFlight;
  bounds: ConversationBounds;
}

export class RunContinuer {
  constructor(private readonly deps: RunContinuerDeps) {}

  /** A continuation request checked and planned; throws the 4xx that says what to fix. */
  async plan(p: Principal, kind: ContinuationKind, body: Record<string, unknown>): Promise<PlannedTurn> {
    const { bounds } = this.deps;
    const runId = readRunRef(body.run);
    const passed = readConversation(body.conversation, bounds);
    if (passed.kind === 'start')
      throw new InvalidConversation(
        'conversation: true starts a conversation on POST /runs; a continuation passes back the conversation its last answer carried, or leaves it out',
      );
    const conversation = passed.kind === 'continue' ? passed.conversation : undefined;
    const stripOptions = readStripOptions(body.strip_options);
    const stream = readStream(body.stream);
    const tags = normaliseTags(body.tags);
    const options = readOptions(body.options);

    if (runId === undefined)
      throw new BadRequest(
        'run is required: the run to continue, {id, account, project} as its answer gave it, or its id',
      );
    if (conversation) assertSameRun(conversation, runId);
    // A continuation reads the run it continues: it waits for runs answered before their commit (runs/read-barrier.ts).
    await this.deps.inFlight.whenStored();
    const scope = scopeOf(p);
    const previous = await store.getRun(this.deps.db, this.deps.dialect, scope, runId);
    if (!previous) throw new NotFound('run', runId);
    if (previous.status !== 'completed')
      throw new Conflict(
        `run ${runId} is ${previous.status}; only a completed run continues (continue the run before it, or start again)`,
      );
    let history: ChatMessage[];
    let sent: ChatMessage[];
    let turns: number;
    const restricted = docOf(previous).conversation?.restricted === true;
    if (restricted) {
      // A fork's history came with its request and is not stored: only the caller has it.
      if (!conversation?.messages)
        throw new ConversationTurnLost(
          `run ${runId} belongs to a restricted conversation, whose history the server does not keep; pass back the conversation (with its messages) that run ${runId}'s answer carried`,
        );
      history = conversation.messages;
      sent = history;
      turns = turnNumberOf(previous);
    } else {
      const rebuilt = await rebuildHistory(runId, turnLoader(this.deps.db, this.deps.dialect, scope, runId), bounds);
      history = rebuilt.messages;
      turns = rebuilt.turns.length;
      sent = stripHistory(rebuilt.turns, turns + 1, stripOptions);
    }

    const input = newInput(kind, body, runId, callsOf(answerOf(previous)));
    checkTurns(turns + 1, bounds);
    checkBytes(jsonBytes(history) + jsonBytes(input), bounds);

    const prevDoc = docOf(previous);
    const envId = typeof body.environment === 'string' && body.environment ? body.environment : prevDoc.environment?.id;
    if (!envId) throw new BadRequest('environment is required: the id of the environment to run the next turn on');
    const env = await this.deps.environments.resolve(p, envId);
    if (isVirtualProvider(env.dto.provider))
      throw new BadRequest(
        `environment "${env.dto.name}" is virtual; Orrery does not continue a conversation on one yet`,
      );
    if (!isImplemented(env.dto.provider))
      throw new BadRequest(
        `environment "${env.dto.name}" uses provider "${env.dto.provider}", which Orrery cannot execute yet`,
      );
    const model = options.model ?? previous.model_id ?? env.dto.default_model;
    if (!model) throw new BadRequest('options.model is required: the continued run names no model');
    const priorOptions = prevDoc.config.model_options as Record<string, unknown> | undefined;
    const modelOpts = { ...priorOptions, ...options.model_options };
    const sampling = modelOptions(
      { model_options: priorOptions } as InteractionDto,
      { model_options: options.model_options ?? {} },
      { provider: env.dto.provider, model },
    );
    // An empty list (the client's default) keeps the tools of the run continued: a history with
    // tool calls is refused by some providers (Anthropic) without the tools it used.
    const requested = Array.isArray(body.tools) && body.tools.length === 0 ? undefined : body.tools;
    const tools = runTools(requested, prevDoc.tools, modelOpts, [{ env: env.dto, model }], stream);
    return {
      history,
      sent,
      input,
      turn: turns + 1,
      previousRun: previous.id,
      restricted,
      ...(stripOptions ? { stripOptions } : {}),
      env,
      model,
      options: sampling,
      ...(tools ? { tools } : {}),
      interactionId: previous.interaction_id,
      interaction: prevDoc.interaction,
      parameters: prevDoc.parameters,
      ttl: prevDoc.ttl,
      tags,
      stream,
      config: Object.keys(modelOpts).length > 0 ? { model_options: modelOpts } : {},
    };
  }
}

/**
 * The row and plan of a planned turn: the row stores the turn's input and the link to the run
 * before; the plan's request is the history as sent, then the input.
 */
export function planTurn(p: Principal, caller: CallerInfo, planned: PlannedTurn): { row: RunRow; plan: ProviderPlan } {
  const { env, model } = planned;
  const mark: ConversationMark = {
    turn: planned.turn,
    ...(planned.restricted ? { restricted: true as const } : {}),
    ...(planned.stripOptions ? { strip_options: planned.stripOptions } : {}),
  };
  const doc: RunDoc = {
    result: [],
    parameters: planned.parameters,
    prompt: planned.input,
    config: runConfig(planned.config, env.dto.id, model, planned.options),
    options: sentOptions(planned.options),
    source: runSource(p, caller),
    ttl: planned.ttl,
    stream: planned.stream,
    interaction: planned.interaction,
    environment: { id: env.dto.id, name: env.dto.name, provider: env.dto.provider },
    ...planned.tools,
    ...(planned.previousRun ? { previous_run: planned.previousRun } : {}),
    conversation: mark,
    account: p.account,
    project: p.project,
    created_by: actorOf(p),
  };
  const row = newRunRow({
    account_id: p.account.id,
    project_id: p.project.id,
    interaction_id: planned.interactionId,
    environment_id: env.dto.id,
    model_id: model,
    status: planned.stream ? 'created' : 'processing',
    parent_id: planned.parent ?? null,
    tags: planned.tags,
    doc,
    executor: null,
  });
  const request = buildRequest({
    model,
    messages: [...planned.sent, ...planned.input],
    options: planned.options,
    ...(planned.tools ? { tools: planned.tools } : {}),
  });
  return {
    row,
    plan: { kind: 'provider', driver: getDriver(env.dto.provider), connection: env.connection, request },
  };
}

/** The conversation a turn's answer carries: the history with this turn and its answer. */
export function conversationAfter(
  final: RunRow,
  history: ChatMessage[],
  input: ChatMessage[],
  bounds: ConversationBounds,
): Conversation {
  const answer = answerOf(final);
  return conversationOf(final.id, turnNumberOf(final), [...history, ...input, ...(answer ? [answer] : [])], bounds);
}

/** The request's `run`: the client's `{id, account, project}`, or an id. */
function readRunRef(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string' && value !== '') return value;
  if (typeof value === 'object' && typeof (value as { id?: unknown }).id === 'string' && (value as { id: string }).id)
    return (value as { id: string }).id;
  throw new BadRequest('run must be the run to continue: {id, account, project} or its id');
}

function readStream(value: unknown): boolean {
  if (value === undefined || value === null) return false;
  if (typeof value !== 'boolean') throw new BadRequest('stream must be true or false');
  return value;
}

function readOptions(value: unknown): { model?: string; model_options?: Record<string, unknown> } {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value))
    throw new BadRequest('options must be an object: {model?, model_options?}');
  const { model, model_options } = value as Record<string, unknown>;
  if (model !== undefined && (typeof model !== 'string' || model === ''))
    throw new BadRequest('options.model must be a model id');
  if (
    model_options !== undefined &&
    model_options !== null &&
    (typeof model_options !== 'object' || Array.isArray(model_options))
  )
    throw new BadRequest('options.model_options must be an object');
  return {
    ...(model ? { model: model as string } : {}),
    ...(model_options ? { model_options: model_options as Record<string, unknown> } : {}),
  };
}

/** The messages a continuation adds: the results matched to the calls, then (user-message) the message. */
function newInput(
  kind: ContinuationKind,
  body: Record<string, unknown>,
  runId: string,
  calls: ReturnType<typeof callsOf>,
): ChatMessage[] {
  if (kind === 'tool-results') {
    return [matchToolResults(runId, calls, readResults(body.results, true))];
  }
  if (typeof body.message !== 'string' || body.message === '')
    throw new BadRequest('message is required: the text of the next user message');
  const results = readResults(body.results, false);
  // Providers need a result for every call before the next turn: owed results travel with the message.
  const owed = calls.length > 0 ? [matchToolResults(runId, calls, results)] : [];
  if (calls.length === 0 && results.length > 0)
    throw new InvalidConversation(`run ${runId} asked for no tool calls, so it takes no tool results`);
  return [...owed, { role: 'user', content: body.message }];
}

function readResults(value: unknown, required: boolean): ToolResultInput[] {
  if (value === undefined || value === null) {
    if (required) throw new BadRequest('results is required: one {tool_use_id, content, is_error} per call');
    return [];
  }
  if (!Array.isArray(value)) throw new BadRequest('results must be a list of {tool_use_id, content, is_error}');
  return value.map((r, i) => {
    const at = `results[${i}]`;
    if (r === null || typeof r !== 'object' || Array.isArray(r)) throw new BadRequest(`${at} must be an object`);
    const { tool_use_id, content, is_error } = r as Record<string, unknown>;
    if (typeof tool_use_id !== 'string' || tool_use_id === '')
      throw new BadRequest(`${at}.tool_use_id must be the id of a call (tool_use[].id)`);
    if (typeof content !== 'string') throw new BadRequest(`${at}.content must be a string`);
    if (is_error !== undefined && typeof is_error !== 'boolean')
      throw new BadRequest(`${at}.is_error must be a boolean`);
    return { tool_use_id, content, is_error: is_error === true };
  });
}
