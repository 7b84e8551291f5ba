/**
 * How screens talk to the server: the official client first (`client()`), so every screen is also
 * a compatibility test of it; `apiFetch` for what the client lacks.
 */
import { VertesiaClient } from '@vertesia/client';
import { errorFromResponse } from './errors.ts';
import { getToken, signOut } from './session.ts';

let instance: VertesiaClient | null = null;

/** The official client, pointed at this origin, authenticated with the session's JWT. */
export function client(): VertesiaClient {
  if (!instance) {
    const origin = window.location.origin;
    instance = new VertesiaClient({ serverUrl: origin, storeUrl: origin, tokenServerUrl: `${origin}/api/v1` });
    instance.withAuthCallback(async () => `Bearer ${await getToken()}`);
  }
  return instance;
}

export interface ApiFetchOptions extends Omit<RequestInit, 'body'> {
  /** Serialised as JSON unless it is a string, Blob, FormData or ArrayBuffer. */
  body?: unknown;
  /** Query parameters; undefined values are left out. */
  query?: Record<string, string | number | boolean | undefined | null>;
  /** Return the Response as is (for streams, downloads). */
  raw?: boolean;
}

/**
 * `fetch` against `/api/v1` with the session's JWT. `path` is relative to /api/v1 (`/runs/…`).
 * Answers the parsed JSON (or the Response with `raw`); throws ApiError with the server's shape.
 * A 401 signs out (the key was revoked, the session ended, the user was suspended).
 */
export async function apiFetch<T = unknown>(path: string, opts: ApiFetchOptions = {}): Promise<T> {
  const { body, query, raw, headers, ...init } = opts;
  const url = new URL(`/api/v1${path.startsWith('/') ? path : `/${path}`}`, window.location.origin);
  for (const [k, v] of Object.entries(query ?? {}))
    if (v !== undefined && v !== null) url.searchParams.set(k, String(v));
  const h = new Headers(headers);
  h.set('authorization', `Bearer ${await getToken()}`);
  let payload: BodyInit | undefined;
  if (body !== undefined) {
    if (typeof body === 'string' || body instanceof Blob || body instanceof FormData || body instanceof ArrayBuffer)
      payload = body;
    else {
      payload = JSON.stringify(body);
      if (!h.has('content-type')) h.set('content-type', 'application/json');
    }
  }
  const res = await fetch(url, { ...init, headers: h, body: payload });
  if (!res.ok) {
    const err = await errorFromResponse(res);
    if (res.status === 401) void signOut(err.message);
    throw err;
  }
  if (raw) return res as unknown as T;
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  return (text ? JSON.parse(text) : undefined) as T;
}
