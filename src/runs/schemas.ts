import { Type, type TProperties } from '@sinclair/typebox';
import { ListParam, OpenObject, PageQuery, RefSchema } from '../http/schemas.ts';
import { RUN_STATUSES } from './model.ts';
import { MAX_OFFSET } from '../http/query.ts';

const RunStatusSchema = Type.Union(RUN_STATUSES.map((s) => Type.Literal(s)));

/** A strict payload object: a field it does not name is a 400 naming the field. */
const StrictObject = <T extends TProperties>(props: T, options: Record<string, unknown> = {}) =>
  Type.Object(props, { additionalProperties: false, ...options });
/** A field of Vertesia's payload that Orrery does not apply: named so that the 400 says why (runs/payload-fields.ts). */
const NotApplied = (what: string) =>
  Type.Optional(Type.Unknown({ description: `Vertesia's ${what}; not applied by Orrery: a 400 names it` }));

const ConversationSchema = OpenObject(
  {
    orrery_conversation: Type.Literal(1, { description: 'The version of this object' }),
    run: Type.String({ description: "The conversation's latest run: the run a continuation names" }),
    turns: Type.Integer({ minimum: 1 }),
    messages: Type.Optional(
      Type.Array(Type.Unknown(), {
        description:
          'The whole history ({role, content: string or parts}), only while it fits ORRERY_CONVERSATION_MAX_BYTES; the server keeps it either way, run by run',
      }),
    ),
  },
  {
    description:
      'An opaque, versioned conversation: answered by a run started with conversation: true and by every continuation; pass it back as it came',
  },
);

const ToolDefinitionsSchema = (description: string) =>
  Type.Array(
    Type.Object({
      name: Type.String({ pattern: '^[a-zA-Z0-9_-]{1,64}$' }),
      description: Type.Optional(Type.String()),
      input_schema: Type.Record(Type.String(), Type.Unknown(), {
        description: 'JSON Schema of the arguments (type object)',
      }),
    }),
    { maxItems: 128, description },
  );

const StripOptionsSchema = Type.Object(
  {
    images_after_turns: Type.Optional(Type.Number({ minimum: 0 })),
    text_max_tokens: Type.Optional(Type.Number({ minimum: 0 })),
    heartbeats_after_turns: Type.Optional(Type.Number({ minimum: 0 })),
  },
  {
    additionalProperties: false,
    description:
      "Vertesia's ConversationStripOptions, applied to earlier turns by their age when the request is built; the stored turns are never changed",
  },
);

const ToolResultSchema = StrictObject({
  tool_use_id: Type.String({ description: 'The id of the call (tool_use[].id) this answers' }),
  content: Type.String(),
  is_error: Type.Optional(Type.Boolean()),
  thought_signature: Type.Optional(
    Type.String({
      description:
        "Gemini's signature of the call, as tool_use[].thought_signature carried it; the call's recorded signature is what is sent back",
    }),
  ),
  content_ref: NotApplied('externalized content reference'),
  files: NotApplied('files of a tool result'),
  display_message: NotApplied('display message'),
  meta: NotApplied('tool-result metadata'),
});

const continuationFields = {
  run: Type.Optional(
    Type.Union([Type.String(), OpenObject({ id: Type.String() })], {
      description:
        'The run to continue ({id, account, project} as the client sends it, or its id); without it, conversation must carry messages (a restricted conversation)',
    }),
  ),
  environment: Type.Optional(Type.String({ description: "Environment id; absent: the continued run's" })),
  options: Type.Optional(
    StrictObject(
      {
        model: Type.Optional(Type.String()),
        model_options: Type.Optional(OpenObject({})),
        result_schema: NotApplied('result_schema of a continuation'),
        prompt_cache_schema_suffix: NotApplied('prompt_cache_schema_suffix'),
        include_original_response: NotApplied('include_original_response'),
        prompt_cache_key: NotApplied('prompt_cache_key'),
        prompt_cache_mode: NotApplied('prompt_cache_mode'),
        prompt_cache_ttl_seconds: NotApplied('prompt_cache_ttl_seconds'),
      },
      { description: "model and model_options; absent: the continued run's model" },
    ),
  ),
  conversation: Type.Optional(Type.Unknown({ description: 'The conversation the last answer carried' })),
  tools: Type.Optional(
    ToolDefinitionsSchema("The tools the model may call next; absent or empty: the continued run's tools"),
  ),
  strip_options: Type.Optional(StripOptionsSchema),
  stream: Type.Optional(
    Type.Boolean({
      description:
        'true: answers at once with status created; follow GET /runs/:id/stream (its close carries tool_use)',
    }),
  ),
  tags: Type.Optional(Type.Union([Type.String(), Type.Array(Type.String())])),
  asyncCompletion: NotApplied('asyncCompletion'),
};

