/**
 * Experiments: every item of a dataset version through every variant (an interaction version and
 * a config), `repetitions` times, as ordinary runs tagged with the experiment, each scored by
 * every evaluator. Creating one checks everything it names before any work (the variants'
 * interaction versions, environments, evaluators, the dataset and its size), freezes the dataset
 * at the version used, pins each evaluator's current version, copies the items, and queues the
 * job that runs it (runner.ts). Its figures are computed from its cells (aggregates.ts).
 */
import { actorOf, scopeOf, type Principal } from '../auth/principal.ts';
import { can, type Permission } from '../auth/permissions.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import { newId, nowIso } from '../db/ids.ts';
import { BadRequest, Conflict, Forbidden, NotFound, OrreryError, PayloadTooLarge } from '../util/errors.ts';
import { aggregate, type VariantFigures } from './aggregates.ts';
import type { ExperimentRunner } from './runner.ts';
import * as store from './store.ts';
import type { CellRow, Db, ExperimentRow, ItemRow, StoredEvaluator, StoredVariant } from './store.ts';

/** Bounds of what a request may make the server do (docs/reference/limits.md). */
const EXPERIMENT_BOUNDS = {
  variants: 10,
  evaluators: 10,
  items: 10_000,
  /** items × variants × repetitions */
  runs: 20_000,
  concurrency: 16,
  repetitions: 10,
  nameChars: 200,
  variantNameChars: 100,
  pageLimit: 1000,
};
const DEFAULTS = { concurrency: 4, repetitions: 1, page: 100 };
const CONFIG_KEYS = ['environment', 'model', 'model_options'];
/** What starting an experiment needs besides experiment:write: it executes runs and scores them. */
const NEEDED: Permission[] = ['interaction:execute', 'run:score'];

export interface VariantInput {
  name: string;
  interaction: string;
  config?: Record<string, unknown>;
}

export interface CreateInput {
  name?: string;
  dataset: string;
  dataset_version?: number;
  variants: VariantInput[];
  evaluators?: string[];
  concurrency?: number;
  repetitions?: number;
}

/** What experiments need of the other features, each through its own service and rules. */
export interface ExperimentDeps {
  /** An interaction version by id or selector (`Name@1`): its id; throws a 404 when there is none. */
  interaction(p: Principal, selector: string): Promise<{ id: string }>;
  /** Throws a 404 when the project has no such environment. */
  environment(p: Principal, id: string): Promise<unknown>;
  evaluator(p: Principal, id: string): Promise<{ id: string; name: string; version: number }>;
  datasets: {
    retrieve(p: Principal, id: string): Promise<{ id: string; version: number; frozen_version: number | null }>;
    freeze(p: Principal, id: string): Promise<unknown>;
    allItems(
      p: Principal,
      id: string,
      version?: number,
    ): AsyncGenerator<{ id: string; data: Record<string, unknown>; expected?: unknown }>;
  };
}

export interface ExperimentDto {
  id: string;
  name?: string;
  dataset: { id: string; version: number };
  status: ExperimentRow['status'];
  error?: string;
  progress: { done: number; total: number; completed: number; failed: number; canceled: number };
  variants: Array<Partial<VariantFigures> & { name: string; interaction: string; config?: Record<string, unknown> }>;
  evaluators: StoredEvaluator[];
  concurrency: number;
  repetitions: number;
  created_by: string;
  created_at: string;
  updated_at: string;
  ended_at?: string;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const wholeIn = (v: unknown, min: number, max: number) =>
  Number.isInteger(v) && (v as number) >= min && (v as number) <= max;

export class ExperimentService {
  constructor(
    private readonly db: Db,
    private readonly dialect: OrreryDialect,
    private readonly deps: ExperimentDeps,
    private readonly runner: ExperimentRunner,
  ) {}

