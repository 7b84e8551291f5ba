/**
 * Zip containers (DOCX, XLSX, PPTX, ODF) are read from their central directory *before* any
 * library unpacks them: too many entries, a declared uncompressed total past the limit, an
 * encrypted entry or an unknown compression method is refused. Declared sizes can lie, so every
 * deflated entry is then inflated once with zlib capped at its declared size (`maxOutputLength`):
 * an entry that inflates past what it declares is a bomb, refused before a parser allocates it.
 */
import { inflateRawSync } from 'node:zlib';
import { ContentError } from '../errors.ts';
import { MAX_ZIP_ENTRIES } from '../limits.ts';

export interface ZipEntry {
  name: string;
  method: number;
  flags: number;
  compressedSize: number;
  size: number;
  localOffset: number;
}

const EOCD = 0x06054b50;
const ZIP64_LOCATOR = 0x07064b50;
const ZIP64_EOCD = 0x06064b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;
const MAX32 = 0xffffffff;

const corrupt = (why: string) => new ContentError('corrupt_file', `the file is not a readable zip container: ${why}`);

export function listZip(bytes: Uint8Array): ZipEntry[] {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buf.length < 22) throw corrupt('too short');
  let eocd = -1;
  for (let i = buf.length - 22; i >= Math.max(0, buf.length - 22 - 0xffff); i--) {
    if (buf.readUInt32LE(i) === EOCD) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw corrupt('no end of central directory (truncated?)');
  let count = buf.readUInt16LE(eocd + 10);
  let cdSize = buf.readUInt32LE(eocd + 12);
  let cdOffset = buf.readUInt32LE(eocd + 16);
  if (count === 0xffff || cdSize === MAX32 || cdOffset === MAX32) {
    const loc = eocd - 20;
    if (loc < 0 || buf.readUInt32LE(loc) !== ZIP64_LOCATOR) throw corrupt('zip64 locator missing');
    const at = Number(buf.readBigUInt64LE(loc + 8));
    if (at + 56 > buf.length || buf.readUInt32LE(at) !== ZIP64_EOCD) throw corrupt('zip64 directory missing');
    count = Number(buf.readBigUInt64LE(at + 32));
    cdSize = Number(buf.readBigUInt64LE(at + 40));
    cdOffset = Number(buf.readBigUInt64LE(at + 48));
  }
  if (count > MAX_ZIP_ENTRIES) {
    throw new ContentError(
      'decompressed_size_limit',
      `the zip container has ${count} entries, more than the ${MAX_ZIP_ENTRIES} allowed`,
    );
  }
  if (cdOffset + cdSize > buf.length) throw corrupt('central directory past the end of the file (truncated?)');
  const entries: ZipEntry[] = [];
  let p = cdOffset;
  for (let i = 0; i < count; i++) {
    if (p + 46 > buf.length || buf.readUInt32LE(p) !== CENTRAL)
      throw corrupt(`central directory entry ${i} is damaged`);
    const flags = buf.readUInt16LE(p + 8);
    const method = buf.readUInt16LE(p + 10);
    let compressedSize = buf.readUInt32LE(p + 20);
    let size = buf.readUInt32LE(p + 24);
    const nameLen = buf.readUInt16LE(p + 28);
    const extraLen = buf.readUInt16LE(p + 30);
    const commentLen = buf.readUInt16LE(p + 32);
    let localOffset = buf.readUInt32LE(p + 42);
    const name = buf.toString('utf8', p + 46, p + 46 + nameLen);
    // ZIP64 extra field: the 64-bit values of the fields that hold 0xFFFFFFFF, in this order.
    let e = p + 46 + nameLen;
    const extraEnd = e + extraLen;
    while (e + 4 <= extraEnd) {
      const id = buf.readUInt16LE(e);
      const len = buf.readUInt16LE(e + 2);
      if (id === 0x0001) {
        let q = e + 4;
        if (size === MAX32) {
          size = Number(buf.readBigUInt64LE(q));
          q += 8;
        }
        if (compressedSize === MAX32) {
          compressedSize = Number(buf.readBigUInt64LE(q));
          q += 8;
        }
        if (localOffset === MAX32) localOffset = Number(buf.readBigUInt64LE(q));
      }
      e += 4 + len;
    }
    entries.push({ name, method, flags, compressedSize, size, localOffset });
    p = extraEnd + commentLen;
  }
  return entries;
}

/** The compressed bytes of an entry (after its local header). */
function dataOf(buf: Buffer, entry: ZipEntry): Buffer {
  const at = entry.localOffset;
  if (at + 30 > buf.length || buf.readUInt32LE(at) !== LOCAL) throw corrupt(`local header of ${entry.name} is damaged`);
  const start = at + 30 + buf.readUInt16LE(at + 26) + buf.readUInt16LE(at + 28);
  const end = start + entry.compressedSize;
  if (end > buf.length) throw corrupt(`${entry.name} runs past the end of the file (truncated?)`);
  return buf.subarray(start, end);
}

function inflateEntry(buf: Buffer, entry: ZipEntry): Buffer {
  const data = dataOf(buf, entry);
  if (entry.method === 0) return data;
  try {
    return inflateRawSync(data, { maxOutputLength: Math.max(1, entry.size) });
  } catch (err) {
    if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE' || err instanceof RangeError) {
      throw new ContentError(
        'decompressed_size_limit',
        `zip entry ${entry.name} inflates past the ${entry.size} bytes it declares: a decompression bomb`,
      );
    }
    throw corrupt(`${entry.name} does not inflate (${(err as Error).message})`);
  }
}

/**
 * Refuses a container that would unpack past `maxBytes` or that a library could be fooled by.
 * Answers its entries.
 */
export function guardZip(bytes: Uint8Array, maxBytes: number): ZipEntry[] {
  const entries = listZip(bytes);
  let total = 0;
  for (const e of entries) {
    if (e.flags & 1)
      throw new ContentError(
        'unsupported_file',
        `zip entry ${e.name} is encrypted: password-protected documents cannot be read`,
      );
    if (e.method !== 0 && e.method !== 8)
      throw new ContentError(
        'unsupported_file',
        `zip entry ${e.name} uses compression method ${e.method}; only stored and deflate are read`,
      );
    total += e.size;
  }
  if (total > maxBytes) {
    throw new ContentError(
      'decompressed_size_limit',
      `the zip container would unpack to ${total} bytes, more than the limit of ${maxBytes} (ORRERY_CONTENT_MAX_DECOMPRESSED)`,
    );
  }
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (const e of entries) if (e.method === 8) inflateEntry(buf, e);
  return entries;
}

/** One entry's bytes (already guarded), or undefined when there is no such entry. */
export function readZipEntry(bytes: Uint8Array, entries: ZipEntry[], name: string): Buffer | undefined {
  const entry = entries.find((e) => e.name === name);
  if (!entry) return undefined;
  return inflateEntry(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), entry);
}
