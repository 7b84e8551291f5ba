/**
 * The content feature: worker processes for parsing and drawing, the processing pipeline and its
 * steps on the durable job queue, renditions, and their routes.
 */
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { Config } from '../config.ts';
import type { OpenedDatabase } from '../db/open.ts';
import type { JobQueue } from '../jobs/queue.ts';
import type { BlobService } from '../blobs/blob-service.ts';
import { WorkerPool } from './worker/pool.ts';
import type { Converted, ConvertSpec } from './worker/protocol.ts';
import { ContentPipeline } from './pipeline.ts';
import { RenditionService } from './renditions.ts';
import { DEFAULT_STEPS, type PipelineStep } from './steps.ts';
import { contentRoutes } from './routes.ts';
import { deleteProjectRenditions } from './store.ts';

export interface ContentDeps {
  config: Config;
  database: OpenedDatabase;
  blobs: BlobService;
  queue: JobQueue;
  /** Steps after the default ones (the embeddings step). */
  steps: PipelineStep[];
  log: FastifyBaseLogger;
}

export function createContent({ config, database, blobs, queue, steps, log }: ContentDeps) {
  const { db, dialect } = database;
  const pool = new WorkerPool({ size: config.contentWorkers, memoryMb: config.contentWorkerMemoryMb });
  const content = new ContentPipeline({
    db,
    dialect,
    blobs,
    queue,
    pool,
    steps: [...DEFAULT_STEPS, ...steps],
    limits: {
      maxPages: config.contentMaxPages,
      maxDecompressedBytes: config.contentMaxDecompressedBytes,
      maxImagePixels: config.contentMaxPixels,
      maxInputBytes: config.contentMaxInputBytes,
      stepTimeoutMs: config.contentStepTimeoutMs,
      workerMemoryMb: config.contentWorkerMemoryMb,
    },
    onError: (err, what) => log.error({ err }, `content: could not ${what}`),
  });
  const renditions = new RenditionService({ db, dialect, blobs, pipeline: content, waitMs: config.renditionWaitMs });
  return {
    content,
    renditions,
    /**
     * Tokens of a text (o200k_base), counted in a content worker process: the tokenizer's tables
     * (about 70 MB) stay out of the server, and a long text does not hold its event loop.
     */
    countTokens: (text: string): Promise<number> =>
      pool.run<number>({ op: 'countTokens', text }, config.contentStepTimeoutMs),
    /**
     * An image input of a run converted for its provider (JPEG q85, fitted to `spec`), in a content
     * worker process: libvips never runs on the server's event loop, and a hostile image can only
     * end its process. A refusal is a ContentError (`pixel_limit`, `corrupt_file`, `unsupported_file`).
     */
    convertImage: (bytes: Uint8Array, spec: ConvertSpec): Promise<Converted> =>
      pool.run<Converted>({ op: 'convertImage', bytes, spec }, config.contentStepTimeoutMs),
    /** Deletes its rows of a project, inside the project's deletion (auth.ownsProjectRows). */
    deleteProjectRows: deleteProjectRenditions,
    /** Its routes, behind authentication. */
    register: (authed: FastifyInstance) => authed.register(contentRoutes, { renditions }),
    /** Starts the queue's workers and the recovery of interrupted processing. */
    start(): void {
      queue.start();
      content.startRecovery();
    },
    /** Running jobs go back to the queue at once (not after their lease), for this or another process. */
    async close(): Promise<void> {
      content.stopRecovery();
      await queue.stop(Math.min(5000, config.shutdownTimeoutSeconds * 1000));
      await pool.close();
    },
  };
}

export type Content = ReturnType<typeof createContent>;
