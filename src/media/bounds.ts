/** The bounds of media inputs (ORRERY_MEDIA_*), checked before a provider is called. */
export interface MediaBounds {
  /** Bytes of an image input at most (ORRERY_MEDIA_MAX_BYTES). */
  maxBytes: number;
  /** Pixels (width × height) of an image input at most (ORRERY_MEDIA_MAX_PIXELS). */
  maxPixels: number;
  /** Bytes of a PDF input at most (ORRERY_MEDIA_MAX_PDF_BYTES). */
  maxPdfBytes: number;
  /** Pages of a PDF input at most (ORRERY_MEDIA_MAX_PDF_PAGES). */
  maxPdfPages: number;
  /** Longest read of an `https` input Orrery fetches, in milliseconds (ORRERY_MEDIA_FETCH_TIMEOUT, seconds). */
  fetchTimeoutMs?: number;
}

export const DEFAULT_MEDIA_BOUNDS: MediaBounds = {
  maxBytes: 50 * 1024 ** 2,
  maxPixels: 40_000_000,
  maxPdfBytes: 32 * 1024 ** 2,
  maxPdfPages: 100,
  fetchTimeoutMs: 30_000,
};
