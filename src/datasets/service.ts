/**
 * Datasets: named, versioned sets of items (`{data, expected?, metadata?}`) that evaluations run
 * over. Items are added to the dataset's current version; freezing a version (`POST
 * /datasets/:id/versions`, and every experiment that uses it) keeps it as it is: later changes go
 * to the next version, and a frozen version's items read the same forever. Items can be copied
 * from runs found by a run search, keeping the run as their source.
 */
import { actorOf, scopeOf, type Principal, type Scope } from '../auth/principal.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import { newId, nowIso } from '../db/ids.ts';
import { BadRequest, Conflict, NotFound, PayloadTooLarge } from '../util/errors.ts';
import * as store from './store.ts';
import type { DatasetRow, DatasetsDb, Db, ItemRow, NewItem } from './store.ts';
import type { Transaction } from 'kysely';

/** Bounds of what a request may make the server do (docs/reference/limits.md). */
const DATASET_BOUNDS = {
  itemsPerRequest: 1000,
  itemBytes: 256 * 1024,
  itemsPerDataset: 100_000,
  runsPerCopy: 500,
  nameChars: 200,
  descriptionChars: 4000,
  pageLimit: 1000,
};
const DEFAULT_PAGE = 100;
/** Runs read at once when items are copied from runs. */
const RUN_READS_AT_ONCE = 8;

/** What datasets read of runs (runs/service.ts), so that copying from runs goes through the runs' own rules. */
export interface RunsReader {
  search(p: Principal, body: Record<string, unknown>): Promise<unknown>;
  get(p: Principal, id: string): Promise<object>;
}

export interface DatasetDto {
  id: string;
  name: string;
  description?: string;
  version: number;
  frozen_version: number | null;
  item_count: number;
  created_by: string;
  updated_by: string;
  created_at: string;
  updated_at: string;
}

export interface ItemDto {
  id: string;
  data: Record<string, unknown>;
  expected?: unknown;
  metadata?: Record<string, unknown>;
  source_run?: string;
  version_added: number;
  created_at: string;
}

export interface FromRuns {
  query?: string;
  filters?: Record<string, unknown>;
  limit: number;
}

const bytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v ?? null));

export class DatasetService {
  constructor(
    private readonly db: Db,
    private readonly dialect: OrreryDialect,
    private readonly runs: RunsReader,
  ) {}

  async create(p: Principal, input: { name: string; description?: string }): Promise<DatasetDto> {
    const s = scopeOf(p);
    const name = this.checkName(input.name);
    this.checkDescription(input.description);
    if (await store.datasetNamed(this.db, s, name))
      throw new Conflict(`a dataset named ${JSON.stringify(name)} exists`);
    const now = nowIso();
    const row: DatasetRow = {
      id: newId(),
      account_id: s.account,
      project_id: s.project,
      name,
      description: input.description ?? null,
      version: 1,
      frozen_version: 0,
      created_by: actorOf(p),
      updated_by: actorOf(p),
      created_at: now,
      updated_at: now,
    };
    await store.insertDataset(this.db, row);
    return this.dto(s, row);
  }

  async list(p: Principal, page: { limit?: number; offset?: number }): Promise<DatasetDto[]> {
    const s = scopeOf(p);
    const rows = await store.listDatasets(this.db, s, {
      limit: Math.min(page.limit ?? DEFAULT_PAGE, DATASET_BOUNDS.pageLimit),
      offset: page.offset ?? 0,
    });
    return Promise.all(rows.map((r) => this.dto(s, r)));
  }

  async retrieve(p: Principal, id: string): Promise<DatasetDto> {
    const s = scopeOf(p);
    return this.dto(s, await this.row(s, id));
  }

  async update(p: Principal, id: string, input: { name?: string; description?: string | null }): Promise<DatasetDto> {
    const s = scopeOf(p);
    const row = await this.row(s, id);
    const name = input.name === undefined ? undefined : this.checkName(input.name);
    if (input.description !== null) this.checkDescription(input.description);
    if (name !== undefined && name !== row.name && (await store.datasetNamed(this.db, s, name)))
      throw new Conflict(`a dataset named ${JSON.stringify(name)} exists`);
    const patch = {
      ...(name !== undefined ? { name } : {}),
      ...(input.description !== undefined ? { description: input.description } : {}),
      updated_by: actorOf(p),
      updated_at: nowIso(),
    };
    await store.updateDataset(this.db, s, id, patch);
    return this.dto(s, { ...row, ...patch });
  }

