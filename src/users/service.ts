/**
 * People of an account: users, their role per project, invitations and password-reset links.
 * Managing them is an account admin's right (an admin key, or a user who is an account admin);
 * other callers see the users of their own project. Suspending or removing a user ends their
 * sessions at once and disables (or deletes) the API keys they made.
 */
import { newId, nowIso } from '../db/ids.ts';
import { BadRequest, Conflict, Forbidden, NotFound } from '../util/errors.ts';
import { actorOf, keyRoleOf, KEY_ROLES, type KeyRole, type KeyRoleInput, type Principal } from '../auth/principal.ts';
import type { AuditLog } from '../audit/log.ts';
import * as store from './store.ts';
import type { Db, LinkRow, UserRow } from './store.ts';
import { hashSecret, linkUrl, newSecret } from './links.ts';
import type { Mailer, MailOutcome } from './mail.ts';
import type { UserSettings } from './settings.ts';

export interface UserDto {
  id: string;
  email: string;
  name: string;
  status: 'active' | 'suspended';
  account_admin: boolean;
  projects: Array<{ id: string; name: string; role: KeyRole }>;
  sign_in_provider?: string;
  has_password: boolean;
  last_sign_in_at: string | null;
  created_by: string;
  created_at: string;
  updated_at: string;
}

export interface InviteDto {
  id: string;
  type: 'user-invite';
  data: {
    email: string;
    role: KeyRole;
    account: { id: string; name: string };
    project?: { id: string; name: string };
    invited_by: { id: string; name: string; email: string };
  };
  expires: string;
  account: string;
  created_at: string;
  updated_at: string;
}

const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,255}$/;

export function checkedEmail(email: unknown): string {
  if (typeof email !== 'string' || !EMAIL.test(email.trim()))
    throw new BadRequest('email must be an email address (name@domain)');
  return email.trim().toLowerCase();
}

export function checkedName(name: unknown, field = 'name'): string {
  if (typeof name !== 'string' || !name.trim() || name.trim().length > 200)
    throw new BadRequest(`${field} must be a non-empty string of at most 200 characters`);
  return name.trim();
}

function checkedRole(role: unknown): KeyRole {
  if (typeof role !== 'string' || !([...KEY_ROLES, 'member'] as string[]).includes(role))
    throw new BadRequest(`role must be one of ${KEY_ROLES.join(', ')}`);
  return keyRoleOf(role as KeyRoleInput);
}

/** Told when a user's access ended or changed: sessions.ts forgets what it cached. */
type UserChanged = (userId: string) => void;

export class UsersService {
  private readonly changeHandlers: UserChanged[] = [];

  constructor(
    private readonly db: Db,
    private readonly settings: UserSettings,
    private readonly publicUrl: () => string,
    private readonly mailer: Mailer,
    private readonly audit: AuditLog,
    private readonly keysChanged: (ids: string[]) => void,
  ) {}

  onUserChanged(fn: UserChanged): void {
    this.changeHandlers.push(fn);
  }

  /** At every start: the users of ORRERY_ADMIN_EMAILS exist, active, as account admins. */
  async ensureAdmins(account: string): Promise<void> {
    for (const email of this.settings.adminEmails) {
      const found = await store.findUserByEmail(this.db, account, email);
      const now = nowIso();
      if (!found) {
        await store
          .insertUser(this.db, this.newUserRow(account, email, email.split('@')[0], true, 'system'))
          .catch(async (err) => {
            // Another replica starting at the same moment made it.
            if (!(await store.findUserByEmail(this.db, account, email))) throw err;
          });
      } else if (!found.account_admin) {
        await store.updateUser(this.db, account, found.id, { account_admin: 1, updated_at: now });
      }
    }
  }

  newUserRow(account: string, email: string, name: string, admin: boolean, createdBy: string): UserRow {
    const now = nowIso();
    return {
      id: newId(),
      account_id: account,
      email,
      name,
      status: 'active',
      account_admin: admin ? 1 : 0,
      password_hash: null,
      failed_logins: 0,
      locked_until: null,
      sign_in_provider: null,
      last_sign_in_at: null,
      created_by: createdBy,
      created_at: now,
      updated_at: now,
    };
  }

