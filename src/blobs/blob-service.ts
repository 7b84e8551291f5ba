/**
 * Uploaded content: signed upload and download URLs, the storage URIs that name blobs
 * (`local://<project id>/<key>`), the `blobs` table that tracks what was uploaded, and the
 * public side that receives and serves the bytes. A URI names a blob of one project only: the
 * bucket is the project id, and every lookup is scoped by it.
 */
import { Readable } from 'node:stream';
import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import { nowIso } from '../db/ids.ts';
import { scopeOf, type Principal, type Scope } from '../auth/principal.ts';
import { checkMimeType, isHeaderSafe } from './mime-type.ts';
import { can, requirePermission } from '../auth/permissions.ts';
import { BadRequest, Conflict, NotFound, PayloadTooLarge, UnsupportedMediaType } from '../util/errors.ts';
import { KeyLock } from './key-lock.ts';
import { BlobKeyConflict, BlobMissing, BlobTooLarge, canPresign, type BlobStore } from './blob-store.ts';
import {
  DERIVED_PREFIX,
  formatStorageUri,
  generatedKey,
  keyBaseName,
  keyProblem,
  parseStorageUri,
} from './blob-keys.ts';
import { bareType, isPassiveType, mimeOf, OCTET_STREAM } from './mime.ts';
import { parseRange } from './range.ts';
import type { SignedMethod, UrlSigner } from './url-signer.ts';
import {
  customMetadataOf,
  deleteBlobRow,
  getBlobRow,
  lockBlobRow,
  mergeCustomMetadata,
  upsertBlobRow,
  type BlobRow,
} from './store.ts';
import {
  DEFAULT_URL_TTL,
  MAX_FILE_PAGE,
  MAX_BULK_UPLOAD_URLS,
  MAX_CUSTOM_METADATA_KEYS,
  MAX_CUSTOM_METADATA_BYTES,
  MAX_URL_TTL,
  BlobServiceOptions,
  UploadUrlInput,
  DownloadUrlInput,
  FileUrl,
  FileMetadata,
  ReceivedBlob,
  BlobDownload,
  BlobAddress,
  CONTENT_PREFIX,
  ClaimedBlob,
  canonicalPath,
  blobUrlPath,
} from './model.ts';

// The service's types and URL helpers live in model.ts; importers take them from here too.
export * from './model.ts';

