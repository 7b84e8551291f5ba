/** SQL of online evaluation rules (`evaluation_rules`, migration 0037; rules.ts). */
import type { Kysely } from 'kysely';
import type { OrreryDialect } from '../db/dialect.ts';
import type { Scope } from '../auth/principal.ts';
import type { ProjectScope } from '../db/project-rows.ts';

interface RuleTable {
  id: string;
  account_id: string;
  project_id: string;
  name: string;
  interaction: string | null;
  query: string | null;
  evaluators: unknown;
  sample_rate: number;
  max_per_minute: number;
  enabled: number;
  principal: unknown;
  cursor_at: string;
  cursor_id: string;
  scored: number;
  window_minute: string;
  window_count: number;
  last_error: string | null;
  created_by: string;
  created_at: string;
  updated_at: string;
}

interface RulesDb {
  evaluation_rules: RuleTable;
}

export type RulesDbHandle = Kysely<RulesDb>;
export const rulesOf = (db: object) => db as RulesDbHandle;

export interface RuleRow extends Omit<RuleTable, 'evaluators' | 'principal' | 'enabled'> {
  evaluators: string[];
  principal: Record<string, unknown>;
  enabled: boolean;
}

const decode = (d: OrreryDialect, r: RuleTable): RuleRow => ({
  ...r,
  evaluators: d.fromJson(r.evaluators),
  principal: d.fromJson(r.principal),
  enabled: Number(r.enabled) === 1,
  sample_rate: Number(r.sample_rate),
  max_per_minute: Number(r.max_per_minute),
  scored: Number(r.scored),
  window_count: Number(r.window_count),
});

const encode = (d: OrreryDialect, r: Partial<RuleRow>): Partial<RuleTable> => {
  const { evaluators, principal, enabled, ...rest } = r;
  return {
    ...rest,
    ...(evaluators !== undefined ? { evaluators: d.toJson(evaluators) } : {}),
    ...(principal !== undefined ? { principal: d.toJson(principal) } : {}),
    ...(enabled !== undefined ? { enabled: enabled ? 1 : 0 } : {}),
  };
};

const inScope = (db: RulesDbHandle, s: Scope) =>
  db.selectFrom('evaluation_rules').where('account_id', '=', s.account).where('project_id', '=', s.project);

export async function insertRule(db: RulesDbHandle, d: OrreryDialect, row: RuleRow): Promise<void> {
  await db
    .insertInto('evaluation_rules')
    .values(encode(d, row) as RuleTable)
    .execute();
}

export async function getRule(db: RulesDbHandle, d: OrreryDialect, s: Scope, id: string): Promise<RuleRow | undefined> {
  const r = await inScope(db, s).selectAll().where('id', '=', id).executeTakeFirst();
  return r ? decode(d, r) : undefined;
}

export async function ruleNamed(db: RulesDbHandle, s: Scope, name: string): Promise<boolean> {
  return (await inScope(db, s).select('id').where('name', '=', name).executeTakeFirst()) !== undefined;
}

export async function listRules(
  db: RulesDbHandle,
  d: OrreryDialect,
  s: Scope,
  page: { limit: number; offset: number },
): Promise<RuleRow[]> {
  const rows = await inScope(db, s)
    .selectAll()
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(page.limit)
    .offset(page.offset)
    .execute();
  return rows.map((r) => decode(d, r));
}

export async function updateRule(
  db: RulesDbHandle,
  d: OrreryDialect,
  s: Scope,
  id: string,
  patch: Partial<RuleRow>,
): Promise<boolean> {
  const r = await db
    .updateTable('evaluation_rules')
    .set(encode(d, patch))
    .where('account_id', '=', s.account)
    .where('project_id', '=', s.project)
    .where('id', '=', id)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

export async function deleteRule(db: RulesDbHandle, s: Scope, id: string): Promise<boolean> {
  const r = await db
    .deleteFrom('evaluation_rules')
    .where('account_id', '=', s.account)
    .where('project_id', '=', s.project)
    .where('id', '=', id)
    .executeTakeFirst();
  return Number(r.numDeletedRows) === 1;
}

export async function deleteProjectRules(db: RulesDbHandle, s: ProjectScope): Promise<Record<string, number>> {
  const r = await db
    .deleteFrom('evaluation_rules')
    .where('project_id', '=', s.project)
    .where('account_id', '=', s.account)
    .executeTakeFirst();
  return { evaluation_rules: Number(r.numDeletedRows) };
}
