/**
 * Content processing: the object service's processing hook and the handlers of the `content` and
 * `rendition` jobs.
 *
 * When an object's content is set or changes, a `content` job is queued (jobs/queue.ts: durable,
 * bounded, retried). The job marks the object `processing`, reads the bytes (at most
 * ORRERY_CONTENT_MAX_INPUT), sniffs their type and runs the steps (steps.ts) in order, each with
 * its own deadline. The results are written in one update, and only if the object still has the
 * content that was read (a newer job handles newer content): `ready`, or `failed` with
 * `error: {code, message, step}` and whatever the earlier steps produced; the object itself is
 * never touched otherwise. A file's faults (ContentError) are verdicts; other errors (database,
 * storage) are retried by the queue, and only when retries run out is the object failed with
 * `internal`.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import type { Scope } from '../auth/principal.ts';
import type { BlobService } from '../blobs/blob-service.ts';
import { BlobMissing } from '../blobs/blob-store.ts';
import type { ContentChange, ObjectProcessingHook } from '../objects/processing-hook.ts';
import type { ContentSource } from '../objects/model.ts';
import type { JobQueue } from '../jobs/queue.ts';
import { JobReleased, type Job } from '../jobs/model.ts';
import { ContentError, isContentError } from './errors.ts';
import type { ContentLimits } from './limits.ts';
import { sniff } from './sniff.ts';
import type { WorkerPool } from './worker/pool.ts';
import { DEFAULT_STEPS, type PipelineStep, type ProcessingResult, type StepContext } from './steps.ts';
import { canRender, RenditionMaker, renditionPrefix, type RenditionFormat } from './rendition-maker.ts';
import { contentKey, loadObject, orphanedObjects, writeResults } from '../objects/processing-results.ts';
import { deleteStaleRenditions } from './store.ts';

const CONTENT_JOB = 'content';
const RENDITION_JOB = 'rendition';

/** Payload of a `rendition` job: one rendition asked for with generate_if_missing. */
export interface RenditionJob {
  name: string;
  format: RenditionFormat;
  maxHw: number;
}

export interface ContentPipelineDeps {
  db: Kysely<Database>;
  dialect: OrreryDialect;
  blobs: BlobService;
  queue: JobQueue;
  pool: WorkerPool;
  limits: ContentLimits;
  /** The steps in order (default: text, metadata, renditions, tokens). */
  steps?: readonly PipelineStep[];
  onError?: (err: unknown, what: string) => void;
}

interface Failure {
  code: string;
  message: string;
  step: string;
}

/** Marks an unexpected error with the step it happened in, for the `internal` failure after the last retry. */
const inStep = (err: unknown, step: string) => {
  if (err && typeof err === 'object' && !('step' in err)) Object.assign(err, { step });
  return err;
};

export class ContentPipeline implements ObjectProcessingHook {
  readonly steps: readonly PipelineStep[];
  readonly renditions: RenditionMaker;
  private sweeper: NodeJS.Timeout | undefined;
  private firstSweep: NodeJS.Timeout | undefined;

  constructor(private readonly deps: ContentPipelineDeps) {
    this.steps = deps.steps ?? DEFAULT_STEPS;
    this.renditions = new RenditionMaker(deps.db, deps.blobs, deps.pool, deps.limits);
    deps.queue.register<{ reason?: string }>(CONTENT_JOB, {
      run: (job, signal) => this.process(job, signal),
      giveUp: (job, err) => this.giveUp(job, err),
    });
    deps.queue.register<RenditionJob>(RENDITION_JOB, {
      run: (job, signal) => this.renderOnDemand(job, signal),
      giveUp: async (job, err) => {
        const obj = await loadObject(this.deps.db, this.deps.dialect, job.scope, job.subject.split('/')[0]);
        const etag = (obj?.content as ContentSource | null)?.etag;
        if (obj && etag)
          await this.renditions.recordFailure(
            job.scope,
            obj.id,
            etag,
            { name: job.payload.name, format: job.payload.format, maxHw: job.payload.maxHw },
            (err as Error).message,
          );
      },
    });
  }

