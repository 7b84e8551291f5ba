/**
 * Usage analytics (issue 18, point 5): the official client's `analytics` (/analytics/runs/…) and
 * `store.cost` (/cost/…). Parse, authorise by context, call the service (style F2).
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../http/auth-hook.ts';
import { errorResponses } from '../http/schemas.ts';
import type { AnalyticsService } from './service.ts';
import {
  CostAnalyticsAnswer,
  CostAnalyticsBody,
  DateRangeQuery,
  ModelPricesAnswer,
  ModelPricesQuery,
  RunPriceAnswer,
  RunPriceBody,
  RunsSummaryAnswer,
  TimeSeriesAnswer,
  TokenUsageAnswer,
} from './schemas.ts';

export const analyticsRoutes: FastifyPluginAsyncTypebox<{ analytics: AnalyticsService }> = async (
  app,
  { analytics },
) => {
  const tags = ['analytics'];
  const range = 'start/end: ISO 8601 on created_at, at most 366 days apart; environment: an environment of the project';

  app.get(
    '/analytics/runs/summary',
    {
      schema: {
        tags,
        summary: `Run counts: total, by status, by environment and by interaction (each with its statuses). ${range}`,
        querystring: DateRangeQuery,
        response: { 200: RunsSummaryAnswer, ...errorResponses(400, 401, 404) },
      },
    },
    (req) => analytics.runsSummary(principalOf(req), req.query),
  );

  app.get(
    '/analytics/runs/time-series',
    {
      schema: {
        tags,
        summary: `Runs created per hour (ranges up to 72 hours) or per day, [{timestamp, count}], empty buckets included; default the last 30 days. ${range}`,
        querystring: DateRangeQuery,
        response: { 200: TimeSeriesAnswer, ...errorResponses(400, 401, 404) },
      },
    },
    (req) => analytics.runsTimeSeries(principalOf(req), req.query),
  );

  app.get(
    '/analytics/runs/token-usage',
    {
      schema: {
        tags,
        summary: `Tokens (prompt, result, total), runs and cost per environment. ${range}`,
        querystring: DateRangeQuery,
        response: { 200: TokenUsageAnswer, ...errorResponses(400, 401, 404) },
      },
    },
    (req) => analytics.runsTokenUsage(principalOf(req), req.query),
  );

  app.post(
    '/cost/analytics',
    {
      schema: {
        tags,
        summary:
          'Cost of the runs (recorded cost.total, USD) with tokens and calls, by a dimension and per time bucket; scope org (admin keys): every project of the account',
        body: CostAnalyticsBody,
        response: { 200: CostAnalyticsAnswer, ...errorResponses(400, 401, 403, 404) },
      },
    },
    (req) => analytics.analytics(principalOf(req), req.body as Record<string, unknown>),
  );

  app.post(
    '/cost/analytics/global',
    {
      schema: {
        tags,
        summary:
          "Cost analytics over every project of the caller's account, grouped by account unless group_by says otherwise (admin keys only, else 403)",
        body: CostAnalyticsBody,
        response: { 200: CostAnalyticsAnswer, ...errorResponses(400, 401, 403) },
      },
    },
    (req) => analytics.global(principalOf(req), req.body as Record<string, unknown>),
  );

  app.get(
    '/cost/model-prices',
    {
      schema: {
        tags,
        summary: 'The price catalog: the vendored LiteLLM table, list and effective prices in USD per million tokens',
        querystring: ModelPricesQuery,
        response: { 200: ModelPricesAnswer, ...errorResponses(400, 401) },
      },
    },
    (req) => analytics.modelPrices(req.query),
  );

  app.post(
    '/cost/run-price',
    {
      schema: {
        tags,
        summary:
          'The price of a run and its child runs, by model; include_comparison_pricing: true adds the whole price catalog',
        body: RunPriceBody,
        response: { 200: RunPriceAnswer, ...errorResponses(400, 401, 404) },
      },
    },
    (req) => analytics.runPrice(principalOf(req), req.body as Record<string, unknown>),
  );
};
