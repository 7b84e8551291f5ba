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
import { isComplete, otherImageType, readImageHeader } from './image-header.ts';
import { ImageFitter, type CacheFor, type CheckedImage, type ConvertImage, type Fitted } from './convert.ts';
import { cannotTake, takes, takesUrl, type MediaKindName, type MediaTarget } from './capabilities.ts';
import { fetchMedia, type RemoteFetch } from './remote.ts';

const KIND_NAME: Record<'image' | 'document', MediaKindName> = { image: 'images', document: 'documents' };

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

/** The slice of the object service a PDF's fallbacks need. */
interface MediaFallbacks {
  /** The object's extracted text (none until its content is processed). */
  text(p: Principal, id: string): Promise<{ text?: string }>;
  /** The object's ready renditions of its current content, largest first. */
  renditions(
    p: Principal,
    id: string,
  ): Promise<{ content?: { source?: string; type?: string } | null; properties?: Record<string, unknown> | null }[]>;
}

/** The slice of the blob service media inputs need. */
interface MediaBlobs {
  keyOf(s: Scope, ref: string, field: string, notFound: () => Error): string;
  read(s: Scope, key: string): Promise<Readable>;
  putDerived(s: Scope, key: string, bytes: Buffer, contentType: string, name: string): Promise<unknown>;
}

export interface MediaServiceDeps {
  objects: MediaObjects;
  fallbacks?: MediaFallbacks;
  blobs: MediaBlobs;
  bounds: MediaBounds;
  /** How `https` inputs are read for providers that take bytes only; without it they go as links. */
  remote?: RemoteFetch;
  /** Converts an image in a content worker process; without it images go as they are (convert.ts). */
  convert?: ConvertImage;
}

/** A run's media: the parts it stores, and the part to send in place of each stored reference. */
export interface RunMedia {
  parts: ContentPart[];
  /** Stored part url → the part a provider is sent (the bytes as a data URL, or a fallback). */
  sent: Map<string, ContentPart>;
}

type MediaPart = Extract<ContentPart, { type: 'image' | 'document' }>;

const isBlobMissing = (err: unknown) => (err as { name?: string } | null)?.name === 'BlobMissing';

type Checked =
  { kind: 'document'; media_type: 'application/pdf' } | { kind: 'image'; media_type: string; image: CheckedImage };

export class MediaService {
  private readonly fitter?: ImageFitter;

  constructor(private readonly deps: MediaServiceDeps) {
    if (deps.convert) this.fitter = new ImageFitter(deps.convert, deps.blobs, deps.bounds.maxPixels);
  }

  /**
   * The media inputs of `data` (per the input schema) as parts, each in a form `target`'s model
   * takes (capabilities.ts); a 4xx naming the first one wrong.
   */
  async inputs(p: Principal, schema: unknown, data: unknown, target?: MediaTarget): Promise<RunMedia> {
    const found = mediaInputs(schema, data);
    const media: RunMedia = { parts: [], sent: new Map() };
    for (const input of found) {
      const { part, wire } = await this.load(p, input, target);
      media.parts.push(part);
      media.sent.set(part.url, wire);
    }
    return media;
  }