  async create(p: Principal, input: CreateInput): Promise<ExperimentDto> {
    const missing = NEEDED.filter((perm) => !can(p.role, perm));
    if (missing.length)
      throw new Forbidden(
        `an experiment executes and scores runs: the caller's role (${p.role}) needs ${missing.join(' and ')}`,
      );
    const name = input.name?.trim();
    if (name !== undefined && (!name || name.length > EXPERIMENT_BOUNDS.nameChars))
      throw new BadRequest(`name is 1 to ${EXPERIMENT_BOUNDS.nameChars} characters`);
    const concurrency = input.concurrency ?? DEFAULTS.concurrency;
    if (!wholeIn(concurrency, 1, EXPERIMENT_BOUNDS.concurrency))
      throw new BadRequest(`concurrency is a whole number from 1 to ${EXPERIMENT_BOUNDS.concurrency}`);
    const repetitions = input.repetitions ?? DEFAULTS.repetitions;
    if (!wholeIn(repetitions, 1, EXPERIMENT_BOUNDS.repetitions))
      throw new BadRequest(`repetitions is a whole number from 1 to ${EXPERIMENT_BOUNDS.repetitions}`);
    const variants = await this.checkVariants(p, input.variants);
    const evaluators = await this.checkEvaluators(p, input.evaluators ?? []);
    const { version, items } = await this.readDataset(p, input.dataset, input.dataset_version);
    const runs = items.length * variants.length * repetitions;
    if (runs > EXPERIMENT_BOUNDS.runs)
      throw new PayloadTooLarge(
        `the experiment would make ${runs} runs (items × variants × repetitions): at most ${EXPERIMENT_BOUNDS.runs}; use fewer items, variants or repetitions`,
      );
    const s = scopeOf(p);
    const now = nowIso();
    const row: ExperimentRow = {
      id: newId(),
      account_id: s.account,
      project_id: s.project,
      name: name ?? null,
      dataset_id: input.dataset,
      dataset_version: version,
      variants,
      evaluators,
      concurrency,
      repetitions,
      status: 'queued',
      error: null,
      total: runs,
      principal: principalOf(p),
      created_by: actorOf(p),
      created_at: now,
      updated_at: now,
      ended_at: null,
    };
    await store.insertExperiment(this.db, this.dialect, row, items);
    await this.runner.enqueue(row);
    return this.dto(row, false);
  }

  async list(p: Principal, q: { limit?: number; offset?: number; dataset?: string }): Promise<ExperimentDto[]> {
    const rows = await store.listExperiments(this.db, this.dialect, scopeOf(p), {
      limit: Math.min(q.limit ?? DEFAULTS.page, EXPERIMENT_BOUNDS.pageLimit),
      offset: q.offset ?? 0,
      ...(q.dataset ? { dataset: q.dataset } : {}),
    });
    return Promise.all(rows.map((r) => this.dto(r, false)));
  }

  async retrieve(p: Principal, id: string): Promise<ExperimentDto> {
    return this.dto(await this.row(p, id), true);
  }

  /** `[{item, data, expected?, runs: {<variant>: {run, status, scores, error?, repetitions?}}}]`, in item order. */
  async items(p: Principal, id: string, q: { limit?: number; offset?: number }) {
    const row = await this.row(p, id);
    const s = scopeOf(p);
    const items = await store.getItems(this.db, this.dialect, s, id, {
      limit: Math.min(q.limit ?? DEFAULTS.page, EXPERIMENT_BOUNDS.pageLimit),
      offset: q.offset ?? 0,
    });
    const cells = await store.cellsOfItems(
      this.db,
      this.dialect,
      s,
      id,
      items.map((i) => i.item_id),
    );
    return items.map((it) =>
      itemAnswer(
        row,
        it,
        cells.filter((c) => c.item_id === it.item_id),
      ),
    );
  }

