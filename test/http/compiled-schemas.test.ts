/**
 * The build compiles the route validators and response serializers ahead of time
 * (scripts/compile-schemas.mjs: Ajv standalone code, fast-json-stringify standalone mode with its
 * anyOf validators inlined), and a server started from dist/ takes them from that table instead
 * of compiling at start-up (src/http/validation.ts). Here every schema the server compiles is
 * recorded, its generated code produced as the build produces it, and both versions run on the
 * same generated inputs (valid, at the boundaries, hostile): the same verdict, the same errors,
 * the same coercions and defaults written into the data, the same JSON text or the same exception.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  makeAjv,
  recordSchemas,
  resolveSerializerLibrary,
  STANDALONE_SERIALIZER,
  type ValidatorKind,
} from '../../src/http/validation.ts';
import { buildServer } from '../../src/server.ts';
import { loadConfig } from '../../src/config.ts';
import { arbitraryOf, type Schema } from '../fuzz/arbitraries.ts';

const require = createRequire(import.meta.url);
const standaloneCode = require('ajv/dist/standalone').default as (ajv: unknown, fn: unknown) => string;
const fastJsonStringify = require(resolveSerializerLibrary()) as (schema: object, opts: object) => unknown;

/** Runs generated CommonJS text as the table's factories do, and returns its exports. */
function load<T>(code: string): T {
  const module = { exports: {} as unknown };
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- the build's generated code, run as it is at start
  new Function('module', 'exports', 'require', code)(module, module.exports, require);
  return module.exports as T;
}

type Validate = ((data: unknown) => boolean) & { errors?: unknown };
const copy = (v: unknown): unknown => (v === undefined ? undefined : JSON.parse(JSON.stringify(v)));
/**
 * Inputs for `schema`: valid, at the boundaries, and hostile now and then (each property may be
 * replaced, so a low rate still gives most inputs of a large schema a hostile part; the fuzz
 * suite sends the rest).
 */
const inputs = (schema: object, components: Record<string, Schema>) =>
  arbitraryOf(schema as Schema, { components, hostility: 0.05 });
const RUNS = { numRuns: 6, seed: 22 };
const outcome = (f: () => unknown): { ok: unknown } | { threw: string } => {
  try {
    return { ok: f() };
  } catch (err) {
    return { threw: (err as Error).message };
  }
};

// By the table's key: routes sharing a schema (the error shape, a list's page) compile to one entry,
// and checking it again, with the same seed, would repeat the same inputs on the same code.
const validators = new Map<string, { kind: ValidatorKind; schema: object }>();
const serializers = new Map<string, { schema: object; fjsOptions: { schema?: Record<string, Schema> } }>();

describe('route schemas compiled at build time', () => {
  before(async () => {
    recordSchemas({
      validator: (kind, key, schema) => validators.set(key, { kind, schema }),
      serializer: (key, schema, fjsOptions) => serializers.set(key, { schema, fjsOptions }),
    });
    const dir = mkdtempSync(join(tmpdir(), 'orrery-compiled-schemas-'));
    try {
      const orrery = await buildServer(loadConfig({ ORRERY_DATA_DIR: dir, ORRERY_LOG_LEVEL: 'silent' }), {
        logger: false,
      });
      await orrery.app.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('records the schemas of the routes', () => {
    assert.ok(validators.size > 50, `${validators.size} validators`);
    assert.ok(serializers.size > 50, `${serializers.size} serializers`);
  });

  it('validators: the generated code gives the verdict, errors and data of Ajv compiling at start-up', () => {
    const runtime = { text: makeAjv('text'), json: makeAjv('json') };
    const generating = {
      text: makeAjv('text', { code: { source: true } }),
      json: makeAjv('json', { code: { source: true } }),
    };
    for (const { kind, schema } of validators.values()) {
      const compiled = runtime[kind].compile(schema) as Validate;
      const generated = load<Validate>(standaloneCode(generating[kind], generating[kind].compile(schema)));
      fc.assert(
        fc.property(inputs(schema, {}), (value) => {
          const a = copy(value);
          const b = copy(value);
          const ra = outcome(() => compiled(a));
          const rb = outcome(() => generated(b));
          assert.deepEqual(rb, ra);
          assert.deepEqual(generated.errors, compiled.errors);
          assert.deepEqual(b, a);
        }),
        RUNS,
      );
    }
  });

  it('serializers: no generated serializer compiles a validator when it first answers', () => {
    // An anyOf answer (a run search's) is checked branch by branch with Ajv: compiled at the first
    // answer, that held the event loop about 300 ms on a loaded machine.
    let withAnyOf = 0;
    for (const { schema, fjsOptions } of serializers.values()) {
      const code = fastJsonStringify(schema, { ...fjsOptions, ...STANDALONE_SERIALIZER }) as string;
      assert.doesNotMatch(code, /fast-json-stringify\/lib\/validator/);
      if (code.includes('getSchemaValidator(')) withAnyOf++;
    }
    assert.ok(withAnyOf > 0, 'no serializer checks an anyOf: the test sees nothing');
  });

  it('serializers: the generated code writes the JSON text fast-json-stringify compiling at start-up writes', () => {
    for (const { schema, fjsOptions } of serializers.values()) {
      const compiled = fastJsonStringify(schema, fjsOptions) as (d: unknown) => string;
      const generated = load<(d: unknown) => string>(
        fastJsonStringify(schema, { ...fjsOptions, ...STANDALONE_SERIALIZER }) as string,
      );
      fc.assert(
        fc.property(inputs(schema, fjsOptions.schema ?? {}), (value) => {
          assert.deepEqual(
            outcome(() => generated(copy(value))),
            outcome(() => compiled(copy(value))),
          );
        }),
        RUNS,
      );
    }
  });
});
