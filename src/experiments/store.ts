/**
 * SQL of experiments and their items and cells (migration 0037). The tables are declared here,
 * with what this feature reads (style K3), so the shared schema stays untouched. Every query
 * starts from the caller's project; JSON columns are encoded and decoded here and nowhere else.
 */
import { sql, type Kysely } from 'kysely';
import type { OrreryDialect } from '../db/dialect.ts';
import type { Scope } from '../auth/principal.ts';
import type { ProjectScope } from '../db/project-rows.ts';
import { nowIso } from '../db/ids.ts';

export type ExperimentStatus = 'queued' | 'running' | 'completed' | 'failed' | 'canceled';
export type CellStatus = 'queued' | 'running' | 'completed' | 'failed' | 'canceled';

interface ExperimentTable {
  id: string;
  account_id: string;
  project_id: string;
  name: string | null;
  dataset_id: string;
  dataset_version: number;
  variants: unknown;
  evaluators: unknown;
  concurrency: number;
  repetitions: number;
  status: ExperimentStatus;
  error: string | null;
  total: number;
  principal: unknown;
  created_by: string;
  created_at: string;
  updated_at: string;
  ended_at: string | null;
}

interface ItemTable {
  experiment_id: string;
  account_id: string;
  project_id: string;
  item_id: string;
  position: number;
  data: unknown;
  expected: unknown;
}

interface CellTable {
  experiment_id: string;
  account_id: string;
  project_id: string;
  item_id: string;
  position: number;
  variant: string;
  repetition: number;
  status: CellStatus;
  run_id: string | null;
  scores: unknown;
  error: string | null;
  latency_ms: number | null;
  prompt_tokens: number | null;
  result_tokens: number | null;
  cost: number | null;
  attempts: number;
  updated_at: string;
}

interface ExperimentsDb {
  experiments: ExperimentTable;
  experiment_items: ItemTable;
  experiment_cells: CellTable;
}

export type Db = Kysely<ExperimentsDb>;
export const experimentsOf = (db: object) => db as Db;

/** A variant as stored: its interaction resolved to the version's id when the experiment was made. */
export interface StoredVariant {
  name: string;
  interaction: string;
  interaction_id: string;
  config?: Record<string, unknown>;
}

/** An evaluator pinned at the version current when the experiment was made. */
export interface StoredEvaluator {
  id: string;
  name: string;
  version: number;
}

/** A cell's score per evaluator name: the value and its score's id, or the evaluator's error. */
export type CellScores = Record<string, { value: number | boolean | string; score: string } | { error: string }>;

export interface ExperimentRow extends Omit<ExperimentTable, 'variants' | 'evaluators' | 'principal'> {
  variants: StoredVariant[];
  evaluators: StoredEvaluator[];
  principal: Record<string, unknown>;
}

export interface ItemRow {
  item_id: string;
  position: number;
  data: Record<string, unknown>;
  expected: unknown;
}

export interface CellRow extends Omit<CellTable, 'scores'> {
  scores: CellScores | null;
}

const experimentsIn = (db: Db, s: Scope) =>
  db.selectFrom('experiments').where('account_id', '=', s.account).where('project_id', '=', s.project);

function decodeExperiment(d: OrreryDialect, r: ExperimentTable): ExperimentRow {
  return {
    ...r,
    dataset_version: Number(r.dataset_version),
    concurrency: Number(r.concurrency),
    repetitions: Number(r.repetitions),
    total: Number(r.total),
    variants: d.fromJson(r.variants),
    evaluators: d.fromJson(r.evaluators),
    principal: d.fromJson(r.principal),
  };
}

function decodeCell(d: OrreryDialect, r: CellTable): CellRow {
  const num = (v: number | null) => (v === null ? null : Number(v));
  return {
    ...r,
    position: Number(r.position),
    repetition: Number(r.repetition),
    attempts: Number(r.attempts),
    latency_ms: num(r.latency_ms),
    prompt_tokens: num(r.prompt_tokens),
    result_tokens: num(r.result_tokens),
    cost: num(r.cost),
    scores: r.scores === null ? null : d.fromJson(r.scores),
  };
}

/** Rows per insert: under SQLite's 32,766 bound variables with every column bound. */
const INSERT_CHUNK = 500;

