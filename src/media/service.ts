/**
 * Media inputs of a run made into prompt parts. A `store:<object id>` input is an object of the
 * caller's project, read through the blob store; a `data:` URL is taken as given. Every bound
 * (ORRERY_MEDIA_*) and the object's project are checked here, before any provider is called.
 *
 * Two forms come out: the parts a run stores (references: the object's id, version, type and
 * size; never the bytes) and the parts a provider is sent (the bytes as a base64 data URL).
 */
import type { Readable } from 'node:stream';
import { createHash } from 'node:crypto';
import type { Principal, Scope } from '../auth/principal.ts';
import { scopeOf } from '../auth/principal.ts';
import type { ChatMessage, ContentPart, MediaObjectRef } from '../providers/driver.ts';
import { Conflict, NotFound, OrreryError, PayloadTooLarge, UnsupportedMediaType } from '../util/errors.ts';
import type { MediaBounds } from './bounds.ts';
import { mediaInputs, parseRef, type MediaInput } from './inputs.ts';
import { readImageHeader } from './image-header.ts';

/** The slice of the object service media inputs need. */
interface MediaObjects {
  get(
    p: Principal,
    id: string,
  ): Promise<{
    record: {
      id?: string;
      status?: string;
      content?: { source?: string; type?: string; name?: string; etag?: string };
      metadata?: Record<string, unknown>;
    };
  }>;
}

/** The slice of the blob service media inputs need. */
interface MediaBlobs {
  keyOf(s: Scope, ref: string, field: string, notFound: () => Error): string;
  read(s: Scope, key: string): Promise<Readable>;
}

export interface MediaServiceDeps {
  objects: MediaObjects;
  blobs: MediaBlobs;
  bounds: MediaBounds;
}

/** A run's media: the parts it stores, and the bytes to send in place of each stored reference. */
export interface RunMedia {
  parts: ContentPart[];
  /** Stored part url → the data URL a provider is sent. */
  sent: Map<string, string>;
}

type MediaPart = Extract<ContentPart, { type: 'image' | 'document' }>;

const isBlobMissing = (err: unknown) => (err as { name?: string } | null)?.name === 'BlobMissing';

export class MediaService {
  constructor(private readonly deps: MediaServiceDeps) {}

  /** The media inputs of `data` (per the input schema) as parts; a 4xx naming the first one wrong. */
  async inputs(p: Principal, schema: unknown, data: unknown): Promise<RunMedia> {
    const found = mediaInputs(schema, data);
    const media: RunMedia = { parts: [], sent: new Map() };
    for (const input of found) {
      const { part, url } = await this.load(p, input);
      media.parts.push(part);
      media.sent.set(part.url, url);
    }
    return media;
  }

  /**
   * The messages as a provider is sent them: each `store:` part's bytes read (and checked) and put
   * in as a data URL. Parts the run read already come from `sent`.
   */
  async materialize(p: Principal, messages: ChatMessage[], sent = new Map<string, string>()): Promise<ChatMessage[]> {
    if (!messages.some((m) => typeof m.content !== 'string' && m.content.some(isMedia))) return messages;
    const out: ChatMessage[] = [];
    for (const [i, m] of messages.entries()) {
      if (typeof m.content === 'string' || !m.content.some(isMedia)) {
        out.push(m);
        continue;
      }
      const content: ContentPart[] = [];
      for (const [j, part] of m.content.entries()) {
        if (!isMedia(part)) {
          content.push(part);
          continue;
        }
        content.push(await this.sendable(p, part, sent, `messages[${i}].content[${j}]`));
      }
      out.push({ ...m, content });
    }
    return out;
  }

  private async sendable(
    p: Principal,
    part: MediaPart,
    sent: Map<string, string>,
    where: string,
  ): Promise<ContentPart> {
    const known = sent.get(part.url);
    const { object: _object, ...wire } = part;
    if (known) return { ...wire, url: known };
    if (part.url.startsWith('store:')) {
      const { url } = await this.load(p, { param: where, kind: part.type, ref: parseRef(part.url, where, part.type) });
      sent.set(part.url, url);
      return { ...wire, url };
    }
    // An inline input kept by its digest only: its bytes went with the turn that carried them.
    if (part.object?.sha256) return { type: 'text', text: `[${part.type} ${part.object.sha256.slice(0, 12)} omitted]` };
    return wire;
  }

