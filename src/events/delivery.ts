/**
 * Webhook deliveries, each a job of its own queue (src/jobs): durable, retried with backoff,
 * taken over after a crash. One attempt POSTs the delivery's body, signed (signing.ts) with the
 * subscription's secret or the project's notify secret, through the server's Outbound (the
 * egress policy applies at connect time). A 2xx answer delivers it; anything else is tried again
 * until ORRERY_WEBHOOK_ATTEMPTS, then the delivery is recorded failed. Every attempt is recorded.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import type { Scope } from '../auth/principal.ts';
import { decrypt } from '../auth/secret.ts';
import { nowIso } from '../db/ids.ts';
import type { JobQueue } from '../jobs/queue.ts';
import { PermanentJobError, type Job } from '../jobs/model.ts';
import type { Outbound } from '../providers/outbound.ts';
import { egressRefusal } from '../providers/provider-http.ts';
import { boundErrorMessage } from '../util/error-message.ts';
import { projectNotifySecret, signatureHeaders } from './signing.ts';
import { getDelivery, getSubscription, recordAttempt, type DeliveryRow } from './store.ts';

export const DELIVERY_JOB = 'webhook-delivery';

export interface DeliveryDeps {
  db: Kysely<Database>;
  queue: JobQueue;
  outbound: Outbound;
  /** The server's encryption key: subscription secrets, and the projects' notify secrets. */
  key: Buffer;
  timeoutMs: number;
}

export class DeliveryWorker {
  constructor(private readonly deps: DeliveryDeps) {
    deps.queue.register(DELIVERY_JOB, {
      run: (job) => this.attempt(job),
      giveUp: (job, err) => this.giveUp(job, err),
    });
  }

  private async attempt(job: Job): Promise<void> {
    const { db } = this.deps;
    const d = await getDelivery(db, job.subject);
    // Gone with its project, or settled before a crash took its job's end.
    if (!d || d.status !== 'pending') return;
    const secret = await this.secretOf(job.scope, d);
    const attempts = Number(d.attempts) + 1;
    if (secret === undefined) {
      await recordAttempt(db, d.id, {
        status: 'failed',
        attempts: Number(d.attempts),
        response_status: null,
        last_error: 'its subscription was deleted before the event was delivered',
      });
      return;
    }
    let status: number;
    try {
      status = await this.post(d, secret);
    } catch (err) {
      const refused = egressRefusal(err);
      const message = boundErrorMessage(refused?.message ?? describe(err));
      await recordAttempt(db, d.id, { status: 'pending', attempts, response_status: null, last_error: message });
      if (refused) throw new PermanentJobError(message, { cause: err });
      throw new Error(message, { cause: err });
    }
    if (status >= 200 && status < 300) {
      await recordAttempt(db, d.id, {
        status: 'delivered',
        attempts,
        response_status: status,
        last_error: null,
        delivered_at: nowIso(),
      });
      return;
    }
    const message = `the endpoint answered ${status}`;
    await recordAttempt(db, d.id, { status: 'pending', attempts, response_status: status, last_error: message });
    throw new Error(message);
  }

  private async giveUp(job: Job, err: unknown): Promise<void> {
    const d = await getDelivery(this.deps.db, job.subject);
    if (!d || d.status !== 'pending') return;
    await recordAttempt(this.deps.db, d.id, {
      status: 'failed',
      attempts: Number(d.attempts),
      response_status: d.response_status,
      last_error: boundErrorMessage(`given up: ${err instanceof Error ? err.message : String(err)}`),
    });
  }

  private async secretOf(s: Scope, d: DeliveryRow): Promise<string | undefined> {
    if (!d.subscription_id) return projectNotifySecret(this.deps.key, d.project_id);
    const sub = await getSubscription(this.deps.db, s, d.subscription_id);
    return sub ? decrypt(this.deps.key, sub.secret) : undefined;
  }

  /** One POST; answers its status (the answer's body is read and dropped). */
  private async post(d: DeliveryRow, secret: string): Promise<number> {
    const url = new URL(d.url);
    const res = await this.deps.outbound.agent.request({
      origin: url.origin,
      path: url.pathname + url.search,
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'user-agent': 'Orrery-Webhooks',
        ...signatureHeaders(secret, d.id, d.body),
      },
      body: d.body,
      headersTimeout: this.deps.timeoutMs,
      bodyTimeout: this.deps.timeoutMs,
    });
    await res.body.dump();
    return res.statusCode;
  }
}

function describe(err: unknown): string {
  const e = err as { message?: string; code?: string; cause?: { code?: string; message?: string } };
  const cause = e?.cause?.code ?? e?.code;
  return `the request failed: ${e?.message ?? String(err)}${cause && !e?.message?.includes(cause) ? ` (${cause})` : ''}`;
}
