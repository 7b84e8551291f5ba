/** /events: webhook subscriptions (the official client's store.events.subscriptions), deliveries, the notify secret. */
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../http/auth-hook.ts';
import { errorResponses, IdParams } from '../http/schemas.ts';
import { scopeOf } from '../auth/principal.ts';
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import type { Subscriptions } from './subscriptions.ts';
import { projectNotifySecret } from './signing.ts';
import { listDeliveries } from './store.ts';
import {
  CreateBody,
  DeliveriesQuery,
  DeliverySchema,
  ListQuery,
  MutationAnswer,
  SubscriptionSchema,
  UpdateBody,
} from './schemas.ts';

export const eventRoutes: FastifyPluginAsyncTypebox<{
  subscriptions: Subscriptions;
  db: Kysely<Database>;
  key: Buffer;
}> = async (app, { subscriptions, db, key }) => {
  const tags = ['events'];
  app.post(
    '/events/subscriptions',
    {
      schema: {
        tags,
        summary:
          'Create a webhook subscription: answers it with its signing secret (webhook_signing_secret), which no other answer shows',
        body: CreateBody,
        response: { 200: MutationAnswer, ...errorResponses(400, 401, 403, 409) },
      },
    },
    (req) => subscriptions.create(principalOf(req), req.body as Record<string, unknown>),
  );
  app.get(
    '/events/subscriptions',
    {
      schema: {
        tags,
        summary: "The project's webhook subscriptions (at most 100), by name unless sort_by says otherwise",
        querystring: ListQuery,
        response: { 200: Type.Array(SubscriptionSchema), ...errorResponses(400, 401, 403) },
      },
    },
    (req) => subscriptions.list(principalOf(req), req.query),
  );
  app.get(
    '/events/subscriptions/:id',
    {
      schema: {
        tags,
        summary: 'A webhook subscription (never its secret)',
        params: IdParams,
        response: { 200: SubscriptionSchema, ...errorResponses(401, 403, 404) },
      },
    },
    (req) => subscriptions.get(principalOf(req), req.params.id),
  );
  app.put(
    '/events/subscriptions/:id',
    {
      schema: {
        tags,
        summary:
          'Change a webhook subscription; target.rotate_signing_secret: true makes a new secret, answered once in webhook_signing_secret',
        params: IdParams,
        body: UpdateBody,
        response: { 200: MutationAnswer, ...errorResponses(400, 401, 403, 404) },
      },
    },
    (req) => subscriptions.update(principalOf(req), req.params.id, req.body as Record<string, unknown>),
  );
  app.delete(
    '/events/subscriptions/:id',
    {
      schema: {
        tags,
        summary: 'Delete a webhook subscription: its pending deliveries are not sent',
        params: IdParams,
        response: { 200: Type.Object({ count: Type.Integer() }), ...errorResponses(401, 403, 404) },
      },
    },
    (req) => subscriptions.delete(principalOf(req), req.params.id),
  );
  app.get(
    '/events/deliveries',
    {
      schema: {
        tags,
        summary:
          "The project's webhook deliveries, newest first: each attempt's outcome recorded (limit up to 1,000, default 100)",
        querystring: DeliveriesQuery,
        response: { 200: Type.Array(DeliverySchema), ...errorResponses(400, 401, 403) },
      },
    },
    async (req) => {
      const q = req.query;
      const rows = await listDeliveries(db, scopeOf(principalOf(req)), {
        ...(q.subscription ? { subscription: q.subscription } : {}),
        ...(q.status ? { status: q.status as 'pending' | 'delivered' | 'failed' } : {}),
        ...(q.event_id ? { eventId: q.event_id } : {}),
        limit: q.limit ?? 100,
      });
      return rows.map(({ account_id: _a, project_id: _p, body: _b, target: _t, ...d }) => ({
        ...d,
        attempts: Number(d.attempts),
        response_status: d.response_status === null ? null : Number(d.response_status),
      }));
    },
  );
  app.get(
    '/events/notify-secret',
    {
      schema: {
        tags,
        summary:
          "The project's signing secret of notify_endpoints deliveries (POST /execute/async), in the Standard Webhooks form",
        response: { 200: Type.Object({ webhook_signing_secret: Type.String() }), ...errorResponses(401, 403) },
      },
    },
    (req) => ({ webhook_signing_secret: projectNotifySecret(key, principalOf(req).project.id) }),
  );
};
