/**
 * The built-in tools over a project's runs: search them (Lucene and filters, as POST
 * /runs/search) and read one. Bounded (docs/reference/limits.md); answered as a JSON summary and
 * a resource link per run (`orrery://runs/<id>`).
 */
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Principal } from '../../auth/principal.ts';
import type { RunService } from '../../runs/service.ts';
import { RUN_STATUSES, type Run, type RunRef } from '../../runs/model.ts';
import { argumentsOf, integerIn, oneOf, optionalString, requiredString, stringList } from './arguments.ts';
import { runUri } from './uris.ts';
import type { BuiltInTool, ToolAnswer } from './tool-model.ts';

export type RunReads = Pick<RunService, 'search' | 'get'>;

const MAX_QUERY = 1000;
const MAX_ID = 200;
const MAX_TAGS = 20;
const MAX_TAG = 200;
const MAX_RESULTS = 50;
const DEFAULT_RESULTS = 10;
const MAX_OFFSET = 1000;
/** The most of a run's JSON read_run answers (the rest: GET /runs/:id). */
const MAX_RUN_CHARS = 100_000;

const SEARCH_RUNS = 'search_runs';
const READ_RUN = 'read_run';

const FOUND = {
  type: 'object',
  properties: {
    results: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          id: { type: 'string' },
          uri: { type: 'string' },
          status: { type: 'string' },
          interaction: { type: 'string' },
          environment: { type: ['string', 'null'] },
          model: { type: ['string', 'null'] },
          source: { type: 'string' },
          tags: { type: 'array', items: { type: 'string' } },
          finish_reason: { type: 'string' },
          tokens: { type: 'number' },
          created_at: { type: 'string' },
        },
        required: ['id', 'uri', 'status'],
      },
    },
  },
  required: ['results'],
} as const;

export function runTools(runs: RunReads): BuiltInTool[] {
  return [
    {
      permission: 'run:read',
      definition: {
        name: SEARCH_RUNS,
        title: 'Search runs',
        description:
          "Search the project's runs (every model call: interactions, the OpenAI and MCP doors), newest first. `query` is a Lucene query over run fields and text, as in Orrery's run search (a bare word matches the run's text).",
        inputSchema: {
          type: 'object',
          properties: {
            query: { type: 'string', minLength: 1, maxLength: MAX_QUERY, description: 'A Lucene query' },
            interaction: {
              type: 'string',
              maxLength: MAX_ID,
              description: "Only runs of this interaction id (sys:openai: the OpenAI door's calls)",
            },
            status: { type: 'string', enum: [...RUN_STATUSES] },
            tags: {
              type: 'array',
              items: { type: 'string', minLength: 1, maxLength: MAX_TAG },
              maxItems: MAX_TAGS,
              description: 'Only runs with every one of these tags',
            },
            limit: { type: 'integer', minimum: 1, maximum: MAX_RESULTS, default: DEFAULT_RESULTS },
            offset: { type: 'integer', minimum: 0, maximum: MAX_OFFSET, default: 0 },
          },
          additionalProperties: false,
        },
        outputSchema: FOUND as unknown as Tool['outputSchema'],
        annotations: { readOnlyHint: true, openWorldHint: false },
      },
      call: async (p, raw) => {
        const args = argumentsOf(SEARCH_RUNS, raw, ['query', 'interaction', 'status', 'tags', 'limit', 'offset']);
        const query = optionalString(args, 'query', MAX_QUERY);
        const interaction = optionalString(args, 'interaction', MAX_ID);
        const status = oneOf(args, 'status', RUN_STATUSES);
        const tags = stringList(args, 'tags', MAX_TAGS, MAX_TAG);
        const found = await runs.search(p, {
          query: {
            ...(query ? { query } : {}),
            ...(interaction ? { interaction } : {}),
            ...(status ? { status } : {}),
            ...(tags ? { tags } : {}),
          },
          limit: integerIn(args, 'limit', 1, MAX_RESULTS, DEFAULT_RESULTS),
          offset: integerIn(args, 'offset', 0, MAX_OFFSET, 0),
        });
        return foundAnswer(Array.isArray(found) ? found : ((found as { results?: RunRef[] }).results ?? []));
      },
    },
    {
      permission: 'run:read',
      definition: {
        name: READ_RUN,
        title: 'Read a run',
        description: `A run as JSON: its status, interaction, model, request (prompt and parameters), result, tokens, cost and timings (at most ${MAX_RUN_CHARS} characters).`,
        inputSchema: {
          type: 'object',
          properties: { id: { type: 'string', minLength: 1, maxLength: MAX_ID, description: 'The run id' } },
          required: ['id'],
          additionalProperties: false,
        },
        annotations: { readOnlyHint: true, openWorldHint: false },
      },
      call: async (p, raw) => {
        const args = argumentsOf(READ_RUN, raw, ['id']);
        return readRun(runs, p, requiredString(args, 'id', MAX_ID));
      },
    },
  ];
}

function foundAnswer(refs: RunRef[]): ToolAnswer {
  const results = refs.map((r) => ({
    id: r.id,
    uri: runUri(r.id),
    status: r.status,
    interaction: r.interaction.name,
    environment: r.environment?.name ?? null,
    model: r.model ?? null,
    source: r.source?.type,
    tags: r.tags,
    ...(r.finish_reason ? { finish_reason: r.finish_reason } : {}),
    ...(r.token_use?.total !== undefined ? { tokens: r.token_use.total } : {}),
    created_at: r.created_at,
  }));
  return {
    content: [
      { type: 'text', text: results.length ? JSON.stringify({ results }, null, 1) : 'No run matches.' },
      ...results.map((r) => ({ type: 'resource_link' as const, uri: r.uri, name: `run ${r.id}` })),
    ],
    structuredContent: { results },
  };
}

/** A run's JSON, cut at `max` characters with a note saying where the whole of it is. */
export function runJson(run: Run, max = MAX_RUN_CHARS): string {
  const json = JSON.stringify(run, null, 1);
  return json.length <= max
    ? json
    : `${json.slice(0, max)}\n[cut at ${max} of ${json.length} characters: GET /api/v1/runs/${run.id} answers the whole run]`;
}

async function readRun(runs: RunReads, p: Principal, id: string): Promise<ToolAnswer> {
  const run = await runs.get(p, id);
  return { content: [{ type: 'text', text: runJson(run) }] };
}
