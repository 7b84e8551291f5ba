/**
 * Writes a run's search data with its row, in the same transaction, on insert and on every update
 * that changes the document (the final update of a run, a sweep that fails it). The data comes
 * from `runSearchDoc` (lucene-sql/), the same functions the reference evaluator uses:
 * SQLite fills the FTS5 row keyed by `search_rowid`, PostgreSQL the `search_tsv` column.
 * Bulk loads (tests, benchmarks) use `insertRuns`; one run takes the same path, prepared (`prepareInsert`,
 * `prepareUpdate`: encoded columns and search data) where it is cheapest, then written.
 *
 * Full text is written once, when a run ends (`completed`/`failed`; query/lucene/evaluate.ts rule
 * 1): a run is inserted before its provider call with its fields only, and its final update adds
 * prompt, parameters and result words at once. Writing the words at both points cost a blocking
 * run more than half its time on SQLite (an FTS5 insert, delete and insert), see bench/README.md.
 */
import type { Updateable } from 'kysely';
import { sql } from 'kysely';
import type { OrreryDialect } from '../db/dialect.ts';
import type { RunTable } from '../db/schema.ts';
import {
  ftsRow,
  runSearchDoc,
  runSearchFields,
  tsvectorLiteral,
  type FtsRow,
  type RunSearchDoc,
  type SearchSource,
} from './lucene-sql/index.ts';
import { hasEnded, type RunRow } from './model.ts';
import type { Db } from './store.ts';

export interface NewRun {
  readonly row: RunRow;
  readonly tags: readonly string[];
}

/** Rows per multi-row INSERT: well under SQLite's 32,766 and PostgreSQL's 65,535 bound values. */
const RUNS_PER_INSERT = 200;
const FTS_PER_INSERT = 500;
const TAGS_PER_INSERT = 1000;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const nameOf = (ref: unknown): string | null => (isObject(ref) && typeof ref.name === 'string' ? ref.name : null);
/** `doc.cost.total` (src/pricing/cost.ts), for the `cost_total` column (0009). */
const costTotalOf = (cost: unknown): number | null =>
  isObject(cost) && typeof cost.total === 'number' && Number.isFinite(cost.total) ? cost.total : null;

interface IndexDialect {
  /**
   * Whether a writer may derive a run's search fields from its stored document text (`deferFields`):
   * SQLite's text keeps the document's key order; PostgreSQL indexes the document in jsonb's order.
   */
  readonly fieldsFromText: boolean;
  /**
   * The search data of a document, with the document as this database will hand it back; without
   * `words` (a run that has not ended: no full text yet), its fields alone.
   */
  searchDoc(doc: Record<string, unknown>, words: boolean, fields: boolean): RunSearchDoc;
  /**
   * The runs row's search columns followed by `rest` (columns already encoded, none of them a
   * search column), as one object (`text`: with its full text; undefined: if the stored run has ended;
   * without `fields`, no `search_fields`: the row has them, or the writer's thread derives them).
   * Written as one literal, computed keys first and `rest` spread last, not `{ ...rest, ...columns }`:
   * in Node 20's V8 an object literal that starts with a spread gets a hidden class of its own,
   * outside the shared transitions, and each key added to it after that makes another one, about
   * 1.4 µs and 0.5 KB of old space per key and per object, which only a full GC frees
   * (bench/README.md, issue 22, seventh pass). The same holds wherever a run's objects are built.
   */
  withColumns(
    d: OrreryDialect,
    s: RunSearchDoc,
    doc: Record<string, unknown>,
    text: boolean | undefined,
    rest: Record<string, unknown>,
    fields: boolean,
  ): Record<string, unknown>;
  /** Full-text row of a run for SQLite's FTS5 table; none for PostgreSQL (its tsvector is a column). */
  fts(s: RunSearchDoc): FtsRow | null;
  /** Inserts the rows (already encoded) with their tags and search data; full text where `fts[i]` is given. */
  insert(
    trx: Db,
    rows: Record<string, unknown>[],
    fts: (FtsRow | null)[],
    tags: { run: number; tag: string }[],
  ): Promise<void>;
  /** Updates one row (`text`: and writes its full text; undefined: if the run has ended); false when no row matched. */
  update(
    trx: Db,
    id: string,
    set: Record<string, unknown>,
    fts: FtsRow | null,
    text: boolean | undefined,
    fromStatus?: string,
  ): Promise<boolean>;
}

const NO_WORDS: readonly string[] = Object.freeze([]);

