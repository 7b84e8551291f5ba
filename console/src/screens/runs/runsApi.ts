/**
 * The runs explorer's requests. The list, the facets and the histogram use POST /runs/search in
 * the interface's shape (`{query: "<lucene>", filters, facets, onlyMeta, limit, offset}`), the only
 * one that carries date facets (the histogram) and the counts in one answer; the detail uses the
 * official client (`client().runs.retrieve`).
 */
import { apiFetch, client } from '../../api/client.ts';
import { FACETS, type FacetKey, type RunsSearch } from './search.ts';

export interface Ref {
  id: string;
  name?: string;
}

export interface RunRef {
  id: string;
  status: 'created' | 'processing' | 'completed' | 'failed';
  interaction: Ref | null;
  environment: Ref | null;
  modelId: string | null;
  model: string | null;
  tags: string[];
  parent?: string;
  finish_reason?: string;
  token_use?: { prompt?: number; result?: number; total?: number };
  execution_time?: number;
  cost?: { total: number; currency: string } | null;
  created_at: string;
  updated_at: string;
}

export interface Bucket {
  _id: string | number | null;
  count: number;
  name?: string;
}

const PAGE_SIZE = 200;

type Filters = Record<string, unknown>;

/** The search filters for the chosen facet values. */
function filtersOf(facets: RunsSearch['facets']): Filters {
  const f: Filters = {};
  for (const { key } of FACETS) {
    const values = facets?.[key];
    if (values?.length) f[key] = values;
  }
  return f;
}

function body(search: RunsSearch, extra: Filters = {}) {
  return { query: queryOf(search), filters: { ...filtersOf(search.facets), ...extra } };
}

/** A score value (as the URL keeps it, JSON) as a Lucene term: numbers and booleans bare, text quoted. */
function scoreTerm(json: string): string {
  const v = JSON.parse(json) as unknown;
  if (typeof v === 'string') return `"${v.replace(/["\\]/g, '\\$&')}"`;
  return String(v);
}

/** The query box's query AND, per chosen score, any of its chosen values (`scores.<name>:<value>`). */
function queryOf(search: RunsSearch): string {
  const parts = Object.entries(search.scoreFilters ?? {})
    .filter(([, values]) => values.length)
    .map(([name, values]) => `(${values.map((v) => `scores.${name}:${scoreTerm(v)}`).join(' OR ')})`);
  if (!parts.length) return search.q ?? '';
  return [search.q ? `(${search.q})` : null, ...parts].filter(Boolean).join(' AND ');
}

/** The explorer's search as POST /runs/search takes it (datasets copy runs with it: from_runs). */
export const searchBody = (search: RunsSearch): { query: string; filters: Filters } => body(search);

/**
 * The page of runs after `cursor`: keyset on updated_at (the search's order is updated_at DESC,
 * id DESC), skipping the runs with that same updated_at already shown. Offsets never grow past a
 * few rows, so the list goes deeper than the API's 100,000-row offset limit.
 */
export interface Cursor {
  before: string;
  skip: number;
}

export function fetchRunsPage(search: RunsSearch, cursor: Cursor | null, signal?: AbortSignal): Promise<RunRef[]> {
  const extra = cursor ? { updated_at: { lte: cursor.before } } : {};
  return apiFetch<RunRef[]>('/runs/search', {
    method: 'POST',
    body: { ...body(search, extra), limit: PAGE_SIZE, offset: cursor?.skip ?? 0 },
    signal,
  });
}

export function nextCursor(pages: RunRef[][]): Cursor | undefined {
  const last = pages.at(-1);
  if (!last || last.length < PAGE_SIZE) return undefined;
  const before = last.at(-1)!.updated_at;
  let skip = 0;
  for (let p = pages.length - 1; p >= 0; p--) {
    const page = pages[p];
    let i = page.length - 1;
    for (; i >= 0 && page[i].updated_at === before; i--) skip++;
    if (i >= 0) break;
  }
  return { before, skip };
}

/** Runs updated after `after` (the live toggle's poll). */
export function fetchNewer(search: RunsSearch, after: string, signal?: AbortSignal): Promise<RunRef[]> {
  return apiFetch<RunRef[]>('/runs/search', {
    method: 'POST',
    body: { ...body(search, { updated_at: { gt: after } }), limit: PAGE_SIZE, offset: 0 },
    signal,
  });
}

export interface RunsMeta {
  total: number;
  facets: Record<FacetKey, Bucket[]>;
  /** Score name → its latest values with their counts (runs without the score in none). */
  scoreFacets: Record<string, Bucket[]>;
  histogram: { from: number; to: number; buckets: { t: number; count: number }[] } | null;
}

interface MetaAnswer {
  count: { total: number };
  facet: Record<string, { buckets: Bucket[] }>;
}

const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
/** Spans tried, widest first, to find how far back the results go (one request answers all). */
const SPANS = [3650 * DAY, 365 * DAY, 90 * DAY, 30 * DAY, 7 * DAY, DAY, 6 * HOUR, HOUR, 10 * MIN, MIN];
const BARS = 60;

/** The client's RunSearchQuery for the explorer's search (POST /runs/facets takes it). */
function clientQuery(search: RunsSearch): Record<string, unknown> {
  const q: Record<string, unknown> = { ...filtersOf(search.facets) };
  const query = queryOf(search);
  if (query) q.query = query;
  return q;
}

