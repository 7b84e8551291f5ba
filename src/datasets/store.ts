/**
 * SQL for datasets and their items (migration 0029). The tables are declared here, with what this
 * feature reads (style K3), so the shared schema stays untouched. Every query starts from the
 * caller's project; JSON columns are encoded and decoded here and nowhere else.
 */
import type { Kysely, Transaction } from 'kysely';
import type { OrreryDialect } from '../db/dialect.ts';
import type { Scope } from '../auth/principal.ts';
import type { ProjectScope } from '../db/project-rows.ts';

interface DatasetTable {
  id: string;
  account_id: string;
  project_id: string;
  name: string;
  description: string | null;
  version: number;
  frozen_version: number;
  created_by: string;
  updated_by: string;
  created_at: string;
  updated_at: string;
}

interface DatasetItemTable {
  id: string;
  dataset_id: string;
  account_id: string;
  project_id: string;
  position: number;
  version_added: number;
  version_removed: number | null;
  data: unknown;
  expected: unknown;
  metadata: unknown;
  source_run: string | null;
  created_at: string;
}

export interface DatasetsDb {
  datasets: DatasetTable;
  dataset_items: DatasetItemTable;
}

export type Db = Kysely<DatasetsDb>;
export type DatasetRow = DatasetTable;

export interface ItemRow {
  id: string;
  position: number;
  version_added: number;
  version_removed: number | null;
  data: Record<string, unknown>;
  expected: unknown;
  metadata: Record<string, unknown> | null;
  source_run: string | null;
  created_at: string;
}

export interface NewItem {
  data: Record<string, unknown>;
  expected?: unknown;
  metadata?: Record<string, unknown>;
  source_run?: string;
}

export const datasetsOf = (db: object) => db as Db;

const datasetsIn = (db: Db, s: Scope) =>
  db.selectFrom('datasets').where('datasets.account_id', '=', s.account).where('datasets.project_id', '=', s.project);

export const getDataset = (db: Db, s: Scope, id: string): Promise<DatasetRow | undefined> =>
  datasetsIn(db, s).selectAll().where('datasets.id', '=', id).executeTakeFirst();

export const datasetNamed = (db: Db, s: Scope, name: string): Promise<DatasetRow | undefined> =>
  datasetsIn(db, s).selectAll().where('datasets.name', '=', name).executeTakeFirst();

/** Newest change first, ties by id. */
export const listDatasets = (db: Db, s: Scope, page: { limit: number; offset: number }): Promise<DatasetRow[]> =>
  datasetsIn(db, s)
    .selectAll()
    .orderBy('datasets.updated_at', 'desc')
    .orderBy('datasets.id', 'desc')
    .limit(page.limit)
    .offset(page.offset)
    .execute();

export async function insertDataset(db: Db, row: DatasetRow): Promise<void> {
  await db.insertInto('datasets').values(row).execute();
}

export async function updateDataset(
  db: Db,
  s: Scope,
  id: string,
  patch: Partial<Pick<DatasetRow, 'name' | 'description' | 'version' | 'frozen_version' | 'updated_by' | 'updated_at'>>,
): Promise<void> {
  await db
    .updateTable('datasets')
    .set(patch)
    .where('account_id', '=', s.account)
    .where('project_id', '=', s.project)
    .where('id', '=', id)
    .execute();
}

