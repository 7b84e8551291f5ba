/**
 * `GET /runs/export` (issue 18, point 6): the runs matching a Lucene `query` (as POST
 * /runs/search takes it) and the filters of `GET /runs`, as JSON Lines or CSV, streamed.
 *
 * - Order: newest `updated_at` first, ties by id (the order of every run list). Pages of PAGE
 *   runs are read by keyset (`(updated_at, id) < last`), never with an offset, so each page costs
 *   the same at the millionth run as at the first, and only one page is in memory at a time.
 * - The body is a Readable that reads the next page only when the socket has taken the previous
 *   one (backpressure); when the client goes away the stream is destroyed and no further page is
 *   read.
 * - The request is checked and the first page read before anything is sent: a bad query or
 *   filter is a clean 400 (a Lucene syntax error carries its position), never a cut-off file.
 * - JSONL: one run per line, as `GET /runs/:id?populate=false` answers it.
 * - CSV: RFC 4180 with a header line, CRLF; the columns are EXPORT_COLUMNS; a cell (or a line in
 *   a cell) that starts with = + - @ tab or CR is prefixed with `'` (formula injection).
 * - `limit`: at most MAX_EXPORT runs (the default).
 */
import { Readable } from 'node:stream';
import { stringify } from 'csv-stringify/sync';
import { scopeOf, type Principal, type Scope } from '../auth/principal.ts';
import type { OrreryDialect } from '../db/dialect.ts';
import { BadRequest } from '../util/errors.ts';
import { compileRunQuery, fullTextWords } from './lucene-sql/index.ts';
import { sql, type SqlBool } from 'kysely';
import { CSV_OPTIONS, escapeFormula } from '../util/csv.ts';
import { docOf, toRun, type RunRow } from './model.ts';
import { listRequest, luceneOf } from './search-request.ts';
import { findRuns, pagePlan, whereOf } from './search-store.ts';
import type { Db } from './store.ts';

const MAX_EXPORT = 1_000_000;
const PAGE = 500;
/** Runs rendered per piece of the body. */
const PER_PIECE = 25;
const FORMATS = {
  jsonl: { mime: 'application/x-ndjson; charset=utf-8', ext: 'jsonl' },
  csv: { mime: 'text/csv; charset=utf-8', ext: 'csv' },
} as const;
type Format = keyof typeof FORMATS;

/** The CSV columns, in order, and what each holds (README, "Analytics and export"). */
export const EXPORT_COLUMNS: ReadonlyArray<{ name: string; value: (r: RunRow) => unknown }> = [
  { name: 'id', value: (r) => r.id },
  { name: 'created_at', value: (r) => r.created_at },
  { name: 'updated_at', value: (r) => r.updated_at },
  { name: 'status', value: (r) => r.status },
  { name: 'interaction_id', value: (r) => r.interaction_id },
  { name: 'interaction_name', value: (r) => docOf(r).interaction?.name },
  { name: 'environment_id', value: (r) => r.environment_id },
  { name: 'environment_name', value: (r) => docOf(r).environment?.name },
  { name: 'provider', value: (r) => docOf(r).environment?.provider },
  { name: 'model', value: (r) => r.model_id },
  { name: 'finish_reason', value: (r) => r.finish_reason },
  { name: 'execution_time_ms', value: (r) => r.execution_time },
  { name: 'prompt_tokens', value: (r) => r.token_prompt },
  { name: 'result_tokens', value: (r) => r.token_result },
  { name: 'total_tokens', value: (r) => r.token_total },
  { name: 'cost_usd', value: (r) => docOf(r).cost?.total },
  { name: 'tags', value: (r) => ((r.tags as string[] | null) ?? []).join(',') },
  { name: 'parent_id', value: (r) => r.parent_id },
  { name: 'error_code', value: (r) => docOf(r).error?.code },
  { name: 'error_message', value: (r) => docOf(r).error?.message },
  { name: 'result', value: (r) => resultText(docOf(r).result) },
  {
    name: 'parameters',
    value: (r) => (docOf(r).parameters === undefined ? undefined : JSON.stringify(docOf(r).parameters)),
  },
];

/** The result as text: text parts as they are, JSON parts as JSON, one per line. */
function resultText(result: unknown): string {
  if (!Array.isArray(result)) return '';
  return result
    .map((p) =>
      p && typeof p === 'object' && 'value' in p
        ? typeof p.value === 'string'
          ? p.value
          : JSON.stringify(p.value)
        : '',
    )
    .join('\n');
}

export interface ExportAnswer {
  mime: string;
  filename: string;
  body: Readable;
}

type Json = Record<string, unknown>;

/** The latest score per name of runs (src/scores), by run id: a run's answer and its export carry them. */
export interface RunScores {
  latest(s: Scope, runs: readonly string[]): Promise<Map<string, Record<string, { value: unknown }>>>;
}

export class RunExporter {
  constructor(
    private readonly db: Db,
    private readonly dialect: OrreryDialect,
    private readonly pageSize = PAGE,
    private readonly scores?: RunScores,
  ) {}

