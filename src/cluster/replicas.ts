/**
 * This server process as a replica: an id, a heartbeat row, and the list of replicas alive. A run
 * records the replica executing it; a run whose replica stopped beating is failed by any other.
 */
import { hostname } from 'node:os';
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import { newId, nowIso } from '../db/ids.ts';

export class ReplicaRegistry {
  readonly id = newId();
  private timer: NodeJS.Timeout | undefined;
  /** Six beats per timeout: a replica is declared dead only after several missed beats. */
  private readonly heartbeatMs: number;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly timeoutMs = 30_000,
  ) {
    this.heartbeatMs = Math.max(250, Math.floor(timeoutMs / 6));
  }

  async start(): Promise<void> {
    const now = nowIso();
    await this.db.insertInto('replicas').values({ id: this.id, host: hostname(), started_at: now, heartbeat_at: now }).execute();
    this.timer = setInterval(() => void this.beat().catch(() => {}), this.heartbeatMs);
    this.timer.unref();
  }

  async beat(): Promise<void> {
    await this.db.updateTable('replicas').set({ heartbeat_at: nowIso() }).where('id', '=', this.id).execute();
  }

  /** Ids of the replicas that beat recently (this one included). */
  async alive(): Promise<Set<string>> {
    const since = new Date(Date.now() - this.timeoutMs).toISOString();
    const rows = await this.db.selectFrom('replicas').select('id').where('heartbeat_at', '>=', since).execute();
    return new Set([this.id, ...rows.map((r) => r.id)]);
  }

  /** Forgets replicas dead for a long time, so the table stays small. */
  async prune(): Promise<void> {
    const before = new Date(Date.now() - 24 * 3600_000).toISOString();
    await this.db.deleteFrom('replicas').where('heartbeat_at', '<', before).execute();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.db.deleteFrom('replicas').where('id', '=', this.id).execute().catch(() => {});
  }
}
