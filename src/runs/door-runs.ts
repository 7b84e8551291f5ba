/**
 * Runs of the doors (src/doors): a call made in another API's shape (OpenAI's Chat Completions)
 * runs through the normal run path as the door's built-in interaction, with the messages it was
 * sent as its prompt (nothing rendered); a call the door makes itself (embeddings) is recorded as
 * a run around it. Why a built-in interaction and not `interaction: null`: docs/architecture.md.
 */
import { nowIso } from '../db/ids.ts';
import { actorOf, type Principal } from '../auth/principal.ts';
import type { InteractionDto } from '../interactions/interactions.ts';
import type { ChatMessage } from '../providers/driver.ts';
import type { RunDoc, RunRow } from './model.ts';
import { newRunRow, type CallerInfo } from './plan.ts';
import type { RunWrites } from './run-writer.ts';
import type { RunEndedListener } from './finish.ts';

/** The id (and name) of a door's built-in interaction: `sys:<door>`. */
const doorInteractionId = (door: string): string => `sys:${door}`;

/** What a door asks of a run beyond a run request: its messages, and what the run stores of them. */
export interface DoorTurn {
  /** The door (`openai`): the run's source type and its built-in interaction `sys:<door>`. */
  door: string;
  /** The whole conversation the provider is sent. */
  messages: ChatMessage[];
  /** What the run stores as its prompt when it extends `previous_run`: the new turn only. */
  stored?: ChatMessage[];
  /** The stored door run whose conversation this request extends. */
  previousRun?: string;
}

/**
 * The door's built-in interaction: read-only, never stored, the same in every project; its run
 * takes the environment and model the request names.
 */
export function doorInteraction(door: string, p: Principal): InteractionDto {
  const id = doorInteractionId(door);
  return {
    id,
    name: id,
    endpoint: id,
    description: `Calls through the ${door} door (${door}-compatible API at /v1)`,
    status: 'published',
    version: 1,
    edit_revision: 0,
    visibility: 'project',
    tags: [],
    prompts: [],
    project: p.project.id,
    account: p.account.id,
    created_by: 'system',
    updated_by: 'system',
    created_at: '1970-01-01T00:00:00.000Z',
    updated_at: '1970-01-01T00:00:00.000Z',
  };
}

/** A door run's document: its source says which door, and it links the run its turn extends. */
export function markDoorRun(doc: RunDoc, turn: DoorTurn): void {
  doc.source.type = turn.door;
  if (turn.previousRun) doc.previous_run = turn.previousRun;
}

/** A call a door makes itself (embeddings), as its run records it. */
export interface RecordedCall {
  door: string;
  environment: { id: string; name: string; provider: string };
  model: string;
  parameters: unknown;
  tags: string[];
}

/** What such a call answered: its result as the run stores it, its tokens. */
export interface RecordedOutcome {
  result: unknown;
  tokens?: number;
}

/**
 * Records `call` as a run of the door's built-in interaction: `processing` before the call (a
 * run row exists before any provider call), then `completed` with its result or `failed` with
 * its error (which is thrown again for the door to answer).
 */
export async function recordDoorCall(
  deps: { writer: RunWrites; replicaId: string; onRunEnded?: RunEndedListener },
  p: Principal,
  caller: CallerInfo,
  what: RecordedCall,
  call: () => Promise<RecordedOutcome>,
): Promise<RunRow> {
  const interaction = doorInteraction(what.door, p);
  const doc: RunDoc = {
    result: [],
    parameters: what.parameters,
    prompt: [],
    config: { environment: what.environment.id, model: what.model },
    source: {
      type: what.door,
      label: `apikey:${p.keyId}`,
      principal_type: 'apikey',
      principal_id: p.keyId,
      client_ip: caller.ip,
    },
    ttl: 0,
    stream: false,
    interaction: { id: interaction.id, name: interaction.name, endpoint: interaction.endpoint, version: 1 },
    environment: what.environment,
    account: p.account,
    project: p.project,
    created_by: actorOf(p),
  };
  const row = newRunRow({
    account_id: p.account.id,
    project_id: p.project.id,
    interaction_id: interaction.id,
    environment_id: what.environment.id,
    model_id: what.model,
    status: 'processing',
    parent_id: null,
    tags: what.tags,
    doc,
    executor: deps.replicaId,
  });
  await deps.writer.insert(row, what.tags);
  const started = performance.now();
  let outcome: RecordedOutcome | undefined;
  let failure: Error | undefined;
  try {
    outcome = await call();
  } catch (err) {
    failure = err instanceof Error ? err : new Error(String(err));
  }
  const execution_time = Math.round(performance.now() - started);
  const error = failure
    ? {
        code: String((failure as { code?: unknown }).code ?? 'provider_error'),
        message: failure.message,
      }
    : undefined;
  const ended: RunDoc = {
    ...doc,
    result: outcome ? [{ type: 'json', value: outcome.result }] : [],
    ...(error ? { error } : {}),
  };
  const tokens = outcome?.tokens;
  const patch = {
    status: outcome ? 'completed' : 'failed',
    updated_at: nowIso(),
    finish_reason: outcome ? 'stop' : null,
    execution_time,
    token_prompt: tokens ?? null,
    token_result: tokens === undefined ? null : 0,
    token_total: tokens ?? null,
    doc: ended,
    executor: null,
  } as const;
  await deps.writer.update(row.id, patch);
  if (tokens) deps.onRunEnded?.({ account: p.account.id, project: p.project.id, keyId: p.keyId, tokens, cost: 0 });
  if (failure) throw failure;
  return { ...row, ...patch };
}
