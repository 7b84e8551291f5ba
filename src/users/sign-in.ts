/**
 * Proving who one is without a session: a password (with lockout and a per-address rate limit),
 * an invitation link, or a password-reset link. Each ends in a new session (sessions.ts).
 */
import { nowIso } from '../db/ids.ts';
import { BadRequest, Conflict, OrreryErrorWithHeaders, Unauthorized } from '../util/errors.ts';
import type { AuditLog } from '../audit/log.ts';
import type { Principal } from '../auth/principal.ts';
import * as store from './store.ts';
import type { Db, LinkRow, UserRow } from './store.ts';
import { hashSecret, looksLikeSecret } from './links.ts';
import { checkPasswordRules, hashPassword, PASSWORD_MAX_LENGTH, verifyPassword } from './passwords.ts';
import { checkedEmail, checkedName, type UsersService } from './service.ts';
import type { UserSettings } from './settings.ts';

/** Addresses tracked by the rate limit at most: past it the oldest windows go first. */
const MAX_TRACKED = 10_000;

export class SignIn {
  /** Attempts per client address in the current minute. */
  private readonly attempts = new Map<string, { windowStart: number; count: number }>();

  constructor(
    private readonly db: Db,
    private readonly settings: UserSettings,
    private readonly users: UsersService,
    private readonly audit: AuditLog,
  ) {}

  /** 429 past ORRERY_LOGIN_RATE attempts a minute from one address, before any work. */
  rateLimit(ip: string): void {
    const now = Date.now();
    const a = this.attempts.get(ip);
    if (!a || now - a.windowStart >= 60_000) {
      if (this.attempts.size >= MAX_TRACKED) this.attempts.delete(this.attempts.keys().next().value!);
      this.attempts.delete(ip);
      this.attempts.set(ip, { windowStart: now, count: 1 });
      return;
    }
    a.count++;
    if (a.count > this.settings.loginRatePerMinute) {
      const retry = Math.max(1, Math.ceil((a.windowStart + 60_000 - now) / 1000));
      throw new OrreryErrorWithHeaders(
        'rate_limited',
        429,
        `too many sign-in attempts from this address: at most ${this.settings.loginRatePerMinute} a minute; retry in ${retry} s`,
        { retry_after: retry },
        { 'retry-after': String(retry) },
      );
    }
  }

  /** Email and password; the user when both are right, 401 otherwise (the same answer for an unknown email). */
  async password(email: unknown, password: unknown): Promise<UserRow> {
    const address = checkedEmail(email);
    if (typeof password !== 'string' || !password || password.length > PASSWORD_MAX_LENGTH)
      throw new BadRequest(`password must be a string of 1 to ${PASSWORD_MAX_LENGTH} characters`);
    const candidates = await this.db.selectFrom('users').selectAll().where('email', '=', address).execute();
    const user = candidates.length === 1 ? candidates[0] : undefined;
    const now = Date.now();
    if (user?.locked_until && Date.parse(user.locked_until) > now) {
      // Checked before the hash: a locked account costs no scrypt, and a right password does not unlock it.
      throw new Unauthorized(
        `too many failed sign-ins: this user is locked until ${user.locked_until}; an admin can issue a password reset link`,
      );
    }
    const ok = await verifyPassword(password, user?.password_hash ?? null);
    if (!user || !ok) {
      if (user) await this.failed(user);
      throw new Unauthorized('email or password is wrong');
    }
    if (user.status !== 'active') throw new Unauthorized('this user is suspended: ask an admin of the account');
    if (user.failed_logins || user.locked_until)
      await store.updateUser(this.db, user.account_id, user.id, { failed_logins: 0, locked_until: null });
    return user;
  }

  private async failed(user: UserRow): Promise<void> {
    // Counted in SQL: concurrent failures all count.
    await this.db
      .updateTable('users')
      .set((eb) => ({ failed_logins: eb('failed_logins', '+', 1) }))
      .where('id', '=', user.id)
      .execute();
    const row = await store.getUser(this.db, user.account_id, user.id);
    if (row && row.failed_logins >= this.settings.loginMaxFailures) {
      const until = new Date(Date.now() + this.settings.loginLockoutSeconds * 1000).toISOString();
      await store.updateUser(this.db, user.account_id, user.id, { failed_logins: 0, locked_until: until });
      await this.audit.write(this.db as never, systemOf(user), {
        action: 'update',
        resourceType: 'user',
        resourceId: user.id,
        projectId: null,
        category: 'security',
        details: { locked_until: until, reason: 'failed sign-ins' },
      });
    }
  }

