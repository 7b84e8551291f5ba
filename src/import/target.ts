/**
 * Where an import writes: one interface, so the importer never knows whether the target is this
 * machine's database (src/local-target.ts opens it in-process) or a running server (`--to`). Both are
 * reached through the target's HTTP API, so both modes apply the same rules (validation, the
 * upload's temporary name and rename, permissions) and keep their links in the same table.
 */
import type { Readable } from 'node:stream';
import { request } from 'undici';
import type { ImportLink } from './links-store.ts';
import type { ImportedRun } from './service.ts';

export type Json = Record<string, any>;

export interface ImportTarget {
  /** For messages: the URL, or the database of the local mode. */
  readonly describe: string;
  /** The project the copies go to. */
  project(): Promise<{ id: string; name: string }>;
  links(source: string): Promise<ImportLink[]>;
  putLink(source: string, link: ImportLink): Promise<void>;
  /** Resources of the public API, by collection path (`environments`, `prompts`, `interactions`, `types`, `objects`). */
  get(collection: string, id: string): Promise<Json | undefined>;
  create(collection: string, body: Json): Promise<Json>;
  update(collection: string, id: string, body: Json): Promise<Json>;
  publish(interactionId: string, body: { tags?: string[]; visibility?: string }): Promise<Json>;
  versions(interactionId: string): Promise<Json[]>;
  /**
   * Streams bytes into the target's store under `key` and answers the storage URI. The store
   * writes to a temporary name and renames when the body is complete, so an interrupted upload
   * leaves nothing a record could point at.
   */
  upload(key: string, name: string, mimeType: string, size: number | undefined, body: Readable): Promise<string>;
  importRun(
    source: string,
    sourceId: string,
    sourceVersion: string | null,
    run: ImportedRun,
  ): Promise<{ id: string; created: boolean }>;
  close(): Promise<void>;
}

class TargetError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** A target server's HTTP API with an API key (sk-…) or a token, sent as the bearer. */
export class HttpTarget implements ImportTarget {
  readonly describe: string;
  private readonly url: string;

  constructor(
    url: string,
    private readonly key: string,
    private readonly onClose: () => Promise<void> = async () => {},
    describe?: string,
  ) {
    this.url = url.replace(/\/+$/, '');
    this.describe = describe ?? this.url;
  }

  private async call<T = Json>(method: string, path: string, body?: unknown, okMissing = false): Promise<T> {
    const res = await fetch(`${this.url}/api/v1${path}`, {
      method,
      headers: {
        authorization: `Bearer ${this.key}`,
        accept: 'application/json',
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: any;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = text;
    }
    if (okMissing && res.status === 404) return undefined as T;
    if (!res.ok)
      throw new TargetError(
        res.status,
        `target ${method} ${path.split('?')[0]}: ${res.status} ${parsed?.message ?? parsed?.error ?? text.slice(0, 200)}`,
      );
    return parsed as T;
  }

  /** The collection's items (one page of up to 1,000: enough to find an environment by name). */
  list(collection: string): Promise<Json[]> {
    return this.call('GET', `/${collection}?limit=1000`);
  }

  async project(): Promise<{ id: string; name: string }> {
    // The project of the key: its token says so (an sk- key is exchanged for one first).
    const token =
      this.key.split('.').length === 3
        ? { token: this.key }
        : await this.call<{ token: string }>('POST', '/token/issue');
    const claims = JSON.parse(Buffer.from(token.token.split('.')[1], 'base64url').toString('utf8'));
    const project = claims.project;
    return typeof project === 'object'
      ? { id: project.id, name: project.name ?? project.id }
      : { id: String(project), name: String(project) };
  }

  async links(source: string): Promise<ImportLink[]> {
    // Every link, page by page (the route answers at most 10,000 at a time).
    const all: ImportLink[] = [];
    for (let after: ImportLink | undefined; ;) {
      const q = new URLSearchParams({
        source,
        ...(after ? { after_kind: after.kind, after_id: after.source_id } : {}),
      });
      const page: ImportLink[] = await this.call('GET', `/import/links?${q.toString()}`);
      all.push(...page);
      if (page.length < 10_000) return all;
      after = page[page.length - 1];
    }
  }

  async putLink(source: string, link: ImportLink): Promise<void> {
    await this.call('PUT', '/import/links', { source, link });
  }

  get(collection: string, id: string): Promise<Json | undefined> {
    return this.call('GET', `/${collection}/${encodeURIComponent(id)}`, undefined, true);
  }

  create(collection: string, body: Json): Promise<Json> {
    return this.call('POST', `/${collection}`, body);
  }

  update(collection: string, id: string, body: Json): Promise<Json> {
    return this.call('PUT', `/${collection}/${encodeURIComponent(id)}`, body);
  }

  publish(interactionId: string, body: { tags?: string[]; visibility?: string }): Promise<Json> {
    return this.call('POST', `/interactions/${encodeURIComponent(interactionId)}/publish`, body);
  }

  versions(interactionId: string): Promise<Json[]> {
    return this.call('GET', `/interactions/${encodeURIComponent(interactionId)}/versions`);
  }

  async upload(key: string, name: string, mimeType: string, size: number | undefined, body: Readable): Promise<string> {
    const signed = await this.call<{ url: string; id: string }>('POST', '/objects/upload-url', {
      name,
      id: key,
      mime_type: mimeType,
    });
    // undici writes `body` only as fast as the socket drains, and the source download is paused
    // meanwhile (backpressure): a few chunks in memory, whatever the size. (fetch with a web
    // stream body, on Node 20, read the source ahead and held the whole file.)
    const res = await request(signed.url, {
      method: 'PUT',
      headers: { 'content-type': mimeType, ...(size !== undefined ? { 'content-length': String(size) } : {}) },
      body,
    });
    const text = await res.body.text();
    if (res.statusCode >= 300)
      throw new TargetError(res.statusCode, `upload of ${name}: ${res.statusCode} ${text.slice(0, 200)}`);
    return signed.id;
  }

  importRun(
    source: string,
    sourceId: string,
    sourceVersion: string | null,
    run: ImportedRun,
  ): Promise<{ id: string; created: boolean }> {
    return this.call('POST', '/import/runs', { source, source_id: sourceId, source_version: sourceVersion, run });
  }

  close(): Promise<void> {
    return this.onClose();
  }
}
