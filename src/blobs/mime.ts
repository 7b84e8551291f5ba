/** MIME type from a file name: mime-types, plus the few extensions it does not know. */
import mime from 'mime-types';
import { table } from '../util/own.ts';

const EXTRA: Record<string, string> = table({
  jsonl: 'application/x-ndjson',
  ndjson: 'application/x-ndjson',
});

export const OCTET_STREAM = 'application/octet-stream';

/** The type an extension names; a name without one (`f`, `README`) names none. */
export function mimeOf(name: string): string | undefined {
  const base = name.slice(name.lastIndexOf('/') + 1);
  const dot = base.lastIndexOf('.');
  if (dot < 0) return undefined; // mime-types would read `f` as the extension .f (Fortran)
  const ext = base.slice(dot + 1).toLowerCase();
  return EXTRA[ext] ?? (mime.lookup(ext) || undefined);
}

/**
 * Types a browser shows without running anything: served inline. Every other type (HTML, SVG,
 * XML of any kind, XSL, scripts, unknown ones) is served as an attachment and sandboxed.
 */
const PASSIVE =
  /^(image\/(png|jpeg|gif|webp|avif|bmp|tiff|x-icon|vnd\.microsoft\.icon|heic|heif)|application\/pdf|audio\/[a-z0-9.+-]+|video\/[a-z0-9.+-]+|text\/plain|text\/csv|application\/json)$/;
export const isPassiveType = (type: string): boolean => PASSIVE.test(bareType(type));

/** The media type without parameters, lower-cased: `Text/Plain; charset=x` → `text/plain`. */
export const bareType = (t: string): string => t.split(';', 1)[0].trim().toLowerCase();
