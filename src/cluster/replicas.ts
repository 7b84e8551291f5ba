/**
 * This server process as a replica: an id, a heartbeat row, and the list of replicas alive. A run
 * records the replica executing it; a run whose replica stopped beating is failed by any other.
 */
import { readlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import { newId, nowIso } from '../db/ids.ts';

/**
 * This process as `<pid namespace>/<pid>`: a pid means the same process only within one pid
 * namespace (containers on one host, or sharing its name, each have their own). Undefined off Linux.
 */
const THIS_PROCESS: string | null = (() => {
  try {
    return `${readlinkSync('/proc/self/ns/pid')}/${process.pid}`;
  } catch {
    return null;
  }
})();

/**
 * Whether the process of a replica row of this host is known to have ended: same pid namespace,
 * and its pid is gone or is this process's own (a container restarted with the same pid).
 */
function processGone(recorded: string | null): boolean {
  if (recorded === null || THIS_PROCESS === null) return false;
  const cut = recorded.lastIndexOf('/');
  if (recorded.slice(0, cut) !== THIS_PROCESS.slice(0, THIS_PROCESS.lastIndexOf('/'))) return false;
  const pid = Number(recorded.slice(cut + 1));
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return false;
  } catch (err) {
    // EPERM: the process exists under another user.
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

export class ReplicaRegistry {
  readonly id = newId();
  private timer: NodeJS.Timeout | undefined;
  /** Six beats per timeout: a replica is declared dead only after several missed beats. */
  readonly heartbeatMs: number;
  /**
   * How long without a beat makes a replica dead: two beats short of the timeout, so that a sweep
   * every beat fails its runs (and closes their followers) within ORRERY_REPLICA_TIMEOUT.
   */
  readonly deadAfterMs: number;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly timeoutMs = 30_000,
  ) {
    this.heartbeatMs = Math.max(250, Math.floor(timeoutMs / 6));
    this.deadAfterMs = Math.max(this.heartbeatMs * 2, timeoutMs - 2 * this.heartbeatMs);
  }

  async start(): Promise<void> {
    const now = nowIso();
    await this.db
      .insertInto('replicas')
      .values({ id: this.id, host: hostname(), process: THIS_PROCESS, started_at: now, heartbeat_at: now })
      .execute();
    this.timer = setInterval(() => void this.beat().catch(() => {}), this.heartbeatMs);
    this.timer.unref();
  }

  async beat(): Promise<void> {
    await this.db.updateTable('replicas').set({ heartbeat_at: nowIso() }).where('id', '=', this.id).execute();
  }

  /**
   * Ids of the replicas that beat recently (this one included), less those of this host whose
   * process is gone: a restarted single node need not wait out the timeout to know its previous
   * process died.
   */
  async alive(): Promise<Set<string>> {
    const since = new Date(Date.now() - this.deadAfterMs).toISOString();
    const rows = await this.db
      .selectFrom('replicas')
      .select(['id', 'host', 'process'])
      .where('heartbeat_at', '>=', since)
      .execute();
    const host = hostname();
    return new Set([this.id, ...rows.filter((r) => r.host !== host || !processGone(r.process)).map((r) => r.id)]);
  }

  /** Forgets replicas dead for a long time, so the table stays small. */
  async prune(): Promise<void> {
    const before = new Date(Date.now() - 24 * 3600_000).toISOString();
    await this.db.deleteFrom('replicas').where('heartbeat_at', '<', before).execute();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.db
      .deleteFrom('replicas')
      .where('id', '=', this.id)
      .execute()
      .catch(() => {});
  }
}
