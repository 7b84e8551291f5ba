/**
 * Following a streamed run that another replica executes (chunks of ended runs are kept a while
 * for late followers, then swept). The executor stores each chunk in
 * `run_chunks` and signals it (LISTEN/NOTIFY, sent when the chunk is committed); here a local
 * mirror of the run replays the stored chunks and then the signalled ones, in order, to every
 * subscriber of this replica, and closes with the final run. A slow poll covers a lost signal and
 * an executor that died (its run is failed by the sweeper, which also signals).
 */
import { LiveRun } from './stream-hub.ts';
import { RUN_CHANNEL, type Notifier } from '../db/notify.ts';

export interface RunSignal {
  /** Run id. */
  r: string;
  /** Sequence number of a chunk just committed. */
  s?: number;
  /** The run ended. */
  d?: 1;
}

export interface MirrorSource {
  chunksAfter(runId: string, seq: number): Promise<Array<{ seq: number; text: string }>>;
  /** The final run when it has ended, else undefined. */
  finalRun(runId: string): Promise<unknown>;
}

const POLL_MS = 2_000;

interface Mirror {
  live: LiveRun;
  seq: number;
  work: Promise<void>;
  timer: NodeJS.Timeout;
  source: MirrorSource;
}

export class RunMirrors {
  private readonly mirrors = new Map<string, Mirror>();
  private unsubscribe: (() => void) | undefined;

  constructor(private readonly notifier: Notifier) {}

  /** Starts listening (once) for run signals. */
  start(): void {
    this.unsubscribe ??= this.notifier.subscribe(RUN_CHANNEL, (payload) => {
      let signal: RunSignal;
      try {
        signal = JSON.parse(payload) as RunSignal;
      } catch {
        return;
      }
      const mirror = this.mirrors.get(signal.r);
      if (mirror) this.sync(signal.r, mirror);
    });
  }

  follow(runId: string, source: MirrorSource): LiveRun {
    const existing = this.mirrors.get(runId);
    if (existing) return existing.live;
    const mirror: Mirror = {
      live: new LiveRun(),
      seq: 0,
      work: Promise.resolve(),
      source,
      timer: setInterval(() => this.sync(runId, mirror), POLL_MS),
    };
    mirror.timer.unref();
    this.mirrors.set(runId, mirror);
    this.sync(runId, mirror);
    return mirror.live;
  }

  get size(): number {
    return this.mirrors.size;
  }

  close(): void {
    this.unsubscribe?.();
    for (const [id, m] of this.mirrors) this.end(id, m, undefined);
  }

  /** Catches up on stored chunks, then closes the mirror if the run has ended; one pass at a time. */
  private sync(runId: string, mirror: Mirror): void {
    mirror.work = mirror.work.then(async () => {
      if (!this.mirrors.has(runId)) return;
      try {
        // The end is committed after every chunk: read it first, then the chunks, and none is missed.
        const final = await mirror.source.finalRun(runId);
        for (const c of await mirror.source.chunksAfter(runId, mirror.seq)) {
          if (c.seq !== mirror.seq + 1) break; // a gap: the missing chunk is not committed yet
          mirror.live.push(c.text);
          mirror.seq = c.seq;
        }
        if (final !== undefined) this.end(runId, mirror, final);
      } catch {
        /* the next signal or poll tries again */
      }
    });
  }

  private end(runId: string, mirror: Mirror, final: unknown): void {
    clearInterval(mirror.timer);
    this.mirrors.delete(runId);
    mirror.live.finish(final);
  }
}
