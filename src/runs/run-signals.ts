/**
 * What followers on other replicas are told of a run executing here (runs/run-mirrors.ts): each
 * chunk, stored then signalled once committed, and its end. A single process (SQLite) tells nobody.
 */
import { RUN_CHANNEL, type Notifier } from '../db/notify.ts';
import type { RunSignal } from './run-mirrors.ts';
import type { RunWrites } from './run-writer.ts';
import * as store from './store.ts';

export class RunSignals {
  constructor(
    private readonly writer: RunWrites,
    private readonly notifier: Notifier,
  ) {}

  /** True when other processes can follow a run that this one executes. */
  get crossProcess(): boolean {
    return this.notifier.crossProcess;
  }

  /** A chunk for followers on other replicas: stored, then signalled when committed. */
  chunk(runId: string, seq: number, text: string): void {
    if (!this.notifier.crossProcess) return;
    void this.writer
      .run(async (trx) => {
        await store.insertChunk(trx, runId, seq, text);
        await this.notifier.publish(RUN_CHANNEL, JSON.stringify({ r: runId, s: seq } satisfies RunSignal), trx);
        return true;
      })
      .catch(() => {
        // A follower that misses a chunk still gets the run's whole result when it ends.
      });
  }

  /** Tells followers that the run ended, in the transaction that stores its end. */
  ended(runId: string, trx: store.Db): Promise<void> {
    return this.notifier.publish(RUN_CHANNEL, JSON.stringify({ r: runId, d: 1 } satisfies RunSignal), trx);
  }
}
