/**
 * The signed-in session, in one of two ways:
 *
 * - **As a user** (email and password, SSO, an accepted invitation): the server holds the session
 *   behind an HttpOnly cookie this code never sees. `GET /auth/session` says who is signed in and
 *   gives the CSRF token; the API's JWTs (5 minutes) come from `POST /auth/token`, sent with it.
 * - **With an API key**: the key lives only in this tab's sessionStorage, to get a fresh JWT
 *   (POST /api/v1/token/issue) before the current one expires.
 *
 * Either way the JWT is kept in sessionStorage so a reload does not wait for a new one, and
 * `signOut` drops everything (and ends the server's session).
 */
import { ApiError, errorFromResponse } from './errors.ts';

const KEY = 'orrery.apiKey';
const TOKEN = 'orrery.token';
/** The project switched to (absent: the key's own project, or the user's first one). */
const PROJECT = 'orrery.project';
/** Where to go once SSO brings the browser back (the identity provider returns to `/`). */
const AFTER_SSO = 'orrery.afterSignIn';
/** Refresh this long before the JWT's expiry. */
const MARGIN_MS = 60_000;

export type Role = 'admin' | 'developer' | 'executor' | 'reader' | 'auditor';

/** What `GET /auth/session` and the sign-in routes answer. */
export interface UserSession {
  user: { id: string; email: string; name: string; account_admin: boolean };
  projects: Array<{ id: string; name: string; role: Role }>;
  csrf_token: string;
  expires_at: string;
  idle_timeout: number;
}

interface StoredToken {
  token: string;
  /** Epoch milliseconds. */
  expiresAt: number;
}

type Listener = (signedIn: boolean) => void;
const listeners = new Set<Listener>();
let pending: Promise<string> | null = null;
/** The user's session, when signed in as a user (held in memory only: the cookie is the credential). */
let current: UserSession | null = null;
/** The one `GET /auth/session` of a page load, shared by whoever asks first. */
let probing: Promise<UserSession | null> | null = null;
/** Why the last session ended (shown by the sign-in page once). */
let endedBecause: string | null = null;

const read = (): StoredToken | null => {
  try {
    const raw = sessionStorage.getItem(TOKEN);
    return raw ? (JSON.parse(raw) as StoredToken) : null;
  } catch {
    return null;
  }
};

const notify = (signedIn: boolean) => listeners.forEach((l) => l(signedIn));

/** Signed in with a key, or as a user whose session this page has seen. */
const isSignedIn = (): boolean => sessionStorage.getItem(KEY) !== null || current !== null;

/**
 * Whether someone is signed in, asking the server once per page load when the tab holds no key
 * (a session cookie from a sign-in, SSO or another tab).
 */
export async function ensureSignedIn(): Promise<boolean> {
  if (isSignedIn()) return true;
  probing ??= fetch('/auth/session', { credentials: 'same-origin', headers: { accept: 'application/json' } })
    .then(async (res) => (res.ok ? ((await res.json()) as UserSession) : null))
    .catch(() => null)
    .finally(() => (probing = null));
  const s = await probing;
  if (s) current = s;
  return s !== null;
}

/** The signed-in user with their projects, or null (signed out, or signed in with a key). */
export const userSession = (): UserSession | null => current;

