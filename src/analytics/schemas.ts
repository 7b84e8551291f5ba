/** Schemas of the analytics and cost routes: the shapes of `@vertesia/common` (analytics.ts, api-schemas/cost-analytics.ts). */
import { Type } from '@sinclair/typebox';
import { OpenObject } from '../http/schemas.ts';

const Count = Type.Union([Type.Integer(), Type.Null()]);
const ByStatus = Type.Record(Type.String(), Count, {
  description: 'Runs per status: created, processing, completed, failed',
});

export const DateRangeQuery = Type.Object(
  {
    start: Type.Optional(
      Type.String({
        description:
          'ISO 8601 date or date-time (inclusive) on created_at; unbounded when absent (time-series: 30 days before end)',
      }),
    ),
    end: Type.Optional(
      Type.String({
        description:
          'ISO 8601 date or date-time; covers its precision (a date includes that day); unbounded when absent (time-series: now)',
      }),
    ),
    environment: Type.Optional(Type.String({ description: 'An environment id of the project: only its runs' })),
  },
  { additionalProperties: true },
);

const EntityStatusCounts = Type.Object({
  id: Type.String(),
  name: Type.Optional(Type.String()),
  total: Count,
  byStatus: ByStatus,
});

export const RunsSummaryAnswer = Type.Object(
  {
    total: Count,
    byStatus: ByStatus,
    byEnvironment: Type.Array(EntityStatusCounts, { description: 'Most runs first' }),
    byInteraction: Type.Array(EntityStatusCounts, { description: 'Most runs first' }),
    queryStats: Type.Object({ total: Type.Integer(), failed: Type.Integer() }),
  },
  { description: "The official client's RunsAnalyticsSummary" },
);

export const TimeSeriesAnswer = Type.Array(
  Type.Object({
    timestamp: Type.String({
      description: 'Start of the bucket (UTC): hours when the range spans at most 72 hours, else days',
    }),
    count: Type.Integer(),
  }),
  { description: 'One point per bucket of the range, empty buckets included, oldest first' },
);

export const TokenUsageAnswer = Type.Object(
  {
    byEnvironment: Type.Array(
      Type.Object({
        environmentId: Type.String(),
        environmentName: Type.String(),
        totalPromptTokens: Count,
        totalResultTokens: Count,
        totalTokens: Count,
        runs: Type.Integer(),
        totalCost: Type.Union([Type.Number(), Type.Null()], {
          description: 'USD: the sum of the known run costs; null when none is known',
        }),
      }),
    ),
    queryStats: Type.Object({ total: Type.Integer(), failed: Type.Integer() }),
  },
  { description: "The official client's TokenUsageSummary (plus result tokens, total tokens, runs and cost)" },
);

const Instant = Type.Union([Type.String(), Type.Number()], {
  description: 'ISO 8601 date or date-time, or epoch milliseconds',
});

export const CostAnalyticsBody = OpenObject(
  {
    from: Type.Optional(Instant),
    to: Type.Optional(Instant),
    group_by: Type.Optional(
      Type.String({
        description: 'model (default; account for /global), environment, interaction, provider, project, account',
      }),
    ),
    resolution: Type.Optional(
      Type.String({ description: 'hour, day, week or month; default hour up to 72 hours, else day' }),
    ),
    model: Type.Optional(Type.String()),
    environment_id: Type.Optional(Type.String()),
    provider: Type.Optional(Type.String()),
    interaction_id: Type.Optional(Type.String()),
    project_id: Type.Optional(Type.String()),
    run_id: Type.Optional(Type.String({ description: 'A run and its child runs' })),
    principal_id: Type.Optional(
      Type.String({ description: 'The API key that started the runs (its id, or apikey:<id>)' }),
    ),
    service_tier: Type.Optional(
      Type.String({ description: 'Every Orrery run is of tier default: any other matches nothing' }),
    ),
    scope: Type.Optional(
      Type.String({ description: 'project (default) or org (every project of the account; admin keys only)' }),
    ),
  },
  { description: "The official client's CostAnalyticsQuery; a range of at most 366 days, default the last 30" },
);

const Point = Type.Object({
  timestamp: Type.String(),
  cost: Type.Number(),
  input_tokens: Type.Number(),
  output_tokens: Type.Number(),
  calls: Type.Integer(),
});