type SearchFields = RunSearchDoc['fields'];
/**
 * A document's search fields (runSearchFields: from its `parameters`, `config` and `source`) and
 * their JSON, kept on the document itself under this symbol, with the three objects they came from.
 * A run's final document is a spread of its first one (runs/service.ts `execute`), which copies the
 * slot and keeps those three objects (nothing changes them in place once a run is written). The slot
 * also names the run whose row holds those fields (`storedFor`, set by its insert), so the update
 * that ends that run leaves `search_fields` as they are, and any other update reuses what was
 * computed (bench/README.md, issue 17, fourth and sixteenth passes). JSON ignores symbol
 * keys: the slot is never stored nor answered. Not a WeakMap: its table lives in the old space and
 * grew with every run until a mark-compact (4 KB of old space per run, measured).
 */
const FIELDS_SLOT = Symbol('orrery.searchFields');

interface FieldsSlot {
  parameters: unknown;
  config: unknown;
  source: unknown;
  /** Undefined until computed here: the writer's thread derived them for the insert (`deferFields`). */
  fields: SearchFields | undefined;
  json?: { d: OrreryDialect; value: unknown };
  /** The run whose stored row holds the search fields of these three objects: its updates need not write them again. */
  storedFor: string | undefined;
}

const slotOf = (doc: SearchSource): FieldsSlot | undefined => (doc as { [FIELDS_SLOT]?: FieldsSlot })[FIELDS_SLOT];

/** The slot of `doc` if it was made from the objects `doc` holds now. */
function currentSlot(doc: SearchSource): FieldsSlot | undefined {
  const hit = slotOf(doc);
  return hit && hit.parameters === doc.parameters && hit.config === doc.config && hit.source === doc.source
    ? hit
    : undefined;
}

/** The current slot of `doc`, made (without fields) if it has none and can take one. */
function slotFor(doc: SearchSource): FieldsSlot | undefined {
  const hit = currentSlot(doc);
  if (hit || !Object.isExtensible(doc)) return hit;
  const slot: FieldsSlot = {
    parameters: doc.parameters,
    config: doc.config,
    source: doc.source,
    fields: undefined,
    json: undefined,
    storedFor: undefined,
  };
  (doc as { [FIELDS_SLOT]?: FieldsSlot })[FIELDS_SLOT] = slot;
  return slot;
}

/** runSearchFields of `ordered` (the document, or its copy in the database's key order), kept on `doc`. */
function fieldsOf(doc: SearchSource, ordered: SearchSource): SearchFields {
  const slot = slotFor(doc);
  if (slot?.fields) return slot.fields;
  const fields = runSearchFields(ordered);
  if (slot) slot.fields = fields;
  return fields;
}

/**
 * Whether the stored row of run `id` holds the search fields of `doc` already: its insert wrote
 * (or had the writer's thread derive) the fields of these same three objects, which nothing changes
 * once a run is written. A run's end then leaves its `search_fields` as they are.
 */
const fieldsStored = (doc: SearchSource, id: string): boolean => currentSlot(doc)?.storedFor === id;

/**
 * The `search_fields` column's value, encoded once per document (and kept in its slot). `fields`
 * are fieldsOf(doc): when they are the slot's, fieldsOf has just found the slot current or filled it.
 */
function encodedFields(d: OrreryDialect, doc: SearchSource, fields: SearchFields): unknown {
  const slot = slotOf(doc);
  if (slot?.fields !== fields) return d.toJson(fields);
  if (slot.json?.d !== d) slot.json = { d, value: d.toJson(fields) };
  return slot.json.value;
}

const NO_FIELDS: SearchFields = Object.freeze({});

/**
 * The search data of `doc`, computed on `ordered` (the document in the order its database keeps
 * keys); without `fields`, the words alone (its `fields` are then empty, and not to be written).
 */
const searchData = (doc: SearchSource, words: boolean, ordered: SearchSource = doc, fields = true): RunSearchDoc =>
  words
    ? runSearchDoc(ordered, fields ? fieldsOf(doc, ordered) : NO_FIELDS)
    : {
        promptWords: NO_WORDS,
        resultWords: NO_WORDS,
        paramWords: NO_WORDS,
        fields: fields ? fieldsOf(doc, ordered) : NO_FIELDS,
      };

const chunks = <T>(xs: readonly T[], n: number): T[][] => {
  const out: T[][] = [];
  for (let i = 0; i < xs.length; i += n) out.push(xs.slice(i, i + n));
  return out;
};