  /** `GET /account/members` (account.members()): every user for an admin, else those of the caller's project. */
  async members(p: Principal): Promise<UserDto[]> {
    const [users, all] = await Promise.all([
      store.listUsers(this.db, p.account.id),
      store.memberships(this.db, p.account.id),
    ]);
    const dtos = users.map((u) => this.toDto(u, all));
    if (p.role === 'admin') return dtos;
    return dtos.filter((u) => u.projects.some((x) => x.id === p.project.id));
  }

  async get(p: Principal, id: string): Promise<UserDto> {
    const u = await this.visible(p, id);
    return this.toDto(u, await store.memberships(this.db, p.account.id, u.id));
  }

  /** `PUT /users/:id {name?, status?, account_admin?}`. */
  async update(p: Principal, id: string, input: Record<string, unknown>): Promise<UserDto> {
    mustAdmin(p);
    const u = await this.visible(p, id);
    const patch: Partial<UserRow> = {};
    for (const [key, value] of Object.entries(input)) {
      if (key === 'name') patch.name = checkedName(value);
      else if (key === 'status') {
        if (value !== 'active' && value !== 'suspended') throw new BadRequest('status must be "active" or "suspended"');
        patch.status = value;
      } else if (key === 'account_admin') {
        if (typeof value !== 'boolean') throw new BadRequest('account_admin must be true or false');
        patch.account_admin = value ? 1 : 0;
      } else throw new BadRequest(`${key} cannot be changed here; a user takes name, status, account_admin`);
    }
    if (p.user?.id === u.id && (patch.status === 'suspended' || patch.account_admin === 0))
      throw new Conflict('you cannot suspend yourself or take away your own admin rights; ask another admin');
    if (patch.account_admin === 0 && this.settings.adminEmails.includes(u.email))
      throw new Conflict(`${u.email} is listed in ORRERY_ADMIN_EMAILS: remove it there to take away its admin rights`);
    const suspending = patch.status === 'suspended' && u.status !== 'suspended';
    const keys = suspending ? await store.personalKeys(this.db, p.account.id, u.id) : [];
    patch.updated_at = nowIso();
    await this.audit.record(p, async (trx) => {
      const db = store.usersOf(trx);
      await store.updateUser(db, p.account.id, u.id, patch);
      if (suspending) {
        await store.deleteUserSessions(db, u.id);
        await store.disableKeys(db, keys);
      }
      return {
        result: undefined,
        entry: {
          action: 'update',
          resourceType: 'user',
          resourceId: u.id,
          projectId: null,
          category: 'security',
          changes: this.audit.changes(userView(u), userView({ ...u, ...patch })),
          ...(keys.length ? { details: { disabled_keys: keys } } : {}),
        },
      };
    });
    this.changed(u.id, keys);
    return this.get(p, id);
  }

  /** `DELETE /users/:id`: the user, their sessions, memberships, links and personal keys. */
  async remove(p: Principal, id: string): Promise<{ id: string }> {
    mustAdmin(p);
    const u = await this.visible(p, id);
    if (p.user?.id === u.id) throw new Conflict('you cannot remove yourself; ask another admin');
    const keys = await store.personalKeys(this.db, p.account.id, u.id);
    await this.audit.record(p, async (trx) => {
      const db = store.usersOf(trx);
      await store.deleteKeys(db, keys);
      await store.deleteUser(db, p.account.id, u.id);
      return {
        result: undefined,
        entry: {
          action: 'delete',
          resourceType: 'user',
          resourceId: u.id,
          projectId: null,
          category: 'security',
          changes: this.audit.changes(userView(u), null),
          ...(keys.length ? { details: { deleted_keys: keys } } : {}),
        },
      };
    });
    this.changed(u.id, keys);
    return { id: u.id };
  }

  /** `PUT /users/:id/projects/:project {role}`: the user's role in that project. */
  async setRole(p: Principal, id: string, project: string, role: unknown): Promise<UserDto> {
    mustAdmin(p);
    const u = await this.visible(p, id);
    const proj = await this.project(p, project);
    const r = checkedRole(role);
    if (r === 'admin')
      throw new BadRequest(
        'admin is account-wide for users: make the user an account admin with PUT /users/:id {"account_admin": true}',
      );
    await this.audit.record(p, async (trx) => {
      await store.setMembership(store.usersOf(trx), {
        user_id: u.id,
        project_id: proj.id,
        account_id: p.account.id,
        role: r,
        created_at: nowIso(),
      });
      return {
        result: undefined,
        entry: {
          action: 'update',
          resourceType: 'user',
          resourceId: u.id,
          projectId: proj.id,
          category: 'security',
          details: { project: proj.id, role: r },
        },
      };
    });
    this.changed(u.id, []);
    return this.get(p, id);
  }

