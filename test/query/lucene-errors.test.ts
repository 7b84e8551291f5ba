/** Syntax errors point at a position; unknown fields list the searchable ones. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  LuceneSyntaxError,
  MAX_QUERY_DEPTH,
  MAX_QUERY_LENGTH,
  MAX_QUERY_TERMS,
  Q,
  RUN_FIELD_LIST,
  UnknownFieldError,
  isRunField,
  parseLucene,
  validateFields,
} from '../../src/query/lucene/index.ts';

/** [query, 0-based position, a fragment of the message]. */
const SYNTAX: [string, number, string][] = [
  // unbalanced
  ['(a', 0, "unclosed '('"],
  ['a (b OR (c)', 2, "unclosed '('"],
  ['a)', 1, "unexpected ')'"],
  [')', 0, "unexpected ')'"],
  ['()', 1, 'empty group'],
  ['status:()', 8, 'empty group'],
  ['"abc', 0, 'unclosed quote'],
  ['a "b\\"', 2, 'unclosed quote'],
  ['tags:[a TO b', 5, 'unclosed range'],
  ['tags:[a TO', 5, 'unclosed range'],
  ['tags:[a', 5, 'unclosed range'],
  ['a ]', 2, "unexpected ']'"],
  ['a }', 2, "unexpected '}'"],
  ['tags:[a TO b]]', 13, "unexpected ']'"],
  // ranges
  ['tags:[a b]', 8, "expected 'TO'"],
  ['tags:[a TO b c]', 13, "expected ']' or '}'"],
  ['tags:[]', 6, 'expected a range bound'],
  ['tags:[aTO b]', 10, "expected 'TO'"],
  ['[1 TO 5]', 0, 'needs a field'],
  ['a {1 TO 5}', 2, 'needs a field'],
  ['>5', 0, 'needs a field'],
  ['token_use.total:>', 17, "expected a value after '>'"],
  ['token_use.total:>= 5', 18, "expected a value after '>='"],
  ['token_use.total:>*', 17, "expected a value after '>'"],
  ['tags:[1 TO 2]~1', 13, "'~' is only allowed after a term or a phrase"],
  // dangling and doubled operators
  ['a AND', 5, "expected a term after 'AND'"],
  ['a OR ', 5, "expected a term after 'OR'"],
  ['a &&', 4, "expected a term after '&&'"],
  ['a ||', 4, "expected a term after '||'"],
  ['a NOT', 5, "expected a term after 'NOT'"],
  ['a !', 3, "expected a term after '!'"],
  ['a AND NOT', 9, "expected a term after 'NOT'"],
  ['AND a', 0, "'AND' needs a term before it"],
  ['OR a', 0, "'OR' needs a term before it"],
  ['&& a', 0, "'&&' needs a term before it"],
  ['|| a', 0, "'||' needs a term before it"],
  ['a AND AND b', 6, "expected a term after 'AND'"],
  ['a OR AND b', 5, "expected a term after 'OR'"],
  ['(a OR)', 5, "expected a term after 'OR'"],
  ['NOT AND a', 4, "expected a term after 'NOT'"],
  ['-', 1, "expected a term right after '-'"],
  ['+', 1, "expected a term right after '+'"],
  ['a - b', 3, "expected a term right after '-'"],
  ['a + b', 3, "expected a term right after '+'"],
  ['+-a', 1, "unexpected '-'"],
  ['+AND', 1, "found the operator 'AND'"],
  // fields
  ['status:', 7, "expected a value after 'status:'"],
  ['status: ', 8, "expected a value after 'status:'"],
  ['(status:)', 8, "expected a value after 'status:'"],
  ['status:AND', 7, "expected a value after 'status:'"],
  [':x', 0, "expected a field name before ':'"],
  ['a:b:c', 3, "unexpected ':'"],
  ['status:+x', 7, "put '+' before the field name"],
  ['status:-x', 7, "put '-' before the field name"],
  ['status:!x', 7, "put '!' before the field name"],
  ['sta*:x', 0, 'wildcards are not allowed in field names'],
  ['*:x', 2, "only allowed in '*:*'"],
  ['_exists_:a*', 9, 'not a pattern'],
  ['_exists_:[a TO b]', 9, 'not a range'],
  ['_exists_:>3', 9, 'not a range'],
  // modifiers and misc
  ['a^', 2, "expected a number after '^'"],
  ['a^x', 2, "expected a number after '^'"],
  ['a^2^3', 3, "'^' given twice"],
  ['a~1~2', 3, "'~' given twice"],
  ['a~x', 2, "unexpected 'x'"],
  ['a~2b', 3, "unexpected 'b'"],
  ['^2', 0, "'^' must follow a term"],
  ['~', 0, "'~' must follow a term"],
  ['/re/', 0, 'regular expressions are not supported'],
  ['a\\', 1, 'nothing to escape'],
  ['\\', 0, 'nothing to escape'],
];