  /** What an invitation link is for, so the acceptance page can say it (401 when it cannot be used). */
  async describeInvite(
    token: unknown,
  ): Promise<{ email: string; role: string; project: string | null; project_name: string | null; expires: string }> {
    const link = await this.link('invite', token);
    const project = link.project_id ? await store.getProject(this.db, link.account_id, link.project_id) : undefined;
    return {
      email: link.email,
      role: link.role ?? 'reader',
      project: link.project_id,
      project_name: project?.name ?? null,
      expires: link.expires_at,
    };
  }

  /**
   * Accepts an invitation: a new user with that email, the bound role and a password (absent when
   * they will sign in with SSO). The link is used up even when two requests race on it.
   */
  async acceptInvite(input: { token: unknown; name: unknown; password?: unknown }): Promise<UserRow> {
    const link = await this.link('invite', input.token);
    const name = checkedName(input.name);
    const password = input.password === undefined ? undefined : checkPasswordRules(input.password);
    if (await store.findUserByEmail(this.db, link.account_id, link.email))
      throw new Conflict(`${link.email} already has a login here: sign in, and ask an admin for the role`);
    return this.fromInvite(link, name, password === undefined ? null : await hashPassword(password));
  }

  /** The newest pending invitation of an address (SSO: signing in with it accepts it). */
  async pendingInviteOf(account: string, email: string): Promise<LinkRow | undefined> {
    return (await store.pendingInvites(this.db, account, nowIso())).find((l) => l.email === email);
  }

  /** A user made from an invitation, which is used up in the same transaction (even under races). */
  async fromInvite(link: LinkRow, name: string, hash: string | null): Promise<UserRow> {
    const admin = link.role === 'admin';
    const user = {
      ...this.users.newUserRow(link.account_id, link.email, name, admin, link.created_by),
      password_hash: hash,
    };
    await this.db.transaction().execute(async (trx) => {
      if (!(await store.useLink(trx, link.id, nowIso())))
        throw new Unauthorized('this invitation link has already been used');
      await store.insertUser(trx, user);
      if (!admin && link.project_id)
        await store.setMembership(trx, {
          user_id: user.id,
          project_id: link.project_id,
          account_id: link.account_id,
          role: link.role ?? 'reader',
          created_at: nowIso(),
        });
      await this.audit.write(trx as never, systemOf(user), {
        action: 'create',
        resourceType: 'user',
        resourceId: user.id,
        projectId: link.project_id,
        category: 'security',
        details: { invite: link.id, email: user.email, role: link.role },
      });
    });
    return user;
  }

  /** Sets a new password from an admin-issued reset link; ends the user's other sessions and any lockout. */
  async resetPassword(input: { token: unknown; password: unknown }): Promise<UserRow> {
    const link = await this.link('reset', input.token);
    const password = checkPasswordRules(input.password);
    const user = link.user_id ? await store.getUser(this.db, link.account_id, link.user_id) : undefined;
    if (!user) throw new Unauthorized('the user of this link has been removed');
    if (user.status !== 'active') throw new Unauthorized('this user is suspended: ask an admin of the account');
    const hash = await hashPassword(password);
    await this.db.transaction().execute(async (trx) => {
      if (!(await store.useLink(trx, link.id, nowIso())))
        throw new Unauthorized('this reset link has already been used');
      await store.updateUser(trx, user.account_id, user.id, {
        password_hash: hash,
        failed_logins: 0,
        locked_until: null,
        updated_at: nowIso(),
      });
      await store.deleteUserSessions(trx, user.id);
      await this.audit.write(trx as never, systemOf(user), {
        action: 'update',
        resourceType: 'user',
        resourceId: user.id,
        projectId: null,
        category: 'security',
        details: { password: 'reset' },
      });
    });
    return { ...user, password_hash: hash };
  }

  private async link(kind: 'invite' | 'reset', token: unknown) {
    if (!looksLikeSecret(token))
      throw new BadRequest('token must be the token of the link (43 letters, digits, "-", "_")');
    const link = await store.findLinkByHash(this.db, hashSecret(token));
    const what = kind === 'invite' ? 'invitation' : 'password reset';
    if (!link || link.kind !== kind) throw new Unauthorized(`this ${what} link is not valid`);
    if (link.used_at) throw new Unauthorized(`this ${what} link has already been used`);
    if (Date.parse(link.expires_at) <= Date.now())
      throw new Unauthorized(`this ${what} link expired at ${link.expires_at}: ask an admin for a new one`);
    return link;
  }
}

/** The principal of a user's own unauthenticated step (accepting, resetting, being locked), for the audit trail. */
const systemOf = (u: UserRow): Principal => ({
  account: { id: u.account_id, name: '' },
  project: { id: '', name: '' },
  keyId: `user:${u.id}`,
  role: u.account_admin ? 'admin' : 'reader',
  via: 'jwt',
  user: { id: u.id, email: u.email, name: u.name, sessionId: '' },
});