/**
 * The facet counts with names (the official client's computeFacets), the total, and the time
 * histogram: a date facet of POST /runs/search, first over widening spans to find how far back the
 * results go, then over 60 equal bars.
 */
export async function fetchMeta(search: RunsSearch, signal?: AbortSignal): Promise<RunsMeta> {
  const now = Date.now() + 1000;
  const spanBounds = SPANS.map((s) => new Date(now - s).toISOString()).concat(new Date(now).toISOString());
  const [values, meta] = await Promise.all([
    client().runs.computeFacets({
      facets: FACETS.map((f) => ({ name: f.key, field: f.path })),
      query: clientQuery(search),
    } as any) as Promise<unknown> as Promise<Record<string, Bucket[] | number>>,
    apiFetch<MetaAnswer>('/runs/search', {
      method: 'POST',
      body: {
        ...body(search),
        facets: {
          span: { type: 'date', path: 'updated_at', boundaries: spanBounds, default: 'other' },
          ...Object.fromEntries((search.scores ?? []).map((n, i) => [`score_${i}`, { path: `scores.${n}` }])),
        },
        onlyMeta: true,
      },
      signal,
    }),
  ]);
  const out: RunsMeta = {
    total: meta.count.total,
    facets: Object.fromEntries(
      FACETS.map((f) => {
        const buckets = (Array.isArray(values[f.key]) ? values[f.key] : []) as Bucket[];
        return [
          f.key,
          buckets.filter((b) => b._id !== null && b._id !== '' && b.count > 0).slice(0, f.key === 'tags' ? 20 : 12),
        ];
      }),
    ) as RunsMeta['facets'],
    scoreFacets: Object.fromEntries(
      (search.scores ?? []).map((n, i) => [
        n,
        (meta.facet[`score_${i}`]?.buckets ?? []).filter((b) => b._id !== null && b.count > 0).slice(0, 12),
      ]),
    ),
    histogram: null,
  };
  if (out.total === 0) return out;
  // The oldest non-empty span: its lower bound starts the histogram.
  const spans = meta.facet.span?.buckets ?? [];
  const first = spans.find((b) => b.count > 0 && b._id !== 'other');
  const from = first ? Date.parse(String(first._id)) : now - SPANS[0];
  let histogram = await histogramOf(search, from, now, signal);
  // The spans are coarse: when the first third of the bars is empty, zoom on where the runs are.
  const firstFull = histogram.buckets.findIndex((b) => b.count > 0);
  if (firstFull > BARS / 3) histogram = await histogramOf(search, histogram.buckets[firstFull].t, now, signal);
  out.histogram = histogram;
  return out;
}

async function histogramOf(
  search: RunsSearch,
  from: number,
  now: number,
  signal?: AbortSignal,
): Promise<NonNullable<RunsMeta['histogram']>> {
  const step = Math.max(1000, Math.ceil((now - from) / BARS / 1000) * 1000);
  const bounds: string[] = [];
  for (let t = from; t < now + step; t += step) bounds.push(new Date(t).toISOString());
  const hist = await apiFetch<MetaAnswer>('/runs/search', {
    method: 'POST',
    body: {
      ...body(search),
      facets: { time: { type: 'date', path: 'updated_at', boundaries: bounds, default: 'other' } },
      onlyMeta: true,
    },
    signal,
  });
  const counts = new Map<number, number>();
  for (const b of hist.facet.time?.buckets ?? [])
    if (b._id !== 'other' && b._id !== null) counts.set(Date.parse(String(b._id)), b.count);
  return {
    from,
    to: Date.parse(bounds.at(-1)!),
    buckets: bounds.slice(0, -1).map((iso) => {
      const t = Date.parse(iso);
      return { t, count: counts.get(t) ?? 0 };
    }),
  };
}

// ---- the explorer's current list, for j/k on the detail page ------------------------------------

const ORDER_KEY = 'orrery.runs.order';
const MAX_KEPT = 20_000;
let order: string[] = [];

/** Keeps the explorer's list order (in memory, and in sessionStorage for a reload). */
export function rememberOrder(ids: string[]): void {
  order = ids;
  try {
    sessionStorage.setItem(ORDER_KEY, JSON.stringify(ids.slice(0, MAX_KEPT)));
  } catch {
    /* storage full or unavailable: the in-memory list still works */
  }
}

export function runOrder(): string[] {
  if (order.length) return order;
  try {
    const saved = JSON.parse(sessionStorage.getItem(ORDER_KEY) ?? '[]');
    if (Array.isArray(saved)) order = saved.filter((x): x is string => typeof x === 'string');
  } catch {
    /* ignore */
  }
  return order;
}

/** The explorer's last view (its URL search), for the detail's "All runs" link. */
let lastView: RunsSearch = {};
export function rememberView(search: RunsSearch): void {
  lastView = search;
}
export const explorerView = (): RunsSearch => lastView;

// ---- formatting ---------------------------------------------------------------------------------

export function formatTime(iso: string | undefined): string {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return d.toISOString().replace('T', ' ').slice(0, 19);
}

export function formatDuration(ms: number | undefined): string {
  if (ms === undefined || ms === null) return '';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

export function formatCost(cost: RunRef['cost']): string {
  if (!cost || typeof cost.total !== 'number') return '';
  return `$${cost.total < 0.01 ? cost.total.toPrecision(2) : cost.total.toFixed(4)}`;
}

export const nameOf = (r: Ref | string | null | undefined): string =>
  r === null || r === undefined ? '' : typeof r === 'string' ? r : (r.name ?? r.id);
