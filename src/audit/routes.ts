/** The audit trail (`audit:read`): the official client's `auditTrail.list` and `aggregate`. */
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../http/auth-hook.ts';
import { errorResponses, Offset, OpenObject } from '../http/schemas.ts';
import { MAX_AGGREGATE_GROUPS, MAX_AUDIT_PAGE, MAX_RANGE_DAYS, type AggregateQuery, type AuditTrail } from './trail.ts';

const csv = (v: string | undefined): string[] | undefined =>
  v
    ? v
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean)
    : undefined;

const ListQuery = Type.Object({
  actions: Type.Optional(
    Type.String({ maxLength: 2000, description: 'Comma-separated: create, update, delete, publish' }),
  ),
  resourceTypes: Type.Optional(
    Type.String({
      maxLength: 2000,
      description: 'Comma-separated: environment, prompt, interaction, object_type, object, project, apikey, token',
    }),
  ),
  resourceId: Type.Optional(Type.String({ maxLength: 200 })),
  principalId: Type.Optional(Type.String({ maxLength: 200, description: 'apikey:<key id>' })),
  principalType: Type.Optional(Type.String({ maxLength: 50 })),
  effectivePrincipalId: Type.Optional(Type.String({ maxLength: 200 })),
  hasEffectivePrincipal: Type.Optional(Type.Boolean()),
  projectId: Type.Optional(
    Type.String({
      maxLength: 200,
      description: 'Admin keys: one project of the account (others always read their own)',
    }),
  ),
  from: Type.Optional(Type.String({ maxLength: 64 })),
  to: Type.Optional(Type.String({ maxLength: 64 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_AUDIT_PAGE })),
  offset: Type.Optional(Offset()),
});

const EventSchema = OpenObject({
  event_type: Type.Literal('audit'),
  event_id: Type.String(),
  event_category: Type.String(),
  action: Type.String(),
  resource_type: Type.String(),
  resource_id: Type.String(),
  timestamp: Type.String(),
  request_id: Type.String(),
  status: Type.Integer(),
  success: Type.Boolean(),
  principal_id: Type.Union([Type.String(), Type.Null()]),
  principal_type: Type.Union([Type.String(), Type.Null()]),
  roles: Type.Array(Type.String()),
  account_id: Type.Union([Type.String(), Type.Null()]),
  project_id: Type.Union([Type.String(), Type.Null()]),
  details: Type.Optional(
    Type.Record(Type.String(), Type.Unknown(), {
      description: '{changes: {field: {before, after}}, ip, …}; secrets redacted',
    }),
  ),
});

const AggregateBody = Type.Object(
  {
    projectId: Type.Optional(Type.String({ maxLength: 200 })),
    from: Type.Optional(Type.String({ maxLength: 64 })),
    to: Type.Optional(Type.String({ maxLength: 64 })),
    filter: Type.Optional(
      Type.Object(
        {
          actions: Type.Optional(Type.Array(Type.String({ maxLength: 100 }), { maxItems: 100 })),
          resourceTypes: Type.Optional(Type.Array(Type.String({ maxLength: 100 }), { maxItems: 100 })),
          eventCategories: Type.Optional(Type.Array(Type.String({ maxLength: 100 }), { maxItems: 10 })),
          providers: Type.Optional(Type.Array(Type.String({ maxLength: 100 }), { maxItems: 100 })),
          success: Type.Optional(Type.Boolean()),
          details: Type.Optional(Type.Array(Type.Unknown(), { maxItems: 20 })),
        },
        { additionalProperties: false },
      ),
    ),
    groupBy: Type.Optional(
      Type.Array(
        Type.Object(
          {
            dimension: Type.String({ maxLength: 50 }),
            resolution: Type.Optional(
              Type.Union([Type.Literal('hour'), Type.Literal('day'), Type.Literal('week'), Type.Literal('month')]),
            ),
          },
          { additionalProperties: false },
        ),
        { maxItems: 4 },
      ),
    ),
    metrics: Type.Array(
      Type.Object(
        {
          id: Type.String({ maxLength: 64 }),
          operation: Type.Union([
            Type.Literal('count'),
            Type.Literal('count_distinct'),
            Type.Literal('sum_meter'),
            Type.Literal('average_meter'),
          ]),
          field: Type.Optional(Type.Union([Type.Literal('resource_id'), Type.Literal('request_id')])),
          meterCategory: Type.Optional(Type.String({ maxLength: 100 })),
          meterType: Type.Optional(Type.String({ maxLength: 100 })),
        },
        { additionalProperties: false },
      ),
      { minItems: 1, maxItems: 10 },
    ),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_AGGREGATE_GROUPS })),
  },
  { additionalProperties: false },
);

export const auditRoutes: FastifyPluginAsyncTypebox<{ trail: AuditTrail }> = async (app, { trail }) => {
  const tags = ['audit'];
  // The official client asks for `/audit-trail/` (with the slash); both are the list.
  for (const url of ['/audit-trail', '/audit-trail/'])
    app.get(
      url,
      {
        schema: {
          tags,
          summary:
            'Audit events newest first: management changes (environments, prompts, interactions, types, object deletions, projects and settings, keys) and tokens issued; {events, hasNext, limit, offset}',
          querystring: ListQuery,
          response: {
            200: Type.Object({
              events: Type.Array(EventSchema),
              hasNext: Type.Boolean(),
              limit: Type.Integer(),
              offset: Type.Integer(),
            }),
            ...errorResponses(400, 401, 403),
          },
        },
      },
      (req) => {
        const q = req.query;
        return trail.list(principalOf(req), {
          ...q,
          actions: csv(q.actions),
          resourceTypes: csv(q.resourceTypes),
        }) as never;
      },
    );
  app.post(
    '/audit-trail/aggregate',
    {
      schema: {
        tags,
        summary: `Counts of audit events grouped by time (hour, day, week, month) and action, resource_type, event_category or project_id; at most ${MAX_RANGE_DAYS} days and ${MAX_AGGREGATE_GROUPS} groups`,
        body: AggregateBody,
        response: {
          200: Type.Object({
            rows: Type.Array(
              Type.Object({
                dimensions: Type.Record(Type.String(), Type.Unknown()),
                metrics: Type.Record(Type.String(), Type.Number()),
              }),
            ),
            from: Type.String(),
            to: Type.String(),
          }),
          ...errorResponses(400, 401, 403),
        },
      },
    },
    (req) => trail.aggregate(principalOf(req), req.body as AggregateQuery),
  );
};