/**
 * Full-text writes held back to the end of a transaction of many runs (RunWriter's batches,
 * `fullTextLast`), in their order: FTS5 writes a segment at every statement savepoint once it is
 * part of a transaction, so interleaved with the runs statements it cut a segment per run (the
 * thread's statements do the same, runs/sqlite-run-writes.ts says more). Only writes made through
 * this module are held; nothing in such a batch reads the full-text table.
 */
const heldFullText = new WeakMap<Db, Array<() => Promise<void>>>();

/** Runs `body` in `trx`, then the full-text writes it made. */
export async function fullTextLast<T>(trx: Db, body: () => Promise<T>): Promise<T> {
  const held: Array<() => Promise<void>> = [];
  heldFullText.set(trx, held);
  try {
    const out = await body();
    for (const write of held) await write();
    return out;
  } finally {
    heldFullText.delete(trx);
  }
}

const writeFullText = async (trx: Db, write: () => Promise<void>): Promise<void> => {
  const held = heldFullText.get(trx);
  if (held) held.push(write);
  else await write();
};

async function insertFts(trx: Db, entries: { rowid: number; f: FtsRow }[]): Promise<void> {
  for (const part of chunks(entries, FTS_PER_INSERT)) {
    const values = part.map(({ rowid, f }) => sql`(${rowid}, ${f.body}, ${f.prompt}, ${f.result})`);
    await sql`INSERT INTO runs_fts (rowid, body, prompt, result) VALUES ${sql.join(values)}`.execute(trx);
  }
}

const sideTableIndex: IndexDialect = {
  fieldsFromText: true,
  searchDoc: (doc, words, fields) => searchData(doc as SearchSource, words, doc as SearchSource, fields),
  withColumns: (d, s, doc, _text, rest, fields) =>
    fields
      ? {
          search_fields: encodedFields(d, doc as SearchSource, s.fields),
          interaction_name: nameOf(doc.interaction),
          environment_name: nameOf(doc.environment),
          cost_total: costTotalOf(doc.cost),
          ...rest,
        }
      : {
          interaction_name: nameOf(doc.interaction),
          environment_name: nameOf(doc.environment),
          cost_total: costTotalOf(doc.cost),
          ...rest,
        },
  fts: (s) => ftsRow(s),
  async insert(trx, rows, fts, tags) {
    const { m } = (await sql<{ m: number }>`SELECT COALESCE(MAX(search_rowid), 0) AS m FROM runs`.execute(trx)).rows[0];
    rows.forEach((r, i) => (r.search_rowid = m + 1 + i));
    for (const part of chunks(rows, RUNS_PER_INSERT))
      await trx
        .insertInto('runs')
        .values(part as never)
        .execute();
    const tagRows = tags.map(({ run, tag }) => ({ run_id: rows[run].id as string, tag, search_rowid: m + 1 + run }));
    for (const part of chunks(tagRows, TAGS_PER_INSERT))
      await trx
        .insertInto('run_tags')
        .values(part as never)
        .execute();
    const entries = fts.flatMap((f, i) => (f ? [{ rowid: m + 1 + i, f }] : []));
    if (entries.length) await writeFullText(trx, () => insertFts(trx, entries));
  },
  async update(trx, id, set, fts, text, fromStatus) {
    let q = trx
      .updateTable('runs')
      .set(set as never)
      .where('id', '=', id);
    if (fromStatus) q = q.where('status', '=', fromStatus);
    const r = await q.returning(['search_rowid', 'status']).executeTakeFirst();
    if (!r) return false;
    const rowid = r.search_rowid!;
    const row = fts && (text ?? hasEnded(r.status)) ? fts : null;
    await writeFullText(trx, async () => {
      // Deleting a row the FTS table does not hold costs ~1 µs (contentless_delete): no need to know.
      await sql`DELETE FROM runs_fts WHERE rowid = ${rowid}`.execute(trx);
      if (row) await insertFts(trx, [{ rowid, f: row }]);
    });
    return true;
  },
};