  // ---- the object service's hook ----

  async contentChanged(s: Scope, change: ContentChange): Promise<void> {
    await this.deps.queue.enqueue({
      kind: CONTENT_JOB,
      scope: s,
      subject: change.objectId,
      payload: { reason: change.reason },
    });
  }

  async objectDeleted(s: Scope, objectId: string): Promise<void> {
    // The rows went with the object (foreign key); the bytes go now.
    await this.deps.blobs.deleteDerived(s, { prefix: renditionPrefix(objectId) });
  }

  /** Asks for one rendition to be made (GET …/renditions/:format with generate_if_missing). */
  async requestRendition(s: Scope, objectId: string, spec: RenditionJob): Promise<void> {
    await this.deps.queue.enqueue({
      kind: RENDITION_JOB,
      scope: s,
      subject: `${objectId}/${spec.name}`,
      payload: spec,
    });
  }

  /**
   * Queues the objects whose processing was lost (left `created`/`processing` with no job for a
   * minute: a crash between the write and the enqueue). Runs now and then every `everyMs`.
   */
  startRecovery(everyMs = 60_000, graceMs = 60_000): void {
    const run = () => void this.recover(graceMs).catch((err) => this.deps.onError?.(err, 'recover lost processing'));
    this.sweeper = setInterval(run, everyMs);
    this.sweeper.unref();
    this.firstSweep = setTimeout(run, Math.min(5000, everyMs));
    this.firstSweep.unref();
  }

  stopRecovery(): void {
    clearInterval(this.sweeper);
    clearTimeout(this.firstSweep);
  }

  async recover(graceMs = 60_000): Promise<number> {
    const lost = await orphanedObjects(this.deps.db, new Date(Date.now() - graceMs).toISOString(), 100);
    for (const o of lost)
      await this.deps.queue.enqueue({
        kind: CONTENT_JOB,
        scope: o.scope,
        subject: o.id,
        payload: { reason: 'recovered' },
      });
    return lost.length;
  }

  // ---- jobs ----

  private async process(job: Job<{ reason?: string }>, signal: AbortSignal): Promise<void> {
    const { db, dialect } = this.deps;
    const s = job.scope;
    const id = job.subject;
    const obj = await loadObject(db, dialect, s, id);
    if (!obj) return; // deleted meanwhile
    const content = obj.content as ContentSource | null;
    const expected = contentKey(obj);
    if (!content?.source) {
      // The content was removed: so are the renditions made from it.
      await this.dropRenditions(s, id, null);
      return;
    }
    const started = await writeResults(db, dialect, s, id, expected, {
      status: 'processing',
      error: null,
      text: null,
      text_etag: null,
      tokens: null,
    });
    if (!started) return;

    const result: ProcessingResult = { facts: {} };
    let failure: Failure | null = null;
    let step = 'read';
    try {
      const bytes = await this.readContent(s, content.source);
      const sniffed = await sniff(bytes, content.type, content.name);
      const etag = content.etag ?? (obj.content as ContentSource).etag ?? '';
      for (const current of this.steps) {
        step = current.name;
        signal.throwIfAborted();
        await this.runStep(current, {
          scope: s,
          objectId: id,
          object: obj,
          content: { ...content, source: content.source, etag },
          bytes,
          sniffed,
          limits: this.deps.limits,
          pool: this.deps.pool,
          renditions: this.renditions,
          signal,
          result,
        });
      }
    } catch (err) {
      if (signal.aborted || err instanceof JobReleased) throw new JobReleased();
      if (!isContentError(err)) throw inStep(err, step);
      failure = { code: err.code, message: err.message, step };
    }

    const computed = result.metadata ?? {};
    const metadata = { ...withoutComputed(obj.metadata as Record<string, unknown> | null), ...computed };
    const written = await writeResults(db, dialect, s, id, expected, {
      status: failure ? 'failed' : 'ready',
      error: failure,
      ...(result.text !== undefined ? { text: result.text, text_etag: result.textEtag ?? null } : {}),
      ...(result.tokens ? { tokens: result.tokens } : {}),
      ...(result.metadata ? { metadata } : {}),
    });
    if (written && !failure && content.etag) await this.dropRenditions(s, id, content.etag);
  }

