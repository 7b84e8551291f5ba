/**
 * The bound on what a run or an object stores inline as JSON (a run's data and result, an object's
 * properties): those documents are read by every JSON query over their table, so one very large
 * value makes all of them slow for the whole project. Measured as the bytes of the JSON text.
 */
import { PayloadTooLarge } from '../util/errors.ts';

const INLINE_JSON_VARIABLE = 'ORRERY_MAX_INLINE_JSON';
export const DEFAULT_MAX_INLINE_JSON = 1024 ** 2;

/** Throws a 413 naming `field`, the bound and its variable when `value`'s JSON text is over `limit` bytes. */
export function checkInlineJson(value: unknown, field: string, limit: number = DEFAULT_MAX_INLINE_JSON): void {
  if (value === undefined || value === null) return;
  // A string's UTF-8 bytes are at most 3 per UTF-16 unit: most values need no stringify at all.
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? '');
  if (text.length * 3 <= limit) return;
  const size = Buffer.byteLength(typeof value === 'string' ? JSON.stringify(value) : text, 'utf8');
  if (size <= limit) return;
  throw new PayloadTooLarge(
    `${field} is ${size} bytes of JSON, over the limit of ${limit} bytes for what is stored inline (${INLINE_JSON_VARIABLE}); store large content as a file (POST /api/v1/objects/upload-url) and pass its reference`,
    { field, size, limit, variable: INLINE_JSON_VARIABLE },
  );
}
