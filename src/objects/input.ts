/**
 * Validation of create/update payloads into column values. Only the fields present in the
 * input appear in the result (an update changes the given fields only); references (type,
 * parent, run, content.source) are checked against the caller's project. `embeddings` is no
 * column: the object service hands it to embeddings (embeddings-hook.ts).
 */
import { createHash } from 'node:crypto';
import type { Scope } from '../auth/principal.ts';
import { BadRequest, NotFound } from '../util/errors.ts';
import type { BlobService } from '../blobs/blob-service.ts';
import { checkMimeType } from '../blobs/mime-type.ts';
import { checkInlineJson } from '../limits/inline-json.ts';
import { OBJECT_STATUSES, type ContentSource, type ObjectInput, type ObjectRow } from './model.ts';

export type ObjectPatch = Partial<
  Omit<
    ObjectRow,
    'id' | 'account_id' | 'project_id' | 'etag' | 'created_by' | 'created_at' | 'updated_by' | 'updated_at'
  >
>;

export interface InputContext {
  scope: Scope;
  blobs: BlobService;
  resolveType: (idOrName: string) => Promise<{ id: string }>;
  parentExists: (id: string) => Promise<boolean>;
  runExists?: (id: string) => Promise<boolean>;
  /** The object being updated (a parent may not be the object itself). */
  selfId?: string;
  /** Largest `properties`, in bytes of JSON. */
  maxInlineJson?: number;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

export async function patchOf(input: ObjectInput, ctx: InputContext, mode: 'create' | 'update'): Promise<ObjectPatch> {
  const out: ObjectPatch = {};
  const has = (k: keyof ObjectInput) => input[k] !== undefined;
  checkInlineJson(input.properties, 'properties', ctx.maxInlineJson);

  if (has('name')) {
    const name = typeof input.name === 'string' ? input.name.trim() : '';
    if (!name) throw new BadRequest('name must be a non-empty string');
    out.name = name;
  }
  if (has('description')) out.description = input.description ?? null;
  if (has('tags')) out.tags = [...new Set((input.tags ?? []).map((t) => String(t).trim()).filter(Boolean))];
  if (has('type')) out.type_id = input.type ? (await ctx.resolveType(input.type)).id : null;
  if (has('external_id')) out.external_id = input.external_id ?? null;
  if (has('properties')) {
    if (input.properties !== null && !isPlainObject(input.properties))
      throw new BadRequest('properties must be an object');
    out.properties = input.properties ?? {};
  }
  if (has('metadata')) {
    if (input.metadata !== null && !isPlainObject(input.metadata)) throw new BadRequest('metadata must be an object');
    out.metadata = input.metadata ?? null;
  }
  if (has('tokens')) out.tokens = input.tokens ?? null;
  if (has('run')) {
    if (input.run && ctx.runExists && !(await ctx.runExists(input.run))) throw new NotFound('run', input.run);
    out.run_id = input.run ?? null;
  }
  if (has('parent')) {
    if (input.parent) {
      if (input.parent === ctx.selfId) throw new BadRequest('an object cannot be its own parent');
      if (!(await ctx.parentExists(input.parent))) throw new NotFound('object', input.parent);
    }
    out.parent_id = input.parent || null;
  }
  if (has('location')) out.location = locationOf(input.location);
  if (has('status') && mode === 'update') {
    if (!(OBJECT_STATUSES as readonly string[]).includes(input.status as string)) {
      throw new BadRequest(`status must be one of ${OBJECT_STATUSES.join(', ')}, got ${JSON.stringify(input.status)}`);
    }
    out.status = input.status;
  }
  if (has('text') || has('text_etag')) {
    if (has('text')) out.text = input.text ?? null;
    const text = has('text') ? input.text : undefined;
    out.text_etag = input.text_etag ?? (typeof text === 'string' ? sha256(text) : null);
  }
  if (has('ttl')) out.expires_at = input.ttl ? new Date(Date.now() + input.ttl * 1000).toISOString() : null;
  if (has('parts')) out.parts = input.parts ?? null;
  if (has('transcript')) out.transcript = input.transcript ?? null;
  if (has('content')) {
    const content = await contentOf(input.content ?? null, ctx);
    out.content = content;
    out.content_source = content?.source ?? null;
  }
  return out;
}

/**
 * `content.source` must name an uploaded blob of the project; it is stored as the storage URI,
 * with the blob's real ETag, and its MIME type when none was given.
 */
async function contentOf(content: ContentSource | null, ctx: InputContext): Promise<ContentSource | null> {
  if (content === null) return null;
  if (!isPlainObject(content)) throw new BadRequest('content must be an object {source, type, name, etag}');
  const out: ContentSource = {};
  for (const k of ['source', 'type', 'name', 'etag'] as const) {
    const v = content[k];
    if (v !== undefined && v !== null && typeof v !== 'string') throw new BadRequest(`content.${k} must be a string`);
    if (typeof v === 'string' && v.trim()) out[k] = v.trim();
  }
  if (out.type) checkMimeType(out.type, 'content.type');
  if (out.source) {
    const blob = await ctx.blobs.find(ctx.scope, out.source, 'content.source');
    if (!blob) {
      throw new BadRequest(
        `content.source ${JSON.stringify(out.source)} is not an uploaded file of this project: upload it first (POST /api/v1/objects/upload-url, then PUT the bytes) and pass the returned id`,
      );
    }
    out.source = blob.uri;
    out.etag = blob.row.etag;
    out.type ??= blob.row.content_type;
    out.name ??= blob.row.name;
  }
  return Object.keys(out).length ? out : null;
}

/** `a/b/` → `/a/b`; empty → `/`. Stored locations and the location filter both go through it. */
export function locationOf(location: string | null | undefined): string {
  if (location === null || location === undefined || location.trim() === '') return '/';
  let l = location.trim();
  if (!l.startsWith('/')) l = `/${l}`;
  if (l.length > 1) l = l.replace(/\/+$/, '');
  if (/\/\//.test(l)) throw new BadRequest(`location must be a path like /a/b, got ${JSON.stringify(location)}`);
  return l;
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
