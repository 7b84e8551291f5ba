/**
 * The content libraries loaded at their first use: sharp (image facts and renditions) and
 * music-metadata (durations) in the content worker processes only (worker/pool.ts), so the server
 * never maps libvips; file-type (sniffing) in the server. A worker process that only reads
 * documents does not load sharp either. The document extractors and renderers (pdf.js, mammoth,
 * officeparser, canvas, postal-mime, html-to-text) are loaded only in the worker processes too.
 */
type Sharp = typeof import('sharp').default;

let sharp: Promise<Sharp> | undefined;
let musicMetadata: Promise<typeof import('music-metadata')> | undefined;
let fileType: Promise<typeof import('file-type')> | undefined;

export const loadSharp = (): Promise<Sharp> => (sharp ??= import('sharp').then((m) => m.default));
export const loadMusicMetadata = (): Promise<typeof import('music-metadata')> =>
  (musicMetadata ??= import('music-metadata'));
export const loadFileType = (): Promise<typeof import('file-type')> => (fileType ??= import('file-type'));
