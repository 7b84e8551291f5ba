/**
 * Renditions as the API shows them: `GET /objects/:id/renditions` (records, like child objects)
 * and `GET /objects/:id/renditions/:format` (`{status, renditions: [signed URLs]}`, decisions.md).
 * Only renditions made from the object's current content are ever answered.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import { scopeOf, type Principal, type Scope } from '../auth/principal.ts';
import { BadRequest, NotFound, OrreryError } from '../util/errors.ts';
import type { BlobService } from '../blobs/blob-service.ts';
import { bareType } from '../blobs/mime.ts';
import type { ContentSource, ObjectRecord } from '../objects/model.ts';
import { familyOf } from './sniff.ts';
import {
  canRender,
  DEFAULT_RENDITIONS,
  MAX_RENDITION_SIDE,
  RENDITION_FORMATS,
  type RenditionFormat,
} from './rendition-maker.ts';
import type { ContentPipeline } from './pipeline.ts';
import { loadObject } from '../objects/processing-results.ts';
import { renditionById, renditionsOf, type RenditionRow } from './store.ts';

export interface RenditionQuery {
  max_hw?: number;
  generate_if_missing?: boolean;
  block_on_generation?: boolean;
}

export interface RenditionAnswer {
  status: 'found' | 'generating' | 'failed';
  renditions: string[];
}

export interface RenditionServiceDeps {
  db: Kysely<Database>;
  dialect: OrreryDialect;
  blobs: BlobService;
  pipeline: ContentPipeline;
  /** Longest wait of block_on_generation. */
  waitMs: number;
  /** How often a blocked request looks again. */
  pollMs?: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class RenditionService {
  constructor(private readonly deps: RenditionServiceDeps) {}

  /** The object's renditions as records (`ContentObjectItem`s whose parent is the object). */
  async list(p: Principal, id: string): Promise<ObjectRecord[]> {
    const s = scopeOf(p);
    const obj = await loadObject(this.deps.db, this.deps.dialect, s, id);
    if (!obj) throw new NotFound('object', id);
    const etag = (obj.content as ContentSource | null)?.etag;
    if (!etag) return [];
    const rows = await renditionsOf(this.deps.db, s, id, etag, { status: 'ready' });
    return rows.map((r) => this.recordOf(s, obj, r));
  }

  /**
   * A rendition by the id its record carries (`GET /objects/:id` answers it when no object has
   * that id): ready, and made from its object's current content; otherwise undefined.
   */
  async record(p: Principal, renditionId: string): Promise<ObjectRecord | undefined> {
    const s = scopeOf(p);
    const row = await renditionById(this.deps.db, s, renditionId);
    if (!row || row.status !== 'ready') return undefined;
    const obj = await loadObject(this.deps.db, this.deps.dialect, s, row.object_id);
    if (!obj || (obj.content as ContentSource | null)?.etag !== row.source_etag) return undefined;
    return this.recordOf(s, obj, row);
  }

  private recordOf(s: Scope, obj: Awaited<ReturnType<typeof loadObject>> & object, r: RenditionRow): ObjectRecord {
    const name = `${r.name}.${r.format === 'jpeg' ? 'jpg' : r.format}`;
    return {
      id: r.id,
      name,
      description: null,
      tags: [],
      status: 'ready',
      location: obj.location,
      parent: { id: obj.id, name: obj.name },
      content: { source: this.deps.blobs.uriOf(s, r.blob_key!), type: r.content_type!, name, etag: r.etag! },
      external_id: null,
      properties: { rendition: r.name, format: r.format, max_hw: r.max_hw },
      metadata: { type: 'image', size: r.size, etag: r.etag, dimensions: { width: r.width, height: r.height } },
      tokens: null,
      run: null,
      revision: { root: r.id, head: true },
      score: 1,
      created_by: obj.created_by,
      updated_by: obj.updated_by,
      created_at: r.created_at,
      updated_at: r.created_at,
    } as ObjectRecord;
  }

  async get(p: Principal, id: string, format: string, q: RenditionQuery): Promise<RenditionAnswer> {
    const s = scopeOf(p);
    const fmt = format.toLowerCase() === 'jpg' ? 'jpeg' : format.toLowerCase();
    if (!(RENDITION_FORMATS as readonly string[]).includes(fmt)) {
      throw new BadRequest(`format must be one of ${RENDITION_FORMATS.join(', ')}, got ${JSON.stringify(format)}`);
    }
    const maxHw = q.max_hw;
    if (maxHw !== undefined && (!Number.isInteger(maxHw) || maxHw < 1 || maxHw > MAX_RENDITION_SIDE)) {
      throw new BadRequest(
        `max_hw must be a whole number of pixels from 1 to ${MAX_RENDITION_SIDE}, got ${JSON.stringify(maxHw)}`,
      );
    }
    const obj = await loadObject(this.deps.db, this.deps.dialect, s, id);
    if (!obj) throw new NotFound('object', id);
    const content = obj.content as ContentSource | null;
    if (!content?.source || !content.etag) throw new NotFound('content of object', id);
    // The sniffed type once processed; until then the declared one.
    const mime = (obj.metadata as { mime_type?: string } | null)?.mime_type ?? bareType(content.type ?? '');
    if (!canRender(familyOf(mime), mime)) {
      throw new BadRequest(
        `object ${id} is ${mime || 'of an unknown type'}: image renditions are made from images and PDFs`,
        { reason: 'rendition_unsupported' },
      );
    }
    const etag = content.etag;
    const lookup = async (): Promise<RenditionAnswer | null> => {
      const rows = await renditionsOf(this.deps.db, s, id, etag, { format: fmt, maxHw });
      const ready = rows.filter((r) => r.status === 'ready');
      if (ready.length) return { status: 'found', renditions: await this.urls(p, ready) };
      if (rows.some((r) => r.status === 'failed')) return { status: 'failed', renditions: [] };
      return null;
    };
    const found = await lookup();
    if (found) return found;

    const pending = obj.status === 'created' || obj.status === 'processing';
    const comingByDefault =
      pending && DEFAULT_RENDITIONS.some((d) => d.format === fmt && (maxHw === undefined || d.maxHw === maxHw));
    if (!comingByDefault) {
      if (!q.generate_if_missing) {
        if (obj.status === 'failed') return { status: 'failed', renditions: [] };
        throw new OrreryError(
          'not_found',
          404,
          `object ${id} has no ${fmt} rendition${maxHw ? ` of max_hw ${maxHw}` : ''}: pass generate_if_missing=true to make one`,
        );
      }
      const size = maxHw ?? DEFAULT_RENDITIONS[0].maxHw;
      await this.deps.pipeline.requestRendition(s, id, {
        name: `${fmt}-${size}`,
        format: fmt as RenditionFormat,
        maxHw: size,
      });
    }
    if (!q.block_on_generation) return { status: 'generating', renditions: [] };
    const deadline = Date.now() + this.deps.waitMs;
    while (Date.now() < deadline) {
      await sleep(Math.min(this.deps.pollMs ?? 150, Math.max(1, deadline - Date.now())));
      const now = await lookup();
      if (now) return now;
      if (comingByDefault) {
        const current = await loadObject(this.deps.db, this.deps.dialect, s, id);
        if (!current || JSON.stringify(current.content) !== JSON.stringify(obj.content)) break;
        if (current.status === 'failed') return { status: 'failed', renditions: [] };
      }
    }
    return { status: 'generating', renditions: [] };
  }

  private async urls(p: Principal, rows: RenditionRow[]): Promise<string[]> {
    const s = scopeOf(p);
    return Promise.all(
      rows.map(
        async (r) => (await this.deps.blobs.downloadUrl(p, { file: this.deps.blobs.uriOf(s, r.blob_key!) })).url,
      ),
    );
  }
}
