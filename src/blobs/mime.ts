/** MIME type from a file name: mime-types, plus the few extensions it does not know. */
import mime from 'mime-types';
import { table } from '../util/own.ts';

const EXTRA: Record<string, string> = table({
  jsonl: 'application/x-ndjson',
  ndjson: 'application/x-ndjson',
});

export const OCTET_STREAM = 'application/octet-stream';

export function mimeOf(name: string): string | undefined {
  const ext = name.slice(name.lastIndexOf('.') + 1).toLowerCase();
  if (name.includes('.') && EXTRA[ext]) return EXTRA[ext];
  return mime.lookup(name) || undefined;
}

/** The media type without parameters, lower-cased: `Text/Plain; charset=x` → `text/plain`. */
export const bareType = (t: string): string => t.split(';', 1)[0].trim().toLowerCase();
