/** SQL for users, their memberships, their links (invitations, resets) and sessions. No rules here. */
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import type { Db as AuthDb } from '../auth/store.ts';
import * as keys from '../auth/personal-keys.ts';
import * as reads from '../auth/reads.ts';

export interface UserRow {
  id: string;
  account_id: string;
  email: string;
  name: string;
  status: string;
  account_admin: number;
  password_hash: string | null;
  failed_logins: number;
  locked_until: string | null;
  sign_in_provider: string | null;
  last_sign_in_at: string | null;
  created_by: string;
  created_at: string;
  updated_at: string;
}

export interface MembershipRow {
  user_id: string;
  project_id: string;
  account_id: string;
  role: string;
  created_at: string;
}

export interface LinkRow {
  id: string;
  account_id: string;
  kind: 'invite' | 'reset';
  token_hash: string;
  email: string;
  project_id: string | null;
  role: string | null;
  user_id: string | null;
  expires_at: string;
  used_at: string | null;
  created_by: string;
  created_at: string;
}

export interface SessionRow {
  id: string;
  token_hash: string;
  user_id: string;
  account_id: string;
  csrf_token: string;
  method: string;
  created_at: string;
  last_seen_at: string;
  expires_at: string;
  ip: string | null;
}

interface UsersTables {
  users: UserRow;
  user_memberships: MembershipRow;
  user_links: LinkRow;
  user_sessions: SessionRow;
}

export type Db = Kysely<UsersTables & Pick<Database, 'projects' | 'api_keys' | 'accounts'>>;
export const usersOf = (db: object) => db as Db;

export const getUser = (db: Db, account: string, id: string) =>
  db.selectFrom('users').selectAll().where('account_id', '=', account).where('id', '=', id).executeTakeFirst();

export const findUserByEmail = (db: Db, account: string, email: string) =>
  db
    .selectFrom('users')
    .selectAll()
    .where('account_id', '=', account)
    .where('email', '=', email.toLowerCase())
    .executeTakeFirst();

export const listUsers = (db: Db, account: string) =>
  db.selectFrom('users').selectAll().where('account_id', '=', account).orderBy('created_at').orderBy('id').execute();

export const insertUser = (db: Db, row: UserRow) => db.insertInto('users').values(row).execute();

export const updateUser = (db: Db, account: string, id: string, patch: Partial<UserRow>) =>
  db.updateTable('users').set(patch).where('account_id', '=', account).where('id', '=', id).execute();

export const deleteUser = (db: Db, account: string, id: string) =>
  db.deleteFrom('users').where('account_id', '=', account).where('id', '=', id).executeTakeFirst();

/**
 * Memberships with their project's name, of one user or of every user of the account, in the
 * projects' order. The names come from auth's projects (an account has few), joined here.
 */
export async function memberships(db: Db, account: string, user?: string) {
  let q = db
    .selectFrom('user_memberships as m')
    .select(['m.user_id', 'm.project_id', 'm.role'])
    .where('m.account_id', '=', account);
  if (user) q = q.where('m.user_id', '=', user);
  const [rows, projects] = await Promise.all([q.execute(), listProjects(db, account)]);
  const names = new Map(projects.map((p, i) => [p.id, { name: p.name, order: i }]));
  return rows
    .filter((m) => names.has(m.project_id))
    .map((m) => ({ ...m, project_name: names.get(m.project_id)!.name }))
    .sort((a, b) => names.get(a.project_id)!.order - names.get(b.project_id)!.order);
}

export const membership = (db: Db, user: string, project: string) =>
  db
    .selectFrom('user_memberships')
    .select('role')
    .where('user_id', '=', user)
    .where('project_id', '=', project)
    .executeTakeFirst();

export async function setMembership(db: Db, row: MembershipRow): Promise<void> {
  await db
    .insertInto('user_memberships')
    .values(row)
    .onConflict((oc) => oc.columns(['user_id', 'project_id']).doUpdateSet({ role: row.role }))
    .execute();
}

export const removeMembership = (db: Db, user: string, project: string) =>
  db.deleteFrom('user_memberships').where('user_id', '=', user).where('project_id', '=', project).executeTakeFirst();

export const insertLink = (db: Db, row: LinkRow) => db.insertInto('user_links').values(row).execute();

export const findLinkByHash = (db: Db, hash: string) =>
  db.selectFrom('user_links').selectAll().where('token_hash', '=', hash).executeTakeFirst();

/** Marks a link used, if it still was not: answers whether this call did (single use under races). */
export async function useLink(db: Db, id: string, at: string): Promise<boolean> {
  const r = await db
    .updateTable('user_links')
    .set({ used_at: at })
    .where('id', '=', id)
    .where('used_at', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

export const pendingInvites = (db: Db, account: string, now: string) =>
  db
    .selectFrom('user_links')
    .selectAll()
    .where('account_id', '=', account)
    .where('kind', '=', 'invite')
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .execute();

export const deleteLink = (db: Db, account: string, id: string) =>
  db.deleteFrom('user_links').where('account_id', '=', account).where('id', '=', id).executeTakeFirst();

export const insertSession = (db: Db, row: SessionRow) => db.insertInto('user_sessions').values(row).execute();

export const sessionByHash = (db: Db, hash: string) =>
  db.selectFrom('user_sessions').selectAll().where('token_hash', '=', hash).executeTakeFirst();

export const sessionById = (db: Db, id: string) =>
  db.selectFrom('user_sessions').selectAll().where('id', '=', id).executeTakeFirst();

export const touchSession = (db: Db, id: string, at: string) =>
  db.updateTable('user_sessions').set({ last_seen_at: at }).where('id', '=', id).execute();

export const deleteSession = (db: Db, id: string) => db.deleteFrom('user_sessions').where('id', '=', id).execute();

export const deleteUserSessions = (db: Db, user: string) =>
  db.deleteFrom('user_sessions').where('user_id', '=', user).execute();

// A user's personal keys, the account and its projects are auth's rows: auth answers for them,
// over this connection or transaction (the same database; only its type names other tables).
const authDb = (db: Db) => db as unknown as AuthDb;

/** The ids of the API keys a user made (their personal keys). */
export const personalKeys = (db: Db, account: string, user: string) => keys.personalKeys(authDb(db), account, user);

export const disableKeys = (db: Db, ids: string[]) => keys.disableKeys(authDb(db), ids);

export const deleteKeys = (db: Db, ids: string[]) => keys.deleteKeys(authDb(db), ids);

export const getProject = (db: Db, account: string, id: string) => reads.getProject(authDb(db), account, id);

export const listProjects = (db: Db, account: string) => reads.listProjects(authDb(db), account);

export const getAccount = (db: Db, id: string) => reads.getAccount(authDb(db), id);