/** Deletes the dataset (its items cascade); whether it existed. */
export async function deleteDataset(db: Db, s: Scope, id: string): Promise<boolean> {
  const r = await db
    .deleteFrom('datasets')
    .where('account_id', '=', s.account)
    .where('project_id', '=', s.project)
    .where('id', '=', id)
    .executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

/** Items of a version: added at or before it, not removed by it. */
const itemsAt = (db: Db, s: Scope, dataset: string, version: number) =>
  db
    .selectFrom('dataset_items')
    .where('dataset_items.project_id', '=', s.project)
    .where('dataset_items.dataset_id', '=', dataset)
    .where('dataset_items.version_added', '<=', version)
    .where((eb) =>
      eb.or([eb('dataset_items.version_removed', 'is', null), eb('dataset_items.version_removed', '>', version)]),
    );

export async function countItems(db: Db, s: Scope, dataset: string, version: number): Promise<number> {
  const r = await itemsAt(db, s, dataset, version)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

export async function itemsOf(
  db: Db,
  d: OrreryDialect,
  s: Scope,
  dataset: string,
  version: number,
  page: { limit: number; afterPosition?: number; offset?: number },
): Promise<ItemRow[]> {
  let q = itemsAt(db, s, dataset, version)
    .select([
      'dataset_items.id',
      'dataset_items.position',
      'dataset_items.version_added',
      'dataset_items.version_removed',
      'dataset_items.data',
      'dataset_items.expected',
      'dataset_items.metadata',
      'dataset_items.source_run',
      'dataset_items.created_at',
    ])
    .orderBy('dataset_items.position');
  if (page.afterPosition !== undefined) q = q.where('dataset_items.position', '>', page.afterPosition);
  const rows = await q
    .limit(page.limit)
    .offset(page.offset ?? 0)
    .execute();
  return rows.map((r) => ({
    ...r,
    position: Number(r.position),
    version_added: Number(r.version_added),
    version_removed: r.version_removed === null ? null : Number(r.version_removed),
    data: d.fromJson<Record<string, unknown>>(r.data),
    expected: r.expected === null ? undefined : d.fromJson(r.expected),
    metadata: r.metadata === null ? null : d.fromJson<Record<string, unknown>>(r.metadata),
  }));
}

export async function getItem(
  db: Db,
  s: Scope,
  dataset: string,
  id: string,
): Promise<Pick<ItemRow, 'id' | 'version_added' | 'version_removed'> | undefined> {
  return db
    .selectFrom('dataset_items')
    .select(['id', 'version_added', 'version_removed'])
    .where('project_id', '=', s.project)
    .where('dataset_id', '=', dataset)
    .where('id', '=', id)
    .executeTakeFirst();
}

/** Appends items after the dataset's last position, in one transaction with the caller's other writes. */
export async function appendItems(
  trx: Transaction<DatasetsDb>,
  d: OrreryDialect,
  s: Scope,
  dataset: string,
  version: number,
  items: readonly (NewItem & { id: string })[],
  now: string,
): Promise<void> {
  const last = await trx
    .selectFrom('dataset_items')
    .select((eb) => eb.fn.max('position').as('p'))
    .where('dataset_id', '=', dataset)
    .executeTakeFirst();
  let position = Number(last?.p ?? 0);
  // A few hundred rows per statement: well under either database's bound on parameters.
  for (let i = 0; i < items.length; i += 200) {
    const rows = items.slice(i, i + 200).map((it) => ({
      id: it.id,
      dataset_id: dataset,
      account_id: s.account,
      project_id: s.project,
      position: ++position,
      version_added: version,
      version_removed: null,
      data: d.toJson(it.data),
      expected: it.expected === undefined ? null : d.toJson(it.expected),
      metadata: it.metadata === undefined ? null : d.toJson(it.metadata),
      source_run: it.source_run ?? null,
      created_at: now,
    }));
    await trx.insertInto('dataset_items').values(rows).execute();
  }
}

/** Takes an item out of `version` and later ones; an item added to that same, unfrozen version simply goes. */
export async function removeItem(
  trx: Transaction<DatasetsDb>,
  s: Scope,
  dataset: string,
  id: string,
  version: number,
  addedToDraft: boolean,
): Promise<void> {
  if (addedToDraft) {
    await trx
      .deleteFrom('dataset_items')
      .where('project_id', '=', s.project)
      .where('dataset_id', '=', dataset)
      .where('id', '=', id)
      .execute();
    return;
  }
  await trx
    .updateTable('dataset_items')
    .set({ version_removed: version })
    .where('project_id', '=', s.project)
    .where('dataset_id', '=', dataset)
    .where('id', '=', id)
    .execute();
}

/** A project's datasets and items (inside its deletion); how many went, by table. */
export async function deleteProjectDatasets(db: Db, s: ProjectScope): Promise<Record<string, number>> {
  const items = await db
    .deleteFrom('dataset_items')
    .where('project_id', '=', s.project)
    .where('account_id', '=', s.account)
    .executeTakeFirst();
  const sets = await db
    .deleteFrom('datasets')
    .where('project_id', '=', s.project)
    .where('account_id', '=', s.account)
    .executeTakeFirst();
  return { dataset_items: Number(items.numDeletedRows), datasets: Number(sets.numDeletedRows) };
}
