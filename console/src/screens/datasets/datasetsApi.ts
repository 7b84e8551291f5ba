/** Datasets (src/datasets over HTTP): list, create, items by page, add (as written or from runs), freeze, export. */
import { apiFetch } from '../../api/client.ts';

export interface Dataset {
  id: string;
  name: string;
  description?: string;
  /** The version changes go to. */
  version: number;
  /** The newest frozen version (it reads the same forever), or null. */
  frozen_version: number | null;
  /** Items of the current version. */
  item_count: number;
  created_by: string;
  updated_by: string;
  created_at: string;
  updated_at: string;
}

export interface DatasetItem {
  id: string;
  data: Record<string, unknown>;
  expected?: unknown;
  metadata?: Record<string, unknown>;
  source_run?: string;
  version_added: number;
  created_at: string;
}

export interface NewItem {
  data: Record<string, unknown>;
  expected?: unknown;
  metadata?: Record<string, unknown>;
}

export interface AddAnswer {
  ids: string[];
  version: number;
  skipped?: Array<{ run: string; reason: string }>;
}

/** The server's bounds (docs/reference/limits.md): items per request, runs copied per request. */
const MAX_ITEMS_PER_ADD = 1000;
export const MAX_FROM_RUNS = 500;
export const ITEMS_PAGE = 50;

const path = (id: string, rest = '') => `/datasets/${encodeURIComponent(id)}${rest}`;

export const listDatasets = (signal?: AbortSignal) =>
  apiFetch<Dataset[]>('/datasets', { query: { limit: 1000 }, signal });
export const getDataset = (id: string, signal?: AbortSignal) => apiFetch<Dataset>(path(id), { signal });
export const createDataset = (body: { name: string; description?: string }) =>
  apiFetch<Dataset>('/datasets', { method: 'POST', body });
/** A page of a version's items (the answer is `{version, items}`: the page reads the items). */
export const datasetItems = async (id: string, q: { version?: number; offset: number }, signal?: AbortSignal) =>
  (
    await apiFetch<{ version: number; items: DatasetItem[] }>(path(id, '/items'), {
      query: { ...q, limit: ITEMS_PAGE },
      signal,
    })
  ).items;
export const addItems = (id: string, items: NewItem[]) =>
  apiFetch<AddAnswer>(path(id, '/items'), { method: 'POST', body: { items } });
export const addFromRuns = (id: string, from: { query?: string; filters?: Record<string, unknown>; limit: number }) =>
  apiFetch<AddAnswer>(path(id, '/items'), { method: 'POST', body: { from_runs: from } });
export const deleteItem = (id: string, item: string) =>
  apiFetch<{ id: string; version: number }>(path(id, `/items/${encodeURIComponent(item)}`), { method: 'DELETE' });
export const freezeVersion = (id: string) => apiFetch<Dataset>(path(id, '/versions'), { method: 'POST' });

/** The JSON Lines export of a version, as text (the download is made in the page: it needs the session's token). */
export async function exportJsonl(id: string, version: number): Promise<string> {
  const res = await apiFetch<Response>(path(id, '/export'), { query: { version, format: 'jsonl' }, raw: true });
  return res.text();
}

/**
 * Items written by hand: a JSON array of `{data, expected?, metadata?}`, or `{items: [...]}`, or
 * JSON Lines of the same objects (what the export gives). Throws an Error saying what to fix.
 */
export function parseItems(text: string): NewItem[] {
  const t = text.trim();
  if (!t) throw new Error('Write at least one item: {"data": {…}, "expected": …}.');
  let list: unknown;
  try {
    const v = JSON.parse(t) as unknown;
    list = Array.isArray(v) ? v : v && typeof v === 'object' && 'items' in v ? (v as { items: unknown }).items : [v];
  } catch {
    list = t
      .split('\n')
      .filter((l) => l.trim())
      .map((l, i) => {
        try {
          return JSON.parse(l) as unknown;
        } catch (err) {
          throw new Error(`Line ${i + 1} is not JSON: ${(err as Error).message}`, { cause: err });
        }
      });
  }
  if (!Array.isArray(list)) throw new Error('items must be an array of {"data": {…}, "expected"?, "metadata"?}.');
  if (list.length > MAX_ITEMS_PER_ADD)
    throw new Error(`At most ${MAX_ITEMS_PER_ADD} items at once, got ${list.length}.`);
  return list.map((it, i) => {
    if (!it || typeof it !== 'object' || Array.isArray(it)) throw new Error(`Item ${i + 1} must be an object.`);
    const o = it as Record<string, unknown>;
    if (!o.data || typeof o.data !== 'object' || Array.isArray(o.data))
      throw new Error(`Item ${i + 1} needs "data": an object (the interaction's input).`);
    const extra = Object.keys(o).filter((k) => !['data', 'expected', 'metadata'].includes(k));
    if (extra.length)
      throw new Error(
        `Item ${i + 1} has ${extra.map((k) => `"${k}"`).join(', ')}: only data, expected and metadata are kept.`,
      );
    return o as unknown as NewItem;
  });
}
