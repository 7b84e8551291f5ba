/**
 * Strict execution payloads: the fields of Vertesia's execution payloads (RunCreatePayload,
 * NamedInteractionExecutionPayload, ToolResultsPayload, UserMessagePayload and the
 * InteractionExecutionConfiguration in them) that Orrery does not apply yet are refused here, by
 * name and with what to do instead; a field no schema names at all is refused by the route's
 * schema (additionalProperties: false). Nothing a caller sends is accepted and ignored.
 */
import { BadRequest } from '../util/errors.ts';

/** A field Vertesia defines that Orrery does not apply: why, and what to do. */
const NOT_APPLIED_RUN: Record<string, string> = {
  workflow: 'Orrery runs belong to no workflow',
  prompts: 'ad-hoc (tmp:) interactions are not supported; save the interaction and run it by id or name',
  asyncCompletion: 'async completion is not supported; use stream: true and follow the run',
};
const NOT_APPLIED_CONFIG: Record<string, string> = {
  run_data: 'restricted runs are not supported yet',
  prompt_cache_schema_suffix: 'the result schema is always sent in the provider request',
  http_timeout: 'per-run HTTP timeouts are not supported; the environment timeouts apply',
};
const NOT_APPLIED_CONTINUATION: Record<string, string> = {
  asyncCompletion: 'async completion is not supported; use stream: true and follow the run',
};
const NOT_APPLIED_TOOL_RESULT: Record<string, string> = {
  content_ref: 'externalized content is not resolved; send the text in content',
  files: 'files with tool results are not supported',
  display_message: 'no display message is kept; send the text in content',
  meta: 'tool-result metadata is not kept',
};
const NOT_APPLIED_OPTIONS: Record<string, string> = {
  result_schema: "the continued run's result schema applies",
  prompt_cache_schema_suffix: 'the result schema is always sent in the provider request',
  include_original_response: 'the original provider response is never returned',
  prompt_cache_key: 'prompt cache routing keys are not forwarded yet',
  prompt_cache_mode: 'explicit provider caches are not supported',
  prompt_cache_ttl_seconds: 'explicit provider caches are not supported',
};

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

function refuse(where: string, value: unknown, table: Record<string, string>): void {
  if (!isObject(value)) return;
  for (const k of Object.keys(table))
    if (value[k] !== undefined) throw new BadRequest(`${where}${k} is not applied by Orrery: ${table[k]}; remove it`);
}

/** POST /runs and POST /execute. */
export function refuseUnappliedRunFields(body: Record<string, unknown>): void {
  refuse('', body, NOT_APPLIED_RUN);
  const config = body.config;
  if (!isObject(config)) return;
  refuse('config.', config, NOT_APPLIED_CONFIG);
}

/** POST /runs/tool-results and POST /runs/user-message. */
export function refuseUnappliedContinuationFields(body: Record<string, unknown>): void {
  refuse('', body, NOT_APPLIED_CONTINUATION);
  refuse('options.', body.options, NOT_APPLIED_OPTIONS);
  if (Array.isArray(body.results)) body.results.forEach((r, i) => refuse(`results[${i}].`, r, NOT_APPLIED_TOOL_RESULT));
}