  async remove(p: Principal, id: string): Promise<{ id: string }> {
    if (!(await store.deleteDataset(this.db, scopeOf(p), id))) throw new NotFound('dataset', id);
    return { id };
  }

  /** Freezes the current version: answers it; later changes make the next one. */
  async freeze(p: Principal, id: string): Promise<DatasetDto> {
    const s = scopeOf(p);
    const row = await this.row(s, id);
    if (row.frozen_version === row.version) return this.dto(s, row);
    const patch = { frozen_version: row.version, updated_by: actorOf(p), updated_at: nowIso() };
    await store.updateDataset(this.db, s, id, patch);
    return this.dto(s, { ...row, ...patch });
  }

  /** Adds items to the current version (the next one when it is frozen); answers their ids. */
  async addItems(p: Principal, id: string, items: readonly NewItem[]): Promise<{ ids: string[]; version: number }> {
    if (!items.length) throw new BadRequest('items is empty: pass at least one {data, expected?, metadata?}');
    if (items.length > DATASET_BOUNDS.itemsPerRequest)
      throw new PayloadTooLarge(
        `at most ${DATASET_BOUNDS.itemsPerRequest} items per request (got ${items.length}): send them in several`,
      );
    items.forEach((it, i) => this.checkItem(it, `items[${i}]`));
    const s = scopeOf(p);
    const withIds = items.map((it) => ({ ...it, id: newId() }));
    const version = await this.change(p, s, id, async (trx, version, count) => {
      if (count + items.length > DATASET_BOUNDS.itemsPerDataset)
        throw new PayloadTooLarge(
          `a dataset holds at most ${DATASET_BOUNDS.itemsPerDataset} items (this one has ${count}): make another dataset`,
        );
      await store.appendItems(trx, this.dialect, s, id, version, withIds, nowIso());
    });
    return { ids: withIds.map((it) => it.id), version };
  }

  /** Copies runs found by a run search into items: the run's data, its answer as expected, the run as source. */
  async addFromRuns(
    p: Principal,
    id: string,
    from: FromRuns,
  ): Promise<{ ids: string[]; version: number; skipped: Array<{ run: string; reason: string }> }> {
    if (!Number.isInteger(from.limit) || from.limit < 1 || from.limit > DATASET_BOUNDS.runsPerCopy)
      throw new BadRequest(`from_runs.limit is a whole number from 1 to ${DATASET_BOUNDS.runsPerCopy}`);
    await this.row(scopeOf(p), id);
    const found = await this.runs.search(p, {
      query: { ...(from.filters ?? {}), ...(from.query ? { query: from.query } : {}) },
      limit: from.limit,
    });
    const refs = (Array.isArray(found) ? found : ((found as { results?: unknown[] }).results ?? [])) as Array<{
      id: string;
    }>;
    const items: NewItem[] = [];
    const skipped: Array<{ run: string; reason: string }> = [];
    for (let i = 0; i < refs.length; i += RUN_READS_AT_ONCE) {
      const runs = (await Promise.all(
        refs.slice(i, i + RUN_READS_AT_ONCE).map((r) => this.runs.get(p, r.id)),
      )) as Array<Record<string, unknown>>;
      for (const run of runs) {
        const item = itemOfRun(run);
        if (run.status !== 'completed')
          skipped.push({ run: String(run.id), reason: `the run is ${String(run.status)}` });
        else if (bytes(item) > DATASET_BOUNDS.itemBytes)
          skipped.push({ run: String(run.id), reason: `its item is over ${DATASET_BOUNDS.itemBytes} bytes` });
        else items.push(item);
      }
    }
    if (!items.length) return { ids: [], version: (await this.row(scopeOf(p), id)).version, skipped };
    return { ...(await this.addItems(p, id, items)), skipped };
  }