  async start(p: Principal, q: Json): Promise<ExportAnswer> {
    const format = formatOf(q.format);
    const limit = limitOf(q.limit);
    if (q.offset !== undefined)
      throw new BadRequest(
        'offset is not accepted by an export: narrow it with the query and filters (anchorDate) instead',
      );
    const {
      limit: _l,
      offset: _o,
      format: _f,
      query: text,
      default_query_path: snake,
      defaultQueryPath: camel,
      ...filters
    } = q;
    const path = snake ?? camel;
    const list = listRequest(filters);
    const lucene = luceneOf(text === '' ? undefined : text, path);
    const scope = scopeOf(p);
    const plan = lucene.query
      ? await pagePlan(this.db, this.dialect, fullTextWords(lucene.query, lucene.defaultPath))
      : { purpose: 'page' as const };
    const query =
      lucene.query &&
      compileRunQuery(lucene.query, {
        dialect: this.dialect.name,
        defaultPath: lucene.defaultPath,
        plan,
        project: scope.project,
      });
    const where = whereOf(this.dialect, scope, list.filters, query, plan);

    const size = this.pageSize;
    const per = PER_PIECE;
    const pageAfter = (after: RunRow | undefined, n: number) =>
      findRuns(
        this.db,
        this.dialect,
        after ? sql<SqlBool>`${where} AND (runs.updated_at, runs.id) < (${after.updated_at}, ${after.id})` : where,
        n,
        0,
      );
    let first = limit > 0 ? await pageAfter(undefined, Math.min(size, limit)) : [];
    const render = format === 'csv' ? csvPage : jsonlPage;
    const scores = this.scores;
    const scored = async (rows: RunRow[]): Promise<Scored[]> => {
      const of = scores
        ? await scores.latest(
            scope,
            rows.map((r) => r.id),
          )
        : new Map();
      return rows.map((row) => ({ row, scores: of.get(row.id) ?? {} }));
    };

    async function* body(): AsyncGenerator<string> {
      if (format === 'csv') yield stringify([[...EXPORT_COLUMNS.map((c) => c.name), 'scores']], CSV_OPTIONS);
      let sent = 0;
      let asked = Math.min(size, limit);
      let rows = await scored(first);
      first = [];
      for (;;) {
        // Pieces of PER_PIECE runs: small strings die young, whereas a page as one string is a
        // large object that only a full collection frees (RSS climbed by 260 MB over 100,000 runs).
        for (let i = 0; i < rows.length; i += per) yield render(rows.slice(i, i + per));
        sent += rows.length;
        // A short page is the last one.
        if (rows.length < asked || sent >= limit) return;
        asked = Math.min(size, limit - sent);
        rows = await scored(await pageAfter(rows[rows.length - 1].row, asked));
      }
    }
    const name = `runs-${fileSlug(p.project.name)}-${stamp(new Date())}.${FORMATS[format].ext}`;
    // A page at a time: the next page is read once the socket has drained this one.
    return {
      mime: FORMATS[format].mime,
      filename: name,
      body: Readable.from(body(), { objectMode: false, highWaterMark: 64 * 1024 }),
    };
  }
}

interface Scored {
  row: RunRow;
  scores: Record<string, { value: unknown }>;
}

const jsonlPage = (rows: Scored[]): string =>
  rows.map((r) => JSON.stringify({ ...toRun(r.row), scores: r.scores })).join('\n') + '\n';

/** The `scores` cell: `{<name>: value}` of the run's latest scores, as JSON (empty when it has none). */
const scoresCell = (s: Scored['scores']) =>
  Object.keys(s).length ? JSON.stringify(Object.fromEntries(Object.entries(s).map(([k, v]) => [k, v.value]))) : null;

const csvPage = (rows: Scored[]): string =>
  stringify(
    rows.map((r) => [...EXPORT_COLUMNS.map((c) => c.value(r.row) ?? null), scoresCell(r.scores)]),
    {
      ...CSV_OPTIONS,
      cast: {
        string: escapeFormula,
        boolean: (v) => (v ? 'true' : 'false'),
        object: (v) => escapeFormula(JSON.stringify(v)),
      },
    },
  );

function formatOf(value: unknown): Format {
  if (value === undefined || value === '') return 'jsonl';
  if (value === 'jsonl' || value === 'csv') return value;
  throw new BadRequest(`format must be jsonl or csv, got ${JSON.stringify(value)}`);
}

function limitOf(value: unknown): number {
  if (value === undefined || value === '') return MAX_EXPORT;
  const n = typeof value === 'number' ? value : typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : NaN;
  if (!Number.isInteger(n) || n < 0 || n > MAX_EXPORT)
    throw new BadRequest(
      `limit must be an integer from 0 to ${MAX_EXPORT.toLocaleString('en')}, got ${JSON.stringify(value)}`,
    );
  return n;
}

const fileSlug = (name: string) =>
  name
    .trim()
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/^-+|-+$/g, '') || 'project';
const stamp = (d: Date) =>
  d
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