export const ToolResultsBody = StrictObject({
  ...continuationFields,
  results: Type.Array(ToolResultSchema, {
    maxItems: 128,
    description: 'One result per call of the continued run, matched by tool_use_id',
  }),
});

export const UserMessageBody = StrictObject({
  ...continuationFields,
  message: Type.String({ description: 'The next user message' }),
  results: Type.Optional(
    Type.Array(ToolResultSchema, {
      maxItems: 128,
      description: 'Results still owed to the calls of the continued run, delivered with the message',
    }),
  ),
});

export const RunCreateBody = StrictObject({
  interaction: Type.String({
    minLength: 1,
    description: 'Interaction id (POST /runs) or endpoint selector Name, Name@draft, Name@3, Name@tag (POST /execute)',
  }),
  stream: Type.Optional(Type.Boolean({ default: false })),
  data: Type.Optional(Type.Unknown({ description: 'Input data for the prompt templates' })),
  tags: Type.Optional(
    Type.Union([Type.String(), Type.Array(Type.String())], { description: 'Comma-separated string or array' }),
  ),
  do_validate: Type.Optional(
    Type.Boolean({
      description:
        'false: the answer is kept even when it does not match result_schema (recorded as result_validation, never cached)',
    }),
  ),
  workflow: NotApplied('workflow'),
  prompts: NotApplied('ad-hoc prompts'),
  asyncCompletion: NotApplied('asyncCompletion'),
  config: Type.Optional(
    StrictObject({
      id: Type.Optional(Type.String({ description: "The configuration's id; recorded in the run's config" })),
      environment: Type.Optional(Type.String()),
      model: Type.Optional(Type.String()),
      do_validate: Type.Optional(Type.Boolean({ description: 'As do_validate' })),
      configMode: Type.Optional(
        Type.String({
          description:
            "RUN_AND_INTERACTION_CONFIG (the default: the interaction's options, then the run's over them), RUN_CONFIG_ONLY (the run's alone; needs config.environment) or INTERACTION_CONFIG_ONLY (the interaction's alone; the run's environment, model and options are refused)",
        }),
      ),
      run_data: NotApplied('run_data'),
      prompt_cache_key: Type.Optional(
        Type.String({ description: "OpenAI's prompt_cache_key (OpenAI-family models only), at most 256 characters" }),
      ),
      prompt_cache_mode: Type.Optional(
        Type.String({
          description:
            'auto: Claude cache breakpoints at the end of the system prompt and of the tools; off: none; required: as auto, and the run fails when Claude reports no cache write or read',
        }),
      ),
      prompt_cache_schema_suffix: NotApplied('prompt_cache_schema_suffix'),
      http_timeout: NotApplied('http_timeout'),
      temperature: Type.Optional(Type.Number()),
      max_tokens: Type.Optional(Type.Integer()),
      formatter: Type.Optional(Type.Unknown()),
      model_options: Type.Optional(
        OpenObject(
          {},
          {
            description:
              'temperature, max_tokens, top_p, top_k, presence_penalty, frequency_penalty, seed, stop (or stop_sequence); wins over the fields above',
          },
        ),
      ),
    }),
  ),
  result_schema: Type.Optional(Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()])),
  tool_definitions: Type.Optional(
    ToolDefinitionsSchema(
      'Tools the model may call; the run completes with tool_use and finish_reason "tool_use" when it calls them. config.model_options.tool_choice: auto, none, any or required. Absent: the interaction\'s model_options.tool_definitions',
    ),
  ),
  conversation: Type.Optional(
    Type.Unknown({
      description:
        'true: keep the conversation and answer it (continue with POST /runs/tool-results or /runs/user-message); a conversation object passed back: its messages go before the prompt (a fork)',
    }),
  ),
  parent: Type.Optional(Type.String({ description: 'Id of the parent run (records a child run)' })),
  ttl: Type.Optional(
    Type.Number({
      minimum: 0,
      maximum: 3_153_600_000,
      description:
        'Seconds to keep the run (at most 100 years); the retention sweeper deletes it within a minute after it expires. 0 or absent: forever (or the project retention)',
    }),
  ),
});

