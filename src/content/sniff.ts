/**
 * What a file really is, from its bytes first: file-type's magic numbers (PDF, OOXML and ODF
 * containers, images, audio, video, archives, RTF), then, for bytes without magic, whether they
 * are text and which kind (HTML, XML, JSON, e-mail, plain). The declared MIME type and the file
 * name only decide between kinds the bytes cannot tell apart (Markdown or CSV or plain text), and
 * never make a PNG a PDF or a PDF text.
 */
import { loadFileType } from './libraries.ts';
import { bareType, mimeOf, OCTET_STREAM } from '../blobs/mime.ts';
import { table } from '../util/own.ts';

export type ContentFamily =
  | 'pdf'
  | 'docx'
  | 'pptx'
  | 'xlsx'
  | 'odf'
  | 'rtf'
  | 'html'
  | 'eml'
  | 'text'
  | 'image'
  | 'audio'
  | 'video'
  | 'archive'
  | 'binary';

/** `metadata.type` of the interface (ContentNature). */
type ContentNature = 'document' | 'image' | 'audio' | 'video' | 'other';

export interface Sniffed {
  mime: string;
  family: ContentFamily;
  nature: ContentNature;
  /** What decided: the bytes' magic number, their text content, or the declared type or name. */
  method: 'magic' | 'text' | 'declared';
}

const FAMILY_BY_MIME: Record<string, ContentFamily> = table({
  'application/pdf': 'pdf',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'docx',
  'application/vnd.openxmlformats-officedocument.presentationml.presentation': 'pptx',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': 'xlsx',
  'application/vnd.oasis.opendocument.text': 'odf',
  'application/vnd.oasis.opendocument.spreadsheet': 'odf',
  'application/vnd.oasis.opendocument.presentation': 'odf',
  'application/rtf': 'rtf',
  'text/rtf': 'rtf',
  'text/html': 'html',
  'application/xhtml+xml': 'html',
  'message/rfc822': 'eml',
  'application/zip': 'archive',
  'application/gzip': 'archive',
  'application/x-tar': 'archive',
  'application/x-7z-compressed': 'archive',
  'application/x-rar-compressed': 'archive',
  'application/vnd.rar': 'archive',
  'application/x-bzip2': 'archive',
  'application/x-xz': 'archive',
  'application/zstd': 'archive',
});

const NATURE: Record<ContentFamily, ContentNature> = {
  pdf: 'document',
  docx: 'document',
  pptx: 'document',
  xlsx: 'document',
  odf: 'document',
  rtf: 'document',
  html: 'document',
  eml: 'document',
  text: 'document',
  image: 'image',
  audio: 'audio',
  video: 'video',
  archive: 'other',
  binary: 'other',
};

/** Types whose bytes are text that we keep as they are (plain, Markdown, CSV, JSON, XML, YAML, code). */
function isTextualType(mime: string | undefined): boolean {
  if (!mime) return false;
  return (
    mime.startsWith('text/') ||
    mime === 'application/json' ||
    mime === 'application/xml' ||
    mime === 'application/x-ndjson' ||
    mime === 'application/yaml' ||
    mime === 'application/x-yaml' ||
    mime === 'application/javascript' ||
    mime === 'message/rfc822' ||
    mime === 'application/xhtml+xml' ||
    mime.endsWith('+xml') ||
    mime.endsWith('+json')
  );
}

export function familyOf(mime: string): ContentFamily {
  const known = FAMILY_BY_MIME[mime];
  if (known) return known;
  if (mime.startsWith('image/')) return 'image';
  if (mime.startsWith('audio/')) return 'audio';
  if (mime.startsWith('video/')) return 'video';
  if (isTextualType(mime)) return 'text';
  return 'binary';
}

const classify = (mime: string, method: Sniffed['method']): Sniffed => {
  const family = familyOf(mime);
  return { mime, family, nature: NATURE[family], method };
};