  private async load(p: Principal, input: MediaInput): Promise<{ part: MediaPart; url: string }> {
    const { param, ref } = input;
    if (ref.kind === 'https') {
      return { part: { type: input.kind, url: ref.url }, url: ref.url };
    }
    if (ref.kind === 'data') {
      const bytes = Buffer.from(ref.base64, 'base64');
      const checked = this.check(bytes, param, ref.media_type);
      const sha256 = createHash('sha256').update(bytes).digest('hex');
      const object: MediaObjectRef = { sha256, type: checked.media_type, size: bytes.length };
      return {
        part: {
          type: checked.kind,
          url: `data:${checked.media_type};sha256=${sha256}`,
          media_type: checked.media_type,
          object,
        },
        url: `data:${checked.media_type};base64,${bytes.toString('base64')}`,
      };
    }
    const s = scopeOf(p);
    const missing = () => new NotFound(`object of ${param}`, ref.id);
    let record: Awaited<ReturnType<MediaObjects['get']>>['record'];
    try {
      ({ record } = await this.deps.objects.get(p, ref.id));
    } catch (err) {
      if (err instanceof OrreryError && err.status === 404) throw missing();
      throw err;
    }
    const content = record.content;
    if (!content?.source)
      throw new Conflict(
        `${param}: object ${JSON.stringify(ref.id)} has no content yet; upload its file, then run again`,
      );
    const declared = content.type?.toLowerCase();
    const limit = declared === 'application/pdf' ? this.deps.bounds.maxPdfBytes : this.deps.bounds.maxBytes;
    const key = this.deps.blobs.keyOf(s, content.source, param, missing);
    let bytes: Buffer;
    try {
      bytes = await readBounded(await this.deps.blobs.read(s, key), limit, param);
    } catch (err) {
      if (isBlobMissing(err))
        throw new Conflict(
          `${param}: the content of object ${JSON.stringify(ref.id)} is not uploaded yet; finish the upload, then run again`,
        );
      throw err;
    }
    const pages = record.metadata?.page_count;
    const checked = this.check(bytes, param, declared, typeof pages === 'number' ? pages : undefined);
    const object: MediaObjectRef = {
      id: ref.id,
      ...(content.etag ? { revision: content.etag } : {}),
      type: checked.media_type,
      size: bytes.length,
    };
    return {
      part: {
        type: checked.kind,
        url: `store:${ref.id}`,
        media_type: checked.media_type,
        ...(checked.kind === 'document' && content.name ? { name: content.name } : {}),
        object,
      },
      url: `data:${checked.media_type};base64,${bytes.toString('base64')}`,
    };
  }

  /** What the bytes are (an image the providers take, or a PDF), within the bounds; else a 413 or 415. */
  private check(
    bytes: Buffer,
    param: string,
    declared: string | undefined,
    knownPages?: number,
  ): { kind: 'image' | 'document'; media_type: string } {
    const b = this.deps.bounds;
    if (bytes.subarray(0, 5).toString('latin1') === '%PDF-') {
      if (bytes.length > b.maxPdfBytes)
        throw new PayloadTooLarge(
          `${param} is a PDF of ${bytes.length} bytes; the limit is ${b.maxPdfBytes} (ORRERY_MEDIA_MAX_PDF_BYTES)`,
        );
      const pages = knownPages ?? countPdfPages(bytes);
      if (pages > b.maxPdfPages)
        throw new PayloadTooLarge(
          `${param} is a PDF of ${pages} pages; the limit is ${b.maxPdfPages} (ORRERY_MEDIA_MAX_PDF_PAGES)`,
        );
      return { kind: 'document', media_type: 'application/pdf' };
    }
    if (bytes.length > b.maxBytes)
      throw new PayloadTooLarge(
        `${param} is ${bytes.length} bytes; the limit is ${b.maxBytes} (ORRERY_MEDIA_MAX_BYTES)`,
      );
    const header = readImageHeader(bytes);
    if (!header) {
      const named = declared && declared !== 'application/octet-stream' ? ` (${declared})` : '';
      throw new UnsupportedMediaType(
        declared?.startsWith('image/') && !SENT_IMAGES.has(declared)
          ? `${param} is ${declared}: media inputs take PNG, JPEG, GIF and WebP images and PDF documents`
          : `${param}${named} is not a readable PNG, JPEG, GIF or WebP image nor a PDF`,
      );
    }
    if (header.width * header.height > b.maxPixels)
      throw new PayloadTooLarge(
        `${param} is ${header.width}×${header.height} pixels; the limit is ${b.maxPixels} (ORRERY_MEDIA_MAX_PIXELS)`,
      );
    return { kind: 'image', media_type: header.media_type };
  }
}

const SENT_IMAGES: ReadonlySet<string> = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

const isMedia = (p: ContentPart): p is MediaPart => p.type === 'image' || p.type === 'document';

/** The stream's bytes, or a 413 as soon as they pass `limit` (the rest is never read). */
async function readBounded(stream: Readable, limit: number, param: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      stream.destroy();
      throw new PayloadTooLarge(
        `${param} is larger than ${limit} bytes, the limit of its kind (ORRERY_MEDIA_MAX_BYTES, ORRERY_MEDIA_MAX_PDF_BYTES)`,
      );
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/**
 * The pages of a PDF by its page objects (`/Type /Page`), counted without parsing it: a bound
 * checked in the server's process, where a page tree is never walked.
 */
function countPdfPages(bytes: Buffer): number {
  const text = bytes.toString('latin1');
  return (text.match(/\/Type\s*\/Page(?![a-zA-Z])/g) ?? []).length;
}
