/**
 * Where events start: a run that ended (async runs, runs/async.ts onEnded) becomes an event; each
 * enabled subscription whose filter and role take it, and each of the run's notify_endpoints, gets
 * a delivery row and a durable job, in one transaction. An event's id is made from what it is
 * about, and a delivery is unique per event and target, so an event told twice (a crash before its
 * job ended) is delivered once.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import { newId, nowIso } from '../db/ids.ts';
import type { Scope } from '../auth/principal.ts';
import { can, type Permission } from '../auth/permissions.ts';
import type { JobQueue } from '../jobs/queue.ts';
import { matches, RUN_AS_ROLES, type EventFilter, type PlatformEvent } from './model.ts';
import { enabledSubscriptions, insertDelivery, type DeliveryRow } from './store.ts';
import { DELIVERY_JOB } from './delivery.ts';

/** A run as GET /runs/:id answers it, or undefined when it is gone. */
export type RunReader = (s: Scope, id: string) => Promise<Record<string, unknown> | undefined>;

interface Target {
  key: string;
  subscriptionId: string | null;
  url: string;
  body: string;
}

export class EventBus {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: OrreryDialect,
    private readonly queue: JobQueue,
    private readonly readRun: RunReader,
  ) {}

  /** An async run ended: `workflow` / `completed` or `failed` on its `interaction_run`, and its notify_endpoints. */
  async runEnded(s: Scope, runId: string, notifyEndpoints: readonly string[]): Promise<void> {
    const run = await this.readRun(s, runId);
    if (!run) return;
    const action = run.status === 'completed' ? 'completed' : 'failed';
    const event = eventOf(s, {
      id: `run.${action}.${runId}`,
      category: 'workflow',
      action,
      resourceType: 'interaction_run',
      resourceId: runId,
      data: { status: run.status, ...(run.error ? { error: run.error } : {}) },
    });
    const targets = await this.subscribers(s, event, 'run:read');
    const notice = JSON.stringify({
      workflowId: runId,
      runId,
      status: run.status,
      result: run.result ?? null,
      ...(run.error ? { error: run.error } : {}),
      run,
    });
    for (const url of new Set(notifyEndpoints))
      targets.push({ key: `notify:${url}`, subscriptionId: null, url, body: notice });
    await this.deliver(s, event.event_id, targets);
  }

  private async subscribers(s: Scope, event: PlatformEvent, needs: Permission): Promise<Target[]> {
    const subs = await enabledSubscriptions(this.db, s);
    return subs
      .filter((sub) => {
        const role = RUN_AS_ROLES[sub.run_as_role];
        return (
          role !== undefined && can(role, needs) && matches(this.dialect.fromJson(sub.filter) as EventFilter, event)
        );
      })
      .map((sub) => ({
        key: `sub:${sub.id}`,
        subscriptionId: sub.id,
        url: sub.url,
        body: JSON.stringify({ type: 'event', event, subscription: { id: sub.id, name: sub.name } }),
      }));
  }

  private async deliver(s: Scope, eventId: string, targets: Target[]): Promise<void> {
    if (targets.length === 0) return;
    const now = nowIso();
    await this.db.transaction().execute(async (trx) => {
      for (const t of targets) {
        const row: DeliveryRow = {
          id: newId(),
          account_id: s.account,
          project_id: s.project,
          event_id: eventId,
          target: t.key,
          subscription_id: t.subscriptionId,
          url: t.url,
          body: t.body,
          status: 'pending',
          attempts: 0,
          response_status: null,
          last_error: null,
          created_at: now,
          updated_at: now,
          delivered_at: null,
        };
        if (await insertDelivery(trx, row))
          await this.queue.enqueue({ kind: DELIVERY_JOB, scope: s, subject: row.id }, trx);
      }
    });
    this.queue.wake();
  }
}

function eventOf(
  s: Scope,
  e: {
    id: string;
    category: PlatformEvent['event_category'];
    action: string;
    resourceType: string;
    resourceId: string;
    data: Record<string, unknown>;
  },
): PlatformEvent {
  return {
    event_id: e.id,
    root_event_id: e.id,
    hop_count: 0,
    event_category: e.category,
    action: e.action,
    resource_type: e.resourceType,
    resource_id: e.resourceId,
    account_id: s.account,
    project_id: s.project,
    tenant_id: null,
    timestamp: nowIso(),
    source: 'orrery',
    resource_data: e.data,
  };
}
