/**
 * The content libraries the main thread may use (sharp for image facts and renditions,
 * music-metadata for durations, file-type for sniffing), each loaded at its first use: a server
 * that never receives an image does not hold libvips and its tens of megabytes (bench/README.md,
 * footprint). The document extractors and renderers (pdf.js, mammoth, officeparser, canvas,
 * postal-mime, html-to-text) are loaded only in the content worker threads.
 */
type Sharp = typeof import('sharp').default;

let sharp: Promise<Sharp> | undefined;
let musicMetadata: Promise<typeof import('music-metadata')> | undefined;
let fileType: Promise<typeof import('file-type')> | undefined;

export const loadSharp = (): Promise<Sharp> => (sharp ??= import('sharp').then((m) => m.default));
export const loadMusicMetadata = (): Promise<typeof import('music-metadata')> => (musicMetadata ??= import('music-metadata'));
export const loadFileType = (): Promise<typeof import('file-type')> => (fileType ??= import('file-type'));
