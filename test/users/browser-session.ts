/** A browser's view of Orrery's sign-in, over plain HTTP: a cookie jar and the session's CSRF token. */
import type { TestServer } from '../support/server.ts';

export interface Answer {
  status: number;
  body: any;
  headers: Headers;
}

export class Browser {
  cookie?: string;
  csrf?: string;
  constructor(readonly srv: TestServer) {}

  async call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
    const res = await fetch(this.srv.url + path, {
      method,
      headers: {
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...(this.cookie ? { cookie: this.cookie } : {}),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      redirect: 'manual',
    });
    const set = res.headers.get('set-cookie');
    if (set) {
      const pair = set.split(';')[0];
      this.cookie = pair.endsWith('=') ? undefined : pair;
    }
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON: keep the text
    }
    const answer = { status: res.status, body: parsed as any, headers: res.headers };
    if (res.ok && typeof (parsed as any)?.csrf_token === 'string') this.csrf = (parsed as any).csrf_token;
    return answer;
  }

  /** A state change made with the session: the CSRF header, as the console sends it. */
  post(path: string, body?: unknown): Promise<Answer> {
    return this.call('POST', path, body, this.csrf ? { 'x-csrf-token': this.csrf } : {});
  }

  async token(project?: string): Promise<string> {
    const r = await this.post('/auth/token', project ? { project } : {});
    if (r.status !== 200) throw new Error(`token: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body.token;
  }
}

/** The secret of an invitation or reset link (after `#token=`). */
export const tokenOf = (link: string): string => new URL(link).hash.replace(/^#token=/, '');