export class BlobService {
  private readonly keyLock = new KeyLock();

  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: OrreryDialect,
    readonly store: BlobStore,
    private readonly signer: UrlSigner,
    private readonly opts: BlobServiceOptions,
  ) {}

  get maxUploadBytes(): number {
    return this.opts.maxUploadBytes;
  }

  uriOf(s: Scope, key: string): string {
    return formatStorageUri({ scheme: this.store.scheme, bucket: s.project, key });
  }

  /**
   * The key named by `ref`: a storage URI of the caller's project, or a bare key (the files API
   * passes paths relative to the project). Another project's URI, or another scheme, names
   * nothing here: `notFound`. A malformed key is a 400.
   */
  keyOf(s: Scope, ref: string, field = 'file', notFound: () => Error = () => new NotFound('file', ref)): string {
    const uri = parseStorageUri(ref);
    let key: string;
    if (uri) {
      if (uri.scheme !== this.store.scheme || uri.bucket !== s.project) throw notFound();
      key = uri.key;
    } else {
      key = ref.replace(/^\/+/, '');
    }
    const problem = keyProblem(key);
    if (problem)
      throw new BadRequest(`${field} ${JSON.stringify(ref)} is not a valid storage URI or key: the key ${problem}`);
    return key;
  }

  async uploadUrl(p: Principal, input: UploadUrlInput): Promise<FileUrl> {
    const s = scopeOf(p);
    const name = input.name?.trim();
    if (!name) throw new BadRequest('body must have property "name" (the file name)');
    const key = input.id?.trim() ? this.keyOf(s, input.id.trim(), 'id') : generatedKey(name);
    if (key.startsWith(DERIVED_PREFIX))
      throw new BadRequest(
        `id: keys under ${JSON.stringify(DERIVED_PREFIX)} are kept for files the server makes (renditions)`,
      );
    if (input.mime_type) checkMimeType(input.mime_type.trim(), 'mime_type');
    // A URL for a key that holds a file overwrites it: that is a write, not a creation.
    if (input.id?.trim() && !can(p.role, 'content:write') && (await this.row(s, key))) {
      requirePermission(p.role, 'content:write', `an upload URL for the existing file ${JSON.stringify(key)}`);
    }
    const mimeType = input.mime_type?.trim() || mimeOf(name) || OCTET_STREAM;
    const ttl = ttlOf(input.ttl);
    if (canPresign(this.store)) {
      const url = await this.store.presign(this.physicalKey(s, key), {
        method: 'PUT',
        expiresInSeconds: ttl,
        contentType: mimeType,
        maxBytes: this.opts.maxUploadBytes,
      });
      return { url, id: this.uriOf(s, key), path: key, mime_type: mimeType };
    }
    const url = this.signedUrl('PUT', { project: s.project, key }, ttl, {
      a: s.account,
      max: String(this.opts.maxUploadBytes),
      name,
      type: mimeType,
    });
    return { url, id: this.uriOf(s, key), path: key, mime_type: mimeType };
  }

  async downloadUrl(p: Principal, input: DownloadUrlInput): Promise<FileUrl> {
    const s = scopeOf(p);
    const file = input.file?.trim();
    if (!file) throw new BadRequest('body must have property "file" (the storage URI from content.source)');
    const key = this.keyOf(s, file);
    const row = await this.row(s, key);
    if (!row) throw new NotFound('file', file);
    const ttl = ttlOf(input.ttl);
    const params: Record<string, string> = {};
    // S3 serves the bytes itself: a type that could run in a browser is always an attachment there.
    const forced = canPresign(this.store) && !isPassiveType(row.content_type);
    if (input.disposition || input.name || forced) {
      params.disposition = forced ? 'attachment' : (input.disposition ?? 'attachment');
      params.filename = input.name?.trim() || row.name;
    }
    const url = canPresign(this.store)
      ? await this.store.presign(this.physicalKey(s, key), {
          method: 'GET',
          expiresInSeconds: ttl,
          disposition: params.disposition && contentDisposition(params.disposition, params.filename),
        })
      : this.signedUrl('GET', { project: s.project, key }, ttl, params);
    return { url, id: this.uriOf(s, key), path: key, mime_type: row.content_type };
  }

  async metadata(p: Principal, file: string | undefined): Promise<FileMetadata> {
    const s = scopeOf(p);
    if (!file?.trim()) throw new BadRequest('query must have property "file" (a storage URI)');
    const key = this.keyOf(s, file.trim());
    const row = await this.row(s, key);
    if (!row) throw new NotFound('file', file);
    const custom = await customMetadataOf(this.db, this.dialect, s, key);
    return {
      name: row.name,
      size: row.size,
      contentType: row.content_type,
      etag: row.etag,
      ...(custom ? { customMetadata: custom } : {}),
    };
  }

  /**
   * `files.setFileMetadata`: merges string values into the file's custom metadata (a key set to
   * null is removed), as a cloud bucket's object metadata does; bounded like it.
   */
  async setMetadata(
    p: Principal,
    input: { file?: string; metadata?: Record<string, string | null> },
  ): Promise<{ success: true; file: string }> {
    const s = scopeOf(p);
    const file = input.file?.trim();
    if (!file) throw new BadRequest('body must have property "file" (a storage URI or a key of this project)');
    const key = this.keyOf(s, file);
    if (!(await this.row(s, key))) throw new NotFound('file', file);
    const merged = await mergeCustomMetadata(this.db, this.dialect, s, key, input.metadata ?? {}, (m) => {
      const size = Object.entries(m).reduce((n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(v), 0);
      if (Object.keys(m).length > MAX_CUSTOM_METADATA_KEYS)
        throw new BadRequest(
          `a file has at most ${MAX_CUSTOM_METADATA_KEYS} metadata keys; this change would make ${Object.keys(m).length}: remove some (set them to null)`,
        );
      if (size > MAX_CUSTOM_METADATA_BYTES)
        throw new PayloadTooLarge(
          `a file's metadata holds at most ${MAX_CUSTOM_METADATA_BYTES} bytes of keys and values; this change would make ${size}`,
        );
    });
    if (!merged) throw new NotFound('file', file);
    return { success: true, file: this.uriOf(s, key) };
  }

  /** The tracked blob of the caller's project named by `ref`, or undefined. */
  async find(s: Scope, ref: string, field = 'file'): Promise<{ uri: string; key: string; row: BlobRow } | undefined> {
    const key = this.keyOf(
      s,
      ref,
      field,
      () => new BadRequest(`${field} ${JSON.stringify(ref)} is not an uploaded file of this project`),
    );
    const row = await this.row(s, key);
    return row && { uri: this.uriOf(s, key), key, row };
  }

  /**
   * Locks the blob row (PostgreSQL) inside the caller's transaction and answers it: used both
   * to point an object at a blob and to decide that nobody points at it any more.
   */
  async lock(db: Kysely<Database>, s: Scope, uri: string): Promise<BlobRow | undefined> {
    const parsed = parseStorageUri(uri);
    if (!parsed || parsed.scheme !== this.store.scheme || parsed.bucket !== s.project || keyProblem(parsed.key))
      return undefined;
    return lockBlobRow(db, this.dialect, s, parsed.key);
  }

  /** Removes the row inside the caller's transaction; the bytes go after commit (`purge`). */
  async forget(db: Kysely<Database>, s: Scope, uri: string): Promise<string | undefined> {
    const parsed = parseStorageUri(uri);
    if (!parsed || parsed.bucket !== s.project || keyProblem(parsed.key)) return undefined;
    return (await deleteBlobRow(db, s, parsed.key)) ? parsed.key : undefined;
  }

  /** Deletes the bytes of a forgotten blob, unless it was uploaded again meanwhile. */
  async purge(s: Scope, key: string): Promise<void> {
    // The table only: adopting the bytes from the store (row()) would resurrect what is purged.
    if (await getBlobRow(this.db, s.project, key)) return;
    await this.store.delete(this.physicalKey(s, key));
  }

  /** Deletes every byte stored for a project whose rows are gone (DELETE /projects/:id). */
  async purgeProject(s: Scope): Promise<number> {
    let n = 0;
    for await (const key of this.store.list(`${s.project}/`)) {
      await this.store.delete(key);
      n++;
    }
    return n;
  }

  /** The bytes of a tracked key of the project (content processing reads uploads this way). */
  async read(s: Scope, key: string): Promise<Readable> {
    return this.store.get(this.physicalKey(s, key));
  }

  /**
   * Stores bytes the server made from an object (a rendition) under a key below DERIVED_PREFIX
   * and tracks them like an upload, so that storage URIs, download URLs and signed GETs work.
   */
  async putDerived(
    s: Scope,
    key: string,
    bytes: Buffer,
    contentType: string,
    name: string,
  ): Promise<{ uri: string; etag: string; size: number }> {
    if (!key.startsWith(DERIVED_PREFIX) || keyProblem(key))
      throw new Error(`not a derived blob key: ${JSON.stringify(key)}`);
    const put = await this.store.put(this.physicalKey(s, key), Readable.from([bytes]), { contentType });
    const now = nowIso();
    await upsertBlobRow(this.db, {
      project_id: s.project,
      key,
      account_id: s.account,
      size: put.size,
      etag: put.etag,
      content_type: contentType,
      name,
      created_at: now,
      updated_at: now,
    });
    return { uri: this.uriOf(s, key), etag: put.etag, size: put.size };
  }

  /** Forgets and deletes derived blobs: the given keys, or every key under a derived prefix. */
  async deleteDerived(s: Scope, what: { keys: readonly string[] } | { prefix: string }): Promise<void> {
    let keys: string[];
    if ('prefix' in what) {
      if (!what.prefix.startsWith(DERIVED_PREFIX) || /[%_\\]/.test(what.prefix))
        throw new Error(`not a derived blob prefix: ${JSON.stringify(what.prefix)}`);
      const rows = await this.db
        .selectFrom('blobs')
        .select('key')
        .where('project_id', '=', s.project)
        .where('account_id', '=', s.account)
        .where('key', 'like', `${what.prefix}%`)
        .execute();
      keys = rows.map((r) => r.key);
    } else {
      keys = what.keys.filter((k) => k.startsWith(DERIVED_PREFIX));
    }
    for (const key of keys) {
      await deleteBlobRow(this.db, s, key);
      await this.store.delete(this.physicalKey(s, key));
    }
  }

  // ---- the files API of the official client: list, delete, copy, bulk upload URLs ----

  /**
   * Keys of the project's files that start with `prefix` (`GET /files/list`), in key order, at
   * most MAX_FILE_PAGE per call (`offset` pages on). Files the server keeps under DERIVED_PREFIX
   * (objects' content, renditions) are not listed: they belong to their objects.
   */
  async listFiles(
    p: Principal,
    prefix: string | undefined,
    page: { limit?: number; offset?: number } = {},
  ): Promise<{ files: string[] }> {
    const s = scopeOf(p);
    const wanted = this.prefixOf(s, prefix ?? '', 'prefix');
    const limit = Math.min(Math.max(page.limit ?? MAX_FILE_PAGE, 1), MAX_FILE_PAGE);
    const offset = page.offset ?? 0;
    if (canPresign(this.store)) {
      // Uploads go straight to the bucket: the bucket is the list (in S3's key order).
      const files: string[] = [];
      let skipped = 0;
      for await (const physical of this.store.list(this.physicalKey(s, wanted))) {
        const key = physical.slice(s.project.length + 1);
        if (!key.startsWith(wanted) || key.startsWith(DERIVED_PREFIX) || keyProblem(key)) continue;
        if (skipped++ < offset) continue;
        files.push(key);
        if (files.length >= limit) break;
      }
      return { files };
    }
    const chars = [...wanted].length;
    let q = this.db
      .selectFrom('blobs')
      .select('key')
      .where('project_id', '=', s.project)
      .where('account_id', '=', s.account)
      .where(sql<string>`substr(${sql.ref('key')}, 1, ${DERIVED_PREFIX.length})`, '!=', DERIVED_PREFIX);
    if (chars) q = q.where(sql<string>`substr(${sql.ref('key')}, 1, ${chars})`, '=', wanted);
    const rows = await q.orderBy('key').limit(limit).offset(offset).execute();
    return { files: rows.map((r) => r.key) };
  }

  /**
   * `DELETE /files/<path>`: one file, or with `prefix` every file whose key starts with it (at
   * most MAX_FILE_PAGE per call; `message` says when more remain). Server-kept keys are refused.
   */
  async deleteFiles(
    p: Principal,
    path: string,
    prefix = false,
  ): Promise<{ success: boolean; count: number; file?: string; message?: string }> {
    const s = scopeOf(p);
    if (!prefix) {
      const key = this.keyOf(s, path);
      this.refuseDerived(key, 'path');
      return this.keyLock.run(`${s.project}/${key}`, async () => {
        const row = await this.row(s, key);
        if (!row) throw new NotFound('file', path);
        await deleteBlobRow(this.db, s, key);
        await this.store.delete(this.physicalKey(s, key));
        return { success: true, count: 1, file: this.uriOf(s, key) };
      });
    }
    const wanted = this.prefixOf(s, path, 'path');
    if (!wanted)
      throw new BadRequest(
        'path: name the prefix of the files to delete (deleting every file of the project at once is not offered)',
      );
    this.refuseDerived(wanted, 'path');
    // One more than a call deletes: tells whether some remain.
    const { files } = await this.listFiles(p, wanted, { limit: MAX_FILE_PAGE });
    const more =
      files.length >= MAX_FILE_PAGE
        ? (await this.listFiles(p, wanted, { limit: 1, offset: MAX_FILE_PAGE })).files.length > 0
        : false;
    let count = 0;
    for (const key of files) {
      await this.keyLock.run(`${s.project}/${key}`, async () => {
        await deleteBlobRow(this.db, s, key);
        await this.store.delete(this.physicalKey(s, key));
      });
      count++;
    }
    return {
      success: true,
      count,
      file: this.uriOf(s, wanted),
      ...(more
        ? { message: `deleted ${count} files, the most one call deletes; more remain under this prefix: call again` }
        : {}),
    };
  }

  /** `POST /files/copy`: the bytes of `source` (a file of this project) written to `dest`. */
  async copyFile(
    p: Principal,
    input: { source?: string; dest?: string },
  ): Promise<{ success: boolean; source: string; dest: string }> {
    const s = scopeOf(p);
    if (!input.source?.trim())
      throw new BadRequest('body must have property "source" (the key or storage URI of the file to copy)');
    if (!input.dest?.trim()) throw new BadRequest('body must have property "dest" (the key to copy the file to)');
    const from = this.keyOf(s, input.source.trim(), 'source');
    const to = this.keyOf(s, input.dest.trim(), 'dest');
    this.refuseDerived(to, 'dest');
    if (from === to) throw new BadRequest('dest names the same file as source; give another key');
    const row = await this.row(s, from);
    if (!row) throw new NotFound('file', input.source);
    return this.keyLock.run(`${s.project}/${to}`, async () => {
      let put;
      try {
        const bytes = await this.store.get(this.physicalKey(s, from));
        put = await this.store.put(this.physicalKey(s, to), bytes, { contentType: row.content_type });
      } catch (err) {
        if (err instanceof BlobMissing) throw new NotFound('file', input.source!);
        if (err instanceof BlobKeyConflict)
          throw new Conflict(
            `dest ${JSON.stringify(to)} collides with a folder of other keys (or is inside a file key); choose another dest`,
          );
        throw err;
      }
      const now = nowIso();
      await upsertBlobRow(this.db, {
        project_id: s.project,
        key: to,
        account_id: s.account,
        size: put.size,
        etag: put.etag,
        content_type: row.content_type,
        name: keyBaseName(to),
        created_at: now,
        updated_at: now,
      });
      return { success: true, source: this.uriOf(s, from), dest: this.uriOf(s, to) };
    });
  }

  /** `POST /files/bulk-upload-urls`: an upload URL per file, at most MAX_BULK_UPLOAD_URLS per call. */
  async bulkUploadUrls(p: Principal, input: { files?: UploadUrlInput[] }): Promise<{ files: FileUrl[] }> {
    const files = input.files ?? [];
    if (files.length > MAX_BULK_UPLOAD_URLS)
      throw new BadRequest(
        `files: at most ${MAX_BULK_UPLOAD_URLS} upload URLs per call, got ${files.length}; split the request`,
      );
    const out: FileUrl[] = [];
    for (const [i, f] of files.entries()) {
      try {
        out.push(await this.uploadUrl(p, { name: f.name, id: f.id, mime_type: f.mime_type }));
      } catch (err) {
        if (err instanceof Error && 'status' in err) err.message = `files[${i}]: ${err.message}`;
        throw err;
      }
    }
    return { files: out };
  }

  /** A key prefix (may end in "/", may be empty): the segments it has must be valid key segments. */
  private prefixOf(s0: Scope, ref: string, field: string): string {
    const trimmed = ref.trim();
    if (!trimmed) return '';
    const uri = parseStorageUri(trimmed);
    if (uri && (uri.scheme !== this.store.scheme || uri.bucket !== s0.project)) throw new NotFound('file', ref);
    const s = uri ? uri.key : trimmed.replace(/^\/+/, '');
    const body = s.endsWith('/') ? s.slice(0, -1) : s;
    const problem = body ? keyProblem(body) : null;
    if (problem) throw new BadRequest(`${field} ${JSON.stringify(ref)} is not a valid key prefix: it ${problem}`);
    return s;
  }

  private refuseDerived(key: string, field: string): void {
    if (key.startsWith(DERIVED_PREFIX) || DERIVED_PREFIX.startsWith(key)) {
      throw new BadRequest(
        `${field}: keys under ${JSON.stringify(DERIVED_PREFIX)} are kept by the server for objects and renditions; they cannot be changed through the files API`,
      );
    }
  }

  // ---- the public side: the signature in the URL is the credential ----

  /** `PUT <signed upload URL>`: stream the body in, record the blob, answer its ETag. */
  async receive(
    at: BlobAddress,
    query: Record<string, unknown>,
    req: { contentType?: string; contentLength?: string },
    body: Readable,
  ): Promise<ReceivedBlob> {
    const params = this.signer.verify('PUT', canonicalPath(at), query);
    this.checkKey(at);
    const signedMax = Number(params.max);
    const limit = Math.min(
      Number.isFinite(signedMax) && signedMax >= 0 ? signedMax : this.opts.maxUploadBytes,
      this.opts.maxUploadBytes,
    );
    if (req.contentLength !== undefined && Number(req.contentLength) > limit) throw tooLarge(limit);
    const account = params.a;
    if (!account) throw new BadRequest('this upload URL does not name its account');
    const s: Scope = { account, project: at.project };
    // The URL was signed for a type: a PUT may send it (with any parameters), the generic
    // octet-stream or none, but not another type (S3 refuses one too: the type is signed there).
    const sent = req.contentType?.trim();
    if (sent) checkMimeType(sent, 'the Content-Type header');
    if (sent && params.type && bareType(sent) !== bareType(params.type) && bareType(sent) !== OCTET_STREAM) {
      throw new UnsupportedMediaType(
        `this upload URL was signed for Content-Type ${params.type}; send that type (or none), or ask upload-url for a URL with mime_type ${JSON.stringify(bareType(sent))}`,
      );
    }
    const contentType =
      (sent && bareType(sent) !== OCTET_STREAM ? sent : undefined) || params.type || mimeOf(at.key) || OCTET_STREAM;
    return this.keyLock.run(`${s.project}/${at.key}`, () => this.storeUpload(s, at, params, contentType, limit, body));
  }

  private async storeUpload(
    s: Scope,
    at: BlobAddress,
    params: Record<string, string>,
    contentType: string,
    limit: number,
    body: Readable,
  ): Promise<ReceivedBlob> {
    let put;
    try {
      put = await this.store.put(this.physicalKey(s, at.key), body, { contentType, maxBytes: limit });
    } catch (err) {
      if (err instanceof BlobTooLarge) throw tooLarge(limit);
      if (err instanceof BlobKeyConflict)
        throw new Conflict(
          `key ${JSON.stringify(at.key)} collides with a folder of other keys (or is inside a file key); choose another id`,
        );
      throw err;
    }
    const now = nowIso();
    await upsertBlobRow(this.db, {
      project_id: s.project,
      key: at.key,
      account_id: s.account,
      size: put.size,
      etag: put.etag,
      content_type: contentType,
      name: params.name || keyBaseName(at.key),
      created_at: now,
      updated_at: now,
    });
    return { source: this.uriOf(s, at.key), path: at.key, etag: put.etag, size: put.size, type: contentType };
  }

  /** `GET`/`HEAD <signed download URL>`: headers and the bytes (or the asked range of them). */
  async open(
    at: BlobAddress,
    query: Record<string, unknown>,
    method: 'GET' | 'HEAD',
    req: { range?: string; ifNoneMatch?: string; ifRange?: string },
  ): Promise<BlobDownload> {
    const params = this.signer.verify('GET', canonicalPath(at), query);
    this.checkKey(at);
    const row = await getBlobRow(this.db, at.project, at.key);
    if (!row) throw new NotFound('file', at.key);
    const etag = `"${row.etag}"`;
    const headers: Record<string, string> = {
      etag,
      'last-modified': new Date(row.updated_at).toUTCString(),
      'accept-ranges': 'bytes',
      'cache-control': 'private, no-cache',
      'x-content-type-options': 'nosniff',
    };
    if (req.ifNoneMatch && etagListMatches(req.ifNoneMatch, row.etag)) return { status: 304, headers };
    // A file stored before types were checked may hold one no header can carry: serve it as bytes.
    headers['content-type'] = isHeaderSafe(row.content_type) ? row.content_type : OCTET_STREAM;
    // Only passive types (images, PDF, audio, video, plain text) may render inline; anything a
    // browser could run or style (HTML, SVG, any XML, XSL) is sandboxed and downloaded.
    const passive = isPassiveType(row.content_type);
    if (!passive) headers['content-security-policy'] = 'sandbox';
    const disposition = passive ? params.disposition : 'attachment';
    if (disposition === 'inline' || disposition === 'attachment') {
      headers['content-disposition'] = contentDisposition(disposition, params.filename || row.name);
    }
    const useRange = !req.ifRange || req.ifRange.trim() === etag;
    const answer = useRange ? parseRange(req.range, row.size) : { kind: 'full' as const };
    if (answer.kind === 'unsatisfiable')
      return { status: 416, headers: { ...headers, 'content-range': `bytes */${row.size}` } };
    const range = answer.kind === 'partial' ? answer.range : undefined;
    if (range) headers['content-range'] = `bytes ${range.start}-${range.end}/${row.size}`;
    headers['content-length'] = String(range ? range.end - range.start + 1 : row.size);
    if (method === 'HEAD') return { status: range ? 206 : 200, headers };
    let body: Readable;
    try {
      // A bounded read (the whole file is 0..size-1) ends with its last byte, not one read later:
      // the response is complete as soon as the client has its Content-Length.
      const bounds = range ?? (row.size > 0 ? { start: 0, end: row.size - 1 } : undefined);
      body = await this.store.get(this.physicalKey({ account: row.account_id, project: at.project }, at.key), bounds);
    } catch (err) {
      if (err instanceof BlobMissing) throw new NotFound('file', at.key);
      throw err;
    }
    return { status: range ? 206 : 200, headers, body };
  }

  private checkKey(at: BlobAddress): void {
    if (keyProblem(at.key) || !at.project) throw new NotFound('file', at.key);
  }

  private async row(s: Scope, key: string): Promise<BlobRow | undefined> {
    const row = await getBlobRow(this.db, s.project, key);
    if (row) return row.account_id === s.account ? row : undefined;
    return this.adopt(s, key);
  }

  /**
   * With a presigning store (S3) the bytes go straight to the bucket, so Orrery first hears of an
   * upload when its storage URI is used: record the blob then, from what the store says of it.
   */
  private async adopt(s: Scope, key: string): Promise<BlobRow | undefined> {
    if (!canPresign(this.store) || key.startsWith(DERIVED_PREFIX)) return undefined;
    const stat = await this.store.stat(this.physicalKey(s, key));
    if (!stat) return undefined;
    const now = nowIso();
    const row: BlobRow = {
      project_id: s.project,
      key,
      account_id: s.account,
      size: stat.size,
      etag: stat.etag ?? '',
      content_type: mimeOf(key) || OCTET_STREAM,
      name: keyBaseName(key),
      created_at: now,
      updated_at: now,
    };
    await upsertBlobRow(this.db, row);
    return row;
  }

  /**
   * Adopts an upload for an object: moves its bytes under CONTENT_PREFIX and tracks them there
   * (the upload's own row goes). With `keepUpload` (a caller who may not delete files) the bytes
   * are copied and the upload stays. A key already under DERIVED_PREFIX (an object's content, a
   * rendition) is not moved: it answers undefined, as does a URI that names no blob.
   */
  async claim(s: Scope, uri: string, objectId: string, keepUpload = false): Promise<ClaimedBlob | undefined> {
    const key = this.keyOf(
      s,
      uri,
      'content.source',
      () => new BadRequest(`content.source ${JSON.stringify(uri)} is not an uploaded file of this project`),
    );
    if (key.startsWith(DERIVED_PREFIX)) return undefined;
    return this.keyLock.run(`${s.project}/${key}`, async () => {
      const row = await this.row(s, key);
      if (!row) return undefined;
      // Unique per adoption (an object may adopt several uploads over time, and keep none of them).
      const owned = `${CONTENT_PREFIX}${objectId}/${generatedKey('')}/${keyBaseName(key)}`;
      let moved;
      try {
        moved = keepUpload
          ? await this.store.put(this.physicalKey(s, owned), await this.store.get(this.physicalKey(s, key)), {
              contentType: row.content_type,
            })
          : await this.store.move(this.physicalKey(s, key), this.physicalKey(s, owned));
      } catch (err) {
        if (err instanceof BlobMissing) return undefined;
        throw err;
      }
      const now = nowIso();
      const etag = moved.etag ?? row.etag;
      await upsertBlobRow(this.db, {
        project_id: s.project,
        key: owned,
        account_id: s.account,
        size: moved.size,
        etag,
        content_type: row.content_type,
        name: row.name,
        created_at: now,
        updated_at: now,
      });
      if (!keepUpload) await deleteBlobRow(this.db, s, key);
      return { uri: this.uriOf(s, owned), key: owned, etag, size: moved.size, type: row.content_type, name: row.name };
    });
  }

  /**
   * Forgets and deletes a claimed blob whose object was not written. The objects feature, which
   * owns the references, calls it only once no object came to point at the blob.
   */
  async unclaim(s: Scope, claimed: ClaimedBlob): Promise<void> {
    await deleteBlobRow(this.db, s, claimed.key);
    await this.store.delete(this.physicalKey(s, claimed.key));
  }

  /** Readiness: the storage answers (S3: the bucket exists and the credentials work). */
  async check(): Promise<void> {
    if (this.store.check) await this.store.check();
    else await this.store.stat('.orrery-ready-probe');
  }

  /** Where the bytes of a project's key live in the store: one folder (prefix) per project. */
  private physicalKey(s: Scope, key: string): string {
    return `${s.project}/${key}`;
  }

  private signedUrl(method: SignedMethod, at: BlobAddress, ttl: number, params: Record<string, string>): string {
    const expiresAt = Math.floor(Date.now() / 1000) + ttl;
    return `${this.opts.publicUrl()}${blobUrlPath(at)}?${this.signer.sign(method, canonicalPath(at), expiresAt, params)}`;
  }
}

function ttlOf(ttl: number | undefined): number {
  if (ttl === undefined || ttl === null) return DEFAULT_URL_TTL;
  if (!Number.isInteger(ttl) || ttl < 1 || ttl > MAX_URL_TTL) {
    throw new BadRequest(
      `ttl must be a whole number of seconds from 1 to ${MAX_URL_TTL} (7 days), got ${JSON.stringify(ttl)}`,
    );
  }
  return ttl;
}

const tooLarge = (limit: number) =>
  new PayloadTooLarge(`the upload is larger than the limit of ${limit} bytes (ORRERY_MAX_UPLOAD_SIZE)`, { limit });

/** RFC 6266: a plain ASCII fallback and the UTF-8 name. */
function contentDisposition(kind: string, filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
  const utf8 = encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `${kind}; filename="${ascii}"; filename*=UTF-8''${utf8}`;
}

/** `If-None-Match: "a", W/"b"` or `*`. */
function etagListMatches(header: string, etag: string): boolean {
  if (header.trim() === '*') return true;
  return header.split(',').some(
    (t) =>
      t
        .trim()
        .replace(/^W\//, '')
        .replace(/^"(.*)"$/, '$1') === etag,
  );
}
