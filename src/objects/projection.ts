/**
 * `select` as the official client sends it (Mongoose projection): space-separated paths.
 * `name properties.title` keeps only those (and `id`); `-description` drops a field; `+text`
 * adds a field that is hidden by default. Commas are accepted as separators too.
 */
import { BadRequest } from '../util/errors.ts';
import { HIDDEN_FIELDS, type HiddenField } from './model.ts';
import { hasOwnKey, isPrototypeKey, setOwn } from '../util/own.ts';

export interface Projection {
  /** null: the default fields; otherwise only these paths, plus `id`. */
  include: string[][] | null;
  exclude: string[][];
  /** Hidden fields to load and show. */
  hidden: Set<HiddenField>;
}

const isHidden = (f: string): f is HiddenField => (HIDDEN_FIELDS as readonly string[]).includes(f);
const PATH = /^[A-Za-z0-9_$][A-Za-z0-9_$-]*(\.[A-Za-z0-9_$-]+)*$/;

const DEFAULT_PROJECTION: Projection = { include: null, exclude: [], hidden: new Set() };

/** Paths in one `select`: each is walked on every record of a page. */
const MAX_SELECT_PATHS = 200;

export function parseSelect(select: string | undefined | null): Projection {
  if (!select?.trim()) return DEFAULT_PROJECTION;
  const include: string[][] = [];
  const plus: string[][] = [];
  const exclude: string[][] = [];
  const hidden = new Set<HiddenField>();
  const tokens = select.split(/[\s,]+/).filter(Boolean);
  if (tokens.length > MAX_SELECT_PATHS)
    throw new BadRequest(`select names ${tokens.length} paths; at most ${MAX_SELECT_PATHS}`);
  for (const token of tokens) {
    const sign = token[0] === '+' || token[0] === '-' ? token[0] : '';
    const path = sign ? token.slice(1) : token;
    if (!PATH.test(path)) throw new BadRequest(`select: ${JSON.stringify(token)} is not a field path`);
    const parts = path.split('.');
    if (parts.some(isPrototypeKey))
      throw new BadRequest(`select: ${JSON.stringify(token)} names a prototype, not a field`);
    if (sign === '-') {
      exclude.push(parts);
      continue;
    }
    if (isHidden(parts[0])) hidden.add(parts[0]);
    (sign === '+' ? plus : include).push(parts);
  }
  // `+field` joins an inclusion list too ("name +text" gives id, name and text).
  return { include: include.length ? [...include, ...plus] : null, exclude, hidden };
}

/** Shapes a record (which already holds the hidden fields that were asked for). */
export function project<T extends Record<string, unknown>>(record: T, p: Projection): Partial<T> {
  let out: Record<string, unknown>;
  if (p.include) {
    out = { id: record.id };
    for (const path of p.include) copyPath(record, out, path);
  } else {
    out = { ...record };
  }
  // `id` is always answered (records are addressed by it): `-id` leaves it in place.
  for (const path of p.exclude) if (!(path.length === 1 && path[0] === 'id')) deletePath(out, path);
  return out as Partial<T>;
}

/** Copies the value at `path` (own properties only: never a prototype's member) into `to`. */
function copyPath(from: Record<string, unknown>, to: Record<string, unknown>, path: string[]): void {
  let src: unknown = from;
  for (const k of path) {
    if (!hasOwnKey(src, k)) return;
    src = (src as Record<string, unknown>)[k];
  }
  let dst = to;
  for (const k of path.slice(0, -1)) {
    const next = hasOwnKey(dst, k) ? dst[k] : undefined;
    if (next === null || typeof next !== 'object' || Array.isArray(next)) setOwn(dst, k, {});
    dst = dst[k] as Record<string, unknown>;
  }
  setOwn(dst, path[path.length - 1], src);
}

function deletePath(obj: Record<string, unknown>, path: string[]): void {
  if (!hasOwnKey(obj, path[0])) return;
  if (path.length === 1) {
    delete obj[path[0]];
    return;
  }
  const child = obj[path[0]];
  if (child === null || typeof child !== 'object' || Array.isArray(child)) return;
  // Copy on write: the record handed in stays as it was.
  const copy = { ...(child as Record<string, unknown>) };
  setOwn(obj, path[0], copy);
  deletePath(copy, path.slice(1));
}
