/**
 * Signals between replicas. On PostgreSQL: LISTEN/NOTIFY on one channel, sent inside the writer's
 * transaction so a signal is delivered exactly when the data it announces is committed. On SQLite
 * (one process): an in-process emitter. Feature code only sees `Notifier`.
 */
import { EventEmitter } from 'node:events';
import type pg from 'pg';
import { sql, type Kysely } from 'kysely';
import type { OpenedDatabase } from './open.ts';
import { loadPg } from './pg.ts';

export const RUN_CHANNEL = 'orrery_runs';

export interface Notifier {
  /** Sends `payload` on `channel`; with `trx`, when that transaction commits. */
  publish(channel: string, payload: string, trx?: Kysely<any>): Promise<void>;
  subscribe(channel: string, listener: (payload: string) => void): () => void;
  /** True when other processes can hear what this one publishes. */
  readonly crossProcess: boolean;
  close(): Promise<void>;
}

class LocalNotifier implements Notifier {
  readonly crossProcess = false;
  private readonly emitter = new EventEmitter().setMaxListeners(0);

  async publish(channel: string, payload: string, trx?: Kysely<any>): Promise<void> {
    // Inside a transaction the signal must follow the commit: defer to after this turn.
    if (trx) setImmediate(() => this.emitter.emit(channel, payload));
    else this.emitter.emit(channel, payload);
  }

  subscribe(channel: string, listener: (payload: string) => void): () => void {
    this.emitter.on(channel, listener);
    return () => this.emitter.off(channel, listener);
  }

  async close(): Promise<void> {
    this.emitter.removeAllListeners();
  }
}

class PostgresNotifier implements Notifier {
  readonly crossProcess = true;
  private readonly emitter = new EventEmitter().setMaxListeners(0);
  private client: pg.Client | undefined;
  private readonly channels = new Set<string>();
  private closed = false;
  private connecting: Promise<void> | undefined;

  constructor(
    private readonly url: string,
    private readonly db: Kysely<any>,
  ) {}

  async publish(channel: string, payload: string, trx?: Kysely<any>): Promise<void> {
    await sql`SELECT pg_notify(${channel}, ${payload})`.execute(trx ?? this.db);
  }

  subscribe(channel: string, listener: (payload: string) => void): () => void {
    this.emitter.on(channel, listener);
    if (!this.channels.has(channel)) {
      this.channels.add(channel);
      void this.connect()
        .then(async () => this.client?.query(`LISTEN ${(await loadPg()).escapeIdentifier(channel)}`))
        .catch(() => {});
    }
    return () => this.emitter.off(channel, listener);
  }

  /** A dedicated connection for LISTEN, re-established after a failure. */
  private connect(): Promise<void> {
    if (this.client || this.closed) return Promise.resolve();
    this.connecting ??= (async () => {
      const pg = await loadPg();
      const client = new pg.Client({ connectionString: this.url });
      client.on('notification', (n) => this.emitter.emit(n.channel, n.payload ?? ''));
      client.on('error', () => {
        this.client = undefined;
        client.end().catch(() => {});
        if (!this.closed)
          setTimeout(
            () =>
              void this.connect()
                .then(() => this.relisten())
                .catch(() => {}),
            1000,
          ).unref();
      });
      await client.connect();
      this.client = client;
      await this.relisten();
    })().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  private async relisten(): Promise<void> {
    const pg = await loadPg();
    for (const c of this.channels) await this.client?.query(`LISTEN ${pg.escapeIdentifier(c)}`);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.emitter.removeAllListeners();
    await this.client?.end().catch(() => {});
  }
}

export function openNotifier(opened: OpenedDatabase, databaseUrl?: string): Notifier {
  return opened.dialect.caps.notify && databaseUrl ? new PostgresNotifier(databaseUrl, opened.db) : new LocalNotifier();
}
