/**
 * The source of an import, read through the official `@vertesia/client` only: what works against
 * Vertesia works against another Orrery. Lists are paged; every item is then retrieved whole.
 */
import { VertesiaClient } from '@vertesia/client';
import type { Readable } from 'node:stream';
import { request } from 'undici';
import type { Json } from './target.ts';

const PAGE = 100;

export interface Download {
  body: Readable;
  size: number | undefined;
}

export class SourceReader {
  readonly client: VertesiaClient;
  readonly url: string;

  constructor(url: string, key: string) {
    this.url = url.replace(/\/+$/, '');
    const host = new URL(this.url).hostname;
    // Vertesia's own token server is found from its API host (api.* → sts.*); another Orrery
    // exchanges keys at its /api/v1/token/issue. A JWT is sent as it is either way.
    const tokenServerUrl = /(^|\.)vertesia\.io$/.test(host) ? {} : { tokenServerUrl: `${this.url}/api/v1` };
    this.client = new VertesiaClient({ serverUrl: this.url, storeUrl: this.url, apikey: key, ...tokenServerUrl });
  }

  private async *paged(page: (limit: number, offset: number) => Promise<Json[]>): AsyncGenerator<Json> {
    for (let offset = 0; ; offset += PAGE) {
      const items = await page(PAGE, offset);
      for (const item of items) yield item;
      if (items.length < PAGE) return;
    }
  }

  async environments(): Promise<Json[]> {
    const list = (await this.client.environments.list()) as unknown as Json[];
    return Promise.all(list.map((e) => this.client.environments.retrieve(e.id) as unknown as Promise<Json>));
  }

  async prompts(): Promise<Json[]> {
    const out: Json[] = [];
    for await (const ref of this.paged(
      (limit, offset) => this.client.prompts.list({ query: { limit, offset } as never }) as unknown as Promise<Json[]>,
    )) {
      out.push(await (this.client.prompts.retrieve(ref.id) as unknown as Promise<Json>));
    }
    return out;
  }

  /** Drafts (the interactions of the list), each with its published versions, oldest first. */
  async interactions(): Promise<Array<{ draft: Json; versions: Json[] }>> {
    const out: Array<{ draft: Json; versions: Json[] }> = [];
    for await (const ref of this.paged(
      (limit, offset) =>
        this.client.interactions.list({ query: { limit, offset } as never }) as unknown as Promise<Json[]>,
    )) {
      if (ref.parent) continue; // a published version listed on its own: copied with its draft
      const draft = (await this.client.interactions.retrieve(ref.id)) as unknown as Json;
      const refs = ((await this.client.interactions.listVersions(ref.id)) as unknown as Json[]).filter(
        (v) => v.id !== ref.id,
      );
      const versions: Json[] = [];
      for (const v of refs.sort((a, b) => a.version - b.version))
        versions.push((await this.client.interactions.retrieve(v.id)) as unknown as Json);
      out.push({ draft, versions });
    }
    return out;
  }

  async types(): Promise<Json[]> {
    const refs: Json[] = [];
    for await (const t of this.paged(
      (limit, offset) => this.client.types.list({ limit, offset }) as unknown as Promise<Json[]>,
    ))
      refs.push(t);
    return Promise.all(refs.map((t) => this.client.types.retrieve(t.id) as unknown as Promise<Json>));
  }

  /** Run references, newest updated first; stops below `since`. */
  async *runRefs(since?: Date): AsyncGenerator<Json> {
    for await (const r of this.paged(
      (limit, offset) => this.client.runs.list({ limit, offset }) as unknown as Promise<Json[]>,
    )) {
      if (since && Date.parse(r.updated_at) < since.getTime()) return;
      yield r;
    }
  }

  run(id: string): Promise<Json> {
    return this.client.runs.retrieve(id) as unknown as Promise<Json>;
  }

  async *objectRefs(): AsyncGenerator<Json> {
    yield* this.paged((limit, offset) => this.client.objects.list({ limit, offset }) as unknown as Promise<Json[]>);
  }

  object(id: string): Promise<Json> {
    return this.client.objects.retrieve(id) as unknown as Promise<Json>;
  }

  /**
   * The content's bytes, through the source's signed download URL, as a Node stream: undici's
   * `request` pauses the socket while the consumer is behind (fetch's web stream, on Node 20,
   * kept reading ahead and held the whole file).
   */
  async download(source: string, name?: string): Promise<Download> {
    const { url } = await this.client.objects.getDownloadUrl(source, name);
    const res = await request(url, { method: 'GET' });
    if (res.statusCode >= 300)
      throw new Error(`download of ${source}: ${res.statusCode} ${(await res.body.text()).slice(0, 200)}`);
    const length = res.headers['content-length'];
    return { body: res.body, size: typeof length === 'string' ? Number(length) : undefined };
  }
}
