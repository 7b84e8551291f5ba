/**
 * The file a built HNSW graph is saved in, with everything needed to answer from it without
 * reading the partition from the database:
 *
 *   "ORRVGRF1" | u32 LE header length | header (JSON, GraphHeader)
 *   | owners (JSON array: slot → owner id, null for a free slot) | vectors (f32 LE, slots × dimensions)
 *   | the usearch graph (its own `save` format; keys are slots) | SHA-256 of every byte before it (32 bytes)
 *
 * Written as one stream (a temporary file renamed, or one S3 object), read as one stream: the
 * checksum is checked before anything read is used, and any mismatch (magic, lengths, checksum,
 * trailing bytes) is a GraphFileInvalid, so the graph is rebuilt, never trusted.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { Readable } from 'node:stream';

export type ScalarKind = 'f32' | 'f16' | 'i8';

const MAGIC = Buffer.from('ORRVGRF1');
const CHUNK = 4 * 1024 * 1024;

export interface GraphHeader {
  format: 1;
  /** partitionId(): project | owner kind | type | model. */
  partition: string;
  project: string;
  kind: string;
  type: string;
  model: string;
  dimensions: number;
  scalar: ScalarKind;
  connectivity: number;
  expansionAdd: number;
  /** Every vector write up to this revision is in the file; later ones are replayed on load. */
  revision: number;
  /** Owners (non-null slots), and slots (the owners array's length). */
  count: number;
  slots: number;
  ownersBytes: number;
  graphBytes: number;
  savedAt: string;
}

export class GraphFileInvalid extends Error {
  constructor(why: string) {
    super(`saved vector graph rejected: ${why}`);
    this.name = 'GraphFileInvalid';
  }
}

export interface GraphFileParts {
  header: Omit<GraphHeader, 'format' | 'ownersBytes' | 'graphBytes' | 'count' | 'slots'>;
  owners: ReadonlyArray<string | null>;
  /** At least owners.length × dimensions floats. */
  data: Float32Array;
  /** The usearch graph saved by the build worker. */
  graphPath: string;
  graphBytes: number;
}

/** The file as a stream (its bytes are produced as it is read). */
export function graphFileStream(p: GraphFileParts): Readable {
  const owners = Buffer.from(JSON.stringify(p.owners));
  const header: GraphHeader = {
    format: 1,
    ...p.header,
    count: p.owners.reduce((n, o) => n + (o === null ? 0 : 1), 0),
    slots: p.owners.length,
    ownersBytes: owners.length,
    graphBytes: p.graphBytes,
  };
  const headerBytes = Buffer.from(JSON.stringify(header));
  const len = Buffer.alloc(4);
  len.writeUInt32LE(headerBytes.length);
  const vectorBytes = p.owners.length * p.header.dimensions * 4;
  async function* parts(): AsyncGenerator<Buffer> {
    const hash = createHash('sha256');
    const out = (b: Buffer) => {
      hash.update(b);
      return b;
    };
    yield out(MAGIC);
    yield out(len);
    yield out(headerBytes);
    yield out(owners);
    const bytes = new Uint8Array(p.data.buffer, p.data.byteOffset, vectorBytes);
    // Copies: the live buffer keeps changing (a write after the save is replayed on load).
    for (let i = 0; i < vectorBytes; i += CHUNK)
      yield out(Buffer.from(bytes.slice(i, Math.min(vectorBytes, i + CHUNK))));
    let graphRead = 0;
    for await (const chunk of createReadStream(p.graphPath, { highWaterMark: CHUNK })) {
      graphRead += (chunk as Buffer).length;
      yield out(chunk as Buffer);
    }
    if (graphRead !== p.graphBytes)
      throw new Error(`the graph file changed while it was saved (${graphRead} of ${p.graphBytes} bytes)`);
    yield hash.digest();
  }
  return Readable.from(parts(), { objectMode: false });
}

/** Reads exact byte counts off a stream of chunks. */
class ByteReader {
  private buf: Buffer = Buffer.alloc(0);
  private readonly it: AsyncIterator<Buffer>;
  readonly hash = createHash('sha256');

