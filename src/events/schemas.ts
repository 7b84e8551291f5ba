/** TypeBox schemas of /events: Vertesia's event subscription shapes, and Orrery's delivery records. */
import { Type } from '@sinclair/typebox';
import { EVENT_CATEGORIES } from './model.ts';

/** Bounds (docs/reference/limits.md). */
export const MAX_SUBSCRIPTIONS = 100;
const MAX_NAME = 200;
const MAX_DESCRIPTION = 2000;
const MAX_URL_LENGTH = 2048;
const MAX_FILTER_ITEMS = 50;
const MAX_FILTER_ITEM = 200;

const item = Type.String({ minLength: 1, maxLength: MAX_FILTER_ITEM });
const Category = Type.Union(EVENT_CATEGORIES.map((c) => Type.Literal(c)));

const FilterSchema = Type.Object(
  {
    event_category: Type.Optional(
      Type.Array(Type.Union([Category, Type.Literal('*')]), { maxItems: MAX_FILTER_ITEMS }),
    ),
    exclude_event_category: Type.Optional(Type.Array(Category, { maxItems: MAX_FILTER_ITEMS })),
    action: Type.Optional(Type.Array(item, { maxItems: MAX_FILTER_ITEMS })),
    resource_type: Type.Optional(Type.Array(item, { maxItems: MAX_FILTER_ITEMS })),
    // Refused by name in subscriptions.ts (not applied here).
    condition: Type.Optional(Type.Unknown()),
    semantic_condition: Type.Optional(Type.Unknown()),
  },
  { additionalProperties: false },
);

const TargetInput = Type.Object(
  {
    type: Type.String({ description: '"webhook" (other targets are refused)' }),
    url: Type.String({ minLength: 1, maxLength: MAX_URL_LENGTH }),
    signing_mode: Type.Optional(Type.String({ description: '"signed" only: every delivery is signed' })),
    payload_mode: Type.Optional(Type.String({ description: '"event_envelope" only' })),
    rotate_signing_secret: Type.Optional(Type.Boolean({ description: 'On update: a new secret, answered once' })),
    has_secret: Type.Optional(Type.Boolean({ description: 'Server-managed: accepted from a read, not written' })),
    secret_label: Type.Optional(Type.String({ description: 'Server-managed: accepted from a read, not written' })),
  },
  { additionalProperties: true },
);

const common = {
  description: Type.Optional(Type.String({ maxLength: MAX_DESCRIPTION })),
  filter: FilterSchema,
  target: TargetInput,
  run_as_role: Type.String({ description: "Vertesia's role name: the events its role may read are sent" }),
  enabled: Type.Optional(Type.Boolean()),
  priority: Type.Optional(Type.String({ description: '"normal" only' })),
};

export const CreateBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: MAX_NAME }),
    scope: Type.Optional(Type.String({ description: '"project" only' })),
    ...common,
  },
  { additionalProperties: true },
);

export const UpdateBody = Type.Partial(
  Type.Object({ name: Type.String({ minLength: 1, maxLength: MAX_NAME }), ...common }),
  { additionalProperties: true },
);

export const SubscriptionSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.Optional(Type.String()),
  account_id: Type.String(),
  project_id: Type.String(),
  scope: Type.Literal('project'),
  filter: FilterSchema,
  target: Type.Object({
    type: Type.Literal('webhook'),
    url: Type.String(),
    has_secret: Type.Boolean(),
    signing_mode: Type.Literal('signed'),
    payload_mode: Type.Literal('event_envelope'),
  }),
  run_as_role: Type.String(),
  is_system: Type.Boolean(),
  protected: Type.Boolean(),
  enabled: Type.Boolean(),
  created_by: Type.Optional(Type.String()),
  created_at: Type.String(),
  updated_at: Type.String(),
});

export const MutationAnswer = Type.Object({
  subscription: SubscriptionSchema,
  webhook_signing_secret: Type.Optional(Type.String({ description: 'The signing secret: only in this answer' })),
});

export const ListQuery = Type.Object(
  {
    enabled: Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false')])),
    target_type: Type.Optional(Type.String({ description: 'Comma-separated; "webhook" is the only type' })),
    scope: Type.Optional(Type.String({ description: 'Comma-separated; "project" is the only scope' })),
    sort_by: Type.Optional(Type.Union(['name', 'updated_at', 'enabled'].map((s) => Type.Literal(s)))),
    sort_order: Type.Optional(Type.Union([Type.Literal('asc'), Type.Literal('desc')])),
  },
  { additionalProperties: false },
);

export const DeliverySchema = Type.Object({
  id: Type.String({ description: "The delivery's webhook-id, the same on every attempt" }),
  event_id: Type.String(),
  subscription_id: Type.Union([Type.String(), Type.Null()]),
  url: Type.String(),
  status: Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed')]),
  attempts: Type.Integer(),
  response_status: Type.Union([Type.Integer(), Type.Null()]),
  last_error: Type.Union([Type.String(), Type.Null()]),
  created_at: Type.String(),
  updated_at: Type.String(),
  delivered_at: Type.Union([Type.String(), Type.Null()]),
});

export const DeliveriesQuery = Type.Object(
  {
    subscription: Type.Optional(Type.String({ minLength: 1 })),
    event_id: Type.Optional(Type.String({ minLength: 1 })),
    status: Type.Optional(Type.Union(['pending', 'delivered', 'failed'].map((s) => Type.Literal(s)))),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
  },
  { additionalProperties: false },
);
