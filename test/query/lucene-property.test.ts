/**
 * Property-based tests: well-formed queries always parse to a valid AST and evaluate without
 * throwing; malformed ones always give a LuceneSyntaxError; any string gives an AST or a
 * LuceneSyntaxError, never another exception; and printing an AST then parsing it gives it back.
 * ORRERY_PROPERTY_RUNS scales the number of runs (default 500 per property).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  LuceneSyntaxError,
  RUN_FIELD_LIST,
  compileMatcher,
  isRunField,
  parseLucene,
  type MatchOptions,
} from '../../src/query/lucene/index.ts';
import { ast, checkInvariants, malformed, noise, printQuery, runDoc, wellFormed } from './lucene-gen.ts';

const numRuns = Number(process.env.ORRERY_PROPERTY_RUNS ?? 500);
const fieldOpts = { isField: isRunField, fieldList: RUN_FIELD_LIST };
const defaultPaths = fc.constantFrom<MatchOptions>(
  {},
  {},
  { defaultPath: 'tags' },
  { defaultPath: 'result' },
  { defaultPath: 'parameters.topic' },
  { defaultPath: 'updated_at' },
  { defaultPath: 'token_use.total' },
);

// Runaway backtracking would show as a hang, which the suite's timeout stops: no wall-clock
// bound (a loaded machine's GC pause failed one); the parser's speed is bench/'s business.

describe('Lucene parser properties', { timeout: 120_000 }, () => {
  it('well-formed queries parse to a valid AST', () => {
    fc.assert(
      fc.property(wellFormed, (q) => {
        const node = parseLucene(q, fieldOpts);
        checkInvariants(node);
      }),
      { numRuns },
    );
  });

  it('well-formed queries evaluate on random runs without throwing', () => {
    fc.assert(
      fc.property(wellFormed, fc.array(runDoc, { minLength: 1, maxLength: 5 }), defaultPaths, (q, docs, opts) => {
        const test = compileMatcher(parseLucene(q, fieldOpts), opts);
        for (const doc of docs) assert.equal(typeof test(doc), 'boolean');
      }),
      { numRuns },
    );
  });

  it('malformed queries give a LuceneSyntaxError with a position inside the query', () => {
    fc.assert(
      fc.property(malformed, (q) => {
        try {
          parseLucene(q, fieldOpts);
        } catch (err) {
          if (!(err instanceof LuceneSyntaxError)) throw err;
          assert.ok(
            err.position >= 0 && err.position <= q.length,
            `position ${err.position} outside ${JSON.stringify(q)}`,
          );
          assert.ok(err.line >= 1 && err.column >= 1);
          return;
        }
        throw new Error(`accepted a malformed query: ${JSON.stringify(q)}`);
      }),
      { numRuns },
    );
  });

  it('any string gives an AST or a LuceneSyntaxError, never another exception', () => {
    fc.assert(
      fc.property(noise, (q) => {
        try {
          checkInvariants(parseLucene(q));
        } catch (err) {
          if (!(err instanceof LuceneSyntaxError)) throw err;
          assert.ok(err.position >= 0 && err.position <= q.length);
        }
      }),
      { numRuns: numRuns * 4 },
    );
  });

  it('parse(print(ast)) gives the AST back', () => {
    fc.assert(
      fc.property(ast, (node) => {
        const q = printQuery(node);
        assert.deepEqual(parseLucene(q, fieldOpts), node, q);
      }),
      { numRuns },
    );
  });

  it('long and adversarial inputs finish quickly', { timeout: 60_000 }, () => {
    for (const q of [
      'a '.repeat(50_000),
      '"'.repeat(20_001),
      '\\'.repeat(40_000),
      'status:'.repeat(5_000),
      '('.repeat(50_000),
      ')'.repeat(50_000),
      'NOT '.repeat(20_000),
      'x~'.repeat(20_000),
      `tags:[${'a'.repeat(50_000)}`,
    ]) {
      try {
        parseLucene(q);
      } catch (err) {
        assert.ok(err instanceof LuceneSyntaxError, String(err));
      }
    }
  });
});