const TokenUse = Type.Object({
  prompt: Type.Optional(Type.Number()),
  result: Type.Optional(Type.Number()),
  total: Type.Optional(Type.Number()),
  cache_read: Type.Optional(Type.Number({ description: "Of prompt, tokens read from the provider's prompt cache" })),
  cache_write: Type.Optional(Type.Number({ description: "Of prompt, tokens written to the provider's prompt cache" })),
});

const usd = (description: string) => Type.Number({ description: `USD: ${description}` });
const RunCostSchema = Type.Union(
  [
    Type.Object({
      input: usd('input tokens not read from or written to a prompt cache'),
      output: usd('output tokens other than reasoning'),
      cache_read: usd('input tokens read from the prompt cache'),
      cache_write: usd('input tokens written to the prompt cache'),
      reasoning: usd('reasoning (thinking) tokens'),
      total: usd('the sum of the parts'),
      currency: Type.Literal('USD'),
      price_table: Type.String({
        description: 'The prices used: "litellm <date>" (the vendored table) or "environment" (config.prices)',
      }),
    }),
    Type.Null(),
  ],
  {
    description:
      "What the run cost, rounded to 1e-9 USD; null while it executes, or when its usage or its model's price is unknown",
  },
);

export const RunSchema = OpenObject(
  {
    id: Type.String(),
    status: RunStatusSchema,
    result: Type.Array(Type.Unknown()),
    parameters: Type.Unknown(),
    interaction: Type.Unknown({ description: 'Id string in the POST answer, expanded object in GET' }),
    environment: Type.Unknown(),
    modelId: Type.Union([Type.String(), Type.Null()]),
    model: Type.Union([Type.String(), Type.Null()]),
    ttl: Type.Number(),
    token_use: TokenUse,
    execution_time: Type.Optional(Type.Number()),
    finish_reason: Type.Optional(Type.String()),
    cost: Type.Optional(RunCostSchema),
    created_at: Type.String(),
    updated_at: Type.String(),
    account: Type.Unknown(),
    project: Type.Unknown(),
    config: Type.Record(Type.String(), Type.Unknown()),
    error: Type.Optional(
      Type.Object({
        code: Type.String(),
        message: Type.String(),
        data: Type.Optional(Type.Unknown()),
        retryable: Type.Optional(
          Type.Boolean({ description: 'Whether the same call may succeed if tried again (a rate limit, an outage)' }),
        ),
        retry_after_ms: Type.Optional(Type.Number({ description: "The provider's own wait before a retry" })),
      }),
    ),
    tags: Type.Array(Type.String()),
    source: Type.Record(Type.String(), Type.String()),
    prompt: Type.Unknown(),
    parent: Type.Optional(Type.String()),
    trace_id: Type.Optional(
      Type.String({ description: "The OpenTelemetry trace of the run's span (when the server exports traces)" }),
    ),
    span_id: Type.Optional(Type.String({ description: "The OpenTelemetry span id of the run's span" })),
    tool_use: Type.Optional(
      Type.Array(
        Type.Object({
          id: Type.String({ description: "The provider's call id; a tool result names it as tool_use_id" }),
          tool_name: Type.String(),
          tool_input: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]),
          tool_input_text: Type.Optional(
            Type.String({ description: 'Arguments as the model wrote them, when they are not a JSON object' }),
          ),
          tool_input_invalid: Type.Optional(Type.Literal(true)),
          thought_signature: Type.Optional(
            Type.String({
              description: "Gemini's signature over the thinking behind the call; send it back with the call",
            }),
          ),
        }),
        { description: 'The tool calls the model asked for, in its order' },
      ),
    ),
    thinking: Type.Optional(
      Type.Array(
        Type.Object({
          type: Type.Literal('thinking'),
          text: Type.String({ description: 'The reasoning; empty for a redacted block' }),
          signature: Type.Optional(Type.String({ description: "Anthropic's signature over the reasoning" })),
          redacted: Type.Optional(Type.String({ description: "A redacted_thinking block's encrypted data" })),
        }),
        {
          description:
            "Claude's reasoning blocks, signed, in its order: the next turn of the conversation sends them back unchanged",
        },
      ),
    ),
    previous_run: Type.Optional(
      Type.String({ description: 'The run this one continues (POST /runs/tool-results, /runs/user-message)' }),
    ),
    conversation: Type.Optional(ConversationSchema),
    cached: Type.Optional(
      Type.Boolean({ description: "true when the interaction's cache_policy answered this run from the result cache" }),
    ),
    cached_from: Type.Optional(Type.String({ description: 'The run whose answer the cache served' })),
    result_validation: Type.Optional(
      Type.Object(
        { valid: Type.Boolean(), message: Type.String() },
        {
          description:
            'Set when do_validate: false kept an answer that does not match result_schema: valid false, and why',
        },
      ),
    ),
    evaluation: Type.Optional(
      Type.Object(
        { score: Type.Optional(Type.Number()), selected: Type.Optional(Type.Boolean()) },
        {
          description:
            "A virtual_mediator's judgement of this child run: its score (0 to 10) and whether it was chosen",
        },
      ),
    ),
    attempts: Type.Optional(
      Type.Array(
        Type.Object({
          status: Type.String({ description: 'completed or failed' }),
          error: Type.Optional(Type.Object({ code: Type.String(), message: Type.String() })),
          duration_ms: Type.Number(),
          repair: Type.Optional(
            Type.Boolean({ description: 'true on the one re-ask of an answer that did not match result_schema' }),
          ),
          run: Type.Optional(Type.String({ description: 'The child run of this attempt (virtual environments)' })),
        }),
        {
          description:
            'The provider calls of a run that was retried or asked again for its result_schema, in order (absent when the first call ended it)',
        },
      ),
    ),
    scores: Type.Optional(
      Type.Record(
        Type.String(),
        Type.Object(
          {
            id: Type.String(),
            value: Type.Union([Type.Number(), Type.Boolean(), Type.String()]),
            source: Type.String({ description: 'api, human or evaluator' }),
            evaluator: Type.Optional(Type.String({ description: "The evaluator's id (source evaluator)" })),
            comment: Type.Optional(Type.String()),
            created_at: Type.String(),
          },
          { additionalProperties: false },
        ),
        { description: 'The latest score of each name (POST /runs/:id/scores); answered by GET /runs/:id' },
      ),
    ),
    input_embedding: Type.Optional(
      Type.Array(Type.Number(), {
        description:
          "Vector of the prompt (the project's embedding model); only in the answer of the run's creation and its stream's close",
      }),
    ),
    result_embedding: Type.Optional(
      Type.Array(Type.Number(), {
        description: "Vector of the result; only in the answer of the run's creation and its stream's close",
      }),
    ),
  },
  { $id: 'Run' },
);

