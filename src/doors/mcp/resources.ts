/**
 * The door's resources: `orrery://objects/<id>` (the object's text, and its renditions as
 * images) and `orrery://runs/<id>` (the run as JSON), read through the features' services in the
 * caller's project only; another project's id names nothing here. Every read is bounded
 * (docs/reference/limits.md).
 */
import type { Readable } from 'node:stream';
import type { ReadResourceResult, Resource } from '@modelcontextprotocol/sdk/types.js';
import { scopeOf, type Principal, type Scope } from '../../auth/principal.ts';
import { can } from '../../auth/permissions.ts';
import type { ObjectService } from '../../objects/service.ts';
import type { ObjectListing } from '../../objects/listing.ts';
import type { ObjectRecord } from '../../objects/model.ts';
import type { RunService } from '../../runs/service.ts';
import { NotFound } from '../../util/errors.ts';
import { runJson } from './run-tools.ts';
import { objectUri, parseUri, runUri } from './uris.ts';
import { McpRefusal } from './errors.ts';

export interface ResourceReads {
  objects: Pick<ObjectService, 'get' | 'text' | 'renditions'>;
  listing: Pick<ObjectListing, 'search'>;
  runs: Pick<RunService, 'get'>;
  blobs: {
    keyOf(s: Scope, ref: string, field: string, notFound: () => Error): string;
    read(s: Scope, key: string): Promise<Readable>;
  };
}

/** An object's text as a resource, at most this many characters. */
const MAX_RESOURCE_TEXT = 1_000_000;
/** A run's JSON as a resource, at most. */
const MAX_RESOURCE_RUN = 1_000_000;
/** Renditions answered with an object, and the bytes of each. */
const MAX_RENDITIONS = 4;
const MAX_RENDITION_BYTES = 5 * 1024 * 1024;
/** Objects listed per resources/list page, and how deep the pages go. */
const PAGE = 100;
const MAX_LIST_OFFSET = 10_000;

type Contents = ReadResourceResult['contents'];

/** resources/list: the project's objects, newest first, a page at a time (`cursor`: the next page's offset). */
export async function listResources(
  reads: ResourceReads,
  p: Principal,
  offset: number,
): Promise<{ resources: Resource[]; next?: number }> {
  if (!can(p.role, 'content:read')) return { resources: [] };
  const found = await reads.listing.search(p, { limit: PAGE, offset });
  const resources = found.results
    .filter((r) => r.id)
    .map((r) => ({
      uri: objectUri(r.id!),
      name: r.name || r.id!,
      mimeType: 'text/plain',
      ...(r.description ? { description: r.description.slice(0, 1000) } : {}),
    }));
  const next = offset + PAGE;
  return { resources, ...(resources.length === PAGE && next <= MAX_LIST_OFFSET ? { next } : {}) };
}

/** resources/read: what the URI names, or a refusal in MCP's terms (an unknown URI, a missing resource, a role). */
export async function readResource(reads: ResourceReads, p: Principal, uri: string): Promise<ReadResourceResult> {
  const parsed = parseUri(uri);
  if (typeof parsed === 'string') throw McpRefusal.invalidParams(parsed);
  const permission = parsed.kind === 'objects' ? 'content:read' : 'run:read';
  if (!can(p.role, permission))
    throw McpRefusal.forbidden(
      `this key's role (${p.role}) does not have the permission ${permission}, which ${uri} needs`,
    );
  try {
    return {
      contents:
        parsed.kind === 'objects' ? await objectContents(reads, p, parsed.id) : await runContents(reads, p, parsed.id),
    };
  } catch (err) {
    if (err instanceof NotFound || (err as { status?: number }).status === 404)
      throw McpRefusal.notFound(
        uri,
        `${parsed.kind === 'objects' ? 'object' : 'run'} ${parsed.id} not found in this project`,
      );
    throw err;
  }
}

async function runContents(reads: ResourceReads, p: Principal, id: string): Promise<Contents> {
  const run = await reads.runs.get(p, id);
  return [{ uri: runUri(id), mimeType: 'application/json', text: runJson(run, MAX_RESOURCE_RUN) }];
}

async function objectContents(reads: ResourceReads, p: Principal, id: string): Promise<Contents> {
  const { record } = await reads.objects.get(p, id);
  // A rendition's id (as an object's contents name it) reads as its image.
  if (isRendition(record)) return [await imageOf(reads, p, record as ObjectRecord)];
  const { text } = await reads.objects.text(p, id);
  const contents: Contents = [
    {
      uri: objectUri(id),
      mimeType: 'text/plain',
      text:
        text === undefined || text === ''
          ? `[${record.name ?? id}: no extracted text${record.status === 'ready' || record.status === 'failed' ? '' : ' yet (its content is being processed)'}]`
          : text.length > MAX_RESOURCE_TEXT
            ? `${text.slice(0, MAX_RESOURCE_TEXT)}\n[cut at ${MAX_RESOURCE_TEXT} of ${text.length} characters: the read_object tool reads the rest]`
            : text,
    },
  ];
  const renditions = (await reads.objects.renditions(p, id)).filter((r) => r.content?.type?.startsWith('image/'));
  for (const r of renditions.slice(0, MAX_RENDITIONS)) contents.push(await imageOf(reads, p, r));
  return contents;
}

const isRendition = (r: Partial<ObjectRecord>): boolean =>
  typeof r.parent === 'object' && r.parent !== null && typeof r.properties?.rendition === 'string';

async function imageOf(reads: ResourceReads, p: Principal, r: ObjectRecord): Promise<Contents[number]> {
  const s = scopeOf(p);
  const source = r.content?.source;
  if (!source) throw new NotFound('rendition', r.id);
  const key = reads.blobs.keyOf(s, source, 'rendition', () => new NotFound('rendition', r.id));
  const bytes = await readBounded(await reads.blobs.read(s, key), MAX_RENDITION_BYTES);
  if (!bytes)
    return {
      uri: objectUri(r.id),
      mimeType: 'text/plain',
      text: `[rendition ${r.name}: larger than ${MAX_RENDITION_BYTES} bytes; download it with POST /api/v1/objects/download-url]`,
    };
  return { uri: objectUri(r.id), mimeType: r.content!.type, blob: bytes.toString('base64') };
}

/** The stream's bytes, or undefined past `limit` (the stream is then destroyed). */
async function readBounded(stream: Readable, limit: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      stream.destroy();
      return undefined;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}
