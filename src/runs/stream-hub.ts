/**
 * Live streamed runs of this process. Chunks are kept while the run executes so that a late or
 * reconnecting subscriber gets them all (replay after Last-Event-ID, then live); the entry goes
 * once the run ends, after which the stream answers from the stored run.
 */
import type { ThinkingPart } from '../providers/driver.ts';

type StreamEvent = { kind: 'chunk'; seq: number; text: string } | { kind: 'close'; run: unknown };

type Listener = (e: StreamEvent) => void;
type ThinkingListener = (block: ThinkingPart) => void;

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
  /** Signed reasoning blocks, for the doors that relay them (Anthropic's); they precede every chunk. */
  readonly thinkingBlocks: ThinkingPart[] = [];
  private readonly listeners = new Set<Listener>();
  private readonly thinkingListeners = new Set<ThinkingListener>();
  private final: unknown;
  private done = false;

  push(text: string): void {
    if (this.done || text === '') return;
    this.chunks.push(text);
    const e: StreamEvent = { kind: 'chunk', seq: this.chunks.length, text };
    for (const l of this.listeners) deliver(l, e);
  }

  thinking(block: ThinkingPart): void {
    if (this.done) return;
    this.thinkingBlocks.push(block);
    for (const l of this.thinkingListeners) {
      try {
        l(block);
      } catch {
        // as deliver(): one subscriber's failure stops only its own stream
      }
    }
  }

  finish(run: unknown): void {
    if (this.done) return;
    this.done = true;
    this.final = run;
    for (const l of this.listeners) deliver(l, { kind: 'close', run });
    this.listeners.clear();
    this.thinkingListeners.clear();
  }

  /**
   * Reasoning blocks so far, then live. Kept apart from the chunks so that a stream of text
   * (GET /runs/:id/stream, the OpenAI doors) is unchanged; subscribe before `subscribe()`.
   */
  subscribeThinking(listener: ThinkingListener): () => void {
    for (const b of this.thinkingBlocks) listener(b);
    if (this.done) return () => {};
    this.thinkingListeners.add(listener);
    return () => this.thinkingListeners.delete(listener);
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
