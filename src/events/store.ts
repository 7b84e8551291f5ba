/**
 * SQL of webhook subscriptions and deliveries (0035). Every query is scoped by account and
 * project, except the delivery worker's read of a delivery by its id (its job names it).
 */
import type { Kysely, Selectable } from 'kysely';
import type { Database, EventDeliveryTable, EventSubscriptionTable } from '../db/schema.ts';
import type { Scope } from '../auth/principal.ts';
import { nowIso } from '../db/ids.ts';
import { deleteProjectRows, type ProjectScope } from '../db/project-rows.ts';

type Db = Kysely<Database>;
export type SubscriptionRow = Selectable<EventSubscriptionTable>;
export type DeliveryRow = Selectable<EventDeliveryTable>;

const subscriptionsIn = (db: Db, s: Scope) =>
  db.selectFrom('event_subscriptions').where('account_id', '=', s.account).where('project_id', '=', s.project);

export const insertSubscription = (db: Db, row: SubscriptionRow) =>
  db.insertInto('event_subscriptions').values(row).execute();

export const getSubscription = (db: Db, s: Scope, id: string): Promise<SubscriptionRow | undefined> =>
  subscriptionsIn(db, s).selectAll().where('id', '=', id).executeTakeFirst();

export function listSubscriptions(
  db: Db,
  s: Scope,
  q: { enabled?: boolean; sortBy: 'name' | 'updated_at' | 'enabled'; order: 'asc' | 'desc' },
): Promise<SubscriptionRow[]> {
  let query = subscriptionsIn(db, s).selectAll();
  if (q.enabled !== undefined) query = query.where('enabled', '=', q.enabled ? 1 : 0);
  return query.orderBy(q.sortBy, q.order).orderBy('id', q.order).limit(1000).execute();
}

/** Enabled subscriptions of a project: the candidates for its events. */
export const enabledSubscriptions = (db: Db, s: Scope): Promise<SubscriptionRow[]> =>
  subscriptionsIn(db, s).selectAll().where('enabled', '=', 1).execute();

export async function updateSubscription(
  db: Db,
  s: Scope,
  id: string,
  set: Partial<Omit<SubscriptionRow, 'id' | 'account_id' | 'project_id'>>,
): Promise<boolean> {
  const r = await db
    .updateTable('event_subscriptions')
    .set({ ...set, updated_at: nowIso() })
    .where('id', '=', id)
    .where('account_id', '=', s.account)
    .where('project_id', '=', s.project)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

export async function deleteSubscription(db: Db, s: Scope, id: string): Promise<number> {
  const r = await db
    .deleteFrom('event_subscriptions')
    .where('id', '=', id)
    .where('account_id', '=', s.account)
    .where('project_id', '=', s.project)
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}

/** A delivery, unless one of the same event and target exists: answers whether it was new. */
export async function insertDelivery(db: Db, row: DeliveryRow): Promise<boolean> {
  const r = await db
    .insertInto('event_deliveries')
    .values(row)
    .onConflict((oc) => oc.columns(['event_id', 'target']).doNothing())
    .executeTakeFirst();
  return Number(r.numInsertedOrUpdatedRows ?? 0) === 1;
}

export const getDelivery = (db: Db, id: string): Promise<DeliveryRow | undefined> =>
  db.selectFrom('event_deliveries').selectAll().where('id', '=', id).executeTakeFirst();

export async function recordAttempt(
  db: Db,
  id: string,
  set: Pick<DeliveryRow, 'status' | 'attempts' | 'response_status' | 'last_error'> & { delivered_at?: string },
): Promise<void> {
  await db
    .updateTable('event_deliveries')
    .set({ ...set, updated_at: nowIso() })
    .where('id', '=', id)
    .execute();
}

export function listDeliveries(
  db: Db,
  s: Scope,
  q: { subscription?: string; status?: DeliveryRow['status']; eventId?: string; limit: number },
): Promise<DeliveryRow[]> {
  let query = db
    .selectFrom('event_deliveries')
    .selectAll()
    .where('account_id', '=', s.account)
    .where('project_id', '=', s.project);
  if (q.subscription) query = query.where('subscription_id', '=', q.subscription);
  if (q.status) query = query.where('status', '=', q.status);
  if (q.eventId) query = query.where('event_id', '=', q.eventId);
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(q.limit).execute();
}

/** A project's subscriptions and deliveries, inside its deletion. */
export const deleteProjectEvents = (db: Db, s: ProjectScope) =>
  deleteProjectRows(db, ['event_deliveries', 'event_subscriptions'], s);