/** The experiment, its items and its cells (all queued), in one transaction. */
export async function insertExperiment(
  db: Db,
  d: OrreryDialect,
  row: ExperimentRow,
  items: readonly ItemRow[],
): Promise<void> {
  const s = { account_id: row.account_id, project_id: row.project_id };
  await db.transaction().execute(async (trx) => {
    await trx
      .insertInto('experiments')
      .values({
        ...row,
        variants: d.toJson(row.variants),
        evaluators: d.toJson(row.evaluators),
        principal: d.toJson(row.principal),
      })
      .execute();
    for (let i = 0; i < items.length; i += INSERT_CHUNK) {
      const chunk = items.slice(i, i + INSERT_CHUNK);
      await trx
        .insertInto('experiment_items')
        .values(
          chunk.map((it) => ({
            ...s,
            experiment_id: row.id,
            item_id: it.item_id,
            position: it.position,
            data: d.toJson(it.data),
            expected: it.expected === undefined ? null : d.toJson(it.expected),
          })),
        )
        .execute();
    }
    const cells: CellTable[] = [];
    for (const it of items)
      for (const v of row.variants)
        for (let rep = 1; rep <= row.repetitions; rep++)
          cells.push({
            ...s,
            experiment_id: row.id,
            item_id: it.item_id,
            position: it.position,
            variant: v.name,
            repetition: rep,
            status: 'queued',
            run_id: null,
            scores: null,
            error: null,
            latency_ms: null,
            prompt_tokens: null,
            result_tokens: null,
            cost: null,
            attempts: 0,
            updated_at: row.created_at,
          });
    for (let i = 0; i < cells.length; i += INSERT_CHUNK)
      await trx
        .insertInto('experiment_cells')
        .values(cells.slice(i, i + INSERT_CHUNK))
        .execute();
  });
}

export async function getExperiment(
  db: Db,
  d: OrreryDialect,
  s: Scope,
  id: string,
): Promise<ExperimentRow | undefined> {
  const r = await experimentsIn(db, s).selectAll().where('id', '=', id).executeTakeFirst();
  return r ? decodeExperiment(d, r) : undefined;
}

export async function listExperiments(
  db: Db,
  d: OrreryDialect,
  s: Scope,
  page: { limit: number; offset: number; dataset?: string },
): Promise<ExperimentRow[]> {
  let q = experimentsIn(db, s).selectAll();
  if (page.dataset) q = q.where('dataset_id', '=', page.dataset);
  const rows = await q
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(page.limit)
    .offset(page.offset)
    .execute();
  return rows.map((r) => decodeExperiment(d, r));
}

