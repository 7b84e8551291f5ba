/**
 * fast-check arbitraries from the JSON Schemas of the OpenAPI document: values that follow the
 * schema, values at its boundaries, and hostile ones (prototype keys, deep nesting, huge arrays
 * and strings, numbers past 2^53, unusual Unicode). The fuzz suite sends them to every route.
 */
import fc from 'fast-check';

export type Schema = Record<string, any>;

/** Keys that name prototypes or their members, and other keys a careless lookup mishandles. */
const HOSTILE_KEYS = [
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  'valueOf',
  '$where',
  'a.b',
  '',
  '..',
  '\u0000',
];

/** `{key: value}` with `key` as an own data property, even `__proto__` (JSON.stringify writes it). */
const withKey = (key: string, value: unknown): Record<string, unknown> => {
  const o: Record<string, unknown> = {};
  Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
  return o;
};

const nested = (depth: number): unknown => {
  let v: unknown = 'leaf';
  for (let i = 0; i < depth; i++) v = i % 2 ? [v] : { d: v };
  return v;
};

const hugeString = fc.constantFrom(20_000, 120_000).map((n) => 'x'.repeat(n));
const hugeArray = fc.constantFrom(5_000, 60_000).map((n) => Array.from({ length: n }, (_, i) => `v${i}`));

/** Strings a parser or a lookup may choke on. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    ...HOSTILE_KEYS,
    '__proto__.polluted',
    'constructor.prototype.x',
    'properties.__proto__.x',
    '-id',
    '+text',
    '*',
    '?',
    '\\',
    '"',
    "'",
    '(',
    ')',
    '[a TO',
    'NOT',
    'a:b:c',
    '${x}',
    '{{x}}',
    '{{#each this}}{{/each}}',
    '../../etc/passwd',
    '%2e%2e%2f',
    'sk-xxxxxxxxxxxxxxxxxxxxxxxx',
    '1e400',
    '-0',
    'NaN',
    'Infinity',
    '9007199254740993',
    '2024-13-45T99:99:99Z',
    '\uD800',
    '\uFFFF',
    '🪐'.repeat(50),
    'a\u0000b',
    'a\r\n=1+1',
  ),
  hugeString,
  fc.string({ unit: 'grapheme', maxLength: 40 }),
);

/** Values of no particular schema, hostile ones often. */
const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 2, arbitrary: hostileString },
  { weight: 1, arbitrary: fc.constantFrom(2 ** 53 + 2, -(2 ** 63), 1e308, -1e308, 5e-324, 1e20, 2 ** 64, -1, 0, 0.5) },
  { weight: 1, arbitrary: fc.constantFrom(70, 1001).map(nested) },
  { weight: 1, arbitrary: hugeArray },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom(...HOSTILE_KEYS)
      .chain((k) => fc.jsonValue({ maxDepth: 2 }).map((v) => withKey(k, { polluted: v }))),
  },
);

export interface ArbitraryOptions {
  /** Resolves `$ref`s. */
  components: Record<string, Schema>;
  /** 0..1: how often a value is replaced by a hostile one. */
  hostility: number;
}

/** An arbitrary for values of `schema`, with hostile values mixed in. */
export function arbitraryOf(schema: Schema | undefined, o: ArbitraryOptions, depth = 0): fc.Arbitrary<unknown> {
  const valid = validOf(schema, o, depth);
  if (o.hostility <= 0) return valid;
  const weightHostile = Math.max(1, Math.round(o.hostility * 10));
  return fc.oneof(
    { weight: 10 - Math.min(weightHostile, 9), arbitrary: valid },
    { weight: weightHostile, arbitrary: hostileValue },
  );
}

function validOf(schema: Schema | undefined, o: ArbitraryOptions, depth: number): fc.Arbitrary<unknown> {
  if (!schema || depth > 6) return fc.jsonValue({ maxDepth: 2 });
  if (schema.$ref) {
    const name = String(schema.$ref).split('/').pop()!;
    return validOf(o.components[name], o, depth + 1);
  }
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...schema.enum);
  const branches = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(branches) && branches.length)
    return fc.oneof(...branches.map((b: Schema) => arbitraryOf(b, o, depth + 1)));
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'string':
      if (schema.format === 'date-time' || /date|_at$/i.test(schema.description ?? ''))
        return fc.date({ noInvalidDate: true }).map((d) => d.toISOString());
      return fc.oneof(
        fc.string({ minLength: schema.minLength ?? 0, maxLength: Math.min(schema.maxLength ?? 30, 30) }),
        ...(schema.maxLength
          ? [fc.constant('y'.repeat(schema.maxLength)), fc.constant('y'.repeat(schema.maxLength + 1))]
          : []),
      );
    case 'integer':
    case 'number': {
      const min = schema.minimum ?? -1e6;
      const max = schema.maximum ?? 1e6;
      const edges = [min, max, min - 1, max + 1, 0].filter((n) => Number.isFinite(n));
      return fc.oneof(
        type === 'integer'
          ? fc.integer({ min: Math.max(min, -1e9), max: Math.min(max, 1e9) })
          : fc.double({ min: Math.max(min, -1e9), max: Math.min(max, 1e9), noNaN: true }),
        fc.constantFrom(...edges),
      );
    }
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return fc.array(arbitraryOf(schema.items, o, depth + 1), { maxLength: Math.min(schema.maxItems ?? 4, 4) });
    case 'object': {
      const props: Record<string, Schema> = schema.properties ?? {};
      const required: string[] = schema.required ?? [];
      const shape: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [k, s] of Object.entries(props)) shape[k] = arbitraryOf(s, o, depth + 1);
      const record = fc.record(shape, { requiredKeys: required.filter((k) => k in shape) });
      const extra =
        schema.additionalProperties === false
          ? fc.constant({})
          : fc.dictionary(
              fc.oneof(fc.constantFrom(...HOSTILE_KEYS), fc.string({ maxLength: 8 })),
              fc.jsonValue({ maxDepth: 2 }),
              { maxKeys: 2 },
            );
      return fc.tuple(record, extra).map(([r, x]) => {
        const out: Record<string, unknown> = {};
        for (const [k, v] of Object.entries(x as Record<string, unknown>))
          Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
        return Object.assign(out, r as Record<string, unknown>);
      });
    }
    default:
      return fc.jsonValue({ maxDepth: 3 });
  }
}
