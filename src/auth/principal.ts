/** Who is calling, resolved from the bearer token by the auth hook. */
export const KEY_ROLES = ['admin', 'developer', 'executor', 'reader', 'auditor'] as const;
export type KeyRole = (typeof KEY_ROLES)[number];

/** Roles accepted on input: the stored ones, and `member`, the developer role's name before 0017. */
export const KEY_ROLE_INPUTS = [...KEY_ROLES, 'member'] as const;
export type KeyRoleInput = (typeof KEY_ROLE_INPUTS)[number];

export const keyRoleOf = (input: KeyRoleInput): KeyRole => (input === 'member' ? 'developer' : input);

export interface Ref {
  id: string;
  name: string;
}

export interface Principal {
  account: Ref;
  project: Ref;
  keyId: string;
  role: KeyRole;
  /** How the caller authenticated: the key itself or a JWT issued for it (or for a user's session). */
  via: 'apikey' | 'jwt';
  /** A person signed in to the console: their session's JWT (src/users). `keyId` is then `user:<id>`. */
  user?: UserRef;
  /** The request's client address and id, for the audit trail (set per request by the auth hook). */
  ip?: string;
  requestId?: string;
}

interface UserRef {
  id: string;
  email: string;
  name: string;
  /** The session the token was issued from. */
  sessionId: string;
}

/** The owner scope every query of project data starts from (style D5). */
export interface Scope {
  account: string;
  project: string;
}

export const scopeOf = (p: Principal): Scope => ({ account: p.account.id, project: p.project.id });

/** `created_by` / `updated_by` value of the interface: `apikey:<id>`, or `user:<id>` for a person. */
export const actorOf = (p: Principal): string => (p.user ? `user:${p.user.id}` : `apikey:${p.keyId}`);
