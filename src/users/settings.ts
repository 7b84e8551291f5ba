/**
 * Settings of users, sessions, sign-in and SSO (ORRERY_ADMIN_EMAILS, ORRERY_SESSION_*,
 * ORRERY_LOGIN_*, ORRERY_INVITE_TTL, ORRERY_SMTP_*, ORRERY_OIDC_*), read once at start.
 */

type Env = Record<string, string | undefined>;

export interface OidcSettings {
  issuer: string;
  clientId: string;
  clientSecret?: string;
  scopes: string;
  rolesClaim?: string;
  autoCreate: boolean;
  /** Checked against the roles when the users feature starts (this module imports no feature). */
  defaultRole: string;
  /** A project id; absent: the default project. */
  defaultProject?: string;
}

export interface UserSettings {
  /** Lower-cased addresses of account admins. */
  adminEmails: string[];
  sessionIdleSeconds: number;
  sessionMaxSeconds: number;
  /** Lifetime of the JWTs the console gets from its session (at most 300). */
  sessionTokenSeconds: number;
  loginMaxFailures: number;
  loginLockoutSeconds: number;
  /** Sign-in attempts per client address per minute. */
  loginRatePerMinute: number;
  inviteTtlSeconds: number;
  resetTtlSeconds: number;
  smtp?: { url: string; from: string };
  oidc?: OidcSettings;
}

const text = (env: Env, name: string): string | undefined => {
  const v = env[name];
  return v === undefined || v.trim() === '' ? undefined : v.trim();
};

function int(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = text(env, name);
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max)
    throw new Error(`${name} must be an integer between ${min} and ${max}, got ${JSON.stringify(raw)}`);
  return n;
}

const EMAIL = /^[^\s@]+@[^\s@]+$/;

function oidcOf(env: Env): OidcSettings | undefined {
  const issuer = text(env, 'ORRERY_OIDC_ISSUER');
  const clientId = text(env, 'ORRERY_OIDC_CLIENT_ID');
  if (!issuer && !clientId) return undefined;
  if (!issuer || !clientId) throw new Error('ORRERY_OIDC_ISSUER and ORRERY_OIDC_CLIENT_ID must be set together');
  if (!/^https?:\/\//.test(issuer))
    throw new Error(`ORRERY_OIDC_ISSUER must be an http(s) URL, got ${JSON.stringify(issuer)}`);
  const role = text(env, 'ORRERY_OIDC_DEFAULT_ROLE') ?? 'reader';
  const auto = (text(env, 'ORRERY_OIDC_AUTO_CREATE') ?? 'false').toLowerCase();
  if (!['true', 'false'].includes(auto))
    throw new Error(`ORRERY_OIDC_AUTO_CREATE must be true or false, got ${JSON.stringify(auto)}`);
  return {
    issuer,
    clientId,
    clientSecret: text(env, 'ORRERY_OIDC_CLIENT_SECRET'),
    scopes: text(env, 'ORRERY_OIDC_SCOPES') ?? 'openid email profile',
    rolesClaim: text(env, 'ORRERY_OIDC_ROLES_CLAIM'),
    autoCreate: auto === 'true',
    defaultRole: role,
    defaultProject: text(env, 'ORRERY_OIDC_DEFAULT_PROJECT'),
  };
}

export function userSettingsOf(env: Env): UserSettings {
  const adminEmails = (text(env, 'ORRERY_ADMIN_EMAILS') ?? '')
    .split(',')
    .map((e) => e.trim().toLowerCase())
    .filter(Boolean);
  const bad = adminEmails.find((e) => !EMAIL.test(e) || e.length > 320);
  if (bad) throw new Error(`ORRERY_ADMIN_EMAILS holds ${JSON.stringify(bad)}, which is not an email address`);
  const smtpUrl = text(env, 'ORRERY_SMTP_URL');
  if (smtpUrl && !/^smtps?:\/\//.test(smtpUrl)) throw new Error('ORRERY_SMTP_URL must be an smtp:// or smtps:// URL');
  const idle = int(env, 'ORRERY_SESSION_IDLE_TIMEOUT', 8 * 3600, 60, 30 * 86_400);
  const max = int(env, 'ORRERY_SESSION_MAX_AGE', 7 * 86_400, 60, 365 * 86_400);
  return {
    adminEmails,
    sessionIdleSeconds: Math.min(idle, max),
    sessionMaxSeconds: max,
    sessionTokenSeconds: int(env, 'ORRERY_SESSION_TOKEN_TTL', 300, 10, 300),
    loginMaxFailures: int(env, 'ORRERY_LOGIN_MAX_FAILURES', 5, 1, 1000),
    loginLockoutSeconds: int(env, 'ORRERY_LOGIN_LOCKOUT', 900, 1, 86_400),
    loginRatePerMinute: int(env, 'ORRERY_LOGIN_RATE', 20, 1, 10_000),
    inviteTtlSeconds: int(env, 'ORRERY_INVITE_TTL', 7 * 86_400, 60, 90 * 86_400),
    resetTtlSeconds: int(env, 'ORRERY_PASSWORD_RESET_TTL', 3600, 60, 7 * 86_400),
    smtp: smtpUrl ? { url: smtpUrl, from: text(env, 'ORRERY_SMTP_FROM') ?? 'orrery@localhost' } : undefined,
    oidc: oidcOf(env),
  };
}
