/**
 * A deterministic value that conforms to a JSON Schema, for the offline `json` test model.
 * Covers what prompt result schemas use: types, enum/const, string formats and lengths, number
 * bounds, arrays with minItems/uniqueItems, required properties, anyOf/oneOf (first branch),
 * allOf (merged) and local `$ref`s. Patterns and conditionals are not solved.
 */
import { table } from '../util/own.ts';
type Schema = Record<string, unknown>;

const FORMATS: Record<string, string> = table({
  'date-time': '2024-01-01T00:00:00Z',
  date: '2024-01-01',
  time: '00:00:00Z',
  email: 'user@example.com',
  'idn-email': 'user@example.com',
  uri: 'https://example.com/',
  'uri-reference': 'https://example.com/',
  iri: 'https://example.com/',
  url: 'https://example.com/',
  uuid: '00000000-0000-4000-8000-000000000000',
  hostname: 'example.com',
  ipv4: '192.0.2.1',
  ipv6: '2001:db8::1',
  duration: 'P1D',
});

export function sampleFromSchema(schema: unknown): unknown {
  return sample(schema, schema, 0, 0);
}

/** `variant` makes array items differ, so uniqueItems holds. */
function sample(node: unknown, root: unknown, variant: number, depth: number): unknown {
  if (node === true || node === undefined || node === null) return variant === 0 ? 'text' : `text ${variant}`;
  if (typeof node !== 'object' || depth > 32) return null;
  let s = node as Schema;

  if (typeof s.$ref === 'string') {
    const target = resolveRef(root, s.$ref);
    const { $ref: _ref, ...rest } = s;
    return sample(target ? { ...target, ...rest } : rest, root, variant, depth + 1);
  }
  if (Array.isArray(s.allOf) && s.allOf.length > 0) {
    const { allOf, ...rest } = s;
    s = (allOf as unknown[]).reduce<Schema>((acc, part) => mergeSchemas(acc, deref(part, root)), rest);
  }
  for (const key of ['anyOf', 'oneOf'] as const) {
    const branches = s[key];
    if (Array.isArray(branches) && branches.length > 0) {
      const { [key]: _b, ...rest } = s;
      return sample(mergeSchemas(rest, deref(branches[0], root)), root, variant, depth + 1);
    }
  }

  if ('const' in s) return s.const;
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[variant % s.enum.length];

  switch (typeOf(s)) {
    case 'object':
      return sampleObject(s, root, depth);
    case 'array':
      return sampleArray(s, root, depth);
    case 'string':
      return sampleString(s, variant);
    case 'integer':
      return sampleNumber(s, true, variant);
    case 'number':
      return sampleNumber(s, false, variant);
    case 'boolean':
      return variant % 2 === 0;
    case 'null':
      return null;
    default:
      return variant === 0 ? 'text' : `text ${variant}`;
  }
}

/** The declared type (first non-null of a list), else one implied by the keywords present. */
function typeOf(s: Schema): string | undefined {
  const t = s.type;
  if (typeof t === 'string') return t;
  if (Array.isArray(t)) return (t.find((x) => x !== 'null') ?? t[0]) as string | undefined;
  if (s.properties || s.required || s.additionalProperties) return 'object';
  if (s.items || s.prefixItems) return 'array';
  if (s.minLength !== undefined || s.format !== undefined) return 'string';
  if (s.minimum !== undefined || s.maximum !== undefined) return 'number';
  return undefined;
}

function sampleObject(s: Schema, root: unknown, depth: number): Record<string, unknown> {
  const props = (s.properties && typeof s.properties === 'object' ? s.properties : {}) as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [name, sub] of Object.entries(props)) out[name] = sample(sub, root, 0, depth + 1);
  // required names without a declared schema: any value conforms, unless additionalProperties says otherwise
  if (Array.isArray(s.required)) {
    for (const name of s.required) {
      if (typeof name === 'string' && !(name in out))
        out[name] = sample(s.additionalProperties ?? true, root, 0, depth + 1);
    }
  }
  return out;
}

