/**
 * Makes image renditions and stores them. The drawing happens in a content worker process
 * (worker/draw.ts): the source is the image itself, or the first page of a PDF drawn by pdf.js;
 * sharp (libvips) turns it upright, fits it in `max_hw` × `max_hw` (never enlarging) and encodes
 * JPEG, PNG or WebP. The bytes go to blob storage under a key derived from the object
 * (`.orrery/renditions/<object id>/<name>.<ext>`) and a row records them, with the content ETag
 * they were made from.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import { newId, nowIso } from '../db/ids.ts';
import type { Scope } from '../auth/principal.ts';
import type { BlobService } from '../blobs/blob-service.ts';
import { DERIVED_PREFIX } from '../blobs/blob-keys.ts';
import { ContentError } from './errors.ts';
import type { ContentLimits } from './limits.ts';
import { RENDERABLE_IMAGES } from './extract/media.ts';
import type { WorkerPool } from './worker/pool.ts';
import type { Drawn } from './worker/protocol.ts';
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

export const renditionPrefix = (objectId: string) => `${DERIVED_PREFIX}renditions/${objectId}/`;

/** Whether renditions can be made from content of this type (DOCX and the like have no renderer here). */
export const canRender = (family: string, mime: string): boolean =>
  family === 'pdf' || (family === 'image' && RENDERABLE_IMAGES.has(mime));

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
  async make(
    s: Scope,
    objectId: string,
    sourceEtag: string,
    family: string,
    mime: string,
    bytes: Uint8Array,
    specs: readonly RenditionSpec[],
    signal?: AbortSignal,
  ): Promise<RenditionRow[]> {
    if (!canRender(family, mime))
      throw new ContentError('unsupported_file', `no image rendition can be made from ${mime}`);
    // Drawn in a worker process, each phase (the PDF page, the fitted source, each encoding)
    // within the step timeout; the process is killed past it, libvips included.
    const drawn = await this.pool.run<Drawn[]>(
      {
        op: 'renditions',
        family: family === 'pdf' ? 'pdf' : 'image',
        bytes,
        specs: specs.map((r) => ({ format: r.format, maxHw: r.maxHw })),
        limits: this.limits,
      },
      this.limits.stepTimeoutMs,
      signal,
    );
    const rows: RenditionRow[] = [];
    for (const [i, spec] of specs.entries()) {
      signal?.throwIfAborted();
      const { data, width, height } = drawn[i];
      const file = `${spec.name}.${spec.format === 'jpeg' ? 'jpg' : spec.format}`;
      const key = `${renditionPrefix(objectId)}${file}`;
      const stored = await this.blobs.putDerived(
        s,
        key,
        Buffer.from(data.buffer, data.byteOffset, data.byteLength),
        MIME[spec.format],
        file,
      );
      const row: RenditionRow = {
        object_id: objectId,
        name: spec.name,
        account_id: s.account,
        project_id: s.project,
        id: newId(),
        format: spec.format,
        max_hw: spec.maxHw,
        status: 'ready',
        error: null,
        blob_key: key,
        content_type: MIME[spec.format],
        width,
        height,
        size: stored.size,
        etag: stored.etag,
        source_etag: sourceEtag,
        created_at: nowIso(),
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
  async recordFailure(
    s: Scope,
    objectId: string,
    sourceEtag: string,
    spec: RenditionSpec,
    error: string,
  ): Promise<void> {
    await upsertRendition(this.db, {
      object_id: objectId,
      name: spec.name,
      account_id: s.account,
      project_id: s.project,
      id: newId(),
      format: spec.format,
      max_hw: spec.maxHw,
      status: 'failed',
      error,
      blob_key: null,
      content_type: null,
      width: null,
      height: null,
      size: null,
      etag: null,
      source_etag: sourceEtag,
      created_at: nowIso(),
    });
  }
}