  /** Stops it: its queued runs are not made; the ones being made finish and are scored. */
  async cancel(p: Principal, id: string): Promise<ExperimentDto> {
    const row = await this.row(p, id);
    const s = scopeOf(p);
    if (!(await store.setStatus(this.db, s, id, 'canceled', ['queued', 'running'])))
      throw new Conflict(`experiment ${id} already ended (${row.status}): there is nothing to cancel`);
    await store.moveCells(this.db, id, 'queued', 'canceled');
    return this.dto(await this.row(p, id), true);
  }

  /** Runs an item's failed runs again (and resumes the cells a reached quota left queued). */
  async rerunItem(p: Principal, id: string, itemId: string): Promise<ExperimentDto> {
    const row = await this.row(p, id);
    const s = scopeOf(p);
    if (row.status === 'canceled') throw new Conflict(`experiment ${id} was canceled: start a new one`);
    const [item] = await store.getItems(this.db, this.dialect, s, id, { ids: [itemId] });
    if (!item) throw new NotFound('experiment item', itemId);
    const moved = await store.moveCells(this.db, id, 'failed', 'queued', itemId);
    const queued = (await store.countCells(this.db, s, id)).queued;
    if (!moved && !(row.status === 'failed' && queued > 0))
      throw new Conflict(`item ${itemId} of experiment ${id} has no failed run to run again`);
    await store.setStatus(this.db, s, id, 'queued', ['completed', 'failed']);
    await this.runner.enqueue(row);
    return this.dto(await this.row(p, id), true);
  }

  /** Deletes an ended experiment (its runs and their scores stay). */
  async remove(p: Principal, id: string): Promise<{ id: string }> {
    const row = await this.row(p, id);
    if (row.status === 'queued' || row.status === 'running')
      throw new Conflict(`experiment ${id} is ${row.status}: cancel it first (POST /experiments/${id}/cancel)`);
    await store.deleteExperiment(this.db, scopeOf(p), id);
    return { id };
  }

  /**
   * Two experiments side by side, and for each variant name and evaluator name they share the
   * difference `other − id` of the mean and pass rate, of the latency p50 and of the cost.
   */
  async compare(p: Principal, id: string, other: string) {
    if (id === other) throw new BadRequest('compare two different experiments (with= names the same one)');
    const a = await this.retrieve(p, id);
    const b = await this.retrieve(p, other);
    const diff = (x: number | null | undefined, y: number | null | undefined) =>
      x === null || x === undefined || y === null || y === undefined ? null : Math.round((y - x) * 1e9) / 1e9;
    const deltas: Record<string, VariantDelta> = {};
    for (const va of a.variants) {
      const vb = b.variants.find((v) => v.name === va.name);
      if (!vb) continue;
      const scores: Record<string, { mean: number | null; pass_rate: number | null }> = {};
      for (const [ev, fa] of Object.entries(va.scores ?? {})) {
        const fb = vb.scores?.[ev];
        if (fb) scores[ev] = { mean: diff(fa.mean, fb.mean), pass_rate: diff(fa.pass_rate, fb.pass_rate) };
      }
      deltas[va.name] = {
        scores,
        latency_p50: diff(va.latency?.p50, vb.latency?.p50),
        cost: diff(va.cost, vb.cost),
        tokens: diff(va.tokens, vb.tokens),
      };
    }
    return {
      experiments: [a, b],
      same_dataset: a.dataset.id === b.dataset.id && a.dataset.version === b.dataset.version,
      deltas,
    };
  }

