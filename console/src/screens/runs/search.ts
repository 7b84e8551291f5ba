/**
 * URL search params of the runs screens (the router imports the validators). Everything that
 * shapes the explorer's view lives here, so a view can be bookmarked and shared:
 * `/runs?q=status:failed&facets={"tags":["nightly"]}&columns=["time","status"]&live=true`.
 */

/** The facets shown as chips, in order: the URL key → the search API's facet path. */
export const FACETS = [
  { key: 'status', label: 'Status', path: 'status' },
  { key: 'interaction', label: 'Interaction', path: 'interaction' },
  { key: 'environment', label: 'Environment', path: 'environment' },
  { key: 'model', label: 'Model', path: 'modelId' },
  { key: 'tags', label: 'Tags', path: 'tags' },
] as const;
export type FacetKey = (typeof FACETS)[number]['key'];
const FACET_KEYS: readonly FacetKey[] = FACETS.map((f) => f.key);

/** The explorer's columns, in display order. */
export const COLUMNS = [
  { id: 'time', label: 'Time' },
  { id: 'id', label: 'Run id' },
  { id: 'interaction', label: 'Interaction' },
  { id: 'environment', label: 'Environment' },
  { id: 'model', label: 'Model' },
  { id: 'status', label: 'Status' },
  { id: 'tokens', label: 'Tokens' },
  { id: 'duration', label: 'Duration' },
  { id: 'tags', label: 'Tags' },
  { id: 'cost', label: 'Cost' },
  { id: 'finish_reason', label: 'Finish reason' },
] as const;
export type ColumnId = (typeof COLUMNS)[number]['id'];
const COLUMN_IDS: readonly ColumnId[] = COLUMNS.map((c) => c.id);
export const DEFAULT_COLUMNS: readonly ColumnId[] = [
  'time',
  'interaction',
  'environment',
  'model',
  'status',
  'tokens',
  'duration',
  'tags',
  'cost',
];

export interface RunsSearch {
  /** Lucene query of run search. */
  q?: string;
  /** Facet key → chosen values (status any of; tags all of; others any of). */
  facets?: Partial<Record<FacetKey, string[]>>;
  /** Visible column ids, in display order. */
  columns?: ColumnId[];
  /** Show new runs as they arrive. */
  live?: boolean;
  /** Score names shown as columns and as facet groups, in order. */
  scores?: string[];
  /** Score name → chosen values, each as JSON (`0.8`, `true`, `"off-topic"`): any of them. */
  scoreFilters?: Record<string, string[]>;
}

/** A score name as the server takes it (letters, digits, _ and -). */
export const SCORE_NAME = /^[\p{L}\p{N}_-]{1,100}$/u;
const MAX_SCORES = 8;

const MAX_VALUES = 50;
const isStringArray = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string');

/** Parses a JSON-ish param: TanStack Router hands objects/arrays already parsed, but a hand-written URL may carry a string. */
function parsed(v: unknown): unknown {
  if (typeof v !== 'string') return v;
  try {
    return JSON.parse(v);
  } catch {
    return v.includes(',') ? v.split(',') : [v];
  }
}

export function validateRunsSearch(raw: Record<string, unknown>): RunsSearch {
  const out: RunsSearch = {};
  const q = raw.q;
  if (typeof q === 'string' && q.trim() !== '') out.q = q.slice(0, 10_000);
  else if (typeof q === 'number' || typeof q === 'boolean') out.q = String(q);
  const facets = parsed(raw.facets);
  if (facets && typeof facets === 'object' && !Array.isArray(facets)) {
    const f: Partial<Record<FacetKey, string[]>> = {};
    for (const key of FACET_KEYS) {
      const v = (facets as Record<string, unknown>)[key];
      const list = typeof v === 'string' ? [v] : isStringArray(v) ? v : [];
      const clean = [...new Set(list.filter((x) => x !== ''))].slice(0, MAX_VALUES);
      if (clean.length) f[key] = clean;
    }
    if (Object.keys(f).length) out.facets = f;
  }
  const columns = parsed(raw.columns);
  if (isStringArray(columns)) {
    const clean = [...new Set(columns)].filter((c): c is ColumnId => (COLUMN_IDS as readonly string[]).includes(c));
    if (clean.length) out.columns = clean;
  }
  if (raw.live === true || raw.live === 'true') out.live = true;
  const scores = parsed(raw.scores);
  if (isStringArray(scores)) {
    const clean = [...new Set(scores)].filter((n) => SCORE_NAME.test(n)).slice(0, MAX_SCORES);
    if (clean.length) out.scores = clean;
  }
  const sf = parsed(raw.scoreFilters);
  if (sf && typeof sf === 'object' && !Array.isArray(sf)) {
    const f: Record<string, string[]> = {};
    for (const [name, v] of Object.entries(sf as Record<string, unknown>).slice(0, MAX_SCORES)) {
      if (!SCORE_NAME.test(name)) continue;
      const list = (typeof v === 'string' ? [v] : isStringArray(v) ? v : []).filter(isJsonScalar);
      const clean = [...new Set(list)].slice(0, MAX_VALUES);
      if (clean.length) f[name] = clean;
    }
    if (Object.keys(f).length) out.scoreFilters = f;
  }
  return out;
}

/** A score value as the URL keeps it: a JSON number, boolean or string. */
function isJsonScalar(v: string): boolean {
  try {
    const x = JSON.parse(v) as unknown;
    return typeof x === 'number' || typeof x === 'boolean' || typeof x === 'string';
  } catch {
    return false;
  }
}

/** The run detail takes no search params (j/k use the explorer's list, kept in the session). */
export type RunDetailSearch = Record<string, never>;
export const validateRunDetailSearch = (_raw: Record<string, unknown>): RunDetailSearch => ({});
