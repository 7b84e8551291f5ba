/**
 * The processing steps, in order. Each step reads what the earlier ones left in `ctx.result` and
 * adds its own part; adding a step (embeddings) is adding one entry to `DEFAULT_STEPS`. A step
 * that throws a ContentError fails the object with `error.step` = its name; the pipeline gives
 * every step its own deadline (ORRERY_CONTENT_STEP_TIMEOUT) through `ctx.signal`.
 */
import { createHash } from 'node:crypto';
import type { Scope } from '../auth/principal.ts';
import type { ContentSource, ObjectRow, Tokens } from '../objects/model.ts';
import type { ContentLimits } from './limits.ts';
import type { Sniffed } from './sniff.ts';
import type { WorkerPool } from './worker/pool.ts';
import type { Extracted, ExtractedFacts } from './extract/documents.ts';
import type { MediaFacts } from './extract/media.ts';
import { detectLanguages } from './languages.ts';
import { TOKEN_ENCODING } from './token-encoding.ts';
import { canRender, DEFAULT_RENDITIONS, type RenditionMaker } from './rendition-maker.ts';
import type { RenditionRow } from './store.ts';

export interface ProcessingResult {
  text?: string;
  textEtag?: string;
  facts: ExtractedFacts & MediaFacts;
  /** The computed part of `metadata` (merged over the caller's own keys when written). */
  metadata?: Record<string, unknown>;
  tokens?: Tokens;
  renditions?: RenditionRow[];
}

export interface StepContext {
  scope: Scope;
  objectId: string;
  object: ObjectRow;
  content: ContentSource & { source: string; etag: string };
  bytes: Uint8Array;
  sniffed: Sniffed;
  limits: ContentLimits;
  pool: WorkerPool;
  renditions: RenditionMaker;
  /** Aborts at this step's deadline, or when the server shuts down. */
  signal: AbortSignal;
  result: ProcessingResult;
}

export interface PipelineStep {
  readonly name: string;
  run(ctx: StepContext): Promise<void>;
}

const NO_TEXT: ReadonlySet<string> = new Set(['image', 'audio', 'video', 'binary']);

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

/** Text in reading order (extract/documents.ts says how each format is read); "" for media and archives. */
const textStep: PipelineStep = {
  name: 'text',
  async run(ctx) {
    const { family, mime } = ctx.sniffed;
    // Images, audio, video and unknown bytes have no text (extract/documents.ts): not worth
    // copying them to a worker process for that.
    const out = NO_TEXT.has(family)
      ? { text: '', facts: {} }
      : await ctx.pool.run<Extracted>(
          { op: 'extract', family, mime, bytes: ctx.bytes, limits: ctx.limits },
          ctx.limits.stepTimeoutMs,
          ctx.signal,
        );
    ctx.result.text = out.text;
    // The same etag input.ts gives caller-written text: sha256 of the text.
    ctx.result.textEtag = sha256(out.text);
    Object.assign(ctx.result.facts, out.facts);
  },
};

/** `metadata` with the `type` discriminator, size, etag, MIME type, languages and the facts of the format. */
const metadataStep: PipelineStep = {
  name: 'metadata',
  async run(ctx) {
    const { family, mime, nature } = ctx.sniffed;
    if (family === 'image' || family === 'audio' || family === 'video') {
      // sharp and music-metadata run in a worker process, never in the server's (worker/pool.ts).
      const facts = await ctx.pool.run<MediaFacts>(
        { op: 'probe', family, mime, bytes: ctx.bytes, limits: ctx.limits },
        ctx.limits.stepTimeoutMs,
        ctx.signal,
      );
      Object.assign(ctx.result.facts, facts);
    }
    const f = ctx.result.facts;
    const languages = ctx.result.text ? detectLanguages(ctx.result.text) : [];
    ctx.result.metadata = {
      type: nature,
      size: ctx.bytes.byteLength,
      etag: ctx.content.etag,
      mime_type: mime,
      ...(languages.length ? { languages } : {}),
      ...(f.page_count !== undefined && (nature === 'document' || family === 'image')
        ? { page_count: f.page_count }
        : {}),
      ...(f.dimensions && (nature === 'image' || nature === 'video') ? { dimensions: f.dimensions } : {}),
      ...(f.duration !== undefined && (nature === 'audio' || nature === 'video') ? { duration: f.duration } : {}),
    };
  },
};

/** The default renditions (web-sized and thumbnail JPEGs) of images and PDFs. */
const renditionsStep: PipelineStep = {
  name: 'renditions',
  async run(ctx) {
    const { family, mime } = ctx.sniffed;
    if (!canRender(family, mime)) return;
    const rows = await ctx.renditions.make(
      ctx.scope,
      ctx.objectId,
      ctx.content.etag,
      family,
      mime,
      ctx.bytes,
      DEFAULT_RENDITIONS,
      ctx.signal,
    );
    ctx.result.renditions = rows;
    ctx.result.metadata = {
      ...ctx.result.metadata,
      renditions: rows.map((r) => ({
        name: r.name,
        content: {
          source: ctx.renditions.uriOf(ctx.scope, r.blob_key!),
          type: r.content_type,
          name: `${r.name}.${r.format === 'jpeg' ? 'jpg' : r.format}`,
          etag: r.etag,
        },
        dimensions: { width: r.width, height: r.height },
      })),
    };
  },
};

/** `tokens: {count, encoding, etag}` of the extracted text; the etag is the text's. */
const tokensStep: PipelineStep = {
  name: 'tokens',
  async run(ctx) {
    const text = ctx.result.text ?? '';
    const count = text
      ? await ctx.pool.run<number>({ op: 'countTokens', text }, ctx.limits.stepTimeoutMs, ctx.signal)
      : 0;
    ctx.result.tokens = { count, encoding: TOKEN_ENCODING, etag: ctx.result.textEtag ?? sha256(text) };
  },
};

export const DEFAULT_STEPS: readonly PipelineStep[] = [textStep, metadataStep, renditionsStep, tokensStep];