function sampleArray(s: Schema, root: unknown, depth: number): unknown[] {
  const min = typeof s.minItems === 'number' ? s.minItems : 0;
  const max = typeof s.maxItems === 'number' ? s.maxItems : Infinity;
  const count = Math.min(Math.max(1, min), max);
  const prefix = Array.isArray(s.prefixItems) ? s.prefixItems : Array.isArray(s.items) ? s.items : [];
  const rest = Array.isArray(s.items) ? s.additionalItems : s.items;
  const out: unknown[] = [];
  for (let i = 0; i < count; i++) out.push(sample(i < prefix.length ? prefix[i] : rest, root, i, depth + 1));
  return out;
}

function sampleString(s: Schema, variant: number): string {
  const formatted = typeof s.format === 'string' ? FORMATS[s.format] : undefined;
  // formatted values stay fixed (a suffix would break the format); plain text varies for uniqueItems
  let text = formatted ?? (variant === 0 ? 'text' : `text ${variant}`);
  const min = typeof s.minLength === 'number' ? s.minLength : 0;
  const max = typeof s.maxLength === 'number' ? s.maxLength : Infinity;
  if (text.length < min) text = text + 'x'.repeat(min - text.length);
  if (text.length > max) text = text.slice(0, max);
  return text;
}

function sampleNumber(s: Schema, integer: boolean, variant: number): number {
  const num = (v: unknown) => (typeof v === 'number' ? v : undefined);
  // draft-04 used booleans for exclusive bounds; later drafts use numbers
  const loEx = typeof s.exclusiveMinimum === 'number' || s.exclusiveMinimum === true;
  const hiEx = typeof s.exclusiveMaximum === 'number' || s.exclusiveMaximum === true;
  const lo = num(s.exclusiveMinimum) ?? num(s.minimum);
  const hi = num(s.exclusiveMaximum) ?? num(s.maximum);
  const step = num(s.multipleOf) ?? (integer ? 1 : undefined);

  if (step !== undefined && step > 0) {
    // count in steps: k * step, starting from the k nearest 0 inside the bounds
    const kLo = lo === undefined ? undefined : loEx ? Math.floor(lo / step) + 1 : Math.ceil(lo / step);
    const kHi = hi === undefined ? undefined : hiEx ? Math.ceil(hi / step) - 1 : Math.floor(hi / step);
    let k = Math.min(Math.max(0, kLo ?? 0), kHi ?? Infinity) + variant;
    if (kHi !== undefined && k > kHi) k = kHi;
    if (kLo !== undefined && k < kLo) k = kLo;
    return Number((k * step).toPrecision(15));
  }
  const okLo = (v: number) => lo === undefined || (loEx ? v > lo : v >= lo);
  const okHi = (v: number) => hi === undefined || (hiEx ? v < hi : v <= hi);
  let start = 0;
  if (!okLo(start)) start = loEx ? lo! + 1 : lo!;
  if (!okHi(start)) start = hiEx ? hi! - 1 : hi!;
  if (!okLo(start)) start = (lo! + hi!) / 2; // a narrow range: its middle always fits
  const v = start + variant;
  return okLo(v) && okHi(v) ? v : start;
}

function resolveRef(root: unknown, ref: string): Schema | undefined {
  if (ref === '#') return root as Schema;
  if (!ref.startsWith('#/')) return undefined;
  let at: unknown = root;
  for (const raw of ref.slice(2).split('/')) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (!at || typeof at !== 'object') return undefined;
    at = (at as Record<string, unknown>)[key];
  }
  return at && typeof at === 'object' ? (at as Schema) : undefined;
}

const deref = (part: unknown, root: unknown): Schema => {
  if (!part || typeof part !== 'object') return {};
  const p = part as Schema;
  return typeof p.$ref === 'string' ? { ...(resolveRef(root, p.$ref) ?? {}), ...p, $ref: undefined } : p;
};

/** Shallow merge that unions properties and required lists (what allOf needs in practice). */
function mergeSchemas(a: Schema, b: Schema): Schema {
  const out: Schema = { ...a, ...b };
  delete out.$ref;
  if (a.properties || b.properties) out.properties = { ...(a.properties as Schema), ...(b.properties as Schema) };
  if (Array.isArray(a.required) || Array.isArray(b.required)) {
    out.required = [...new Set([...((a.required as string[]) ?? []), ...((b.required as string[]) ?? [])])];
  }
  return out;
}
