/** URL search params of the objects screens (owned by that screen; the router imports these). */
export interface ObjectsSearch {
  /** Folder (`location`) being browsed; absent: every folder. */
  location?: string;
  /** Part of the name (case-insensitive). */
  q?: string;
  /** Full-text query. */
  text?: string;
  /** Zero-based page. */
  page?: number;
}

const str = (v: unknown): string | undefined =>
  typeof v === 'string' && v.trim() !== '' ? v : typeof v === 'number' ? String(v) : undefined;

export const validateObjectsSearch = (raw: Record<string, unknown>): ObjectsSearch => {
  const out: ObjectsSearch = {};
  const location = str(raw.location);
  if (location) out.location = location.startsWith('/') ? location : `/${location}`;
  const q = str(raw.q);
  if (q) out.q = q;
  const text = str(raw.text);
  if (text) out.text = text;
  const page = Number(raw.page);
  if (Number.isInteger(page) && page > 0) out.page = page;
  return out;
};

export type ObjectDetailSearch = Record<string, unknown>;
export const validateObjectDetailSearch = (raw: Record<string, unknown>): ObjectDetailSearch => raw;
