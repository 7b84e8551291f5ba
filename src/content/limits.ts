/** Limits on the work spent on one object (all configurable: see config.ts and README.md). */
export interface ContentLimits {
  /** Pages of a PDF, slides of a presentation. */
  maxPages: number;
  /** Total uncompressed size of the entries of a zip-based file (DOCX, XLSX, PPTX, ODF). */
  maxDecompressedBytes: number;
  /** Width × height of an image (or of a rendered page). */
  maxImagePixels: number;
  /** Bytes of content read for processing at all. */
  maxInputBytes: number;
  /** Wall-clock time of one step. */
  stepTimeoutMs: number;
  /** JS heap of one content worker process, in MB. */
  workerMemoryMb: number;
}

/** Entries of a zip container: far above any real document, far below a hostile archive. */
export const MAX_ZIP_ENTRIES = 20_000;
