/**
 * The signed-in session. The API key lives only in this tab's sessionStorage, to get a fresh JWT
 * (POST /api/v1/token/issue) before the current one expires; the JWT is kept beside it so a reload
 * stays signed in. `signOut` drops both.
 */
import { ApiError, errorFromResponse } from './errors.ts';

const KEY = 'orrery.apiKey';
const TOKEN = 'orrery.token';
/** The project an admin key switched to (absent: the key's own project). */
const PROJECT = 'orrery.project';
/** Refresh this long before the JWT's expiry. */
const MARGIN_MS = 60_000;

interface StoredToken {
  token: string;
  /** Epoch milliseconds. */
  expiresAt: number;
}

type Listener = (signedIn: boolean) => void;
const listeners = new Set<Listener>();
let pending: Promise<string> | null = null;

const read = (): StoredToken | null => {
  try {
    const raw = sessionStorage.getItem(TOKEN);
    return raw ? (JSON.parse(raw) as StoredToken) : null;
  } catch {
    return null;
  }
};

export const isSignedIn = (): boolean => sessionStorage.getItem(KEY) !== null;

/** Calls `fn` with the new state on sign-in and sign-out; returns the unsubscribe function. */
export function onSessionChange(fn: Listener): () => void {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

async function issue(apiKey: string, project = sessionStorage.getItem(PROJECT)): Promise<StoredToken> {
  const res = await fetch('/api/v1/token/issue', {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(project ? { project } : {}),
  });
  if (!res.ok) throw await errorFromResponse(res);
  const body = (await res.json()) as { token: string; expires_in: number };
  return { token: body.token, expiresAt: Date.now() + body.expires_in * 1000 };
}

/** Exchanges the key for a JWT; keeps both in sessionStorage. Throws ApiError (401 on a bad key). */
export async function signIn(apiKey: string): Promise<void> {
  const key = apiKey.trim();
  if (!key) throw new ApiError({ error: 'bad_request', status: 400, message: 'Enter an API key.' });
  const token = await issue(key, null);
  sessionStorage.removeItem(PROJECT);
  sessionStorage.setItem(KEY, key);
  sessionStorage.setItem(TOKEN, JSON.stringify(token));
  listeners.forEach((l) => l(true));
}

/**
 * Acts in another project of the account from now on (admin keys: the server issues the JWT for
 * that project, and refuses other roles with 403). The key stays the one signed in with.
 */
export async function switchProject(projectId: string): Promise<void> {
  const key = sessionStorage.getItem(KEY);
  if (!key) throw new ApiError({ error: 'unauthorized', status: 401, message: 'Not signed in.' });
  const token = await issue(key, projectId);
  sessionStorage.setItem(PROJECT, projectId);
  sessionStorage.setItem(TOKEN, JSON.stringify(token));
  pending = null;
  listeners.forEach((l) => l(true));
}

export function signOut(): void {
  sessionStorage.removeItem(KEY);
  sessionStorage.removeItem(TOKEN);
  sessionStorage.removeItem(PROJECT);
  pending = null;
  listeners.forEach((l) => l(false));
}

/** A valid JWT, refreshed with the stored key when it is about to expire. Throws 401 when signed out. */
export async function getToken(): Promise<string> {
  const stored = read();
  if (stored && stored.expiresAt - MARGIN_MS > Date.now()) return stored.token;
  const key = sessionStorage.getItem(KEY);
  if (!key) throw new ApiError({ error: 'unauthorized', status: 401, message: 'Not signed in.' });
  pending ??= issue(key)
    .then((t) => {
      sessionStorage.setItem(TOKEN, JSON.stringify(t));
      return t.token;
    })
    .finally(() => (pending = null));
  return pending;
}

/** The decoded JWT payload (account, project, role …), or null when signed out. */
export function tokenClaims(): Record<string, unknown> | null {
  const t = read();
  if (!t) return null;
  try {
    const part = t.token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
    return JSON.parse(decodeURIComponent(escape(atob(part)))) as Record<string, unknown>;
  } catch {
    return null;
  }
}