  private async checkVariants(p: Principal, variants: readonly VariantInput[]): Promise<StoredVariant[]> {
    if (!Array.isArray(variants) || variants.length < 1 || variants.length > EXPERIMENT_BOUNDS.variants)
      throw new BadRequest(`variants is a list of 1 to ${EXPERIMENT_BOUNDS.variants} {name, interaction, config?}`);
    const out: StoredVariant[] = [];
    for (const [i, v] of variants.entries()) {
      const at = `variants[${i}]`;
      const name = v.name?.trim();
      if (!name || name.length > EXPERIMENT_BOUNDS.variantNameChars)
        throw new BadRequest(`${at}.name is 1 to ${EXPERIMENT_BOUNDS.variantNameChars} characters`);
      if (out.some((o) => o.name === name)) throw new BadRequest(`${at}.name ${JSON.stringify(name)} is used twice`);
      const found = await this.deps.interaction(p, v.interaction).catch((err: unknown) => {
        if (err instanceof OrreryError && err.status === 404)
          throw new BadRequest(
            `${at}.interaction ${JSON.stringify(v.interaction)} names no interaction version of this project (a deleted version cannot be run; see GET /interactions/:id/versions)`,
          );
        throw err;
      });
      if (v.config !== undefined) await this.checkConfig(p, v.config, `${at}.config`);
      out.push({
        name,
        interaction: v.interaction,
        interaction_id: found.id,
        ...(v.config ? { config: v.config } : {}),
      });
    }
    return out;
  }

  private async checkConfig(p: Principal, config: Record<string, unknown>, at: string): Promise<void> {
    if (!isObject(config)) throw new BadRequest(`${at} is an object {environment?, model?, model_options?}`);
    const extra = Object.keys(config).find((k) => !CONFIG_KEYS.includes(k));
    if (extra !== undefined)
      throw new BadRequest(`${at}.${extra} is not a variant setting: a variant takes ${CONFIG_KEYS.join(', ')}`);
    if (config.environment !== undefined) {
      if (typeof config.environment !== 'string' || !config.environment)
        throw new BadRequest(`${at}.environment is an environment id`);
      await this.deps.environment(p, config.environment).catch((err: unknown) => {
        if (err instanceof OrreryError && err.status === 404)
          throw new BadRequest(
            `${at}.environment ${JSON.stringify(config.environment)} names no environment of this project`,
          );
        throw err;
      });
    }
    if (config.model !== undefined && (typeof config.model !== 'string' || !config.model))
      throw new BadRequest(`${at}.model is a model id`);
    if (config.model_options !== undefined && !isObject(config.model_options))
      throw new BadRequest(`${at}.model_options is an object`);
  }

  private async checkEvaluators(p: Principal, ids: readonly string[]): Promise<StoredEvaluator[]> {
    if (!Array.isArray(ids) || ids.length > EXPERIMENT_BOUNDS.evaluators)
      throw new BadRequest(`evaluators is a list of at most ${EXPERIMENT_BOUNDS.evaluators} evaluator ids`);
    if (new Set(ids).size !== ids.length) throw new BadRequest('evaluators names an evaluator twice');
    const out: StoredEvaluator[] = [];
    for (const [i, id] of ids.entries()) {
      const ev = await this.deps.evaluator(p, id).catch((err: unknown) => {
        if (err instanceof OrreryError && err.status === 404)
          throw new BadRequest(`evaluators[${i}] ${JSON.stringify(id)} names no evaluator of this project`);
        throw err;
      });
      out.push({ id: ev.id, name: ev.name, version: ev.version });
    }
    return out;
  }

  /** The dataset's items at the version used, frozen (the current one unless given). */
  private async readDataset(
    p: Principal,
    id: string,
    requested: number | undefined,
  ): Promise<{ version: number; items: ItemRow[] }> {
    const ds = await this.deps.datasets.retrieve(p, id).catch((err: unknown) => {
      if (err instanceof OrreryError && err.status === 404)
        throw new BadRequest(`dataset ${JSON.stringify(id)} names no dataset of this project`);
      throw err;
    });
    if (requested !== undefined && !wholeIn(requested, 1, ds.version))
      throw new BadRequest(`dataset_version is a whole number from 1 to ${ds.version} (the dataset's current version)`);
    const version = requested ?? ds.version;
    const items: ItemRow[] = [];
    let position = 0;
    for await (const it of this.deps.datasets.allItems(p, id, version)) {
      if (items.length === EXPERIMENT_BOUNDS.items)
        throw new PayloadTooLarge(
          `dataset ${id} has more than ${EXPERIMENT_BOUNDS.items} items at version ${version}: an experiment runs at most ${EXPERIMENT_BOUNDS.items}`,
        );
      items.push({ item_id: it.id, position: position++, data: it.data, expected: it.expected });
    }
    if (!items.length) throw new BadRequest(`dataset ${id} has no items at version ${version}: add items first`);
    // Versions before the current one are frozen already; the current one is frozen now.
    if (version === ds.version && ds.frozen_version !== ds.version) await this.deps.datasets.freeze(p, id);
    return { version, items };
  }

