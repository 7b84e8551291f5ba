/**
 * What other features read of auth's rows (projects and their settings, API keys), so that none
 * of them names auth's tables: each asks here, and auth's store keeps the SQL. Writes stay with
 * AuthService.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import * as store from './store.ts';

/** A project's settings as stored: each feature's key in them (`limits`, `retention`, `embeddings`…). */
type ProjectSettings = Record<string, unknown>;

/** The account and its projects, over a connection or a transaction (users/ reads them inside its own). */
export { getAccount, getProject, listProjects } from './store.ts';

export interface AuthReads {
  /** The settings of a project (of `account` when given), or null when there is no such project. */
  projectSettings(project: string, account?: string): Promise<ProjectSettings | null>;
  /** Every project with its settings (the sweeps that walk all projects). */
  allProjectSettings(): Promise<Array<{ id: string; account: string; settings: ProjectSettings }>>;
  /** The limits stored on an API key (null: none, or no such key). */
  keyLimits(id: string): Promise<unknown>;
  /** A project of the account by id or by name. */
  projectByIdOrName(account: string, idOrName: string): Promise<{ id: string; name: string } | undefined>;
  /** An enabled, unexpired admin key of the account, one of `preferredProject` first, else the oldest. */
  adminKeyOf(account: string, preferredProject: string): Promise<{ id: string } | undefined>;
}

export function authReads(db: Kysely<Database>, dialect: OrreryDialect): AuthReads {
  const settingsOf = (raw: unknown): ProjectSettings => dialect.fromJson<ProjectSettings | null>(raw) ?? {};
  return {
    async projectSettings(project, account) {
      const row = await store.projectSettingsRow(db, project, account);
      return row ? settingsOf(row.settings) : null;
    },
    async allProjectSettings() {
      const rows = await store.allProjectSettingsRows(db);
      return rows.map((r) => ({ id: r.id, account: r.account_id, settings: settingsOf(r.settings) }));
    },
    async keyLimits(id) {
      const row = await store.keyLimitsRow(db, id);
      return row ? dialect.fromJson(row.limits) : null;
    },
    projectByIdOrName: (account, idOrName) => store.projectByIdOrName(db, account, idOrName),
    adminKeyOf: (account, preferredProject) =>
      store.adminKeyOf(db, account, preferredProject, new Date().toISOString()),
  };
}
