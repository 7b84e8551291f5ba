/**
 * Draws renditions with sharp (libvips), in a content worker process: the source (an image, or a
 * PDF's first page drawn by pdf.js) is turned upright, fitted in `maxHw` × `maxHw` (never
 * enlarged) and encoded as JPEG, PNG or WebP. `lap` is called after each phase, so that each
 * (drawing the page, fitting, each encoding) gets its own deadline from the pool.
 */
import { ContentError } from '../errors.ts';
import type { ContentLimits } from '../limits.ts';
import { loadSharp } from '../libraries.ts';
import { renderPdfPage } from '../extract/pdf-render.ts';
import type { DrawSpec, Drawn } from './protocol.ts';

export async function drawRenditions(
  family: 'image' | 'pdf',
  bytes: Uint8Array,
  specs: DrawSpec[],
  limits: ContentLimits,
  lap: () => void,
): Promise<Drawn[]> {
  const largest = Math.max(...specs.map((r) => r.maxHw));
  let source = bytes;
  if (family === 'pdf') {
    source = (await renderPdfPage(bytes, 1, largest, limits)).png;
    lap();
  }
  const sharp = await loadSharp();
  const open = () => sharp(source, { limitInputPixels: limits.maxImagePixels, failOn: 'error', animated: false });
  try {
    // Decode the source once (a 50-megapixel image is slow to decode): every rendition is made
    // from an upright copy already fitted to the largest size asked, kept as a lossless PNG (alpha kept).
    let fitted: Buffer | null = null;
    if (specs.length > 1) {
      fitted = await open()
        .rotate()
        .resize({ width: largest, height: largest, fit: 'inside', withoutEnlargement: true })
        .png({ compressionLevel: 1 })
        .toBuffer();
      lap();
    }
    const out: Drawn[] = [];
    for (const spec of specs) {
      let img = fitted ? sharp(fitted, { limitInputPixels: limits.maxImagePixels, failOn: 'error' }) : open().rotate();
      img = img.resize({ width: spec.maxHw, height: spec.maxHw, fit: 'inside', withoutEnlargement: true });
      if (spec.format === 'jpeg') img = img.flatten({ background: '#ffffff' }).jpeg({ quality: 82 });
      else if (spec.format === 'png') img = img.png();
      else img = img.webp({ quality: 80 });
      const { data, info } = await img.toBuffer({ resolveWithObject: true });
      out.push({ data, width: info.width, height: info.height });
      lap();
    }
    return out;
  } catch (err) {
    if (err instanceof ContentError) throw err;
    const message = (err as Error).message;
    if (/pixel limit/i.test(message))
      throw new ContentError(
        'pixel_limit',
        `the image has more pixels than the limit of ${limits.maxImagePixels} (ORRERY_CONTENT_MAX_PIXELS)`,
      );
    throw new ContentError('corrupt_file', `the image could not be decoded: ${message}`);
  }
}