/** Calls `fn` with the new state on sign-in and sign-out; returns the unsubscribe function. */
export function onSessionChange(fn: Listener): () => void {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

const stored = (body: { token: string; expires_in: number }): StoredToken => ({
  token: body.token,
  expiresAt: Date.now() + body.expires_in * 1000,
});

async function issueWithKey(apiKey: string, project = sessionStorage.getItem(PROJECT)): Promise<StoredToken> {
  const res = await fetch('/api/v1/token/issue', {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(project ? { project } : {}),
  });
  if (!res.ok) throw await errorFromResponse(res);
  return stored((await res.json()) as { token: string; expires_in: number });
}

/** A cookie-authenticated POST to /auth/*: same origin, with the session's CSRF token when there is one. */
export async function authPost<T>(path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (current) headers['x-csrf-token'] = current.csrf_token;
  const res = await fetch(path, {
    method: 'POST',
    credentials: 'same-origin',
    headers,
    body: JSON.stringify(body ?? {}),
  });
  if (!res.ok) throw await errorFromResponse(res);
  return (await res.json()) as T;
}

async function issueForUser(project = sessionStorage.getItem(PROJECT)): Promise<StoredToken> {
  const known = current?.projects.some((p) => p.id === project);
  try {
    return stored(await authPost('/auth/token', known && project ? { project } : {}));
  } catch (err) {
    // The session ended on the server (signed out elsewhere, suspended, timed out): this tab is signed out too.
    if (err instanceof ApiError && err.status === 401) endSession(err.message);
    throw err;
  }
}

/** Exchanges the key for a JWT; keeps both in sessionStorage. Throws ApiError (401 on a bad key). */
export async function signIn(apiKey: string): Promise<void> {
  const key = apiKey.trim();
  if (!key) throw new ApiError({ error: 'bad_request', status: 400, message: 'Enter an API key.' });
  const token = await issueWithKey(key, null);
  current = null;
  sessionStorage.removeItem(PROJECT);
  sessionStorage.setItem(KEY, key);
  sessionStorage.setItem(TOKEN, JSON.stringify(token));
  endedBecause = null;
  notify(true);
}

/**
 * Takes the session a sign-in route answered (password, accepted invitation, password reset) and
 * gets its first JWT. A user without any project yet is refused here, with the server's reason.
 */
export async function adoptSession(session: UserSession): Promise<void> {
  sessionStorage.removeItem(KEY);
  sessionStorage.removeItem(PROJECT);
  sessionStorage.removeItem(TOKEN);
  current = session;
  pending = null;
  sessionStorage.setItem(TOKEN, JSON.stringify(await issueForUser(null)));
  endedBecause = null;
  notify(true);
}

/** Email and password: `POST /auth/login` (the server sets the session cookie). */
export async function signInWithPassword(email: string, password: string): Promise<void> {
  const session = await authPost<UserSession>('/auth/login', { email: email.trim(), password });
  await adoptSession(session);
}

/** Remembers where to go once the identity provider sends the browser back to `/`. */
export function rememberAfterSso(path: string | undefined): void {
  if (path) sessionStorage.setItem(AFTER_SSO, path);
  else sessionStorage.removeItem(AFTER_SSO);
}

/** The path remembered before SSO, once (the caller checks it is of this origin). */
export function takeAfterSso(): string | null {
  const to = sessionStorage.getItem(AFTER_SSO);
  sessionStorage.removeItem(AFTER_SSO);
  return to;
}

/**
 * Acts in another project from now on: a user among their projects (the server refuses others),
 * an admin key in any project of the account (other roles get 403).
 */
export async function switchProject(projectId: string): Promise<void> {
  const key = sessionStorage.getItem(KEY);
  let token: StoredToken;
  if (key) token = await issueWithKey(key, projectId);
  else if (current) token = await issueForUser(projectId);
  else throw new ApiError({ error: 'unauthorized', status: 401, message: 'Not signed in.' });
  sessionStorage.setItem(PROJECT, projectId);
  sessionStorage.setItem(TOKEN, JSON.stringify(token));
  pending = null;
  notify(true);
}

/** Drops what this tab holds, without asking the server; `reason` is shown by the sign-in page. */
function endSession(reason?: string): void {
  const was = isSignedIn();
  sessionStorage.removeItem(KEY);
  sessionStorage.removeItem(TOKEN);
  sessionStorage.removeItem(PROJECT);
  current = null;
  pending = null;
  if (reason) endedBecause = reason;
  if (was) notify(false);
}

/**
 * Signs out: a user's session ends on the server (`POST /auth/logout`), then this tab forgets it.
 * Also called when the server answered 401 (`reason` then says why the next page shows sign-in).
 */
export async function signOut(reason?: string): Promise<void> {
  if (current && !reason) await authPost('/auth/logout').catch(() => undefined);
  endSession(reason);
}

/**
 * Why the previous session ended (the sign-in page shows it), until the next sign-in. Read, not
 * taken: a render the router discards must not swallow it.
 */
export const endReason = (): string | null => endedBecause;

/** A valid JWT, refreshed when it is about to expire. Throws 401 when signed out. */
export async function getToken(): Promise<string> {
  const t = read();
  if (t && t.expiresAt - MARGIN_MS > Date.now()) return t.token;
  const key = sessionStorage.getItem(KEY);
  if (!key && !current && !(await ensureSignedIn()))
    throw new ApiError({ error: 'unauthorized', status: 401, message: 'Not signed in.' });
  pending ??= (key ? issueWithKey(key) : issueForUser())
    .then((fresh) => {
      const first = !read();
      sessionStorage.setItem(TOKEN, JSON.stringify(fresh));
      // The shell shows the project and role from the token: the first one of a tab is news to it.
      if (first) notify(true);
      return fresh.token;
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

/** The current project and the role in it, from the JWT. */
export function currentProject(): { id: string; name: string; role: Role } | null {
  const c = tokenClaims();
  const p = c?.project as { id?: string; name?: string } | undefined;
  if (!p?.id) return null;
  return { id: p.id, name: p.name ?? p.id, role: c?.role as Role };
}
