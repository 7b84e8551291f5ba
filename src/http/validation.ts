/**
 * Request validation with two Ajv instances: query strings, params and headers are text, so they
 * are coerced (`?limit=10`, a single `?tag=a` as an array); JSON bodies are not, so `{"name": 42}`
 * is a 400 instead of silently becoming "42".
 *
 * Validators and response serializers compiled at build time: compiling every route's schemas
 * at start-up took about 1.5 s of CPU (Ajv and fast-json-stringify generating code), so the build
 * (scripts/compile-schemas.mjs) starts the server once, records every schema compiled here, and
 * writes the code Ajv and fast-json-stringify generate for them into `compiled/` (Ajv's standalone
 * code and fast-json-stringify's standalone mode: the same generated functions, with their
 * helpers required instead of closed over). At start-up a schema whose key (its JSON text, the
 * shared schemas and options it was compiled with, the library versions) is in that table takes
 * its function from there; any other schema (the sources run without a build, a schema changed
 * since, one only some settings register) is compiled here as before. Never compiled lazily at a
 * first request: that stalls the event loop for every other request.
 */
import type { FastifyInstance, FastifySchema, FastifyServerOptions } from 'fastify';
import { Ajv, type Options as AjvOptions } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;
const require = createRequire(import.meta.url);
type SerializerFactory = (
  externalSchemas: unknown,
  serializerOpts: unknown,
) => (info: { schema: object }) => (data: unknown) => string;
/**
 * Fastify's own serializer compiler and the fast-json-stringify it uses, resolved from fastify
 * (they are its dependencies, not ours); loaded only when a schema is not in the build's table
 * (they bring Ajv's 80 files, issue 22).
 */
let compilerRequire: NodeRequire | undefined;
const fromCompiler = (): NodeRequire =>
  (compilerRequire ??= createRequire(
    createRequire(require.resolve('fastify')).resolve('@fastify/fast-json-stringify-compiler'),
  ));
const serializerFactory = (): SerializerFactory =>
  (fromCompiler()('@fastify/fast-json-stringify-compiler') as () => SerializerFactory)();
/** Where the build resolves fast-json-stringify from (scripts/compile-schemas.mjs). */
export const resolveSerializerLibrary = (): string => fromCompiler().resolve('fast-json-stringify');
/**
 * The options the build adds to Fastify's to generate a serializer's code: its anyOf branches'
 * Ajv validators inlined too, so no answer compiles one at run time (a run search's first answer,
 * an anyOf of 1,000 run references, compiled them for about 300 ms of a loaded event loop).
 */
export const STANDALONE_SERIALIZER = { mode: 'standalone', inlineValidators: true } as const;

/** Which Ajv instance compiles a part of the request: `text` coerces, `json` does not. */
export type ValidatorKind = 'text' | 'json';

/** The one place the Ajv options are set; the build adds `code: { source: true }` to emit the code. */
export const makeAjv = (kind: ValidatorKind, extra: AjvOptions = {}): Ajv =>
  addFormats(
    new Ajv({
      coerceTypes: kind === 'text' ? 'array' : false,
      useDefaults: true,
      removeAdditional: false,
      allErrors: false,
      strict: false,
      ...extra,
    }),
  );

type Validate = (data: unknown) => boolean;
type Serialize = (data: unknown) => string;

/** What the build records: each schema compiled at start-up, under the key the table is read by. */
export interface SchemaRecorder {
  validator(kind: ValidatorKind, key: string, schema: object): void;
  serializer(key: string, schema: object, fjsOptions: object): void;
}
let recorder: SchemaRecorder | undefined;
/** Build time only (scripts/compile-schemas.mjs): records the schemas instead of using the table. */
export function recordSchemas(r: SchemaRecorder): void {
  recorder = r;
}

/**
 * The JSON text of a schema, or undefined when JSON would not represent it exactly (a function,
 * undefined, a class instance such as a RegExp, a non-finite number): such a schema is never
 * taken from the table.
 */
function jsonOf(value: unknown): string | undefined {
  let text: string;
  try {
    text = JSON.stringify(value);
  } catch {
    return undefined; // a cycle or a BigInt
  }
  return exactJson(value) ? text : undefined;
}

/** Whether JSON.stringify writes `v` exactly (plain objects, arrays, strings, finite numbers, booleans, null). */
function exactJson(v: unknown): boolean {
  if (v === null) return true;
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(v);
    case 'object':
      break;
    default:
      return false; // undefined, a function, a symbol, a bigint
  }
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) if (!exactJson(v[i])) return false;
    return true;
  }
  const proto = Object.getPrototypeOf(v);
  if (proto !== Object.prototype && proto !== null) return false;
  for (const k in v as Record<string, unknown>) if (!exactJson((v as Record<string, unknown>)[k])) return false;
  return true;
}

let versions: string | undefined;
/** The generated code depends on the libraries that generated it, so their versions are in every key. */
function libraryVersions(): string {
  versions ??= ['ajv', 'ajv-formats', 'fast-json-stringify']
    .map((p) => {
      try {
        const from = p === 'fast-json-stringify' ? fromCompiler() : require;
        return `${p}@${(JSON.parse(readFileSync(from.resolve(`${p}/package.json`), 'utf8')) as { version: string }).version}`;
      } catch {
        return `${p}@?`;
      }
    })
    .join(' ');
  return versions;
}