/** Moves the experiment to `status` when it is in one of `from`; answers whether it moved. */
export async function setStatus(
  db: Db,
  s: Scope,
  id: string,
  status: ExperimentStatus,
  from: readonly ExperimentStatus[],
  error: string | null = null,
): Promise<boolean> {
  const now = nowIso();
  const ended = status === 'completed' || status === 'failed' || status === 'canceled';
  const r = await db
    .updateTable('experiments')
    .set({ status, error, updated_at: now, ended_at: ended ? now : null })
    .where('account_id', '=', s.account)
    .where('project_id', '=', s.project)
    .where('id', '=', id)
    .where('status', 'in', [...from])
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

export async function deleteExperiment(db: Db, s: Scope, id: string): Promise<boolean> {
  const r = await db
    .deleteFrom('experiments')
    .where('account_id', '=', s.account)
    .where('project_id', '=', s.project)
    .where('id', '=', id)
    .executeTakeFirst();
  return Number(r.numDeletedRows) === 1;
}

/** Cells by status: progress. */
export async function countCells(db: Db, s: Scope, id: string): Promise<Record<CellStatus, number>> {
  const rows = await db
    .selectFrom('experiment_cells')
    .select(['status', sql<number>`count(*)`.as('n')])
    .where('account_id', '=', s.account)
    .where('project_id', '=', s.project)
    .where('experiment_id', '=', id)
    .groupBy('status')
    .execute();
  const out: Record<CellStatus, number> = { queued: 0, running: 0, completed: 0, failed: 0, canceled: 0 };
  for (const r of rows) out[r.status] = Number(r.n);
  return out;
}

/** Every cell of the experiment (the aggregates read them), in item order. */
export async function allCells(db: Db, d: OrreryDialect, s: Scope, id: string): Promise<CellRow[]> {
  const rows = await db
    .selectFrom('experiment_cells')
    .selectAll()
    .where('account_id', '=', s.account)
    .where('project_id', '=', s.project)
    .where('experiment_id', '=', id)
    .orderBy('position')
    .orderBy('variant')
    .orderBy('repetition')
    .execute();
  return rows.map((r) => decodeCell(d, r));
}

/** The next queued cells, in item order. */
export async function queuedCells(db: Db, d: OrreryDialect, s: Scope, id: string, limit: number): Promise<CellRow[]> {
  const rows = await db
    .selectFrom('experiment_cells')
    .selectAll()
    .where('account_id', '=', s.account)
    .where('project_id', '=', s.project)
    .where('experiment_id', '=', id)
    .where('status', '=', 'queued')
    .orderBy('position')
    .orderBy('variant')
    .orderBy('repetition')
    .limit(limit)
    .execute();
  return rows.map((r) => decodeCell(d, r));
}

type CellKey = Pick<CellRow, 'experiment_id' | 'item_id' | 'variant' | 'repetition'>;

/** Changes one cell when it is in one of `from`; answers whether it changed. */
export async function updateCell(
  db: Db,
  d: OrreryDialect,
  key: CellKey,
  patch: Partial<Omit<CellRow, keyof CellKey>>,
  from: readonly CellStatus[],
): Promise<boolean> {
  const { scores, ...rest } = patch;
  const r = await db
    .updateTable('experiment_cells')
    .set({ ...rest, ...(scores !== undefined ? { scores: d.toJson(scores) } : {}), updated_at: nowIso() })
    .where('experiment_id', '=', key.experiment_id)
    .where('item_id', '=', key.item_id)
    .where('variant', '=', key.variant)
    .where('repetition', '=', key.repetition)
    .where('status', 'in', [...from])
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Cells of the experiment from one status to another (all of them, or one item's); how many moved. */
export async function moveCells(db: Db, id: string, from: CellStatus, to: CellStatus, item?: string): Promise<number> {
  let q = db
    .updateTable('experiment_cells')
    .set({ status: to, updated_at: nowIso() })
    .where('experiment_id', '=', id)
    .where('status', '=', from);
  if (item !== undefined) q = q.where('item_id', '=', item);
  return Number((await q.executeTakeFirst()).numUpdatedRows);
}

export async function getItems(
  db: Db,
  d: OrreryDialect,
  s: Scope,
  id: string,
  page: { limit: number; offset: number } | { ids: readonly string[] },
): Promise<ItemRow[]> {
  let q = db
    .selectFrom('experiment_items')
    .select(['item_id', 'position', 'data', 'expected'])
    .where('account_id', '=', s.account)
    .where('project_id', '=', s.project)
    .where('experiment_id', '=', id);
  if ('ids' in page) {
    if (!page.ids.length) return [];
    q = q.where('item_id', 'in', [...page.ids]);
  } else q = q.orderBy('position').limit(page.limit).offset(page.offset);
  const rows = await q.execute();
  return rows.map((r) => ({
    item_id: r.item_id,
    position: Number(r.position),
    data: d.fromJson(r.data),
    expected: r.expected === null ? undefined : d.fromJson(r.expected),
  }));
}

export async function cellsOfItems(
  db: Db,
  d: OrreryDialect,
  s: Scope,
  id: string,
  items: readonly string[],
): Promise<CellRow[]> {
  if (!items.length) return [];
  const rows = await db
    .selectFrom('experiment_cells')
    .selectAll()
    .where('account_id', '=', s.account)
    .where('project_id', '=', s.project)
    .where('experiment_id', '=', id)
    .where('item_id', 'in', [...items])
    .orderBy('position')
    .orderBy('variant')
    .orderBy('repetition')
    .execute();
  return rows.map((r) => decodeCell(d, r));
}

/** A project's experiments (inside its deletion); how many went, by table. */
export async function deleteProjectExperiments(db: Db, s: ProjectScope): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const table of ['experiment_cells', 'experiment_items', 'experiments'] as const) {
    const r = await db
      .deleteFrom(table)
      .where('project_id', '=', s.project)
      .where('account_id', '=', s.account)
      .executeTakeFirst();
    counts[table] = Number(r.numDeletedRows);
  }
  return counts;
}