  constructor(body: AsyncIterable<Buffer>) {
    this.it = body[Symbol.asyncIterator]();
  }

  private async fill(): Promise<boolean> {
    const r = await this.it.next();
    if (r.done) return false;
    this.buf = this.buf.length ? Buffer.concat([this.buf, r.value]) : Buffer.from(r.value);
    return true;
  }

  /** Exactly `n` bytes (hashed unless `raw`). */
  async take(n: number, raw = false): Promise<Buffer> {
    while (this.buf.length < n) if (!(await this.fill())) throw new GraphFileInvalid('truncated');
    const out = this.buf.subarray(0, n);
    this.buf = this.buf.subarray(n);
    if (!raw) this.hash.update(out);
    return out;
  }

  /** The next `n` bytes in pieces (hashed). */
  async *pieces(n: number): AsyncGenerator<Buffer> {
    let left = n;
    while (left > 0) {
      if (!this.buf.length && !(await this.fill())) throw new GraphFileInvalid('truncated');
      const piece = this.buf.subarray(0, Math.min(left, this.buf.length));
      this.buf = this.buf.subarray(piece.length);
      this.hash.update(piece);
      left -= piece.length;
      yield piece;
    }
  }

  async atEnd(): Promise<boolean> {
    return this.buf.length === 0 && !(await this.fill());
  }

  async close(): Promise<void> {
    await this.it.return?.();
  }
}

export interface ReadGraph {
  header: GraphHeader;
  owners: Array<string | null>;
  /** In a SharedArrayBuffer (the build worker's input), `capacity` slots long. */
  data: Float32Array;
  capacity: number;
}

/**
 * Reads and checks a saved graph: the graph part goes to `graphPath` (usearch loads from a
 * file), the rest into memory. `expect` checks the header before the big parts are read.
 */
export async function readGraphFile(
  body: AsyncIterable<Buffer>,
  graphPath: string,
  expect: (h: GraphHeader) => string | null,
): Promise<ReadGraph> {
  const r = new ByteReader(body);
  try {
    if (!(await r.take(MAGIC.length)).equals(MAGIC)) throw new GraphFileInvalid('not a vector graph file');
    const len = (await r.take(4)).readUInt32LE();
    if (len > 1 << 20) throw new GraphFileInvalid('header too long');
    let header: GraphHeader;
    try {
      header = JSON.parse((await r.take(len)).toString('utf8')) as GraphHeader;
    } catch {
      throw new GraphFileInvalid('header is not JSON');
    }
    if (header.format !== 1) throw new GraphFileInvalid(`format ${header.format}`);
    const problem = expect(header);
    if (problem) throw new GraphFileInvalid(problem);
    let owners: Array<string | null>;
    try {
      owners = JSON.parse((await r.take(header.ownersBytes)).toString('utf8')) as Array<string | null>;
    } catch {
      throw new GraphFileInvalid('owners are not JSON');
    }
    if (!Array.isArray(owners) || owners.length !== header.slots)
      throw new GraphFileInvalid('owners do not match the header');
    if (owners.reduce((n, o) => n + (o === null ? 0 : 1), 0) !== header.count)
      throw new GraphFileInvalid('count does not match the header');
    let capacity = 1024;
    while (capacity < header.slots) capacity *= 2;
    const data = new Float32Array(new SharedArrayBuffer(capacity * header.dimensions * 4));
    const bytes = new Uint8Array(data.buffer);
    let at = 0;
    for await (const piece of r.pieces(header.slots * header.dimensions * 4)) {
      bytes.set(piece, at);
      at += piece.length;
    }
    const file = await open(graphPath, 'w');
    try {
      for await (const piece of r.pieces(header.graphBytes)) await file.write(piece);
    } finally {
      await file.close();
    }
    const digest = r.hash.digest();
    if (!(await r.take(32, true)).equals(digest)) throw new GraphFileInvalid('checksum mismatch');
    if (!(await r.atEnd())) throw new GraphFileInvalid('trailing bytes');
    return { header, owners, data, capacity };
  } finally {
    await r.close();
  }
}