const columnIndex: IndexDialect = {
  fieldsFromText: false,
  // jsonb does not keep key order, and the order of parameter strings is the order of the words
  // in runText: index the document in the order PostgreSQL will answer it.
  searchDoc: (doc, words, fields) => searchData(doc as SearchSource, words, jsonbOrder(doc) as SearchSource, fields),
  // Undefined `text` (an update that leaves the status as it is): the stored status decides; in
  // an UPDATE's SET, `runs.status` is the row's status before (and so after) the update.
  withColumns: (d, s, doc, text, rest, fields) => ({
    search_fields: fields ? encodedFields(d, doc as SearchSource, s.fields) : undefined,
    interaction_name: nameOf(doc.interaction),
    environment_name: nameOf(doc.environment),
    cost_total: costTotalOf(doc.cost),
    search_tsv:
      text === undefined
        ? sql`CASE WHEN runs.status IN ('completed', 'failed') THEN CAST(${tsvectorLiteral(s)} AS tsvector) ELSE ''::tsvector END`
        : text
          ? tsvectorLiteral(s)
          : '',
    ...rest,
  }),
  fts: () => null,
  async insert(trx, rows, _fts, tags) {
    for (const part of chunks(rows, RUNS_PER_INSERT))
      await trx
        .insertInto('runs')
        .values(part as never)
        .execute();
    const tagRows = tags.map(({ run, tag }) => ({ run_id: rows[run].id as string, tag }));
    for (const part of chunks(tagRows, TAGS_PER_INSERT)) await trx.insertInto('run_tags').values(part).execute();
  },
  async update(trx, id, set, _fts, _text, fromStatus) {
    let q = trx
      .updateTable('runs')
      .set(set as never)
      .where('id', '=', id);
    if (fromStatus) q = q.where('status', '=', fromStatus);
    const r = await q.executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  },
};

/** jsonb's order of object keys: shorter (in UTF-8 bytes) first, then by bytes. */
const jsonbKeyOrder = (a: string, b: string): number => {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length - y.length || Buffer.compare(x, y);
};

/** A copy of a JSON value with every object's keys in jsonb's order. */
const jsonbOrder = (v: unknown): unknown =>
  Array.isArray(v)
    ? v.map(jsonbOrder)
    : isObject(v)
      ? Object.fromEntries(
          Object.keys(v)
            .sort(jsonbKeyOrder)
            .map((k) => [k, jsonbOrder(v[k])]),
        )
      : v;

/**
 * Full text in a side table (SQLite's FTS5, whose JSON text keeps the document's key order) or as
 * a column of the row (PostgreSQL's tsvector, beside a jsonb document that orders its keys).
 */
const indexOf = (d: OrreryDialect): IndexDialect => (d.caps.fullTextSideTable ? sideTableIndex : columnIndex);

const inTransaction = <T>(db: Db, fn: (trx: Db) => Promise<T>): Promise<T> =>
  db.isTransaction ? fn(db) : db.transaction().execute(fn);

const docOfRow = (doc: unknown): Record<string, unknown> => (isObject(doc) ? doc : {});

/**
 * Runs to insert, encoded with their search data and full text: computed by the caller, so that
 * the run writer's thread (runs/run-writer-thread.ts) executes SQL and little else (it derives the
 * search fields of `deferred` rows). Plain data on SQLite.
 */
export interface PreparedInsert {
  rows: Record<string, unknown>[];
  fts: (FtsRow | null)[];
  tags: { run: number; tag: string }[];
  /**
   * Rows prepared without `search_fields` (`deferFields`), with their documents: the writer's
   * thread derives the fields from the `doc` column it writes (and, for a run that has ended,
   * `text`, its full-text row too); any other writer computes them from these documents first
   * (completeFields).
   */
  deferred?: { row: number; doc: SearchSource; text: boolean }[];
}

/** An update of a run's document with its search data (see prepareUpdate). */
export interface PreparedUpdate {
  id: string;
  set: Record<string, unknown>;
  fts: FtsRow | null;
  text: boolean | undefined;
  fromStatus?: string;
}

export interface PrepareInsertOptions {
  /**
   * Leave the search data of new runs to the writer's thread (SQLite), which derives it from the
   * document text it receives anyway: the fields of a run that has not ended were the largest part
   * of a run's time on the HTTP thread that the thread can take (bench/README.md, issue 17,
   * sixteenth pass), and the fields and words of an ended run with ~1 MB of parameters (an
   * import) held the event loop for half a second to a second.
   */
  deferFields?: boolean;
}

