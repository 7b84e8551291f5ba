/**
 * Images fitted to their provider's limits (image-limits.ts). An image within them, in a format
 * the provider takes, is sent byte for byte. Any other is converted to JPEG q85 in a content
 * worker process (src/content/worker/convert.ts), never on the server's event loop.
 *
 * A stored object's conversion is cached as a derived blob keyed by the object's content version
 * (its etag) and the form: `.orrery/renditions/<object id>/media/<version>/<form>.jpg`. A blob,
 * not a table: the bytes must be stored anyway, the key alone is the lookup (no migration, no row
 * to keep in step with the blob), and it sits under the object's renditions prefix, so it is
 * deleted with the object's renditions. A new version of the content gets new keys; a `data:` or
 * `https` input has no version and is converted on each run.
 */
import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { Scope } from '../auth/principal.ts';
import { DERIVED_PREFIX } from '../blobs/blob-keys.ts';
import type { MediaObjectRef } from '../providers/driver.ts';
import { OrreryError, PayloadTooLarge, UnsupportedMediaType } from '../util/errors.ts';
import type { MediaTarget } from './capabilities.ts';
import { isAnimated, readImageHeader, type ImageHeader, type OtherImageType } from './image-header.ts';
import { formName, imageLimitsOf } from './image-limits.ts';

/** How a content worker is asked to convert (the content feature's convertImage). */
export type ConvertImage = (
  bytes: Uint8Array,
  spec: { maxSide: number; maxBytes: number; maxPixels: number; svg?: boolean },
) => Promise<{ data: Uint8Array; width: number; height: number }>;

/** The slice of the blob service the cache needs. */
export interface ConversionCache {
  read(s: Scope, key: string): Promise<Readable>;
  putDerived(s: Scope, key: string, bytes: Buffer, contentType: string, name: string): Promise<unknown>;
}

/** An image as checked in the server: its header (the four common formats) or its other type. */
export type CheckedImage = { header: ImageHeader; other?: undefined } | { header?: undefined; other: OtherImageType };

/** The stored object a conversion is cached for. */
export interface CacheFor {
  scope: Scope;
  id: string;
  version: string;
}

export interface Fitted {
  bytes: Buffer;
  media_type: string;
  converted?: NonNullable<MediaObjectRef['converted']>;
}

const isBlobMissing = (err: unknown) => (err as { name?: string } | null)?.name === 'BlobMissing';

export class ImageFitter {
  constructor(
    private readonly convert: ConvertImage,
    private readonly cache: ConversionCache,
    private readonly maxPixels: number,
  ) {}

  /** The image as the target's provider is sent it; a 4xx naming `param` when it cannot be. */
  async fit(
    bytes: Buffer,
    image: CheckedImage,
    param: string,
    target: MediaTarget,
    cacheFor?: CacheFor,
  ): Promise<Fitted> {
    const limits = imageLimitsOf(target);
    const type = image.header?.media_type ?? image.other!;
    if (type === 'image/heic') {
      if (limits.types.has('image/heic')) return { bytes, media_type: type };
      throw new UnsupportedMediaType(
        `${param} is image/heic: model "${target.model}" of environment "${target.name}" (${target.provider}) takes no HEIC, ` +
          'and Orrery cannot convert it (its image library has no HEIC decoder); upload it as JPEG or PNG',
      );
    }
    const h = image.header;
    if (
      h &&
      limits.types.has(h.media_type) &&
      Math.max(h.width, h.height) <= limits.maxSide &&
      bytes.length <= limits.maxBytes &&
      !isAnimated(bytes, h.media_type)
    )
      return { bytes, media_type: h.media_type };

    const form = formName(limits);
    const key = cacheFor && cacheKey(cacheFor, form);
    if (cacheFor && key) {
      const cached = await this.read(cacheFor.scope, key);
      if (cached) return fitted(cached, form, true);
    }
    let data: Buffer;
    try {
      const out = await this.convert(bytes, {
        maxSide: limits.maxSide,
        maxBytes: limits.maxBytes,
        maxPixels: this.maxPixels,
        svg: type === 'image/svg+xml',
      });
      data = Buffer.from(out.data.buffer, out.data.byteOffset, out.data.byteLength);
    } catch (err) {
      throw refusal(err, param, type, this.maxPixels);
    }
    if (cacheFor && key) await this.cache.putDerived(cacheFor.scope, key, data, 'image/jpeg', `${form}.jpg`);
    return fitted(data, form, false);
  }

  /** The cached conversion of a stored object for the target's form, if there is one. */
  async cached(s: Scope, target: MediaTarget, cacheFor: CacheFor): Promise<Fitted | undefined> {
    const form = formName(imageLimitsOf(target));
    const bytes = await this.read(s, cacheKey(cacheFor, form));
    return bytes && fitted(bytes, form, true);
  }

  private async read(s: Scope, key: string): Promise<Buffer | undefined> {
    try {
      const chunks: Buffer[] = [];
      for await (const c of (await this.cache.read(s, key)) as AsyncIterable<Buffer>) chunks.push(c);
      return Buffer.concat(chunks);
    } catch (err) {
      if (isBlobMissing(err)) return undefined;
      throw err;
    }
  }
}

const cacheKey = (c: CacheFor, form: string) =>
  `${DERIVED_PREFIX}renditions/${c.id}/media/${createHash('sha256').update(c.version).digest('hex').slice(0, 32)}/${form}.jpg`;

function fitted(data: Buffer, form: string, cached: boolean): Fitted {
  const h = readImageHeader(data);
  return {
    bytes: data,
    media_type: 'image/jpeg',
    converted: { form, type: 'image/jpeg', size: data.length, width: h?.width ?? 0, height: h?.height ?? 0, cached },
  };
}

/** A content worker's verdict on an image as the 4xx of a run. */
function refusal(err: unknown, param: string, type: string, maxPixels: number): Error {
  const e = err as { name?: string; code?: string; message?: string };
  if (e?.name !== 'ContentError') return err as Error;
  if (e.code === 'pixel_limit')
    return new PayloadTooLarge(
      `${param} (${type}) declares more pixels than the limit of ${maxPixels} (ORRERY_MEDIA_MAX_PIXELS): ${e.message}`,
    );
  if (e.code === 'unsupported_file') return new UnsupportedMediaType(`${param} (${type}) was refused: ${e.message}`);
  if (e.code === 'step_timeout' || e.code === 'memory_limit')
    return new PayloadTooLarge(
      `${param} (${type}) could not be converted within the content worker's bounds: ${e.message}`,
    );
  return new OrreryError(
    'media_unreadable',
    422,
    `${param} (${type}) could not be read as an image (a truncated or corrupt file?): ${e.message ?? 'no detail'}; upload it again`,
  );
}