  async removeRole(p: Principal, id: string, project: string): Promise<UserDto> {
    mustAdmin(p);
    const u = await this.visible(p, id);
    const proj = await this.project(p, project);
    await this.audit.record(p, async (trx) => {
      const r = await store.removeMembership(store.usersOf(trx), u.id, proj.id);
      if (!Number(r.numDeletedRows)) throw new NotFound('membership of user in project', proj.id);
      return {
        result: undefined,
        entry: {
          action: 'delete',
          resourceType: 'user',
          resourceId: u.id,
          projectId: proj.id,
          category: 'security',
          details: { project: proj.id },
        },
      };
    });
    this.changed(u.id, []);
    return this.get(p, id);
  }

  /** `POST /account/invites {email, role, project?}`: a single-use link that expires and binds the role. */
  async invite(
    p: Principal,
    input: { email: unknown; role: unknown; project?: unknown },
  ): Promise<{ action: 'invited' | 'added'; id?: string; link?: string; expires?: string; mail?: MailOutcome }> {
    mustAdmin(p);
    const email = checkedEmail(input.email);
    const role = checkedRole(input.role);
    if (input.project !== undefined && typeof input.project !== 'string')
      throw new BadRequest('project must be a project id');
    const proj = await this.project(p, (input.project as string | undefined) ?? p.project.id);
    const existing = await store.findUserByEmail(this.db, p.account.id, email);
    if (existing) {
      // Vertesia's `added`: the person already has a login; they get the role now.
      if (role === 'admin') await this.update(p, existing.id, { account_admin: true });
      else await this.setRole(p, existing.id, proj.id, role);
      return { action: 'added' };
    }
    const secret = newSecret();
    const row = this.linkRow(p, 'invite', secret, email, this.settings.inviteTtlSeconds, {
      project_id: proj.id,
      role,
    });
    await this.audit.record(p, async (trx) => {
      await store.insertLink(store.usersOf(trx), row);
      return {
        result: undefined,
        entry: {
          action: 'create',
          resourceType: 'invite',
          resourceId: row.id,
          projectId: proj.id,
          category: 'security',
          details: { email, role, expires: row.expires_at },
        },
      };
    });
    const link = linkUrl(this.publicUrl(), 'invite', secret);
    const account = await store.getAccount(this.db, p.account.id);
    const mail = await this.mailer.send(
      email,
      `You are invited to ${account?.name ?? 'Orrery'}`,
      `${inviterName(p)} invited you to the project "${proj.name}" as ${role}.\n\nAccept the invitation: ${link}\n\nThe link works once and expires at ${row.expires_at}.\n`,
    );
    return { action: 'invited', id: row.id, link, expires: row.expires_at, mail };
  }

  /** `GET /account/invites`: the pending invitations (not used, not expired), never their secret. */
  async invites(p: Principal): Promise<InviteDto[]> {
    mustAdmin(p);
    const [rows, account, projects] = await Promise.all([
      store.pendingInvites(this.db, p.account.id, nowIso()),
      store.getAccount(this.db, p.account.id),
      store.listProjects(this.db, p.account.id),
    ]);
    const users = new Map((await store.listUsers(this.db, p.account.id)).map((u) => [`user:${u.id}`, u]));
    const names = new Map(projects.map((x) => [x.id, x.name]));
    return rows.map((r) => {
      const by = users.get(r.created_by);
      return {
        id: r.id,
        type: 'user-invite',
        data: {
          email: r.email,
          role: r.role as KeyRole,
          account: { id: p.account.id, name: account?.name ?? p.account.name },
          ...(r.project_id ? { project: { id: r.project_id, name: names.get(r.project_id) ?? r.project_id } } : {}),
          invited_by: by
            ? { id: by.id, name: by.name, email: by.email }
            : { id: r.created_by, name: r.created_by, email: '' },
        },
        expires: r.expires_at,
        account: r.account_id,
        created_at: r.created_at,
        updated_at: r.used_at ?? r.created_at,
      };
    });
  }