  async removeItem(p: Principal, id: string, itemId: string): Promise<{ id: string; version: number }> {
    const s = scopeOf(p);
    const version = await this.change(p, s, id, async (trx, version) => {
      const item = await store.getItem(trx, s, id, itemId);
      if (!item || (item.version_removed !== null && item.version_removed <= version))
        throw new NotFound('dataset item', itemId);
      await store.removeItem(trx, s, id, itemId, version, item.version_added === version);
    });
    return { id: itemId, version };
  }

  async items(
    p: Principal,
    id: string,
    q: { version?: number; limit?: number; offset?: number },
  ): Promise<{ version: number; items: ItemDto[] }> {
    const s = scopeOf(p);
    const version = this.versionOf(await this.row(s, id), q.version);
    const rows = await store.itemsOf(this.db, this.dialect, s, id, version, {
      limit: Math.min(q.limit ?? DEFAULT_PAGE, DATASET_BOUNDS.pageLimit),
      offset: q.offset ?? 0,
    });
    return { version, items: rows.map(itemDto) };
  }

  /** Every item of a version, page after page (an export streams them). */
  async *allItems(p: Principal, id: string, requested?: number): AsyncGenerator<ItemDto> {
    const s = scopeOf(p);
    const version = this.versionOf(await this.row(s, id), requested);
    let after = 0;
    for (;;) {
      const rows = await store.itemsOf(this.db, this.dialect, s, id, version, { limit: 500, afterPosition: after });
      for (const r of rows) yield itemDto(r);
      if (rows.length < 500) return;
      after = rows[rows.length - 1].position;
    }
  }

  /**
   * The items of a version in OpenAI's fine-tuning chat format, `{messages}` per item: the prompt
   * of the run it was copied from (its system, user and assistant text), then its expected value
   * as the assistant's final answer. Items that cannot be written so are left out (answered by
   * `skipped`): one not copied from a run, whose run is gone, with no expected value, or whose
   * prompt holds more than text (images, tool calls).
   */
  async *chatExamples(
    p: Principal,
    id: string,
    version: number,
    skipped: { count: number },
  ): AsyncGenerator<{ messages: Array<{ role: string; content: string }> }> {
    let batch: ItemDto[] = [];
    const flush = async function* (this: DatasetService) {
      const runs = await Promise.all(
        batch.map((it) =>
          it.source_run && it.expected !== undefined
            ? this.runs.get(p, it.source_run).then(
                (r) => r as Record<string, unknown>,
                (err: { status?: number }) => (err?.status === 404 ? undefined : Promise.reject(err)),
              )
            : Promise.resolve(undefined),
        ),
      );
      for (const [i, it] of batch.entries()) {
        const messages = runs[i] && chatMessages(runs[i]!, it.expected);
        if (messages) yield { messages };
        else skipped.count++;
      }
      batch = [];
    };
    for await (const it of this.allItems(p, id, version)) {
      batch.push(it);
      if (batch.length === RUN_READS_AT_ONCE) yield* flush.call(this);
    }
    yield* flush.call(this);
  }

  /** Checks the dataset exists before an export starts answering. */
  async check(p: Principal, id: string, version?: number): Promise<number> {
    return this.versionOf(await this.row(scopeOf(p), id), version);
  }

  /**
   * One change of the dataset's items, in a transaction that starts by writing the dataset's row
   * (a row lock on PostgreSQL, the write lock on SQLite): concurrent changes queue up, and a frozen
   * version moves to the next one first. Answers the version changed.
   */
  private async change(
    p: Principal,
    s: Scope,
    id: string,
    work: (trx: Transaction<DatasetsDb>, version: number, count: number) => Promise<void>,
  ): Promise<number> {
    return this.db.transaction().execute(async (trx) => {
      await store.updateDataset(trx, s, id, { updated_by: actorOf(p), updated_at: nowIso() });
      const row = await store.getDataset(trx, s, id);
      if (!row) throw new NotFound('dataset', id);
      const version = row.frozen_version === row.version ? row.version + 1 : row.version;
      if (version !== row.version) await store.updateDataset(trx, s, id, { version });
      await work(trx, version, await store.countItems(trx, s, id, version));
      return version;
    });
  }