export async function sniff(bytes: Uint8Array, declared?: string, name?: string): Promise<Sniffed> {
  const decl = declared ? bareType(declared) : undefined;
  const byName = name ? mimeOf(name) : undefined;
  // A prefix: enough for every signature (OOXML and ODF name themselves in their first entries),
  // and file-type never walks a hostile zip of a million entries on the main thread.
  const magic = bytes.length
    ? await (await loadFileType()).fileTypeFromBuffer(bytes.subarray(0, SNIFF_PREFIX)).catch(() => undefined)
    : undefined;
  if (magic) {
    // file-type calls every XML document application/xml; a more specific XML type given by the
    // caller (SVG, XHTML, a feed) is the same bytes described better.
    if (magic.mime === 'application/xml') {
      const better = [decl, byName].find((t) => t && (t.endsWith('+xml') || t === 'text/html' || t === 'text/xml'));
      if (better) return classify(better, 'declared');
    }
    // A zip that file-type could not place (a damaged office file, say) but that is declared or
    // named as a zip-based document is read as that document: its reader then judges it.
    if (magic.mime === 'application/zip') {
      const office = [decl, byName].find((t) => t && ['docx', 'pptx', 'xlsx', 'odf'].includes(familyOf(t)));
      if (office) return classify(office, 'declared');
    }
    return classify(magic.mime, 'magic');
  }
  if (looksLikeText(bytes)) {
    const head = decodeHead(bytes);
    const byContent = textKind(head);
    // Markup and e-mail are recognised from the text itself; otherwise a textual declared type
    // or extension decides between plain, Markdown, CSV, JSON and the like.
    if (byContent === 'text/html' || byContent === 'message/rfc822' || byContent === 'application/rtf') {
      const keep = [decl, byName].find((t) => t && familyOf(t) === familyOf(byContent));
      return classify(keep ?? byContent, 'text');
    }
    const stated = [decl, byName].find(
      (t) => t && t !== OCTET_STREAM && isTextualType(t) && familyOf(t) !== 'html' && familyOf(t) !== 'eml',
    );
    if (stated) return classify(stated, 'declared');
    return classify(byContent, 'text');
  }
  return { mime: OCTET_STREAM, family: 'binary', nature: 'other', method: 'magic' };
}

const SAMPLE = 8192;
const SNIFF_PREFIX = 4 * 1024 * 1024;

/** Text: a UTF-16 byte order mark, or no NUL byte and valid UTF-8 (or mostly printable 8-bit text). */
export function looksLikeText(bytes: Uint8Array): boolean {
  if (bytes.length === 0) return true;
  if ((bytes[0] === 0xff && bytes[1] === 0xfe) || (bytes[0] === 0xfe && bytes[1] === 0xff)) return true;
  const sample = bytes.subarray(0, SAMPLE);
  if (sample.includes(0)) return false;
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(sample, { stream: true });
    return true;
  } catch {
    let control = 0;
    for (const b of sample) if (b < 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d && b !== 0x0c) control++;
    return control / sample.length < 0.02;
  }
}

function decodeHead(bytes: Uint8Array): string {
  return decodeText(bytes.subarray(0, SAMPLE), true);
}

/**
 * Bytes as text: UTF-8 (byte order mark dropped), UTF-16 with a byte order mark, and bytes that
 * are not valid UTF-8 as Windows-1252, the usual legacy encoding.
 */
export function decodeText(bytes: Uint8Array, partial = false): string {
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return new TextDecoder('utf-16le').decode(bytes.subarray(2));
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return new TextDecoder('utf-16be').decode(bytes.subarray(2));
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes, { stream: partial });
  } catch {
    return new TextDecoder('windows-1252').decode(bytes);
  }
}

const HEADER_LINE =
  /^(from|to|cc|subject|date|received|return-path|message-id|mime-version|delivered-to|reply-to|x-[a-z-]+):[ \t]/i;

/** The kind of a text from its first characters. */
function textKind(head: string): string {
  const start = head.replace(/^\uFEFF/, '').trimStart();
  const lower = start.slice(0, 512).toLowerCase();
  if (lower.startsWith('{\\rtf')) return 'application/rtf';
  if (lower.startsWith('<!doctype html') || /^(<!--[\s\S]*?-->\s*)*<html[\s>]/.test(lower)) return 'text/html';
  if (lower.startsWith('<?xml')) return lower.includes('<html') ? 'application/xhtml+xml' : 'application/xml';
  if (looksLikeMail(start)) return 'message/rfc822';
  if ((start.startsWith('{') || start.startsWith('[')) && isJson(start)) return 'application/json';
  return 'text/plain';
}

/** An RFC 5322 message starts with header lines (two known ones at least) and then a blank line. */
function looksLikeMail(text: string): boolean {
  const lines = text.split(/\r?\n/);
  let known = 0;
  for (const line of lines.slice(0, 60)) {
    if (line === '') return known >= 2;
    if (HEADER_LINE.test(line)) known++;
    else if (!/^[\t ]/.test(line) && !/^[!-9;-~]+:/.test(line)) return false;
  }
  return false;
}

function isJson(text: string): boolean {
  if (text.length >= SAMPLE) return /^[[{]\s*["{[\d\-tfn\]}]/.test(text); // a prefix: a plausible start is enough
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
