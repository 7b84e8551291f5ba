/** SQL for accounts, projects and API keys. No rules here: the auth service holds them. */
import { sql, type Insertable, type Kysely, type Updateable } from 'kysely';
import type { Database, ApiKeyTable, ProjectTable } from '../db/schema.ts';

export type Db = Kysely<Database>;

export interface KeyWithScope {
  key: Omit<ApiKeyTable, 'enabled'> & { enabled: number };
  account: { id: string; name: string };
  project: { id: string; name: string };
}

const keyWithScope = (db: Db) =>
  db
    .selectFrom('api_keys as k')
    .innerJoin('accounts as a', 'a.id', 'k.account_id')
    .innerJoin('projects as p', 'p.id', 'k.project_id')
    .select([
      'k.id',
      'k.account_id',
      'k.project_id',
      'k.name',
      'k.role',
      'k.key_hash',
      'k.key_hint',
      'k.expires_at',
      'k.created_by',
      'k.created_at',
      'k.enabled',
      'k.limits',
      'a.name as account_name',
      'p.name as project_name',
    ]);

type KeyRow = Awaited<ReturnType<ReturnType<typeof keyWithScope>['executeTakeFirstOrThrow']>>;

const toKeyWithScope = (r: KeyRow): KeyWithScope => ({
  key: {
    id: r.id,
    account_id: r.account_id,
    project_id: r.project_id,
    name: r.name,
    role: r.role,
    key_hash: r.key_hash,
    key_hint: r.key_hint,
    expires_at: r.expires_at,
    created_by: r.created_by,
    created_at: r.created_at,
    enabled: Number(r.enabled),
    limits: r.limits,
  },
  account: { id: r.account_id, name: r.account_name },
  project: { id: r.project_id, name: r.project_name },
});

export async function findKeyByHash(db: Db, hash: string): Promise<KeyWithScope | undefined> {
  const r = await keyWithScope(db).where('k.key_hash', '=', hash).executeTakeFirst();
  return r && toKeyWithScope(r);
}

export async function findKeyById(db: Db, id: string): Promise<KeyWithScope | undefined> {
  const r = await keyWithScope(db).where('k.id', '=', id).executeTakeFirst();
  return r && toKeyWithScope(r);
}

export async function listKeys(db: Db, account: string, project?: string): Promise<KeyWithScope[]> {
  let q = keyWithScope(db).where('k.account_id', '=', account);
  if (project) q = q.where('k.project_id', '=', project);
  const rows = await q.orderBy('k.created_at', 'desc').orderBy('k.id', 'desc').execute();
  return rows.map(toKeyWithScope);
}

export const insertKey = (db: Db, key: Insertable<ApiKeyTable>) => db.insertInto('api_keys').values(key).execute();

export const updateKeyRow = (db: Db, account: string, id: string, patch: Updateable<ApiKeyTable>) =>
  db.updateTable('api_keys').set(patch).where('account_id', '=', account).where('id', '=', id).execute();

export const deleteKey = async (db: Db, account: string, id: string): Promise<number> => {
  const r = await db.deleteFrom('api_keys').where('account_id', '=', account).where('id', '=', id).executeTakeFirst();
  return Number(r.numDeletedRows);
};

export const insertAccount = (db: Db, row: Database['accounts']) => db.insertInto('accounts').values(row).execute();

export const insertProject = (db: Db, row: ProjectTable) => db.insertInto('projects').values(row).execute();

export const getProject = (db: Db, account: string, id: string) =>
  db.selectFrom('projects').selectAll().where('account_id', '=', account).where('id', '=', id).executeTakeFirst();

export const listProjects = (db: Db, account: string) =>
  db.selectFrom('projects').selectAll().where('account_id', '=', account).orderBy('created_at').orderBy('id').execute();

export const getAccount = (db: Db, id: string) =>
  db.selectFrom('accounts').selectAll().where('id', '=', id).executeTakeFirst();

export const firstAccount = (db: Db) =>
  db.selectFrom('accounts').selectAll().orderBy('created_at').orderBy('id').limit(1).executeTakeFirst();

export const updateProjectRow = (db: Db, account: string, id: string, patch: Partial<ProjectTable>) =>
  db.updateTable('projects').set(patch).where('account_id', '=', account).where('id', '=', id).execute();

/** The reads other features make through reads.ts. */
export const projectSettingsRow = (db: Db, project: string, account?: string) => {
  let q = db.selectFrom('projects').select('settings').where('id', '=', project);
  if (account !== undefined) q = q.where('account_id', '=', account);
  return q.executeTakeFirst();
};

export const allProjectSettingsRows = (db: Db) =>
  db.selectFrom('projects').select(['id', 'account_id', 'settings']).execute();

export const keyLimitsRow = (db: Db, id: string) =>
  db.selectFrom('api_keys').select('limits').where('id', '=', id).executeTakeFirst();

export const projectByIdOrName = (db: Db, account: string, idOrName: string) =>
  db
    .selectFrom('projects')
    .select(['id', 'name'])
    .where('account_id', '=', account)
    .where((eb) => eb.or([eb('id', '=', idOrName), eb('name', '=', idOrName)]))
    .executeTakeFirst();

export const adminKeyOf = (db: Db, account: string, preferredProject: string, now: string) =>
  db
    .selectFrom('api_keys')
    .select(['id'])
    .where('account_id', '=', account)
    .where('role', '=', 'admin')
    .where('enabled', '=', 1)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
    .orderBy(sql`case when project_id = ${preferredProject} then 0 else 1 end`)
    .orderBy('created_at')
    .executeTakeFirst();

export const keyIdsCreatedBy = async (db: Db, account: string, createdBy: string): Promise<string[]> =>
  (
    await db
      .selectFrom('api_keys')
      .select('id')
      .where('account_id', '=', account)
      .where('created_by', '=', createdBy)
      .execute()
  ).map((r) => r.id);

export const disableKeyRows = (db: Db, ids: string[]) =>
  db.updateTable('api_keys').set({ enabled: 0 }).where('id', 'in', ids).execute();

export const deleteKeyRows = (db: Db, ids: string[]) => db.deleteFrom('api_keys').where('id', 'in', ids).execute();