export const RunRefSchema = OpenObject(
  {
    id: Type.String(),
    status: RunStatusSchema,
    interaction: RefSchema,
    environment: Type.Union([RefSchema, Type.Null()]),
    modelId: Type.Union([Type.String(), Type.Null()]),
    model: Type.Union([Type.String(), Type.Null()]),
    tags: Type.Array(Type.String()),
    parent: Type.Optional(Type.String()),
    finish_reason: Type.Optional(Type.String()),
    token_use: TokenUse,
    execution_time: Type.Optional(Type.Number()),
    cost: Type.Optional(RunCostSchema),
    source: Type.Record(Type.String(), Type.String()),
    account: RefSchema,
    project: RefSchema,
    created_at: Type.String(),
    updated_at: Type.String(),
  },
  { $id: 'RunRef' },
);

export const RunListQuery = Type.Object(
  {
    ...PageQuery,
    interaction: ListParam('Interaction id(s), comma-separated or repeated'),
    model: ListParam('Model id(s)'),
    environment: ListParam('Environment id(s)'),
    status: ListParam('created, processing, completed or failed'),
    tag: ListParam('Tag(s): a run matches when it has any of them'),
    anchorDate: Type.Optional(Type.String({ description: 'ISO date: anchor of the updated_at filter' })),
    anchorDateDirection: Type.Optional(
      Type.Union([Type.Literal('before'), Type.Literal('after')], {
        description: 'after (default): updated_at >= anchorDate; before: updated_at < anchorDate',
      }),
    ),
    parent: ListParam('A parent run id (its children), or false (top-level runs only)'),
    previous_run: ListParam(
      'Run id(s) a run continues (the next turns of a conversation), or false (runs that continue none)',
    ),
    is_root: Type.Optional(Type.Boolean({ description: 'true: top-level runs only (the official client)' })),
    workflow_run_ids: ListParam(
      "Workflow run ids: an async run's (POST /execute/async) is its own id; other runs have none",
    ),
    workflow_ids: ListParam("Workflow ids: an async run's is its own id, as its workflow run id"),
    score: Type.Optional(
      Type.Union([Type.String(), Type.Array(Type.String(), { maxItems: 16 })], {
        description:
          "A condition on a run's latest score, <name>:<value> or <name>:[<low> TO <high>] as run search's scores.<name> takes it; repeated: every one holds",
      }),
    ),
  },
  { additionalProperties: true },
);