/**
 * The JSON text of each schema object, and its keys, taken once: every server a process builds
 * compiles the same route schema objects (a test process builds dozens; stringifying and hashing
 * them all again was a third of a server's start). Route schemas are constants, never changed once
 * declared.
 */
const texts = new WeakMap<object, string | undefined>();
function jsonOfSchema(value: unknown): string | undefined {
  if (value === null || typeof value !== 'object') return jsonOf(value);
  if (texts.has(value)) return texts.get(value);
  const text = jsonOf(value);
  texts.set(value, text);
  return text;
}
const keys = new WeakMap<object, Map<string, string | undefined>>();
/** The table key of `schema` in `context` (a validator's kind, a serializer's options), or undefined. */
function keyOfSchema(
  schema: object,
  context: string,
  make: (source: string) => string | undefined,
): string | undefined {
  let byContext = keys.get(schema);
  if (!byContext) keys.set(schema, (byContext = new Map()));
  if (byContext.has(context)) return byContext.get(context);
  const source = jsonOfSchema(schema);
  const key = source === undefined ? undefined : make(source);
  byContext.set(context, key);
  return key;
}

/** The table's functions, built once per process and shared by its servers (they hold no state of a server). */
const built = new Map<string, unknown>();
function fromTable<T>(key: string, factory: () => T): T {
  let made = built.get(key) as T | undefined;
  if (made === undefined) built.set(key, (made = factory()));
  return made;
}

const keyOf = (...parts: string[]) =>
  createHash('sha256').update(libraryVersions()).update('\0').update(parts.join('\0')).digest('base64url').slice(0, 32);

interface Table {
  text?: Record<string, () => Validate>;
  json?: Record<string, () => Validate>;
  serializers?: Record<string, () => Serialize>;
}
let table: Table | undefined;
function compiled(): Table {
  if (table) return table;
  table = {};
  if (recorder) return table;
  const load = <T>(file: string): T | undefined => {
    const url = new URL(`./compiled/${file}`, import.meta.url);
    if (!existsSync(url)) return undefined;
    try {
      return require(fileURLToPath(url)) as T;
    } catch {
      return undefined; // an unreadable table is no table: everything is compiled here
    }
  };
  table.text = load('validators-text.cjs');
  table.json = load('validators-json.cjs');
  table.serializers = load('serializers.cjs');
  return table;
}

export function installValidation(app: FastifyInstance): void {
  let text: Ajv | undefined;
  let json: Ajv | undefined;
  app.setValidatorCompiler(({ schema, httpPart }) => {
    const kind: ValidatorKind = httpPart === 'body' ? 'json' : 'text';
    // A schema with an $id or a $ref depends on what else this Ajv instance holds: always compiled here.
    const key = keyOfSchema(schema as object, kind, (source) =>
      !source.includes('"$id"') && !source.includes('"$ref"') ? keyOf(kind, source) : undefined,
    );
    const ready = key !== undefined ? compiled()[kind]?.[key] : undefined;
    if (ready) return fromTable(`${kind}:${key}`, ready);
    if (key !== undefined) recorder?.validator(kind, key, schema as object);
    const ajv = kind === 'json' ? (json ??= makeAjv('json')) : (text ??= makeAjv('text'));
    return ajv.compile(schema as FastifySchema & object);
  });
}

/**
 * Fastify's own serializer factory (@fastify/fast-json-stringify-compiler), with each route's
 * serializer taken from the table when its key is there. Passed to Fastify as `schemaController`.
 */
export const schemaController: NonNullable<FastifyServerOptions['schemaController']> = {
  compilersFactory: {
    buildSerializer: ((externalSchemas: unknown, serializerOpts: unknown) => {
      let factory: ReturnType<SerializerFactory> | undefined;
      const compile = (info: { schema: object }) =>
        (factory ??= serializerFactory()(externalSchemas, serializerOpts))(info);
      // Mirrors the options Fastify's compiler hands fast-json-stringify, including its one change
      // of them (a route schema whose $id is also a shared schema drops that shared schema).
      let shared = externalSchemas as Record<string, unknown> | undefined;
      let sharedKey: string | undefined | null = null;
      const optsKey = jsonOfSchema(serializerOpts ?? null);
      return (info: { schema: object }) => {
        const id = (info.schema as { $id?: string }).$id;
        if (shared && id && shared[id]) {
          shared = { ...shared };
          delete shared[id];
          sharedKey = null;
          return compile(info);
        }
        if (sharedKey === null) {
          const sharedText = jsonOfSchema(shared ?? null);
          sharedKey = sharedText !== undefined && optsKey !== undefined ? keyOf(optsKey, sharedText) : undefined;
        }
        const context = sharedKey;
        const key =
          context !== undefined
            ? keyOfSchema(info.schema, `serializer:${context}`, (source) => keyOf('serializer', context, source))
            : undefined;
        const ready = key !== undefined ? compiled().serializers?.[key] : undefined;
        if (ready) return fromTable(`serializer:${key}`, ready);
        if (key !== undefined)
          recorder?.serializer(key, info.schema, { ...(serializerOpts as object | undefined), schema: shared });
        return compile(info);
      };
    }) as NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>['buildSerializer'],
  },
};
