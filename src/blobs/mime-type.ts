/**
 * A MIME type given by a client is later sent back as the Content-Type header of every download;
 * a control character (CR, LF, …) or a non-ASCII one there makes Node refuse the header, so each
 * download of the file would fail. Such a type is refused where it is taken.
 */
import { BadRequest } from '../util/errors.ts';

const MAX_MIME_TYPE_LENGTH = 255;

/** Printable ASCII only: what a header value may carry, and all a MIME type needs. */
const HEADER_SAFE = /^[\x20-\x7e]*$/;

export const isHeaderSafe = (value: string): boolean => HEADER_SAFE.test(value);

/** Throws a 400 naming `field` when `value` could not be sent back as a Content-Type header. */
export function checkMimeType(value: string, field: string): void {
  if (value.length > MAX_MIME_TYPE_LENGTH)
    throw new BadRequest(`${field} is at most ${MAX_MIME_TYPE_LENGTH} characters (a MIME type such as "text/plain")`);
  if (!isHeaderSafe(value)) {
    throw new BadRequest(
      `${field} ${JSON.stringify(value)} has a control or non-ASCII character (CR, LF, tab, …): give a plain MIME type such as "text/plain"`,
    );
  }
}