describe('parseLucene: syntax errors', () => {
  for (const [query, position, fragment] of SYNTAX) {
    it(`${JSON.stringify(query)} → position ${position}`, () => {
      assert.throws(
        () => parseLucene(query),
        (err: unknown) => {
          assert.ok(err instanceof LuceneSyntaxError, `not a LuceneSyntaxError: ${String(err)}`);
          assert.equal(err.position, position, err.message);
          assert.ok(err.message.includes(fragment), `${err.message} lacks ${fragment}`);
          assert.ok(err.message.startsWith(`Lucene syntax error at position ${position}: `));
          return true;
        },
      );
    });
  }

  it('carries line, column, code and status', () => {
    const err = catchError(() => parseLucene('status:failed\n  AND (tags:x'));
    assert.ok(err instanceof LuceneSyntaxError);
    assert.equal(err.position, 20);
    assert.equal(err.line, 2);
    assert.equal(err.column, 7);
    assert.equal(err.code, 'invalid_query');
    assert.equal(err.status, 400);
    assert.equal(err.detail, "unclosed '(': expected ')'");
    assert.ok(err instanceof Error);
    assert.equal(err.name, 'LuceneSyntaxError');
  });

  it(`refuses nesting deeper than ${MAX_QUERY_DEPTH}`, () => {
    for (const query of [
      `${'('.repeat(MAX_QUERY_DEPTH + 1)}a${')'.repeat(MAX_QUERY_DEPTH + 1)}`,
      `${'NOT '.repeat(MAX_QUERY_DEPTH + 1)}a`,
      `${'!'.repeat(9_000)}a`,
    ]) {
      const err = catchError(() => parseLucene(query));
      assert.ok(err instanceof LuceneSyntaxError);
      assert.match(err.message, /nested too deeply/);
    }
  });

  it(`refuses queries over ${MAX_QUERY_LENGTH} characters and over ${MAX_QUERY_TERMS} terms before parsing them further`, () => {
    const long = catchError(() => parseLucene(`${'!'.repeat(100_000)}a`));
    assert.ok(long instanceof LuceneSyntaxError);
    assert.match(long.message, /longer than 10000 characters/);
    assert.doesNotThrow(() => parseLucene(Array.from({ length: MAX_QUERY_TERMS }, (_, i) => `t${i}`).join(' ')));
    for (const query of [
      Array.from({ length: MAX_QUERY_TERMS + 1 }, (_, i) => `t${i}`).join(' '),
      Array.from({ length: MAX_QUERY_TERMS + 1 }, (_, i) => `execution_time:[${i} TO *]`).join(' OR '),
      Array.from({ length: MAX_QUERY_TERMS + 1 }, (_, i) => `execution_time:>${i}`).join(' OR '),
    ]) {
      const err = catchError(() => parseLucene(query));
      assert.ok(err instanceof LuceneSyntaxError);
      assert.match(err.message, /more than 256 terms/);
    }
  });
});

describe('unknown fields', () => {
  const opts = { isField: isRunField, fieldList: RUN_FIELD_LIST };

  it('are refused while parsing, with the position and the searchable fields', () => {
    const err = catchError(() => parseLucene('status:failed AND colour:red', opts));
    assert.ok(err instanceof UnknownFieldError);
    assert.equal(err.field, 'colour');
    assert.equal(err.position, 18);
    assert.equal(err.code, 'unknown_field');
    assert.equal(err.status, 400);
    assert.deepEqual(err.searchable, RUN_FIELD_LIST);
    assert.match(err.message, /^Unknown field "colour" at position 18\. Searchable fields: id, status, modelId, /);
    assert.match(
      err.message,
      /objects, parameters\.<path>, config\.<path>, source\.<path>, media\.<path>, scores\.<name>$/,
    );
  });

  it('are found in every place a field can be named', () => {
    for (const [query, field] of [
      ['+status:x colour:red', 'colour'], // an optional clause the +/- rule drops
      ['_exists_:colour', 'colour'],
      ['_exists_:(status colour)', 'colour'],
      ['colour:(a b)', 'colour'],
      ['colour:[1 TO 2]', 'colour'],
      ['colour:>2', 'colour'],
      ['parameters.a b:x'.replace(' ', '\\ '), 'parameters.a b'],
      ['token_use:5', 'token_use'],
      ['Status:x', 'Status'],
    ] as const) {
      const err = catchError(() => parseLucene(query, opts));
      assert.ok(err instanceof UnknownFieldError, `${query}: ${String(err)}`);
      assert.equal(err.field, field);
    }
  });

  it('accept the catalogue and the families', () => {
    for (const query of [
      'id:x',
      'modelId:x',
      'tags:x',
      'interaction:x',
      'environment:x',
      'result:x',
      'prompt:x',
      'finish_reason:x',
      'token_use.total:1',
      'execution_time:>1',
      'updated_at:>2024',
      'created_at:2024',
      'parameters.customer.id:x',
      'config.model:x',
      'source.principal_id:x',
      'parameters:x',
      '_exists_:parameters.größe',
      'parameters.a_b-c.0:x',
    ]) {
      assert.doesNotThrow(() => parseLucene(query, opts), query);
    }
  });

  it('validateFields checks an AST', () => {
    validateFields(parseLucene('status:x AND tags:(a b) AND _exists_:result'), isRunField, RUN_FIELD_LIST);
    const err = catchError(() =>
      validateFields(Q.and(Q.term('status', 'x'), Q.not(Q.exists('colour'))), isRunField, ['status']),
    );
    assert.ok(err instanceof UnknownFieldError);
    assert.equal(err.field, 'colour');
    assert.equal(err.position, null);
    assert.equal(err.message, 'Unknown field "colour". Searchable fields: status');
  });
});

function catchError(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  assert.fail('expected an error');
}