export const StreamQuery = Type.Object(
  {
    access_token: Type.Optional(Type.String({ description: 'The bearer token (EventSource cannot send headers)' })),
    lastEventId: Type.Optional(Type.String()),
  },
  { additionalProperties: true },
);

// ---- search and facets (issue 4) ------------------------------------------------------------

const FACET_FIELD_NOTE =
  'modelId, status, tags, environment, interaction, finish_reason, tool_use.tool_name (string); updated_at (date); execution_time, cost.total (number)';

const SearchFilters = OpenObject(
  {
    interaction: Type.Optional(Type.Unknown({ description: 'Interaction id (or a list: any of them)' })),
    environemnt: Type.Optional(Type.Unknown({ description: 'Environment id; the key is spelled so in the interface' })),
    environment: Type.Optional(Type.Unknown({ description: 'Environment id (the correct spelling is accepted too)' })),
    parent: Type.Optional(
      Type.Unknown({ description: 'A parent run id (its children), or false (top-level runs only)' }),
    ),
    previous_run: Type.Optional(
      Type.Unknown({ description: 'A run id (the runs that continue it), or false (runs that continue none)' }),
    ),
    status: Type.Optional(Type.Unknown({ description: 'created, processing, completed or failed (or a list)' })),
    tags: Type.Optional(Type.Unknown({ description: 'Tags: a run must carry ALL of them' })),
    modelId: Type.Optional(Type.Unknown({ description: 'Model id (or a list)' })),
    finish_reason: Type.Optional(Type.Unknown({ description: 'Finish reason (or a list)' })),
    updated_at: Type.Optional(Type.Unknown({ description: '{lt, lte, gt, gte}: ISO 8601 bounds on updated_at' })),
    created_at: Type.Optional(Type.Unknown({ description: '{lt, lte, gt, gte}: ISO 8601 bounds on created_at' })),
  },
  { description: 'Filters ANDed with the query; an unknown key is a 400 that lists these' },
);

export const RunSearchBody = OpenObject(
  {
    query: Type.Optional(
      Type.Union([
        Type.String({ description: 'A Lucene query over the runs (see the README, "Search syntax")' }),
        OpenObject(
          {},
          {
            description:
              "The official client's RunSearchQuery: {query, default_query_path, status, interaction, environment, model, tags (all), exclude_tags, parent, is_root, start, end (on created_at), finish_reason, run_ids, name, created_by}",
          },
        ),
      ]),
    ),
    defaultQueryPath: Type.Optional(
      Type.String({
        description: 'The field a bare term searches; default: the run text (prompt, result, parameter strings)',
      }),
    ),
    filters: Type.Optional(SearchFilters),
    facets: Type.Optional(
      Type.Unknown({
        description:
          `Map of name to {type: string|number|date, path, numBuckets?, boundaries?, default?}; paths: ${FACET_FIELD_NOTE}. ` +
          'With facets the answer is {count, facet} (onlyMeta) or {results, count, facet}. An array (the client form) is ignored here: use POST /runs/facets.',
      }),
    ),
    onlyMeta: Type.Optional(Type.Boolean({ description: 'With facets: answer only {count, facet}' })),
    limit: Type.Optional(Type.Number({ description: 'Page size, default 100, at most 1,000' })),
    offset: Type.Optional(
      Type.Number({ minimum: 0, maximum: MAX_OFFSET, description: 'Runs to skip, default 0, at most 100,000' }),
    ),
  },
  { description: "The interface's shape ({query: string, …}) or the official client's ({query: {…}, limit, offset})" },
);

const Bucket = Type.Object({
  _id: Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()], {
    description:
      'The value (a boolean for a boolean score); for number and date facets the lower boundary of the bucket, or the default bucket name',
  }),
  count: Type.Integer(),
  name: Type.Optional(Type.String({ description: 'interaction and environment buckets: the name' })),
});

const SearchMeta = {
  count: Type.Object({ total: Type.Integer({ description: 'Runs matching the query and filters' }) }),
  facet: Type.Record(Type.String(), Type.Object({ buckets: Type.Array(Bucket) })),
};