/** `encode` turns a row into column values (runs/store.ts `encodeRun`). Full text only for runs that have ended. */
export function prepareInsert(
  d: OrreryDialect,
  runs: readonly NewRun[],
  encode: (row: RunRow) => Record<string, unknown>,
  options: PrepareInsertOptions = {},
): PreparedInsert {
  const index = indexOf(d);
  const rows: Record<string, unknown>[] = [];
  const fts: (FtsRow | null)[] = [];
  const deferred: { row: number; doc: SearchSource; text: boolean }[] = [];
  for (const { row } of runs) {
    const doc = docOfRow(row.doc);
    const text = hasEnded(row.status);
    const defer = options.deferFields === true && index.fieldsFromText;
    const s = index.searchDoc(doc, text && !defer, !defer);
    if (defer) deferred.push({ row: rows.length, doc: doc as SearchSource, text });
    rows.push(
      index.withColumns(
        d,
        s,
        doc,
        text,
        { expires_at: expiryOf(doc.ttl, row.created_at), previous_run: previousRunOf(doc), ...encode(row) },
        !defer,
      ),
    );
    fts.push(text && !defer ? index.fts(s) : null);
    const slot = slotFor(doc as SearchSource);
    if (slot) slot.storedFor = row.id;
  }
  return {
    rows,
    fts,
    tags: runs.flatMap(({ tags }, run) => tags.map((tag) => ({ run, tag }))),
    ...(deferred.length ? { deferred } : {}),
  };
}

/** The search data of rows prepared without it, computed here (a writer other than the thread). */
function completeFields(d: OrreryDialect, p: PreparedInsert): Pick<PreparedInsert, 'rows' | 'fts'> {
  if (!p.deferred) return p;
  const rows = [...p.rows];
  const fts = [...p.fts];
  const index = indexOf(d);
  for (const { row, doc, text } of p.deferred) {
    const fields = fieldsOf(doc, doc);
    rows[row] = { search_fields: encodedFields(d, doc, fields), ...rows[row] };
    if (text) fts[row] = index.fts(index.searchDoc(doc as Record<string, unknown>, true, true));
  }
  return { rows, fts };
}

/** `doc.previous_run`, for the `previous_run` column (0028): the run a continuation extends. */
const previousRunOf = (doc: Record<string, unknown>): string | null =>
  typeof doc.previous_run === 'string' ? doc.previous_run : null;

/** `created_at` + `ttl` seconds for a run with a ttl (0019: the retention sweeper deletes it after); null otherwise. */
function expiryOf(ttl: unknown, createdAt: string): string | null {
  if (typeof ttl !== 'number' || !(ttl > 0)) return null;
  const at = Date.parse(createdAt) + ttl * 1000;
  // Past what a date can hold (the schema bounds ttl to 100 years): kept forever.
  return Number.isFinite(at) && at <= 8.64e15 ? new Date(at).toISOString() : null;
}

/** Inserts prepared runs, in the caller's transaction when `db` is one. */
export async function writeInsert(db: Db, d: OrreryDialect, p: PreparedInsert): Promise<void> {
  if (!p.rows.length) return;
  const { rows, fts } = completeFields(d, p);
  await inTransaction(db, (trx) => indexOf(d).insert(trx, rows, fts, p.tags));
}

/** Inserts runs with their tags and search data, in the caller's transaction when `db` is one. */
export function insertRuns(
  db: Db,
  d: OrreryDialect,
  runs: readonly NewRun[],
  encode: (row: RunRow) => Record<string, unknown>,
): Promise<void> {
  return writeInsert(db, d, prepareInsert(d, runs, encode));
}

/**
 * Prepares the update of a run whose document changes (`set` is already encoded; `doc` is the new
 * document) with its search data; with `fromStatus`, only if the run is still in that status. The
 * full text is written when the run's status after the update is an end (set here, or kept from before).
 */
export function prepareUpdate(
  d: OrreryDialect,
  id: string,
  set: Updateable<RunTable>,
  doc: unknown,
  fromStatus?: string,
): PreparedUpdate {
  const index = indexOf(d);
  const text =
    set.status !== undefined ? hasEnded(set.status) : fromStatus !== undefined ? hasEnded(fromStatus) : undefined;
  const newDoc = docOfRow(doc);
  const fields = !fieldsStored(newDoc as SearchSource, id);
  const s = index.searchDoc(newDoc, text !== false, fields);
  const fts = text === false ? null : index.fts(s);
  return {
    id,
    set: index.withColumns(d, s, newDoc, text, set, fields),
    fts,
    text,
    ...(fromStatus !== undefined ? { fromStatus } : {}),
  };
}

/** Applies a prepared update, in the caller's transaction when `db` is one; false when no row matched. */
export function writeUpdate(db: Db, d: OrreryDialect, p: PreparedUpdate): Promise<boolean> {
  return inTransaction(db, (trx) => indexOf(d).update(trx, p.id, p.set, p.fts, p.text, p.fromStatus));
}