  private async row(s: Scope, id: string): Promise<DatasetRow> {
    const row = await store.getDataset(this.db, s, id);
    if (!row) throw new NotFound('dataset', id);
    return row;
  }

  private versionOf(row: DatasetRow, requested: number | undefined): number {
    if (requested === undefined) return row.version;
    if (!Number.isInteger(requested) || requested < 1 || requested > row.version)
      throw new BadRequest(`version is a whole number from 1 to ${row.version} (the dataset's current version)`);
    return requested;
  }

  private async dto(s: Scope, row: DatasetRow): Promise<DatasetDto> {
    return {
      id: row.id,
      name: row.name,
      ...(row.description ? { description: row.description } : {}),
      version: Number(row.version),
      frozen_version: Number(row.frozen_version) || null,
      item_count: await store.countItems(this.db, s, row.id, Number(row.version)),
      created_by: row.created_by,
      updated_by: row.updated_by,
      created_at: row.created_at,
      updated_at: row.updated_at,
    };
  }

  private checkName(name: string): string {
    const trimmed = name.trim();
    if (!trimmed || trimmed.length > DATASET_BOUNDS.nameChars)
      throw new BadRequest(`name is 1 to ${DATASET_BOUNDS.nameChars} characters`);
    return trimmed;
  }

  private checkDescription(description: string | undefined): void {
    if (description !== undefined && description.length > DATASET_BOUNDS.descriptionChars)
      throw new BadRequest(`description is at most ${DATASET_BOUNDS.descriptionChars} characters`);
  }

  private checkItem(it: NewItem, at: string): void {
    const size = bytes(it);
    if (size > DATASET_BOUNDS.itemBytes)
      throw new PayloadTooLarge(`${at} is ${size} bytes: an item is at most ${DATASET_BOUNDS.itemBytes} bytes`);
  }
}

function itemDto(r: ItemRow): ItemDto {
  return {
    id: r.id,
    data: r.data,
    ...(r.expected !== undefined ? { expected: r.expected } : {}),
    ...(r.metadata ? { metadata: r.metadata } : {}),
    ...(r.source_run ? { source_run: r.source_run } : {}),
    version_added: r.version_added,
    created_at: r.created_at,
  };
}

const CHAT_ROLES = new Set(['system', 'user', 'assistant']);

/** A run's prompt as chat messages with `expected` as the final answer, or undefined when it holds more than text. */
function chatMessages(run: Record<string, unknown>, expected: unknown) {
  const prompt = Array.isArray(run.prompt) ? (run.prompt as Array<{ role?: string; content?: unknown }>) : [];
  const messages: Array<{ role: string; content: string }> = [];
  for (const m of prompt) {
    if (!m.role || !CHAT_ROLES.has(m.role)) return undefined;
    if (typeof m.content === 'string') messages.push({ role: m.role, content: m.content });
    else if (Array.isArray(m.content) && m.content.every((c: { type?: string }) => c?.type === 'text'))
      messages.push({ role: m.role, content: m.content.map((c: { text?: string }) => c.text ?? '').join('') });
    else return undefined;
  }
  if (!messages.length) return undefined;
  messages.push({ role: 'assistant', content: typeof expected === 'string' ? expected : JSON.stringify(expected) });
  return messages;
}

/** A run's data as the item's data, its answer as expected: a JSON answer as itself, text parts joined. */
function itemOfRun(run: Record<string, unknown>): NewItem {
  const parts = Array.isArray(run.result) ? (run.result as Array<{ type?: string; value?: unknown }>) : [];
  const json = parts.find((x) => x.type === 'json');
  const text = parts
    .filter((x) => x.type === 'text')
    .map((x) => String(x.value ?? ''))
    .join('');
  const interaction = run.interaction as { id?: string; name?: string } | string | undefined;
  return {
    data: (run.parameters as Record<string, unknown> | undefined) ?? {},
    ...(json ? { expected: json.value } : text ? { expected: text } : {}),
    metadata: {
      run_id: run.id,
      ...(interaction ? { interaction: typeof interaction === 'string' ? interaction : interaction.id } : {}),
      ...(run.modelId ? { model: run.modelId } : {}),
    },
    source_run: String(run.id),
  };
}
