/**
 * Makes image renditions and stores them. The source is the image itself, or the first page of a
 * PDF drawn in a worker thread; sharp (libvips, off the main thread) turns it upright, fits it in
 * `max_hw` × `max_hw` (never enlarging) and encodes JPEG, PNG or WebP. The bytes go to blob
 * storage under a key derived from the object (`.orrery/renditions/<object id>/<name>.<ext>`) and a
 * row records them, with the content ETag they were made from.
 */
import type { OutputInfo } from 'sharp';
import { loadSharp } from './libraries.ts';
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import { newId, nowIso } from '../db/ids.ts';
import type { Scope } from '../auth/principal.ts';
import type { BlobService } from '../blobs/blob-service.ts';
import { DERIVED_PREFIX } from '../blobs/blob-keys.ts';
import { ContentError } from './errors.ts';
import type { ContentLimits } from './limits.ts';
import { RENDERABLE_IMAGES } from './extract/media.ts';
import type { RenderedPage } from './extract/pdf-render.ts';
import type { WorkerPool } from './worker/pool.ts';
import { upsertRendition, type RenditionRow } from './store.ts';

export const RENDITION_FORMATS = ['jpeg', 'png', 'webp'] as const;
export type RenditionFormat = (typeof RENDITION_FORMATS)[number];

export interface RenditionSpec {
  name: string;
  format: RenditionFormat;
  maxHw: number;
}

/** Made for every image and PDF: a web-sized image and a thumbnail. */
export const DEFAULT_RENDITIONS: readonly RenditionSpec[] = [
  { name: 'web', format: 'jpeg', maxHw: 1024 },
  { name: 'thumbnail', format: 'jpeg', maxHw: 256 },
];

export const MAX_RENDITION_SIDE = 4096;

const MIME: Record<RenditionFormat, string> = { jpeg: 'image/jpeg', png: 'image/png', webp: 'image/webp' };

/** sharp cannot be stopped once started (libvips threads); past the deadline the step stops waiting. */
async function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new ContentError('step_timeout', `drawing the rendition took longer than ${ms} ms (ORRERY_CONTENT_STEP_TIMEOUT)`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export const renditionPrefix = (objectId: string) => `${DERIVED_PREFIX}renditions/${objectId}/`;

/** Whether renditions can be made from content of this type (DOCX and the like have no renderer here). */
export const canRender = (family: string, mime: string): boolean => family === 'pdf' || (family === 'image' && RENDERABLE_IMAGES.has(mime));

export class RenditionMaker {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly blobs: BlobService,
    private readonly pool: WorkerPool,
    private readonly limits: ContentLimits,
  ) {}

  /**
   * Makes and stores the renditions `specs` of one object's content. A file that cannot be drawn
   * throws a ContentError.
   */
  async make(s: Scope, objectId: string, sourceEtag: string, family: string, mime: string, bytes: Uint8Array, specs: readonly RenditionSpec[], signal?: AbortSignal): Promise<RenditionRow[]> {
    const largest = Math.max(...specs.map((r) => r.maxHw));
    const source = await this.source(family, mime, bytes, largest, signal);
    // Decode the source once (a 50-megapixel image is slow to decode): every rendition is made
    // from an upright copy already fitted to the largest size asked.
    const fitted = specs.length > 1 ? await this.fit(source, largest) : null;
    const rows: RenditionRow[] = [];
    for (const spec of specs) {
      signal?.throwIfAborted();
      const { data, info } = await this.encode(fitted ?? source, spec, fitted !== null);
      const file = `${spec.name}.${spec.format === 'jpeg' ? 'jpg' : spec.format}`;
      const key = `${renditionPrefix(objectId)}${file}`;
      const stored = await this.blobs.putDerived(s, key, data, MIME[spec.format], file);
      const row: RenditionRow = {
        object_id: objectId, name: spec.name, account_id: s.account, project_id: s.project, id: newId(), format: spec.format, max_hw: spec.maxHw,
        status: 'ready', error: null, blob_key: key, content_type: MIME[spec.format], width: info.width, height: info.height, size: stored.size,
        etag: stored.etag, source_etag: sourceEtag, created_at: nowIso(),
      };
      await upsertRendition(this.db, row);
      rows.push(row);
    }
    return rows;
  }

  /** The storage URI of a rendition's blob. */
  uriOf(s: Scope, key: string): string {
    return this.blobs.uriOf(s, key);
  }

  /** Records that a rendition asked for could not be made, so that asking again answers at once. */
  async recordFailure(s: Scope, objectId: string, sourceEtag: string, spec: RenditionSpec, error: string): Promise<void> {
    await upsertRendition(this.db, {
      object_id: objectId, name: spec.name, account_id: s.account, project_id: s.project, id: newId(), format: spec.format, max_hw: spec.maxHw,
      status: 'failed', error, blob_key: null, content_type: null, width: null, height: null, size: null, etag: null, source_etag: sourceEtag, created_at: nowIso(),
    });
  }

  private async source(family: string, mime: string, bytes: Uint8Array, maxSide: number, signal?: AbortSignal): Promise<Uint8Array> {
    if (family === 'pdf') {
      const page = await this.pool.run<RenderedPage>({ op: 'renderPdfPage', bytes, page: 1, maxSide, limits: this.limits }, this.limits.stepTimeoutMs, signal);
      return page.png;
    }
    if (family === 'image' && RENDERABLE_IMAGES.has(mime)) return bytes;
    throw new ContentError('unsupported_file', `no image rendition can be made from ${mime}`);
  }

  /** The source, upright and fitted in `maxHw` × `maxHw`, as a lossless PNG (alpha kept). */
  private async fit(source: Uint8Array, maxHw: number): Promise<Buffer> {
    const sharp = await loadSharp();
    try {
      const img = sharp(source, { limitInputPixels: this.limits.maxImagePixels, failOn: 'error', animated: false })
        .rotate()
        .resize({ width: maxHw, height: maxHw, fit: 'inside', withoutEnlargement: true })
        .png({ compressionLevel: 1 });
      return await withTimeout(img.toBuffer(), this.limits.stepTimeoutMs);
    } catch (err) {
      throw this.decodeError(err);
    }
  }

  private decodeError(err: unknown): ContentError {
    if (err instanceof ContentError) return err;
    const message = (err as Error).message;
    if (/pixel limit/i.test(message)) return new ContentError('pixel_limit', `the image has more pixels than the limit of ${this.limits.maxImagePixels} (ORRERY_CONTENT_MAX_PIXELS)`);
    return new ContentError('corrupt_file', `the image could not be decoded: ${message}`);
  }

  private async encode(source: Uint8Array, spec: RenditionSpec, upright = false): Promise<{ data: Buffer; info: OutputInfo }> {
    const sharp = await loadSharp();
    try {
      let img = sharp(source, { limitInputPixels: this.limits.maxImagePixels, failOn: 'error', animated: false });
      if (!upright) img = img.rotate();
      img = img.resize({ width: spec.maxHw, height: spec.maxHw, fit: 'inside', withoutEnlargement: true });
      if (spec.format === 'jpeg') img = img.flatten({ background: '#ffffff' }).jpeg({ quality: 82 });
      else if (spec.format === 'png') img = img.png();
      else img = img.webp({ quality: 80 });
      return await withTimeout(img.toBuffer({ resolveWithObject: true }), this.limits.stepTimeoutMs);
    } catch (err) {
      throw this.decodeError(err);
    }
  }
}