  /** `DELETE /account/invites/:id` (the client's rejectInvite): the link stops working. */
  async revokeInvite(p: Principal, id: string): Promise<{ status: 'deleted' }> {
    mustAdmin(p);
    await this.audit.record(p, async (trx) => {
      const r = await store.deleteLink(store.usersOf(trx), p.account.id, id);
      if (!Number(r.numDeletedRows)) throw new NotFound('invitation', id);
      return {
        result: undefined,
        entry: { action: 'delete', resourceType: 'invite', resourceId: id, projectId: null, category: 'security' },
      };
    });
    return { status: 'deleted' };
  }

  /** `POST /users/:id/password-reset`: a single-use link that sets a new password. */
  async resetLink(p: Principal, id: string): Promise<{ link: string; expires: string; mail: MailOutcome }> {
    mustAdmin(p);
    const u = await this.visible(p, id);
    const secret = newSecret();
    const row = this.linkRow(p, 'reset', secret, u.email, this.settings.resetTtlSeconds, { user_id: u.id });
    await this.audit.record(p, async (trx) => {
      await store.insertLink(store.usersOf(trx), row);
      return {
        result: undefined,
        entry: {
          action: 'create',
          resourceType: 'password_reset',
          resourceId: u.id,
          projectId: null,
          category: 'security',
          details: { expires: row.expires_at },
        },
      };
    });
    const link = linkUrl(this.publicUrl(), 'reset', secret);
    const mail = await this.mailer.send(
      u.email,
      'Set your Orrery password',
      `Set your password: ${link}\n\nThe link works once and expires at ${row.expires_at}.\n`,
    );
    return { link, expires: row.expires_at, mail };
  }

  private linkRow(
    p: Principal,
    kind: 'invite' | 'reset',
    secret: string,
    email: string,
    ttl: number,
    rest: Partial<LinkRow>,
  ): LinkRow {
    return {
      id: newId(),
      account_id: p.account.id,
      kind,
      token_hash: hashSecret(secret),
      email,
      project_id: null,
      role: null,
      user_id: null,
      expires_at: new Date(Date.now() + ttl * 1000).toISOString(),
      used_at: null,
      created_by: actorOf(p),
      created_at: nowIso(),
      ...rest,
    };
  }

  private changed(userId: string, keys: string[]): void {
    for (const fn of this.changeHandlers) fn(userId);
    if (keys.length) this.keysChanged(keys);
  }

  private async visible(p: Principal, id: string): Promise<UserRow> {
    const u = await store.getUser(this.db, p.account.id, id);
    if (!u) throw new NotFound('user', id);
    if (p.role !== 'admin' && !(await store.membership(this.db, u.id, p.project.id)) && p.user?.id !== u.id)
      throw new NotFound('user', id);
    return u;
  }

  private async project(p: Principal, id: string) {
    const row = await store.getProject(this.db, p.account.id, id);
    if (!row) throw new NotFound('project', id);
    return row;
  }

  toDto(u: UserRow, all: Awaited<ReturnType<typeof store.memberships>>): UserDto {
    return {
      id: u.id,
      email: u.email,
      name: u.name,
      status: u.status as UserDto['status'],
      account_admin: !!u.account_admin,
      projects: all
        .filter((m) => m.user_id === u.id)
        .map((m) => ({ id: m.project_id, name: m.project_name, role: m.role as KeyRole })),
      ...(u.sign_in_provider ? { sign_in_provider: u.sign_in_provider } : {}),
      has_password: u.password_hash !== null,
      last_sign_in_at: u.last_sign_in_at,
      created_by: u.created_by,
      created_at: u.created_at,
      updated_at: u.updated_at,
    };
  }
}

function mustAdmin(p: Principal): void {
  if (p.role !== 'admin')
    throw new Forbidden(`only an account admin manages users and invitations (the caller's role is ${p.role})`);
}

const inviterName = (p: Principal): string => (p.user ? `${p.user.name} (${p.user.email})` : 'An administrator');

/** What the audit trail shows of a user: never the password hash. */
const userView = (u: UserRow): Record<string, unknown> => ({
  email: u.email,
  name: u.name,
  status: u.status,
  account_admin: !!u.account_admin,
});
