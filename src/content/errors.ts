/**
 * Why processing an object failed, as `error.code` on the object (decisions.md: `{code, message,
 * step}`). These are verdicts on the file, never retried; anything else that goes wrong while
 * processing (the database, blob storage) is transient and the job is tried again.
 */
export type ContentErrorCode =
  | 'corrupt_file' // the bytes do not parse as the format they are
  | 'unsupported_file' // a variant the libraries cannot read (encrypted, an unknown compression)
  | 'page_limit' // more pages (or slides) than ORRERY_CONTENT_MAX_PAGES
  | 'decompressed_size_limit' // a zip-based file that would inflate past ORRERY_CONTENT_MAX_DECOMPRESSED
  | 'pixel_limit' // an image larger than ORRERY_CONTENT_MAX_PIXELS
  | 'size_limit' // a file larger than ORRERY_CONTENT_MAX_INPUT
  | 'step_timeout' // a step ran longer than ORRERY_CONTENT_STEP_TIMEOUT
  | 'memory_limit' // a parser went past the worker's memory limit
  | 'content_missing' // content.source names no stored bytes
  | 'internal'; // processing kept failing for a reason that is not the file's

export class ContentError extends Error {
  constructor(
    readonly code: ContentErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'ContentError';
  }
}

export const isContentError = (e: unknown): e is ContentError =>
  e instanceof ContentError ||
  (typeof e === 'object' &&
    e !== null &&
    (e as { name?: string }).name === 'ContentError' &&
    typeof (e as { code?: unknown }).code === 'string');