const Summary = Type.Object({
  total_cost: Type.Number({ description: 'USD' }),
  total_input_tokens: Type.Number(),
  total_output_tokens: Type.Number(),
  total_calls: Type.Integer(),
  total_duration_ms: Type.Number(),
});

const ByDimension = Type.Object({
  dimension: Type.String(),
  label: Type.Optional(Type.String()),
  provider: Type.Optional(Type.String()),
  cost: Type.Number(),
  input_tokens: Type.Number(),
  output_tokens: Type.Number(),
  calls: Type.Integer(),
  periods: Type.Optional(Type.Array(Point)),
});

const ModelPricing = Type.Object({
  model: Type.String(),
  provider: Type.Optional(Type.String()),
  input_price_per_m_tokens: Type.Number(),
  cached_input_price_per_m_tokens: Type.Optional(Type.Number()),
  cache_write_input_price_per_m_tokens: Type.Optional(Type.Number()),
  output_price_per_m_tokens: Type.Number(),
  source: Type.String({ description: 'model_pricing_daily (the vendored LiteLLM table) or unavailable' }),
});

const Coverage = Type.Object({
  priced_calls: Type.Integer(),
  unpriced_calls: Type.Integer(),
  assumed_default_calls: Type.Integer(),
  unpriced: Type.Array(
    Type.Object({
      model: Type.String(),
      provider: Type.Optional(Type.String()),
      service_tier: Type.String(),
      calls: Type.Integer(),
    }),
  ),
});

const QueryRange = Type.Object({ from: Type.String(), to: Type.String() });

export const CostAnalyticsAnswer = Type.Object(
  {
    summary: Summary,
    by_dimension: Type.Array(ByDimension),
    time_series: Type.Array(Point),
    pricing: Type.Array(ModelPricing),
    pricing_coverage: Type.Optional(Coverage),
    query_range: QueryRange,
    cached: Type.Boolean(),
  },
  { description: "The official client's CostAnalyticsResponse" },
);

export const ModelPricesQuery = Type.Object(
  {
    from: Type.Optional(Type.String({ description: 'ISO 8601 or epoch milliseconds' })),
    to: Type.Optional(Type.String({ description: 'ISO 8601 or epoch milliseconds' })),
  },
  { additionalProperties: true },
);

export const ModelPricesAnswer = Type.Object(
  {
    prices: Type.Array(
      Type.Object({
        model: Type.String(),
        provider: Type.Optional(Type.String()),
        list_price_date: Type.Optional(Type.String()),
        effective_from: Type.Optional(Type.String()),
        effective_to: Type.Optional(Type.String()),
        input_list_price_per_m_tokens: Type.Optional(Type.Number()),
        input_effective_price_per_m_tokens: Type.Optional(Type.Number()),
        cached_input_list_price_per_m_tokens: Type.Optional(Type.Number()),
        cached_input_effective_price_per_m_tokens: Type.Optional(Type.Number()),
        cache_write_input_list_price_per_m_tokens: Type.Optional(Type.Number()),
        cache_write_input_effective_price_per_m_tokens: Type.Optional(Type.Number()),
        output_list_price_per_m_tokens: Type.Optional(Type.Number()),
        output_effective_price_per_m_tokens: Type.Optional(Type.Number()),
        source: Type.String(),
      }),
    ),
    effective_range: QueryRange,
    list_price_date: Type.Optional(Type.String()),
  },
  {
    description:
      "The official client's ModelPriceComparisonResponse: the vendored LiteLLM table, USD per million tokens",
  },
);

export const RunPriceBody = OpenObject(
  {
    run_id: Type.Optional(Type.String({ description: 'The run to price (required): it and its child runs' })),
    from: Type.Optional(Instant),
    to: Type.Optional(Instant),
    pricing_source: Type.Optional(Type.String({ description: 'historical (default) or list' })),
    include_comparison_pricing: Type.Optional(
      Type.Boolean({ description: 'true: pricing is the whole price catalog' }),
    ),
  },
  { description: "The official client's CostRunPriceQuery" },
);

export const RunPriceAnswer = Type.Object(
  {
    summary: Summary,
    by_model: Type.Array(ByDimension),
    pricing: Type.Optional(Type.Array(ModelPricing)),
    pricing_coverage: Type.Optional(Coverage),
    query_range: Type.Optional(QueryRange),
    pricing_source: Type.String(),
    matched_events: Type.Integer({ description: 'The runs priced: the run and its children' }),
  },
  { description: "The official client's CostRunPriceResponse" },
);