  /**
   * The messages as a provider is sent them: each `store:` part's bytes read (and checked) and put
   * in as a data URL. Parts the run read already come from `sent`.
   */
  async materialize(
    p: Principal,
    messages: ChatMessage[],
    sent = new Map<string, ContentPart>(),
    target?: MediaTarget,
  ): Promise<ChatMessage[]> {
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
        content.push(await this.sendable(p, part, sent, `messages[${i}].content[${j}]`, target));
      }
      out.push({ ...m, content });
    }
    return out;
  }

  private async sendable(
    p: Principal,
    part: MediaPart,
    sent: Map<string, ContentPart>,
    where: string,
    target?: MediaTarget,
  ): Promise<ContentPart> {
    const known = sent.get(part.url);
    if (known) return known;
    const { object: _object, ...wire } = part;
    if (part.url.startsWith('store:') || part.url.startsWith('https:')) {
      const loaded = await this.load(
        p,
        { param: where, kind: part.type, ref: parseRef(part.url, where, part.type) },
        target,
      );
      sent.set(part.url, loaded.wire);
      return loaded.wire;
    }
    // An inline input kept by its digest only: its bytes went with the turn that carried them.
    if (part.object?.sha256) return { type: 'text', text: `[${part.type} ${part.object.sha256.slice(0, 12)} omitted]` };
    if (target && !takes(target, part.type === 'image' ? 'images' : 'documents'))
      throw cannotTake(target, part.type === 'image' ? 'images' : 'documents', where);
    return wire;
  }

  private async load(
    p: Principal,
    input: MediaInput,
    target?: MediaTarget,
  ): Promise<{ part: MediaPart; wire: ContentPart }> {
    const { param, ref } = input;
    if (ref.kind === 'https') {
      const kind = input.kind === 'image' ? 'images' : 'documents';
      if (target && !takes(target, kind)) throw cannotTake(target, kind, param);
      if (!target || takesUrl(target.provider, input.kind) || !this.deps.remote)
        return { part: { type: input.kind, url: ref.url }, wire: { type: input.kind, url: ref.url } };
      // A provider that takes bytes only: Orrery reads the URL, within the same bounds as a data: URL.
      const limit = input.kind === 'document' ? this.deps.bounds.maxPdfBytes : this.deps.bounds.maxBytes;
      const got = await fetchMedia(this.deps.remote, ref.url, limit, param, readBounded);
      const checked = this.check(got.bytes, param, got.type);
      if (!takes(target, KIND_NAME[checked.kind])) throw cannotTake(target, KIND_NAME[checked.kind], param);
      const sha256 = createHash('sha256').update(got.bytes).digest('hex');
      const sent = await this.fit(got.bytes, checked, param, target);
      const object: MediaObjectRef = { type: checked.media_type, size: got.bytes.length, sha256, ...convertedOf(sent) };
      return {
        part: { type: checked.kind, url: ref.url, media_type: checked.media_type, object },
        wire: { type: checked.kind, url: dataUrl(sent), media_type: sent.media_type },
      };
    }
    if (ref.kind === 'data') {
      const bytes = Buffer.from(ref.base64, 'base64');
      const checked = this.check(bytes, param, ref.media_type);
      // A data: URL has no object behind it: no extracted text, no rendition to fall back on.
      if (target && !takes(target, KIND_NAME[checked.kind])) throw cannotTake(target, KIND_NAME[checked.kind], param);
      const sha256 = createHash('sha256').update(bytes).digest('hex');
      const sent = await this.fit(bytes, checked, param, target);
      const object: MediaObjectRef = { sha256, type: checked.media_type, size: bytes.length, ...convertedOf(sent) };
      return {
        part: {
          type: checked.kind,
          url: `data:${checked.media_type};sha256=${sha256}`,
          media_type: checked.media_type,
          object,
        },
        wire: { type: checked.kind, url: dataUrl(sent), media_type: sent.media_type },
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
    const key = this.deps.blobs.keyOf(s, content.source, param, missing);
    const known = await this.knownConversion(s, ref.id, record, param, target);
    if (known) return known;
    const limit = declared === 'application/pdf' ? this.deps.bounds.maxPdfBytes : this.deps.bounds.maxBytes;
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
    const name = checked.kind === 'document' && content.name ? { name: content.name } : {};
    const part: MediaPart = {
      type: checked.kind,
      url: `store:${ref.id}`,
      media_type: checked.media_type,
      ...name,
      object,
    };
    const kind = KIND_NAME[checked.kind];
    if (target && !takes(target, kind)) {
      if (checked.kind === 'image') throw cannotTake(target, kind, param);
      const fallback = await this.documentFallback(p, ref.id, record.status, content.name, param, target);
      return { part: { ...part, object: { ...object, fallback: fallback.kind } }, wire: fallback.wire };
    }
    const version = content.etag ?? createHash('sha256').update(bytes).digest('hex');
    const sent = await this.fit(bytes, checked, param, target, { scope: s, id: ref.id, version });
    if (sent.converted) part.object = { ...object, converted: sent.converted };
    return { part, wire: { type: checked.kind, url: dataUrl(sent), media_type: sent.media_type, ...name } };
  }

  /**
   * A stored image converted for this form before, at this version of its content: the cached
   * result, without reading the original again (its bounds were checked when it was converted;
   * its size and pixels, recorded by its processing, are checked against today's). Undefined when
   * there is none, or the object's processing has not recorded this version.
   */
  private async knownConversion(
    s: Scope,
    id: string,
    record: Awaited<ReturnType<MediaObjects['get']>>['record'],
    param: string,
    target?: MediaTarget,
  ): Promise<{ part: MediaPart; wire: ContentPart } | undefined> {
    const content = record.content!;
    const meta = record.metadata ?? {};
    const type = content.type?.toLowerCase();
    if (!this.fitter || !target || !content.etag || !type?.startsWith('image/')) return undefined;
    if (meta.etag !== content.etag || typeof meta.size !== 'number') return undefined;
    if (!takes(target, 'images')) return undefined;
    const b = this.deps.bounds;
    const d = meta.dimensions as { width?: unknown; height?: unknown } | undefined;
    if (typeof d?.width !== 'number' || typeof d.height !== 'number') return undefined;
    // Past today's bounds: the full path reads it and answers the 413.
    if (meta.size > b.maxBytes || d.width * d.height > b.maxPixels) return undefined;
    const sent = await this.fitter.cached(s, target, { scope: s, id, version: content.etag });
    if (!sent) return undefined;
    const object: MediaObjectRef = { id, revision: content.etag, type, size: meta.size, converted: sent.converted };
    return {
      part: { type: 'image', url: `store:${id}`, media_type: type, object },
      wire: { type: 'image', url: dataUrl(sent), media_type: sent.media_type },
    };
  }

  /**
   * A PDF for a model that takes no PDFs: its extracted text; else (a scan, no text) its
   * rendition (the page drawn as an image) where the model takes images; else a 400 saying so.
   */
  private async documentFallback(
    p: Principal,
    id: string,
    status: string | undefined,
    name: string | undefined,
    param: string,
    target: MediaTarget,
  ): Promise<{ kind: 'text' | 'rendition'; wire: ContentPart }> {
    const fallbacks = this.deps.fallbacks;
    if (fallbacks && (status === 'created' || status === 'processing'))
      throw new Conflict(
        `${param}: model "${target.model}" takes no PDF documents, and object ${JSON.stringify(id)} is still being processed (its text and renditions are what it is sent instead); run again when its status is ready`,
      );
    const text = (await fallbacks?.text(p, id))?.text?.trim();
    if (text) return { kind: 'text', wire: { type: 'text', text: `Document ${name ?? id}:\n\n${text}` } };
    if (fallbacks && takes(target, 'images')) {
      const drawn = (await fallbacks.renditions(p, id)).find(
        (r) => r.content?.source && r.content.type === 'image/jpeg',
      );
      if (drawn?.content?.source) {
        const s = scopeOf(p);
        const key = this.deps.blobs.keyOf(
          s,
          drawn.content.source,
          param,
          () => new NotFound(`rendition of ${param}`, id),
        );
        const bytes = await readBounded(await this.deps.blobs.read(s, key), this.deps.bounds.maxBytes, param);
        const url = `data:image/jpeg;base64,${bytes.toString('base64')}`;
        return { kind: 'rendition', wire: { type: 'image', url, media_type: 'image/jpeg' } };
      }
    }
    throw new OrreryError(
      'media_unsupported',
      400,
      `${param} is a PDF document, and model "${target.model}" of environment "${target.name}" (${target.provider}) takes no PDFs; ` +
        `the object has no extracted text${takes(target, 'images') ? ' nor rendition' : ''} to send instead: ` +
        'choose a model that reads PDFs, or set config.capabilities.documents on the environment if it can',
    );
  }

  /** A document as it is; an image fitted to the target's provider (convert.ts), when there is one. */
  private async fit(
    bytes: Buffer,
    checked: Checked,
    param: string,
    target?: MediaTarget,
    cacheFor?: CacheFor,
  ): Promise<Fitted> {
    if (checked.kind === 'document' || !target || !this.fitter) {
      if (checked.kind === 'image' && checked.image.other) throw notSendable(param, checked.image.other);
      return { bytes, media_type: checked.media_type };
    }
    return this.fitter.fit(bytes, checked.image, param, target, cacheFor);
  }

  /**
   * What the bytes are (an image, or a PDF), within the bounds; else a 413, 415 or 422. Read from
   * their first bytes and their end only: the pixels are decoded in a content worker, if at all.
   */
  private check(bytes: Buffer, param: string, declared: string | undefined, knownPages?: number): Checked {
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
    const other = header ? undefined : otherImageType(bytes);
    if (other) return { kind: 'image', media_type: other, image: { other } };
    if (!header) {
      const named = declared && declared !== 'application/octet-stream' ? ` (${declared})` : '';
      throw new UnsupportedMediaType(
        declared?.startsWith('image/') && !SENT_IMAGES.has(declared)
          ? `${param} is ${declared}: media inputs take PNG, JPEG, GIF, WebP, TIFF, SVG and AVIF images and PDF documents`
          : `${param}${named} is not a readable PNG, JPEG, GIF or WebP image nor a PDF`,
      );
    }
    if (header.width * header.height > b.maxPixels)
      throw new PayloadTooLarge(
        `${param} is ${header.width}×${header.height} pixels; the limit is ${b.maxPixels} (ORRERY_MEDIA_MAX_PIXELS)`,
      );
    if (!isComplete(bytes, header.media_type))
      throw new OrreryError(
        'media_unreadable',
        422,
        `${param} (${header.media_type}) is truncated: the file ends before the image does; upload the whole file again`,
      );
    return { kind: 'image', media_type: header.media_type, image: { header } };
  }
}

const dataUrl = (f: Fitted) => `data:${f.media_type};base64,${f.bytes.toString('base64')}`;
const convertedOf = (f: Fitted) => (f.converted ? { converted: f.converted } : {});
const notSendable = (param: string, type: string) =>
  new UnsupportedMediaType(`${param} is ${type}: it must be converted first, and this server cannot convert images`);

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
