/**
 * Facts about images, audio and video, read from their headers: dimensions (sharp), duration
 * (music-metadata). An image is refused past the pixel limit before anything decodes it. Runs in
 * a content worker process (worker/content-worker.ts), never in the server's.
 */
import type { Metadata } from 'sharp';
import { ContentError } from '../errors.ts';
import type { ContentLimits } from '../limits.ts';
import type { ContentFamily } from '../sniff.ts';
import { loadMusicMetadata, loadSharp } from '../libraries.ts';

export interface MediaFacts {
  dimensions?: { width: number; height: number };
  /** Seconds. */
  duration?: number;
  page_count?: number;
}

/** Image types sharp (libvips) reads: these get dimensions and renditions, and fail when broken. */
export const RENDERABLE_IMAGES = new Set([
  'image/jpeg',
  'image/png',
  'image/webp',
  'image/gif',
  'image/tiff',
  'image/avif',
  'image/heif',
  'image/svg+xml',
]);

export async function probeMedia(
  family: ContentFamily,
  mime: string,
  bytes: Uint8Array,
  limits: ContentLimits,
): Promise<MediaFacts> {
  if (family === 'image') return RENDERABLE_IMAGES.has(mime) ? imageFacts(bytes, limits) : {};
  if (family === 'audio' || family === 'video') return timedFacts(mime, bytes);
  return {};
}

async function imageFacts(bytes: Uint8Array, limits: ContentLimits): Promise<MediaFacts> {
  let md: Metadata;
  try {
    const sharp = await loadSharp();
    md = await sharp(bytes, { limitInputPixels: limits.maxImagePixels, failOn: 'error' }).metadata();
  } catch (err) {
    if (/pixel limit/i.test((err as Error).message)) {
      throw new ContentError(
        'pixel_limit',
        `the image has more pixels than the limit of ${limits.maxImagePixels} (ORRERY_CONTENT_MAX_PIXELS)`,
      );
    }
    throw new ContentError('corrupt_file', `the image could not be read: ${(err as Error).message}`);
  }
  if (!md.width || !md.height) throw new ContentError('corrupt_file', 'the image has no dimensions');
  checkPixels(md.width, md.height, limits);
  // EXIF orientations 5 to 8 turn the picture a quarter: what a viewer shows is height × width.
  const turned = (md.orientation ?? 1) >= 5;
  const dimensions = turned ? { width: md.height, height: md.width } : { width: md.width, height: md.height };
  return { dimensions, ...(md.pages && md.pages > 1 ? { page_count: md.pages } : {}) };
}

function checkPixels(width: number, height: number, limits: ContentLimits): void {
  if (width * height > limits.maxImagePixels) {
    throw new ContentError(
      'pixel_limit',
      `the image is ${width} × ${height} = ${width * height} pixels, more than the limit of ${limits.maxImagePixels} (ORRERY_CONTENT_MAX_PIXELS)`,
    );
  }
}

async function timedFacts(mime: string, bytes: Uint8Array): Promise<MediaFacts> {
  try {
    const { parseBuffer } = await loadMusicMetadata();
    const md = await parseBuffer(
      bytes,
      { mimeType: mime, size: bytes.byteLength },
      { duration: true, skipCovers: true },
    );
    const out: MediaFacts = {};
    if (typeof md.format.duration === 'number' && Number.isFinite(md.format.duration))
      out.duration = md.format.duration;
    const video = md.format.trackInfo?.find((t) => t.video?.pixelWidth && t.video?.pixelHeight)?.video;
    if (video) out.dimensions = { width: video.pixelWidth!, height: video.pixelHeight! };
    return out;
  } catch {
    // A container music-metadata does not know: no duration, not a failure of the object.
    return {};
  }
}
