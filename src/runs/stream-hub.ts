/**
 * Live streamed runs of this process. Chunks are kept while the run executes so that a late or
 * reconnecting subscriber gets them all (replay after Last-Event-ID, then live); the entry goes
 * once the run ends, after which the stream answers from the stored run.
 */
type StreamEvent = { kind: 'chunk'; seq: number; text: string } | { kind: 'close'; run: unknown };

type Listener = (e: StreamEvent) => void;

/**
 * One subscriber's failure (its connection broke mid-write, say) must not stop the run or the
 * other subscribers: the executor pushes chunks through here.
 */
function deliver(listener: Listener, e: StreamEvent): void {
  try {
    listener(e);
  } catch {
    // the subscriber's own stream ends on its own close handler
  }
}

export class LiveRun {
  readonly chunks: string[] = [];
  private readonly listeners = new Set<Listener>();
  private final: unknown;
  private done = false;

  push(text: string): void {
    if (this.done || text === '') return;
    this.chunks.push(text);
    const e: StreamEvent = { kind: 'chunk', seq: this.chunks.length, text };
    for (const l of this.listeners) deliver(l, e);
  }

  finish(run: unknown): void {
    if (this.done) return;
    this.done = true;
    this.final = run;
    for (const l of this.listeners) deliver(l, { kind: 'close', run });
    this.listeners.clear();
  }

  /** Replays chunks after `afterSeq`, then follows live (still skipping those up to `afterSeq`). */
  subscribe(afterSeq: number, listener: Listener): () => void {
    if (!Number.isSafeInteger(afterSeq) || afterSeq < 0)
      throw new RangeError(`afterSeq must be a chunk number, got ${afterSeq}`);
    for (let i = afterSeq; i < this.chunks.length; i++) listener({ kind: 'chunk', seq: i + 1, text: this.chunks[i] });
    if (this.done) {
      listener({ kind: 'close', run: this.final });
      return () => {};
    }
    const filtered: Listener = (e) => {
      if (e.kind === 'close' || e.seq > afterSeq) listener(e);
    };
    this.listeners.add(filtered);
    return () => this.listeners.delete(filtered);
  }

  get subscriberCount(): number {
    return this.listeners.size;
  }
}

export class StreamHub {
  private readonly live = new Map<string, LiveRun>();

  open(runId: string): LiveRun {
    const existing = this.live.get(runId);
    if (existing) return existing;
    const run = new LiveRun();
    this.live.set(runId, run);
    return run;
  }

  get(runId: string): LiveRun | undefined {
    return this.live.get(runId);
  }

  close(runId: string, finalRun: unknown): void {
    const run = this.live.get(runId);
    if (!run) return;
    run.finish(finalRun);
    this.live.delete(runId);
  }

  get size(): number {
    return this.live.size;
  }
}
