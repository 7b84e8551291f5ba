/**
 * SQL for evaluators and their versions (migration 0032), declared here with what this feature
 * reads (style K3). Every query starts from the caller's project; the config column is encoded
 * and decoded here.
 */
import type { Kysely } from 'kysely';
import type { Scope } from '../auth/principal.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import type { ProjectScope } from '../db/project-rows.ts';

export interface EvaluatorRow {
  id: string;
  account_id: string;
  project_id: string;
  name: string;
  description: string | null;
  version: number;
  created_by: string;
  updated_by: string;
  created_at: string;
  updated_at: string;
}

interface VersionTable {
  evaluator_id: string;
  project_id: string;
  version: number;
  type: string;
  config: unknown;
  created_by: string;
  created_at: string;
}

interface EvaluatorsDb {
  evaluators: EvaluatorRow;
  evaluator_versions: VersionTable;
}

export type Db = Kysely<EvaluatorsDb>;
export const evaluatorsOf = (db: object) => db as Db;

export interface VersionRow {
  version: number;
  type: string;
  config: Record<string, unknown>;
  created_by: string;
  created_at: string;
}

const inProject = (db: Db, s: Scope) => db.selectFrom('evaluators').where('evaluators.project_id', '=', s.project);

export const getEvaluator = (db: Db, s: Scope, id: string) =>
  inProject(db, s).selectAll().where('evaluators.id', '=', id).executeTakeFirst();

export const evaluatorNamed = (db: Db, s: Scope, name: string) =>
  inProject(db, s).selectAll().where('evaluators.name', '=', name).executeTakeFirst();

export const listEvaluators = (db: Db, s: Scope, page: { limit: number; offset: number }) =>
  inProject(db, s)
    .selectAll()
    .orderBy('evaluators.updated_at', 'desc')
    .orderBy('evaluators.id', 'desc')
    .limit(page.limit)
    .offset(page.offset)
    .execute();

export async function getVersion(
  db: Db,
  d: OrreryDialect,
  s: Scope,
  id: string,
  version: number,
): Promise<VersionRow | undefined> {
  const r = await db
    .selectFrom('evaluator_versions')
    .select(['version', 'type', 'config', 'created_by', 'created_at'])
    .where('project_id', '=', s.project)
    .where('evaluator_id', '=', id)
    .where('version', '=', version)
    .executeTakeFirst();
  return r && { ...r, version: Number(r.version), config: d.fromJson<Record<string, unknown>>(r.config) };
}

/** Writes an evaluator's row (new or at its next version) and that version, in one transaction. */
export async function saveVersion(
  db: Db,
  d: OrreryDialect,
  row: EvaluatorRow,
  v: { type: string; config: Record<string, unknown> },
  isNew: boolean,
): Promise<void> {
  await db.transaction().execute(async (trx) => {
    if (isNew) await trx.insertInto('evaluators').values(row).execute();
    else
      await trx
        .updateTable('evaluators')
        .set({ version: row.version, updated_by: row.updated_by, updated_at: row.updated_at })
        .where('id', '=', row.id)
        .where('project_id', '=', row.project_id)
        .execute();
    await trx
      .insertInto('evaluator_versions')
      .values({
        evaluator_id: row.id,
        project_id: row.project_id,
        version: row.version,
        type: v.type,
        config: d.toJson(v.config),
        created_by: row.updated_by,
        created_at: row.updated_at,
      })
      .execute();
  });
}

export async function deleteEvaluator(db: Db, s: Scope, id: string): Promise<boolean> {
  const r = await db
    .deleteFrom('evaluators')
    .where('project_id', '=', s.project)
    .where('id', '=', id)
    .executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

export async function deleteProjectEvaluators(db: Db, s: ProjectScope): Promise<Record<string, number>> {
  const versions = await db.deleteFrom('evaluator_versions').where('project_id', '=', s.project).executeTakeFirst();
  const rows = await db.deleteFrom('evaluators').where('project_id', '=', s.project).executeTakeFirst();
  return { evaluator_versions: Number(versions.numDeletedRows), evaluators: Number(rows.numDeletedRows) };
}