  /**
   * Runs one step. Its heavy work runs under the step timeout where it happens: each task of a
   * content worker process (the pool kills the process past it, not counting the process's
   * start), and each phase of drawing renditions (worker/draw.ts: the page, the fit, each encoding).
   */
  private async runStep(step: PipelineStep, ctx: StepContext): Promise<void> {
    await step.run(ctx);
  }

  /** The last retry failed for a reason that is not the file's: the object fails, intact. */
  private async giveUp(job: Job, err: unknown): Promise<void> {
    const obj = await loadObject(this.deps.db, this.deps.dialect, job.scope, job.subject);
    if (!obj) return;
    const step = (err as { step?: string } | null)?.step ?? 'read';
    await writeResults(this.deps.db, this.deps.dialect, job.scope, job.subject, contentKey(obj), {
      status: 'failed',
      error: {
        code: 'internal',
        message: `processing failed ${job.attempt} times: ${(err as Error)?.message ?? String(err)}`,
        step,
      },
    });
  }

  private async renderOnDemand(job: Job<RenditionJob>, signal: AbortSignal): Promise<void> {
    const s = job.scope;
    const objectId = job.subject.split('/')[0];
    const obj = await loadObject(this.deps.db, this.deps.dialect, s, objectId);
    const content = obj?.content as ContentSource | null | undefined;
    if (!obj || !content?.source || !content.etag) return;
    const spec = { name: job.payload.name, format: job.payload.format, maxHw: job.payload.maxHw };
    try {
      const bytes = await this.readContent(s, content.source);
      const sniffed = await sniff(bytes, content.type, content.name);
      if (!canRender(sniffed.family, sniffed.mime))
        throw new ContentError('unsupported_file', `no image rendition can be made from ${sniffed.mime}`);
      await this.renditions.make(s, objectId, content.etag, sniffed.family, sniffed.mime, bytes, [spec], signal);
    } catch (err) {
      if (signal.aborted || err instanceof JobReleased) throw new JobReleased();
      if (!isContentError(err)) throw err;
      await this.renditions.recordFailure(s, objectId, content.etag, spec, `${err.code}: ${err.message}`);
    }
  }

  /** The content's bytes, refused past ORRERY_CONTENT_MAX_INPUT. */
  private async readContent(s: Scope, source: string): Promise<Uint8Array> {
    let key: string;
    try {
      key = this.deps.blobs.keyOf(s, source, 'content.source');
    } catch {
      throw new ContentError(
        'content_missing',
        `content.source ${JSON.stringify(source)} does not name a file of this project`,
      );
    }
    const max = this.deps.limits.maxInputBytes;
    let stream;
    try {
      stream = await this.deps.blobs.read(s, key);
    } catch (err) {
      if (err instanceof BlobMissing) throw new ContentError('content_missing', `the file ${source} is not in storage`);
      throw err;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > max) {
        stream.destroy();
        throw new ContentError(
          'size_limit',
          `the file is larger than the ${max} bytes content processing reads (ORRERY_CONTENT_MAX_INPUT)`,
        );
      }
      chunks.push(chunk);
    }
    return Buffer.concat(chunks, size);
  }

  private async dropRenditions(s: Scope, objectId: string, keepSourceEtag: string | null): Promise<void> {
    const keys = await deleteStaleRenditions(this.deps.db, s, objectId, keepSourceEtag);
    if (keys.length) await this.deps.blobs.deleteDerived(s, { keys });
  }
}

/** Metadata keys processing computes: replaced on every run, the caller's other keys kept. */
const COMPUTED_KEYS = [
  'type',
  'size',
  'etag',
  'mime_type',
  'languages',
  'page_count',
  'dimensions',
  'duration',
  'renditions',
];

function withoutComputed(metadata: Record<string, unknown> | null): Record<string, unknown> {
  const out = { ...(metadata ?? {}) };
  for (const k of COMPUTED_KEYS) delete out[k];
  return out;
}
