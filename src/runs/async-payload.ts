/**
 * The body of POST /execute/async: Vertesia's `AsyncInteractionExecutionPayload` read into a run
 * request. Every field is applied or refused by name (a 400 that says what to change); the
 * workflow fields Orrery has no use for are accepted only at their no-op value.
 */
import { Type } from '@sinclair/typebox';
import { BadRequest } from '../util/errors.ts';
import { RunCreateBody } from './schemas.ts';
import type { RunCreateInput } from './plan.ts';
import type { AsyncExtras } from './async.ts';

/** Endpoints one async run may notify when it ends. */
const MAX_NOTIFY_ENDPOINTS = 10;
const MAX_URL_LENGTH = 2048;

const { interaction, data, tags, config, result_schema } = RunCreateBody.properties;

export const AsyncExecuteBody = Type.Object(
  {
    type: Type.String({ description: '"interaction" (a conversation is refused)' }),
    interaction,
    data,
    config,
    result_schema,
    tags: Type.Optional(Type.Array(tags.anyOf[0], { maxItems: 100 })),
    do_validate: Type.Optional(
      Type.Boolean({
        description:
          'false: the answer is kept even when it does not match result_schema (recorded as result_validation)',
      }),
    ),
    notify_endpoints: Type.Optional(
      Type.Array(Type.String({ maxLength: MAX_URL_LENGTH }), {
        maxItems: MAX_NOTIFY_ENDPOINTS,
        description:
          "http(s) URLs, each sent the run once it ended (POST, signed with the project's notify secret, GET /events/notify-secret; retried like webhooks)",
      }),
    ),
    include_previous_error: Type.Optional(
      Type.Boolean({ description: 'Only false: Orrery does not retry a run that failed' }),
    ),
    generate_topic: Type.Optional(Type.Boolean({ description: 'Accepted as false only (no-op)' })),
    generate_lessons: Type.Optional(Type.Boolean({ description: 'Accepted as false only (no-op)' })),
    visibility: Type.Optional(Type.String({ description: 'Accepted as "project" only (no-op)' })),
  },
  { additionalProperties: true },
);

/** Fields of Vertesia's payload Orrery does not apply, and why. */
const REFUSED: Record<string, string> = {
  conversation: 'an async run keeps no conversation: execute it with POST /execute to start or continue one',
  workflow: 'Orrery runs no Temporal workflows: the async run is its own workflow run (runId)',
  prompts: 'ad-hoc prompts are not supported: create an interaction and name it in "interaction"',
  asyncCompletion: 'Temporal async activity completion does not apply: follow the run with GET /runs/:id/stream',
  task_queue: 'Orrery has no task queues: every replica executes async runs',
  tool_definitions: 'an async run cannot be continued with tool results: execute it with POST /execute',
  stream: 'an async run is always streamable: leave stream out and open GET /runs/:id/stream',
  parent: 'an async run has no parent run: leave parent out',
  ttl: 'set the retention of async runs with the project retention: leave ttl out',
};

export interface AsyncRequest {
  input: RunCreateInput;
  extras: AsyncExtras;
}

export function asyncRequestOf(body: Record<string, unknown>): AsyncRequest {
  if (body.type !== 'interaction')
    throw new BadRequest(
      `type must be "interaction" (an interaction run) or "conversation" (an agent), got ${JSON.stringify(body.type)}`,
    );
  const known = new Set([...Object.keys(AsyncExecuteBody.properties)]);
  for (const key of Object.keys(body)) {
    if (REFUSED[key] !== undefined && body[key] !== undefined)
      throw new BadRequest(`${key} is not supported: ${REFUSED[key]}`);
    if (!known.has(key)) throw new BadRequest(`${key} is not a field of an async interaction execution: leave it out`);
  }
  if (body.include_previous_error === true)
    throw new BadRequest(
      'include_previous_error: true is not supported: an async run is executed once (with its provider retries), never again after a failure',
    );
  for (const key of ['generate_topic', 'generate_lessons'] as const)
    if (body[key] === true) throw new BadRequest(`${key}: true is not supported (leave it out or false)`);
  if (body.visibility !== undefined && body.visibility !== 'project')
    throw new BadRequest(
      `visibility ${JSON.stringify(body.visibility)} is not supported: runs are seen by the project`,
    );
  const notifyEndpoints = ((body.notify_endpoints as string[] | undefined) ?? []).map(checkUrl);
  const input: RunCreateInput = {
    interaction: body.interaction as string,
    ...(body.data !== undefined ? { data: body.data } : {}),
    ...(body.config !== undefined ? { config: body.config as Record<string, unknown> } : {}),
    ...(body.result_schema !== undefined
      ? { result_schema: body.result_schema as Record<string, unknown> | null }
      : {}),
    ...(body.tags !== undefined ? { tags: body.tags as string[] } : {}),
    ...(body.do_validate === false ? { do_validate: false } : {}),
  };
  return { input, extras: { notifyEndpoints } };
}

function checkUrl(value: string, i: number): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new BadRequest(`notify_endpoints[${i}] is not a URL: ${JSON.stringify(value.slice(0, 100))}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new BadRequest(`notify_endpoints[${i}] must be an http or https URL, got ${url.protocol}`);
  if (url.username || url.password) throw new BadRequest(`notify_endpoints[${i}] must not carry credentials`);
  return url.toString();
}
