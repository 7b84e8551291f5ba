/**
 * Converts an image input of a run to a form its provider takes, with sharp (libvips), in a
 * content worker process (never the server's event loop): the first frame of an animation, turned
 * upright, fitted in `maxSide` × `maxSide` (never enlarged), flattened on white and encoded as
 * JPEG q85, smaller again while it is over `maxBytes`. An SVG is rasterised only when it names no
 * external resource (librsvg would otherwise be asked to read files or URLs).
 */
import { ContentError } from '../errors.ts';
import { loadSharp } from '../libraries.ts';
import type { Converted, ConvertSpec } from './protocol.ts';

/** An attribute or CSS reference to anything but the document itself (`#id`) or inline data. */
const EXTERNAL_SVG_REF =
  /(?:\b(?:xlink:)?href|\bsrc)\s*=\s*["']\s*(?!#|data:)[^"'\s]|url\(\s*["']?\s*(?!#|data:)[^)"'\s]|@import\b|<!ENTITY[^>]*\bSYSTEM\b|<xi:include\b/i;

/** Re-encoding passes at most: each shrinks the long side to 3/4 when the JPEG is still too big. */
const SHRINK_PASSES = 6;

export async function convertImage(bytes: Uint8Array, spec: ConvertSpec): Promise<Converted> {
  if (spec.svg && EXTERNAL_SVG_REF.test(Buffer.from(bytes).toString('utf8')))
    throw new ContentError(
      'unsupported_file',
      'the SVG names an external resource (an href, src, url() or entity outside the file); only self-contained SVGs are rasterised',
    );
  const sharp = await loadSharp();
  try {
    const open = () =>
      sharp(bytes, { limitInputPixels: spec.maxPixels, failOn: 'error', animated: false, pages: 1, page: 0 });
    const meta = await open().metadata();
    if ((meta.width ?? 0) * (meta.height ?? 0) > spec.maxPixels)
      throw new ContentError('pixel_limit', `the image is ${meta.width}×${meta.height} pixels`);
    let side = spec.maxSide;
    for (let pass = 0; ; pass++) {
      const { data, info } = await open()
        .rotate()
        .resize({ width: side, height: side, fit: 'inside', withoutEnlargement: true })
        .flatten({ background: '#ffffff' })
        .jpeg({ quality: 85 })
        .toBuffer({ resolveWithObject: true });
      if (data.length <= spec.maxBytes || pass === SHRINK_PASSES)
        return { data, width: info.width, height: info.height, source: meta.format ?? 'unknown' };
      side = Math.floor(Math.max(info.width, info.height) * 0.75);
    }
  } catch (err) {
    if (err instanceof ContentError) throw err;
    const message = (err as Error).message;
    if (/pixel limit/i.test(message)) throw new ContentError('pixel_limit', 'the image has more pixels than the limit');
    throw new ContentError('corrupt_file', `the image could not be decoded: ${message}`);
  }
}
