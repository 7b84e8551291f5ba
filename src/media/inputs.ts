/**
 * Which inputs of a run are media: the parameters its input schema marks as an image
 * (`editor: 'media'`) or a document (`editor: 'document'`), as Vertesia's schema editor writes
 * them, also as the items of an array. Each value must be a media reference: `store:<object id>`,
 * a `data:` URL of an accepted type, or an `https` URL. Anything else is the caller's to fix.
 */
import { BadRequest } from '../util/errors.ts';

export type MediaKind = 'image' | 'document';

/** One media value of the run's data: where it is (`data.photos[1]`) and what it names. */
export interface MediaInput {
  param: string;
  kind: MediaKind;
  ref: MediaRef;
}

export type MediaRef =
  { kind: 'store'; id: string } | { kind: 'data'; media_type: string; base64: string } | { kind: 'https'; url: string };

/** The types a `data:` URL may carry. */
const DATA_URL_TYPES: ReadonlySet<string> = new Set([
  'image/png',
  'image/jpeg',
  'image/gif',
  'image/webp',
  'application/pdf',
]);

/** The most media values one run may carry, checked before any is read. */
const MAX_MEDIA_INPUTS = 20;

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

const kindOf = (s: unknown): MediaKind | undefined => {
  if (!isObject(s)) return undefined;
  if (s.editor === 'media') return 'image';
  if (s.editor === 'document') return 'document';
  return undefined;
};

/** The media values of `data` in its own order (nested objects and arrays included). */
export function mediaInputs(schema: unknown, data: unknown): MediaInput[] {
  const out: MediaInput[] = [];
  walk(schema, data, 'data', out, 0);
  if (out.length > MAX_MEDIA_INPUTS)
    throw new BadRequest(`data carries ${out.length} media inputs; a run takes at most ${MAX_MEDIA_INPUTS}`);
  return out;
}

function walk(schema: unknown, value: unknown, at: string, out: MediaInput[], depth: number): void {
  if (!isObject(schema) || value === undefined || value === null || depth > 16) return;
  const kind = kindOf(schema);
  if (kind) {
    out.push({ param: at, kind, ref: parseRef(value, at, kind) });
    return;
  }
  if (Array.isArray(value)) {
    const items = schema.items;
    if (!isObject(items)) return;
    value.forEach((v, i) => {
      if (out.length <= MAX_MEDIA_INPUTS) walk(items, v, `${at}[${i}]`, out, depth + 1);
    });
    return;
  }
  // In the order of the caller's data: a stored schema's key order is the database's (jsonb sorts it).
  const properties = schema.properties;
  if (isObject(value) && isObject(properties)) {
    for (const [name, v] of Object.entries(value)) {
      if (Object.hasOwn(properties, name)) walk(properties[name], v, `${at}.${name}`, out, depth + 1);
    }
  }
}

const STORE = /^store:(\S{1,200})$/;
const DATA = /^data:([a-z0-9.+-]+\/[a-z0-9.+-]+);base64,([A-Za-z0-9+/=\s]*)$/is;

/** A value's reference, or a 400 that names the parameter and says what it takes. */
export function parseRef(value: unknown, param: string, kind: MediaKind): MediaRef {
  const what = kind === 'image' ? 'an image' : 'a document';
  const takes = 'store:<object id>, a data: URL (png, jpeg, gif, webp, pdf) or an https URL';
  if (typeof value !== 'string')
    throw new BadRequest(`${param} is ${what} input: it takes ${takes}, not ${value === null ? 'null' : typeof value}`);
  const v = value.trim();
  const store = STORE.exec(v);
  if (store) return { kind: 'store', id: store[1]! };
  if (/^data:/i.test(v)) {
    const m = DATA.exec(v);
    if (!m) throw new BadRequest(`${param} is a data: URL that is not base64 (data:<type>;base64,<bytes>)`);
    const type = m[1]!.toLowerCase();
    if (!DATA_URL_TYPES.has(type))
      throw new BadRequest(`${param} is a data: URL of ${type}; data: URLs take ${[...DATA_URL_TYPES].join(', ')}`);
    return { kind: 'data', media_type: type, base64: m[2]!.replace(/\s+/g, '') };
  }
  let url: URL | undefined;
  try {
    url = new URL(v);
  } catch {
    url = undefined;
  }
  if (url?.protocol === 'https:') return { kind: 'https', url: url.href };
  if (url && /^[a-z][a-z0-9+.-]*:$/.test(url.protocol) && url.protocol !== 'store:')
    throw new BadRequest(`${param}: ${url.protocol.slice(0, -1)} URLs are not accepted; it takes ${takes}`);
  throw new BadRequest(`${param} is ${what} input and was given plain text; it takes ${takes}`);
}
