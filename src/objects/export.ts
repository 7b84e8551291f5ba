/**
 * `POST /objects/export`: the objects as CSV or JSON, answered as `{type, name, data}` (the
 * client's `ExportPropertiesResponse`). The answer is streamed: rows are read a page at a time
 * (by id chunks, or by keyset over the newest-first order), each page is rendered and written
 * as a piece of the `data` JSON string, so neither the rows nor the file are ever all in memory.
 * CSV: RFC 4180 (quoted as needed, CRLF), a header line, one row per object, and cells that a
 * spreadsheet would run as a formula are escaped with a leading `'`.
 */
import { Readable } from 'node:stream';
import { stringify } from 'csv-stringify/sync';
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import { scopeOf, type Principal, type Scope } from '../auth/principal.ts';
import { BadRequest } from '../util/errors.ts';
import type { ObjectListing } from './listing.ts';
import { filtersOf } from './listing.ts';
import { filterCondition, type ObjectFilters } from './filters.ts';
import { columnsFor, decodeObject, objectsIn } from './store.ts';
import { IN_LIST_CHUNK } from '../db/in-list.ts';
import { toRecord } from './dto.ts';
import { checkLayout, type ColumnLayout, type ObjectTypeService } from './types-service.ts';
import { HIDDEN_FIELDS, type HiddenField, type ObjectRecord, type ObjectRow } from './model.ts';
import { hasOwnKey } from '../util/own.ts';
import { CSV_OPTIONS, escapeFormula } from '../util/csv.ts';

export interface ExportInput {
  objectIds?: string[];
  type?: string;
  /** Id or name of an object type whose table_layout gives the columns. */
  layout?: string;
  table_layout?: ColumnLayout[];
  query?: Record<string, unknown>;
}

const PAGE = 500;
const FORMATS = { csv: { mime: 'text/csv', ext: 'csv' }, json: { mime: 'application/json', ext: 'json' } } as const;
type Format = keyof typeof FORMATS;

const DEFAULT_LAYOUT: ColumnLayout[] = [
  { field: 'id', name: 'id' },
  { field: 'name', name: 'name' },
  { field: 'description', name: 'description' },
  { field: 'type', name: 'type' },
  { field: 'status', name: 'status' },
  { field: 'location', name: 'location' },
  { field: 'parent', name: 'parent' },
  { field: 'external_id', name: 'external_id' },
  { field: 'content.name', name: 'content_name' },
  { field: 'content.type', name: 'content_type' },
  { field: 'tags', name: 'tags' },
  { field: 'properties', name: 'properties' },
  { field: 'created_at', name: 'created_at' },
  { field: 'updated_at', name: 'updated_at' },
];

