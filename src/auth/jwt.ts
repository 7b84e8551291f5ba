/**
 * JWTs issued at POST /token/issue. HS256 with a key derived from the server secret. The payload
 * carries what `VertesiaClient.fromAuthToken` and the CLI read: account, project, `endpoints`,
 * and `iss`, the token server URL: `fromAuthToken` falls back to `iss` as its token server when
 * it is given endpoints without one (the CLI with VERTESIA_SERVER_URL and VERTESIA_STORE_URL but
 * no VERTESIA_TOKEN_SERVER_URL), and builds URLs on it, so it must be an absolute URL.
 */
import { SignJWT, jwtVerify, errors as joseErrors } from 'jose';
import type { Principal, KeyRole, Ref } from './principal.ts';

export const JWT_AUDIENCE = 'orrery';

interface IssuedClaims {
  sub: string;
  type: 'apikey';
  key_id: string;
  role: KeyRole;
  account: Ref;
  project: Ref & { account: string };
  account_roles: string[];
  accounts: Ref[];
  project_roles: string[];
  apps: string[];
  name: string;
  endpoints: { studio: string; store: string; token: string };
}

export async function signToken(key: Uint8Array, p: Principal, publicUrl: string, ttlSeconds: number): Promise<string> {
  const claims: IssuedClaims = {
    sub: `apikey:${p.keyId}`,
    type: 'apikey',
    key_id: p.keyId,
    role: p.role,
    name: `API key ${p.keyId}`,
    account: p.account,
    project: { ...p.project, account: p.account.id },
    account_roles: p.role === 'admin' ? ['account_owner'] : ['account_member'],
    accounts: [p.account],
    project_roles: p.role === 'admin' ? ['project_admin'] : [p.role],
    apps: [],
    endpoints: { studio: publicUrl, store: publicUrl, token: `${publicUrl}/api/v1` },
  };
  return new SignJWT({ ...claims })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(claims.endpoints.token)
    .setAudience(JWT_AUDIENCE)
    .setIssuedAt()
    .setExpirationTime(Math.floor(Date.now() / 1000) + ttlSeconds)
    .sign(key);
}

/** A token issued from a user's console session (src/users/sessions.ts): checked against the session on every use. */
export interface UserClaims {
  sub: string;
  type: 'user';
  user_id: string;
  sid: string;
  email: string;
  name: string;
  role: KeyRole;
  account: Ref;
  project: Ref & { account: string };
  account_roles: string[];
  accounts: Ref[];
  project_roles: string[];
  apps: string[];
  endpoints: { studio: string; store: string; token: string };
}

export async function signUserToken(
  key: Uint8Array,
  p: Principal & { user: NonNullable<Principal['user']> },
  publicUrl: string,
  ttlSeconds: number,
): Promise<string> {
  const claims: UserClaims = {
    sub: `user:${p.user.id}`,
    type: 'user',
    user_id: p.user.id,
    sid: p.user.sessionId,
    email: p.user.email,
    name: p.user.name,
    role: p.role,
    account: p.account,
    project: { ...p.project, account: p.account.id },
    account_roles: p.role === 'admin' ? ['account_owner'] : ['account_member'],
    accounts: [p.account],
    project_roles: p.role === 'admin' ? ['project_admin'] : [p.role],
    apps: [],
    endpoints: { studio: publicUrl, store: publicUrl, token: `${publicUrl}/api/v1` },
  };
  return new SignJWT({ ...claims })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(claims.endpoints.token)
    .setAudience(JWT_AUDIENCE)
    .setIssuedAt()
    .setExpirationTime(Math.floor(Date.now() / 1000) + ttlSeconds)
    .sign(key);
}

export type VerifyOutcome = { ok: true; claims: IssuedClaims | UserClaims } | { ok: false; reason: string };

export async function verifyToken(key: Uint8Array, token: string): Promise<VerifyOutcome> {
  try {
    // No issuer check: `iss` is the public URL, which replicas or a changed ORRERY_PUBLIC_URL may
    // not share; the signature (the shared secret) and the audience are what prove the origin.
    // `exp` required: a token signed without one (none is, by us) must never live forever.
    const { payload } = await jwtVerify(token, key, {
      audience: JWT_AUDIENCE,
      algorithms: ['HS256'],
      requiredClaims: ['exp'],
    });
    if (payload.type === 'user') {
      const u = payload as unknown as UserClaims;
      if (typeof u.user_id !== 'string' || typeof u.sid !== 'string' || !u.project?.id || !u.account?.id)
        return { ok: false, reason: 'token is missing its user, session, account or project' };
      return { ok: true, claims: u };
    }
    const claims = payload as unknown as IssuedClaims;
    if (typeof claims.key_id !== 'string' || !claims.project?.id || !claims.account?.id) {
      return { ok: false, reason: 'token is missing its key, account or project' };
    }
    return { ok: true, claims };
  } catch (err) {
    if (err instanceof joseErrors.JWTExpired)
      return {
        ok: false,
        reason:
          'token has expired; exchange the API key again at /api/v1/token/issue (the console: POST /auth/token from its session)',
      };
    return { ok: false, reason: 'token is not a valid Orrery token' };
  }
}

export const looksLikeJwt = (token: string): boolean => /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(token);