  private async row(p: Principal, id: string): Promise<ExperimentRow> {
    const row = await store.getExperiment(this.db, this.dialect, scopeOf(p), id);
    if (!row) throw new NotFound('experiment', id);
    return row;
  }

  private async dto(row: ExperimentRow, figures: boolean): Promise<ExperimentDto> {
    const s = { account: row.account_id, project: row.project_id };
    const counts = await store.countCells(this.db, s, row.id);
    const figured = figures
      ? aggregate(
          row.variants.map((v) => v.name),
          row.evaluators.map((e) => e.name),
          await store.allCells(this.db, this.dialect, s, row.id),
        )
      : undefined;
    return {
      id: row.id,
      ...(row.name ? { name: row.name } : {}),
      dataset: { id: row.dataset_id, version: row.dataset_version },
      status: row.status,
      ...(row.error ? { error: row.error } : {}),
      progress: {
        done: counts.completed + counts.failed + counts.canceled,
        total: row.total,
        completed: counts.completed,
        failed: counts.failed,
        canceled: counts.canceled,
      },
      variants: row.variants.map((v, i) => ({
        name: v.name,
        interaction: v.interaction,
        ...(v.config ? { config: v.config } : {}),
        ...(figured ? { ...figured[i], name: v.name } : {}),
      })),
      evaluators: row.evaluators,
      concurrency: row.concurrency,
      repetitions: row.repetitions,
      created_by: row.created_by,
      created_at: row.created_at,
      updated_at: row.updated_at,
      ...(row.ended_at ? { ended_at: row.ended_at } : {}),
    };
  }
}

/** What the job needs to act as the caller: no request-bound fields. */
function principalOf(p: Principal): Record<string, unknown> {
  return {
    account: p.account,
    project: p.project,
    keyId: p.keyId,
    role: p.role,
    via: p.via,
    ...(p.user ? { user: p.user } : {}),
  };
}

interface VariantDelta {
  scores: Record<string, { mean: number | null; pass_rate: number | null }>;
  latency_p50: number | null;
  cost: number | null;
  tokens: number | null;
}

interface CellAnswer {
  run?: string;
  status: string;
  scores: NonNullable<CellRow['scores']>;
  error?: string;
  repetitions?: CellAnswer[];
}

function cellAnswer(c: CellRow): CellAnswer {
  return {
    ...(c.run_id ? { run: c.run_id } : {}),
    status: c.status,
    scores: c.scores ?? {},
    ...(c.error ? { error: c.error } : {}),
  };
}

function itemAnswer(row: ExperimentRow, it: ItemRow, cells: readonly CellRow[]) {
  const runs: Record<string, CellAnswer> = {};
  for (const v of row.variants) {
    const mine = cells.filter((c) => c.variant === v.name);
    if (!mine.length) continue;
    runs[v.name] = {
      ...cellAnswer(mine[0]),
      ...(row.repetitions > 1 ? { repetitions: mine.map(cellAnswer) } : {}),
    };
  }
  return {
    item: it.item_id,
    data: it.data,
    ...(it.expected !== undefined ? { expected: it.expected } : {}),
    runs,
  };
}
