/**
 * The Lucene → SQL compiler apart from a database: every value (terms, phrases, globs, range
 * bounds, family paths) is a bound parameter on both dialects, and the search data a run is indexed
 * with is what the evaluator reads (the same words in the same order; the same values per path).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  DummyDriver,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
} from 'kysely';
import {
  Q,
  RUN_FIELD_LIST,
  UnknownFieldError,
  isRunField,
  matches,
  parseLucene,
  runText,
  tokenize,
  type QueryNode,
} from '../../src/query/lucene/index.ts';
import { allWords, compileRunQuery, ftsRow, runSearchDoc, tsvectorLiteral } from '../../src/runs/lucene-sql/index.ts';
import { printQuery, runDoc, wellFormed } from './lucene-gen.ts';

const cold = (dialect: 'sqlite' | 'postgres') =>
  new Kysely<any>({
    dialect:
      dialect === 'sqlite'
        ? {
            createAdapter: () => new SqliteAdapter(),
            createDriver: () => new DummyDriver(),
            createIntrospector: (db) => new SqliteIntrospector(db),
            createQueryCompiler: () => new SqliteQueryCompiler(),
          }
        : {
            createAdapter: () => new PostgresAdapter(),
            createDriver: () => new DummyDriver(),
            createIntrospector: (db) => new PostgresIntrospector(db),
            createQueryCompiler: () => new PostgresQueryCompiler(),
          },
  });

const compileSql = (dialect: 'sqlite' | 'postgres', node: QueryNode, defaultPath?: string) =>
  cold(dialect).selectFrom('runs').select('id').where(compileRunQuery(node, { dialect, defaultPath })).compile();

/** A value that must never appear in SQL text. */
const MARK = 'zqx';
const markedLeaf = fc.oneof(
  fc
    .constantFrom(
      'status',
      'tags',
      'interaction',
      'result',
      'prompt',
      'updated_at',
      'execution_time',
      'id',
      'parameters.zqxkey',
      'config.zqx',
      'source.a.zqx',
    )
    .chain((field) =>
      fc.oneof(
        fc.constant(Q.term(field, `${MARK}'"; DROP TABLE runs; --`)),
        fc.constant(Q.term(field, `${MARK} words here`, { phrase: true })),
        fc.constant(Q.term(field, `${MARK}*`, { wildcard: true })),
        fc.constant(Q.term(field, `*${MARK}?x`, { wildcard: true })),
        fc.constant(Q.range(field, `${MARK}a`, `${MARK}z`, true, false)),
        fc.constant(Q.range(field, '1', '2024-01-01', false, true)),
        fc.constant(Q.exists(field)),
      ),
    ),
  fc.constant(Q.term(null, `${MARK}word`)),
  fc.constant(Q.term(null, `${MARK}*`, { wildcard: true })),
);
const markedQuery = fc
  .array(markedLeaf, { minLength: 1, maxLength: 4 })
  .chain((leaves) => fc.constantFrom(Q.and(...leaves), Q.or(...leaves), Q.not(leaves[0])));

describe('Lucene → SQL', () => {
  for (const dialect of ['sqlite', 'postgres'] as const) {
    it(`${dialect}: binds every value and path; none is spliced into the SQL text`, () => {
      fc.assert(
        fc.property(markedQuery, fc.constantFrom(undefined, 'parameters.zqx', 'tags'), (node, defaultPath) => {
          const { sql, parameters } = compileSql(dialect, node, defaultPath);
          assert.ok(!sql.includes(MARK), sql);
          assert.ok(!sql.includes('DROP'), sql);
          if (JSON.stringify(node).includes('DROP'))
            assert.ok(parameters.some((p) => /drop/i.test(String(p))) || sql.includes('FALSE'), sql);
        }),
        { numRuns: 300 },
      );
    });

    it(`${dialect}: compiles every well-formed query of the parser's grammar`, () => {
      fc.assert(
        fc.property(wellFormed, (q) => {
          compileSql(dialect, parseLucene(q, { isField: isRunField, fieldList: RUN_FIELD_LIST }));
        }),
        { numRuns: 300 },
      );
    });

    it(`${dialect}: refuses an unknown field or default path`, () => {
      assert.throws(() => compileSql(dialect, Q.term('colour', 'red')), UnknownFieldError);
      assert.throws(() => compileSql(dialect, Q.term(null, 'red'), 'colour'), UnknownFieldError);
    });
  }

  it('indexes the words the evaluator reads, in runText order, and tokenizes FTS columns back to them', () => {
    fc.assert(
      fc.property(runDoc, (doc) => {
        const s = runSearchDoc(doc);
        assert.deepEqual(allWords(s), tokenize(runText(doc)));
        const row = ftsRow(s);
        assert.deepEqual(row.body === '' ? [] : row.body.split(' '), allWords(s));
        assert.ok(!/["']/.test(row.body), 'FTS words never hold quotes');
      }),
      { numRuns: 500 },
    );
  });

  it('keeps, for every family path, exactly the values evaluate.ts finds there', () => {
    const paths = [
      'parameters',
      'parameters.customer',
      'parameters.customer.id',
      'parameters.customer.name',
      'parameters.topic',
      'parameters.count',
      'config',
      'config.model',
      'config.temperature',
      'source.type',
      'source.principal_id',
      'parameters.nope',
    ];
    fc.assert(
      fc.property(runDoc, fc.constantFrom(...paths), (doc, path) => {
        const s = runSearchDoc(doc);
        assert.equal(Object.hasOwn(s.fields, path), matches(Q.exists(path), doc), `${path} in ${JSON.stringify(doc)}`);
      }),
      { numRuns: 1000 },
    );
    const s = runSearchDoc({
      parameters: { items: [{ sku: 'A-1' }, [{ sku: 'B 2' }, null]], 'dotted.key': 1, list: [[1, [2]], 'Two words'] },
    });
    assert.deepEqual(s.fields['parameters.items.sku'], ['A-1', 'B 2']);
    assert.deepEqual(s.fields['w:parameters.items.sku'], [' a 1 ', ' b 2 ']);
    assert.deepEqual(s.fields['parameters.list'], [1, 2, 'Two words']);
    assert.equal(s.fields['parameters.dotted.key'], undefined, 'a key with a dot is not a path');
  });

  it('writes the tsvector with positions in runText order, weights A (prompt), B (result), and word pairs', () => {
    const s = runSearchDoc({
      prompt: [{ role: 'user', content: 'Hello hello' }],
      result: [{ type: 'text', value: "it's ok" }],
      parameters: { a: 'hello' },
    });
    assert.equal(
      tsvectorLiteral(s),
      "'hello':1A,2A,6 'it':3B 's':4B 'ok':5B 'hello hello':1A 'hello it':2 'it s':3B 's ok':4B 'ok hello':5",
    );
    const long = runSearchDoc({ parameters: { a: 'w '.repeat(300), b: 'x'.repeat(3000) } });
    const lit = tsvectorLiteral(long);
    assert.equal(/'w':([0-9,]+)/.exec(lit)![1].split(',').length, 256, 'at most 256 positions per word');
    assert.ok(!lit.includes('xxx'), 'words over 2,046 bytes are left out');
  });

  it('prints and compiles the queries the evaluation test generates', () => {
    const q = printQuery(Q.and(Q.term('tags', 'a b'), Q.not(Q.term(null, 'x*', { wildcard: true }))));
    compileSql('sqlite', parseLucene(q));
  });
});