export class ObjectExporter {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: OrreryDialect,
    private readonly types: ObjectTypeService,
    private readonly listing: ObjectListing,
  ) {}

  /**
   * Validates the request and reads the first page before anything is sent, so a bad layout,
   * filter or query is still a clean 4xx; then answers the streamed JSON body.
   */
  async start(p: Principal, input: ExportInput): Promise<{ mime: string; name: string; body: Readable }> {
    const s = scopeOf(p);
    const format = formatOf(input.type);
    const layout = await this.layoutOf(s, input, format);
    const hidden = new Set(
      (layout ?? [])
        .map((c) => c.field.split('.')[0])
        .filter((f): f is HiddenField => (HIDDEN_FIELDS as readonly string[]).includes(f)),
    );
    const pages = this.pages(s, input, hidden);
    const first = await pages.next();
    const name = `${fileSlug(p.project.name)}-${stamp(new Date())}.${FORMATS[format].ext}`;
    const mime = FORMATS[format].mime;
    const render = format === 'csv' ? csvRenderer(layout ?? DEFAULT_LAYOUT) : jsonRenderer(layout);
    async function* body(): AsyncGenerator<string> {
      yield `{"type":${JSON.stringify(mime)},"name":${JSON.stringify(name)},"data":"`;
      const head = render.start();
      if (head) yield jsonStringBody(head);
      let first_ = true;
      for (let page = first; !page.done; page = await pages.next()) {
        const piece = render.page(page.value, first_);
        first_ = false;
        if (piece) yield jsonStringBody(piece);
      }
      const tail = render.end();
      if (tail) yield jsonStringBody(tail);
      yield '"}';
    }
    return { mime, name, body: Readable.from(body(), { objectMode: false }) };
  }

  private async layoutOf(s: Scope, input: ExportInput, format: Format): Promise<ColumnLayout[] | undefined> {
    if (input.table_layout !== undefined && input.table_layout !== null) {
      checkLayout(input.table_layout);
      if (input.table_layout.length) return input.table_layout;
    }
    if (input.layout) {
      const layout = await this.types.layoutOf(s, input.layout);
      if (!layout?.length) throw new BadRequest(`object type ${JSON.stringify(input.layout)} has no table_layout`);
      return layout;
    }
    return format === 'csv' ? DEFAULT_LAYOUT : undefined;
  }

  /** Pages of records: the given ids in their order (ids of nothing are skipped), or the query's matches newest first. */
  private async *pages(s: Scope, input: ExportInput, hidden: ReadonlySet<HiddenField>): AsyncGenerator<ObjectRecord[]> {
    const ids = (input.objectIds ?? []).filter((x) => typeof x === 'string' && x);
    if (ids.length) {
      const unique = [...new Set(ids)];
      for (let i = 0; i < unique.length; i += IN_LIST_CHUNK) {
        const chunk = unique.slice(i, i + IN_LIST_CHUNK);
        const rows = await objectsIn(this.db, s).select(columnsFor(hidden)).where('objects.id', 'in', chunk).execute();
        const byId = new Map(rows.map((r) => [r.id, decodeObject(this.dialect, r)]));
        const ordered = chunk.map((id) => byId.get(id)).filter((r): r is ObjectRow => !!r);
        if (ordered.length) yield this.records(s, ordered, hidden);
      }
      return;
    }
    const filters: ObjectFilters = filtersOf(input.query);
    const ctx = this.listing.context(s);
    let after: { updated_at: string; id: string } | undefined;
    for (;;) {
      let q = objectsIn(this.db, s)
        .select(columnsFor(hidden))
        .where((eb) => filterCondition(eb, filters, ctx));
      if (after) {
        const a = after;
        q = q.where((eb) => eb(eb.refTuple('objects.updated_at', 'objects.id'), '<', eb.tuple(a.updated_at, a.id)));
      }
      const rows = (
        await q.orderBy('objects.updated_at', 'desc').orderBy('objects.id', 'desc').limit(PAGE).execute()
      ).map((r) => decodeObject(this.dialect, r));
      if (rows.length) yield this.records(s, rows, hidden);
      if (rows.length < PAGE) return;
      const last = rows[rows.length - 1];
      after = { updated_at: last.updated_at, id: last.id };
    }
  }

  private async records(s: Scope, rows: ObjectRow[], hidden: ReadonlySet<HiddenField>): Promise<ObjectRecord[]> {
    const [types, embeddings] = await Promise.all([
      this.types.refs(
        s,
        rows.map((r) => r.type_id).filter((x): x is string => !!x),
      ),
      this.listing.embeddingsOf(s, rows, hidden),
    ]);
    return rows.map((r) => toRecord(r, { types, embeddings }, hidden));
  }
}

interface Renderer {
  start(): string;
  page(records: ObjectRecord[], first: boolean): string;
  end(): string;
}

function csvRenderer(layout: ColumnLayout[]): Renderer {
  return {
    start: () => stringify([layout.map((c) => escapeFormula(c.name))], CSV_OPTIONS),
    page: (records) =>
      stringify(
        records.map((r) => layout.map((c) => cellOf(r, c))),
        {
          ...CSV_OPTIONS,
          cast: {
            string: escapeFormula,
            boolean: (v) => (v ? 'true' : 'false'),
            object: (v) => escapeFormula(JSON.stringify(v)),
            date: (v) => v.toISOString(),
          },
        },
      ),
    end: () => '',
  };
}

function jsonRenderer(layout: ColumnLayout[] | undefined): Renderer {
  const shape = (r: ObjectRecord) =>
    layout ? Object.fromEntries(layout.map((c) => [c.name, cellOf(r, c) ?? null])) : r;
  return {
    start: () => '[',
    page: (records, first) => (first ? '' : ',') + records.map((r) => JSON.stringify(shape(r))).join(','),
    end: () => ']',
  };
}

/** The value of a layout column: the field, else its fallback field, else its default. */
function cellOf(record: ObjectRecord, c: ColumnLayout): unknown {
  let v = valueAt(record, c.field);
  if ((v === undefined || v === null || v === '') && c.fallback) v = valueAt(record, c.fallback);
  if (v === undefined || v === null || v === '') v = c.default;
  return v;
}

function valueAt(record: ObjectRecord, field: string): unknown {
  if (field === 'type') return record.type?.name;
  let cur: unknown = record;
  for (const k of field.split('.')) {
    if (!hasOwnKey(cur, k)) return undefined;
    cur = (cur as Record<string, unknown>)[k];
  }
  return cur;
}

function formatOf(type: string | undefined): Format {
  const f = (type ?? '').trim().toLowerCase();
  if (f === 'csv' || f === 'text/csv') return 'csv';
  if (f === 'json' || f === 'application/json') return 'json';
  throw new BadRequest(`type must be CSV or JSON (any case), got ${JSON.stringify(type ?? null)}`);
}

/** The inside of a JSON string literal holding `s`. */
const jsonStringBody = (s: string) => JSON.stringify(s).slice(1, -1);

const fileSlug = (name: string) =>
  name
    .trim()
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/^-+|-+$/g, '') || 'export';

const stamp = (d: Date) =>
  d
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
