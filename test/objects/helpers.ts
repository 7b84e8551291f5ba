/** Shared steps of the object and blob tests: uploads through signed URLs, a second project. */
import type { TestServer } from '../support/server.ts';

export interface Uploaded {
  url: string;
  id: string;
  path: string;
  mime_type: string;
  etag: string;
}

/** upload-url, then a PUT of the bytes with no Authorization header. */
export async function upload(
  srv: TestServer,
  name: string,
  body: string | Buffer,
  opts: { token?: string; type?: string; id?: string; ttl?: number } = {},
): Promise<Uploaded> {
  const r = await srv.api('POST', '/api/v1/objects/upload-url', { name, id: opts.id, ttl: opts.ttl }, opts.token);
  if (r.status !== 200) throw new Error(`upload-url failed: ${r.status} ${JSON.stringify(r.body)}`);
  const put = await fetch(r.body.url, {
    method: 'PUT',
    body: typeof body === 'string' ? Buffer.from(body) : body,
    headers: opts.type ? { 'content-type': opts.type } : {},
  });
  if (put.status !== 200) throw new Error(`PUT failed: ${put.status} ${await put.text()}`);
  await put.arrayBuffer();
  return { ...r.body, etag: put.headers.get('etag')!.replace(/"/g, '') };
}

/** A project of the same account with a member key of its own. */
export async function secondProject(
  srv: TestServer,
  name = `Other ${Math.random().toString(36).slice(2, 8)}`,
): Promise<{ id: string; key: string }> {
  const proj = await srv.api('POST', '/api/v1/projects', { name });
  const key = await srv.api('POST', '/api/v1/apikeys', { name: `${name} key`, project: proj.body.id });
  if (proj.status !== 200 || key.status !== 200)
    throw new Error(`second project: ${JSON.stringify([proj.body, key.body])}`);
  return { id: proj.body.id, key: key.body.value };
}

export async function text(res: Response): Promise<string> {
  return Buffer.from(await res.arrayBuffer()).toString('utf8');
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export const json = async (res: Response): Promise<any> => res.json();

/** Polls until the object is ready or failed; answers it with its text. */
export async function processed(
  srv: TestServer,
  id: string,
  opts: { token?: string; timeoutMs?: number } = {},
): Promise<any> {
  const until = Date.now() + (opts.timeoutMs ?? 60_000);
  for (;;) {
    const r = await srv.api(
      'GET',
      `/api/v1/objects/${id}?select=${encodeURIComponent('+text')}`,
      undefined,
      opts.token,
    );
    if (r.status !== 200) throw new Error(`GET failed: ${r.status} ${JSON.stringify(r.body)}`);
    if (r.body.status === 'ready' || r.body.status === 'failed') return r.body;
    if (Date.now() > until) throw new Error(`object ${id} still ${r.body.status} after ${opts.timeoutMs ?? 60_000} ms`);
    await new Promise((res) => setTimeout(res, 50));
  }
}
