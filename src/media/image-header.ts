/**
 * The type and dimensions of an image read from its first bytes (PNG, JPEG, GIF, WebP), without
 * decoding it: enough to check the bounds in the server's process. Bytes that are none of these
 * answer undefined.
 */
export interface ImageHeader {
  media_type: 'image/png' | 'image/jpeg' | 'image/gif' | 'image/webp';
  width: number;
  height: number;
}

const ascii = (b: Uint8Array, at: number, n: number) => Buffer.from(b.subarray(at, at + n)).toString('latin1');

export function readImageHeader(b: Uint8Array): ImageHeader | undefined {
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  if (b.length >= 24 && ascii(b, 1, 3) === 'PNG' && ascii(b, 12, 4) === 'IHDR')
    return dims('image/png', v.getUint32(16), v.getUint32(20));
  if (b.length >= 10 && ascii(b, 0, 4) === 'GIF8') return dims('image/gif', v.getUint16(6, true), v.getUint16(8, true));
  if (b.length >= 30 && ascii(b, 0, 4) === 'RIFF' && ascii(b, 8, 4) === 'WEBP') return webp(b, v);
  if (b.length >= 4 && b[0] === 0xff && b[1] === 0xd8) return jpeg(b, v);
  return undefined;
}

const dims = (media_type: ImageHeader['media_type'], width: number, height: number): ImageHeader | undefined =>
  width > 0 && height > 0 ? { media_type, width, height } : undefined;

function webp(b: Uint8Array, v: DataView): ImageHeader | undefined {
  const chunk = ascii(b, 12, 4);
  if (chunk === 'VP8X')
    return dims('image/webp', 1 + (v.getUint32(24, true) & 0xffffff), 1 + (v.getUint32(27, true) & 0xffffff));
  if (chunk === 'VP8L') {
    const bits = v.getUint32(21, true);
    return dims('image/webp', 1 + (bits & 0x3fff), 1 + ((bits >> 14) & 0x3fff));
  }
  if (chunk === 'VP8 ') return dims('image/webp', v.getUint16(26, true) & 0x3fff, v.getUint16(28, true) & 0x3fff);
  return undefined;
}

/** Walks the JPEG markers to the first start-of-frame (SOF0–SOF15 but DHT, JPG and DAC). */
function jpeg(b: Uint8Array, v: DataView): ImageHeader | undefined {
  let at = 2;
  while (at + 9 < b.length) {
    if (b[at] !== 0xff) return undefined;
    const marker = b[at + 1]!;
    if (marker === 0xff) {
      at++;
      continue;
    }
    const length = v.getUint16(at + 2);
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc)
      return dims('image/jpeg', v.getUint16(at + 7), v.getUint16(at + 5));
    if (length < 2) return undefined;
    at += 2 + length;
  }
  return undefined;
}

/** Image formats the providers are not sent as they are: converted (or, HEIC, refused) first. */
export type OtherImageType = 'image/tiff' | 'image/svg+xml' | 'image/avif' | 'image/heic';

/** TIFF, SVG, AVIF or HEIC by their first bytes; undefined for anything else. */
export function otherImageType(b: Uint8Array): OtherImageType | undefined {
  const head = ascii(b, 0, 4);
  if (head === 'II*\0' || head === 'MM\0*') return 'image/tiff';
  if (b.length >= 12 && ascii(b, 4, 4) === 'ftyp') {
    const brand = ascii(b, 8, 4);
    if (brand === 'avif' || brand === 'avis') return 'image/avif';
    if (['heic', 'heix', 'heim', 'heis', 'hevc', 'hevx', 'mif1', 'msf1'].includes(brand)) return 'image/heic';
  }
  const text = ascii(b, 0, 1024)
    .replace(/^\uFEFF/, '')
    .trimStart();
  if ((text.startsWith('<?xml') || text.startsWith('<svg') || text.startsWith('<!--')) && /<svg[\s>]/.test(text))
    return 'image/svg+xml';
  return undefined;
}

/**
 * Whether the file ends where its format says it does (JPEG's end-of-image marker, PNG's IEND
 * chunk, GIF's trailer, WebP's RIFF size): a cheap test for a truncated upload, no decoding.
 */
export function isComplete(b: Uint8Array, type: ImageHeader['media_type']): boolean {
  const tail = Buffer.from(b.subarray(Math.max(0, b.length - 4096)));
  switch (type) {
    case 'image/jpeg':
      return tail.lastIndexOf(Buffer.from([0xff, 0xd9])) >= 0;
    case 'image/png':
      return tail.lastIndexOf('IEND', undefined, 'latin1') >= 0;
    case 'image/gif':
      return tail.subarray(-16).lastIndexOf(0x3b) >= 0;
    case 'image/webp':
      return new DataView(b.buffer, b.byteOffset, b.byteLength).getUint32(4, true) + 8 <= b.length;
  }
}

/** Whether the image is animated (APNG, an animated GIF or WebP): only its first frame is sent. */
export function isAnimated(b: Uint8Array, type: ImageHeader['media_type']): boolean {
  const buf = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  switch (type) {
    case 'image/png': {
      // acTL comes before the first IDAT in an APNG.
      const idat = buf.indexOf('IDAT', 8, 'latin1');
      const actl = buf.indexOf('acTL', 8, 'latin1');
      return actl >= 0 && (idat < 0 || actl < idat);
    }
    case 'image/gif': {
      // More than one graphic control extension: more than one frame.
      const gce = Buffer.from([0x21, 0xf9, 0x04]);
      const first = buf.indexOf(gce);
      return first >= 0 && buf.indexOf(gce, first + 3) >= 0;
    }
    case 'image/webp':
      return ascii(b, 12, 4) === 'VP8X' && (b[20]! & 0x02) !== 0;
    case 'image/jpeg':
      return false;
  }
}