export const RunSearchAnswer = Type.Union([
  Type.Array(Type.Ref('RunRef'), {
    description: 'Without facets: the page of run references, newest updated_at first',
  }),
  Type.Object({ results: Type.Array(Type.Ref('RunRef')), ...SearchMeta }, { description: 'With facets' }),
  Type.Object(SearchMeta, { description: 'With facets and onlyMeta: true' }),
]);

export const RunFacetsBody = OpenObject({
  facets: Type.Array(
    OpenObject({
      name: Type.String({ description: 'The key the buckets are answered under ("total" is reserved)' }),
      field: Type.String({ description: FACET_FIELD_NOTE }),
    }),
    { description: 'Up to 25 facets' },
  ),
  query: Type.Optional(
    OpenObject({}, { description: "The official client's RunSearchQuery (as in POST /runs/search)" }),
  ),
});

export const RunFacetsAnswer = Type.Object(
  { total: Type.Integer({ description: 'Runs matching the query' }) },
  {
    additionalProperties: Type.Array(Bucket),
    description:
      '{<name>: [{_id, count, name?}], total}: values most frequent first; runs without a value are the _id null bucket',
  },
);

// ---- the official client's find, filter options and populate (issue 24) ---------------------

export const RunFindBody = Type.Object(
  {
    query: Type.Record(Type.String(), Type.Unknown(), {
      description:
        'Mongo-style match on run fields: {"status": "completed", "tags": {"$in": ["a"]}, "parameters.text": {"$regex": "^hi"}}; ' +
        'fields: id, status, modelId, interaction(.id|.name), environment(.id|.name), parent, finish_reason, execution_time, token_use.*, cost.total, ' +
        'created_at, updated_at, tags, updated_by, and paths under parameters, config, source, error, result, prompt, ttl, created_by, evaluation, result_schema, chunks, cached, cached_from, cost',
    }),
    limit: Type.Optional(
      Type.Integer({ minimum: 0, description: 'Page size, default 100, at most 1,000 (larger values are clamped)' }),
    ),
    offset: Type.Optional(
      Type.Integer({ minimum: 0, maximum: MAX_OFFSET, description: 'Runs to skip, default 0, at most 100,000' }),
    ),
    select: Type.Optional(
      Type.String({
        maxLength: 10_000,
        description: 'Projection: "status tags parameters.text" keeps those (and id); "-prompt" drops a field',
      }),
    ),
  },
  {
    additionalProperties: false,
    description: "The official client's FindPayload (runs have no revisions: all_revisions and from_root are refused)",
  },
);

export const RunFindAnswer = Type.Array(
  OpenObject(
    { id: Type.String() },
    { description: 'A stored run (projected by select) with interaction, environment, account and project as ids' },
  ),
);

export const FilterOptionParams = Type.Object({
  field: Type.String({
    minLength: 1,
    maxLength: 100,
    description: 'interaction, environment, model (or modelId), status, tags (or tag), finish_reason',
  }),
});

export const FilterOptionsAnswer = Type.Array(
  Type.Object({
    id: Type.String({ description: 'The value' }),
    name: Type.String({ description: 'Its name: the interaction or environment name, else the value itself' }),
    count: Type.Integer({ description: 'Matching runs with that value' }),
  }),
  { description: 'Most frequent first, ties by value; at most 1,000' },
);

export const RetrieveQuery = Type.Object(
  {
    populate: Type.Optional(
      Type.String({
        description:
          'true (default): interaction and environment expanded as objects; false: as stored ({id, name, …})',
      }),
    ),
  },
  { additionalProperties: true },
);

// ---- export (issue 18) ----------------------------------------------------------------------

const { limit: _listLimit, offset: _listOffset, ...listFilters } = RunListQuery.properties;

/** GET /runs/export: the filters of GET /runs, a Lucene query, a format and a limit (no offset: keyset pages). */
export const RunExportQuery = Type.Object(
  {
    ...listFilters,
    format: Type.Optional(
      Type.Union([Type.Literal('jsonl'), Type.Literal('csv')], {
        description: 'jsonl (default): one run per line; csv: the columns listed in the README',
      }),
    ),
    query: Type.Optional(Type.String({ description: 'A Lucene query over the runs, as POST /runs/search takes it' })),
    default_query_path: Type.Optional(
      Type.String({ description: 'The field a bare term searches (default: the full text)' }),
    ),
    limit: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 1_000_000,
        description: 'At most this many runs, default and maximum 1,000,000',
      }),
    ),
  },
  { additionalProperties: true },
);
