/** Find queries: parsing, refusals with messages that say what to fix, limits, and $regex → GLOB. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { jsonSql, globToPosixRegex } from '../../src/db/json-sql.ts';
import {
  FIELD_OPERATORS,
  FIND_LIMITS,
  FindQueryError,
  LOGICAL_OPERATORS,
  compileFind,
  compileSort,
  parseFind,
  regexToGlob,
  type FieldResolver,
} from '../../src/query/find/index.ts';

const resolve: FieldResolver = (p) => {
  if (p.length === 1 && (p[0] === 'name' || p[0] === 'status'))
    return { kind: 'column', column: `d.${p[0]}`, type: 'text' };
  if (p[0] === 'properties') return { kind: 'json', column: 'd.properties', path: p.slice(1) };
  return null;
};
const json = jsonSql('sqlite');

/** The FindQueryError a query gives (fails when it compiles). */
const refusal = (q: unknown): FindQueryError => {
  try {
    compileFind(q as Record<string, unknown>, resolve, json, ['name', 'status', 'properties.<path>']);
  } catch (err) {
    assert.ok(err instanceof FindQueryError, `not a FindQueryError: ${String(err)}`);
    assert.equal(err.code, 'invalid_query');
    assert.equal(err.status, 400);
    return err;
  }
  assert.fail(`compiled: ${JSON.stringify(q)}`);
};

describe('find: parse', () => {
  it('parses to frozen, kind-tagged nodes', () => {
    const node = parseFind({
      name: 'x',
      'properties.n': { $gte: 3, $lt: 9 },
      $or: [{ status: 'a' }, { status: { $ne: 'b' } }],
    });
    assert.equal(node.kind, 'and');
    assert.ok(Object.isFrozen(node));
    assert.deepEqual(node, {
      kind: 'and',
      nodes: [
        { kind: 'field', field: 'name', path: ['name'], cond: { kind: 'eq', value: 'x' } },
        {
          kind: 'field',
          field: 'properties.n',
          path: ['properties', 'n'],
          cond: {
            kind: 'every',
            conds: [
              { kind: 'cmp', op: 'gte', value: 3 },
              { kind: 'cmp', op: 'lt', value: 9 },
            ],
          },
        },
        {
          kind: 'or',
          nodes: [
            { kind: 'field', field: 'status', path: ['status'], cond: { kind: 'eq', value: 'a' } },
            {
              kind: 'field',
              field: 'status',
              path: ['status'],
              cond: { kind: 'not', cond: { kind: 'eq', value: 'b' } },
            },
          ],
        },
      ],
    });
  });

  it('an empty query is TRUE; $all [] and $in [] are empty sets', () => {
    assert.deepEqual(parseFind({}), { kind: 'and', nodes: [] });
    assert.deepEqual(parseFind({ name: { $all: [] } }), {
      kind: 'field',
      field: 'name',
      path: ['name'],
      cond: { kind: 'in', values: [] },
    });
  });

  it('$elemMatch: operators → one value; fields or logical operators → a sub-match', () => {
    assert.equal((parseFind({ 'properties.a': { $elemMatch: { $gt: 1 } } }) as any).cond.kind, 'elemMatch');
    assert.equal((parseFind({ 'properties.a': { $elemMatch: { sku: 'x' } } }) as any).cond.kind, 'elemMatchDoc');
    assert.equal(
      (parseFind({ 'properties.a': { $elemMatch: { $or: [{ sku: 'x' }] } } }) as any).cond.kind,
      'elemMatchDoc',
    );
  });

  it('refuses unknown and unsupported operators, naming them and the supported ones', () => {
    for (const op of ['$where', '$expr', '$text', '$foo', '$comment']) {
      const e = refusal({ [op]: 'sleep(1000)' });
      assert.match(e.message, new RegExp(`\\${op}`));
      for (const l of LOGICAL_OPERATORS) assert.ok(e.message.includes(l), e.message);
    }
    for (const op of ['$where', '$type', '$mod', '$foo', '$and']) {
      const e = refusal({ name: { [op]: 1 } });
      assert.ok(e.message.includes(op), e.message);
      for (const f of FIELD_OPERATORS) assert.ok(e.message.includes(f), e.message);
    }
    assert.match(refusal({ $gt: 1 }).message, /goes inside a field/);
    assert.match(refusal({ name: { $or: [] } }).message, /at the level of fields/);
  });

  it('refuses unknown fields with the field list, and never consults the prototype', () => {
    assert.match(refusal({ nope: 1 }).message, /unknown field "nope"; fields: name, status, properties\.<path>/);
    for (const key of ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'prototype']) {
      assert.match(refusal(JSON.parse(`{"${key}": 1}`)).message, new RegExp(`unknown field "${key}"`));
    }
    assert.match(refusal(JSON.parse('{"name": {"__proto__": {"$gt": 1}}}')).message, /equality with an object/);
    assert.match(refusal({ 'name"; DROP TABLE d; --': 1 }).message, /unknown field "name\\"; DROP TABLE d; --"/);
  });

  it('refuses malformed operands with a message that says what to write', () => {
    const cases: [unknown, RegExp][] = [
      [[], /must be an object/],
      [{ $or: [] }, /\$or needs a non-empty array/],
      [{ $and: {} }, /\$and needs a non-empty array/],
      [{ $nor: [1] }, /a match must be an object/],
      [{ name: { a: 1 } }, /equality with an object is not supported/],
      [{ name: { $gt: 1, a: 1 } }, /cannot mix operators and field names/],
      [{ name: { $gt: true } }, /compares with a number or a string/],
      [{ name: { $gt: null } }, /compares with a number or a string/],
      [{ name: { $in: 'a' } }, /\$in needs an array/],
      [{ name: { $in: [{ a: 1 }] } }, /not a value here/],
      [{ name: [{ a: 1 }] }, /scalars and arrays, not objects/],
      [{ name: { $exists: 1 } }, /\$exists takes true or false/],
      [{ name: { $size: -1 } }, /non-negative integer/],
      [{ name: { $size: 1.5 } }, /non-negative integer/],
      [{ name: { $not: 5 } }, /\$not takes an operator object/],
      [{ name: { $not: { a: 1 } } }, /\$not takes an operator object/],
      [{ name: { $elemMatch: {} } }, /\$elemMatch takes a non-empty object/],
      [{ name: { $elemMatch: { $gt: 1, a: 1 } } }, /either operators .* or fields/],
      [{ name: { $all: [{ $elemMatch: { a: 1 } }] } }, /\$all takes values/],
      [{ name: { $options: 'i' } }, /\$options needs \$regex/],
      [{ name: { $regex: 'a', $options: 'm' } }, /\$options supports "i" and "s" only/],
      [{ name: { $regex: 5 } }, /\$regex takes a string/],
      [{ name: 'a\u0000b' }, /NUL/],
      [{ name: '\ud800' }, /unpaired surrogates/],
      [{ 'properties..a': 1 }, /empty segment/],
      [{ '.a': 1 }, /empty segment/],
      [{ name: Number.NaN }, /finite/],
      [{ name: undefined }, /unsupported value of type undefined/],
      [{ name: new Date(0) }, /unsupported value of type object/],
    ];
    for (const [q, re] of cases) assert.match(refusal(q).message, re, JSON.stringify(q));
    assert.throws(() => parseFind('name:x'), FindQueryError);
  });

  it('says where the problem is', () => {
    const e = refusal({ $or: [{ name: 'a' }, { 'properties.n': { $gt: [1] } }] });
    assert.equal(e.at, '$or[1].properties.n.$gt');
    assert.match(e.message, /^find query at \$or\[1\]\.properties\.n\.\$gt: /);
  });

  it('bounds the work: depth, clauses, $in size, path length, name length, regex length', () => {
    let deep: Record<string, unknown> = { name: 'x' };
    for (let i = 0; i < 10_000; i++) deep = { $and: [deep] };
    assert.match(refusal(deep).message, new RegExp(`deeper than ${FIND_LIMITS.depth}`));
    let ok: Record<string, unknown> = { name: 'x' };
    for (let i = 0; i < FIND_LIMITS.depth - 2; i++) ok = { $and: [ok] };
    compileFind(ok, resolve, json);
    let deepArray: unknown = 1;
    for (let i = 0; i < 10_000; i++) deepArray = [deepArray];
    assert.match(refusal({ name: deepArray }).message, /deeper than/);
    assert.match(
      refusal({ $or: Array.from({ length: FIND_LIMITS.clauses + 1 }, (_, i) => ({ name: `v${i}` })) }).message,
      /more than 500 conditions/,
    );
    assert.match(
      refusal({ name: { $all: Array.from({ length: 600 }, (_, i) => `v${i}`) } }).message,
      /more than 500 conditions/,
    );
    assert.match(refusal({ name: Array.from({ length: 600 }, (_, i) => i) }).message, /more than 500 conditions/);
    compileFind({ name: { $in: Array.from({ length: FIND_LIMITS.inValues }, (_, i) => `v${i}`) } }, resolve, json);
    assert.match(
      refusal({ name: { $in: Array.from({ length: FIND_LIMITS.inValues + 1 }, (_, i) => i) } }).message,
      /at most 100000 values/,
    );
    assert.match(refusal({ [`properties${'.a'.repeat(FIND_LIMITS.pathSegments)}`]: 1 }).message, /at most 16 segments/);
    assert.match(
      refusal({ [`properties.${'a'.repeat(FIND_LIMITS.fieldLength)}`]: 1 }).message,
      /at most 500 characters/,
    );
    assert.match(
      refusal({ name: { $regex: 'a'.repeat(FIND_LIMITS.regexLength + 1) } }).message,
      /at most 1000 characters/,
    );
  });

  it('adversarial inputs finish quickly', { timeout: 60_000 }, () => {
    const inputs: unknown[] = [
      { $or: Array.from({ length: 100_000 }, () => ({ name: 'x' })) },
      { name: { $in: Array.from({ length: 100_000 }, (_, i) => [i]) } },
      { name: { $regex: '['.repeat(1000) } },
      { name: { $regex: '\\'.repeat(999) } },
      { name: { $regex: '.*'.repeat(500) } },
      { name: { $regex: '[^\\s\\S\\d\\D]'.repeat(60) } },
      Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`$x${i}`, 1])),
    ];
    for (const q of inputs) {
      try {
        compileFind(q as Record<string, unknown>, resolve, json);
      } catch (err) {
        assert.ok(err instanceof FindQueryError, String(err));
      }
    }
  });
});

describe('find: $regex → GLOB', () => {
  const glob = (re: string, fold = false) => regexToGlob(re, fold, '');

  it('translates the supported subset', () => {
    const cases: [string, string][] = [
      ['abc', '*abc*'],
      ['^abc', 'abc*'],
      ['abc$', '*abc'],
      ['^abc$', 'abc'],
      ['', '*'],
      ['^$', ''],
      ['^a.c$', 'a?c'],
      ['^a.*c$', 'a*c'],
      ['^a.+c$', 'a?*c'],
      ['^a.*?c', 'a*c*'],
      ['.*', '*'],
      ['^.*.*x', '*x*'],
      ['a\\*b\\?c\\[d\\]', '*a[*]b[?]c[[]d]*'],
      ['^\\^\\$\\.\\\\\\/', '^$.\\/*'],
      ['x\\$$', '*x$'],
      ['^[abc]$', '[a-c]'],
      ['^[acx]$', '[acx]'],
      ['^[a-z0-9_]$', '[0-9_a-z]'],
      ['^[^a-c]$', '[^a-c]'],
      ['^\\d\\D$', '[0-9][^0-9]'],
      ['^\\w$', '[0-9A-Z_a-z]'],
      ['^[\\]\\-^a]$', '[]a^-]'],
      ['^[\\^]$', '^'],
      ['^[-^]$', '[-^]'],
      ['^[\\*]$', '[*]'],
      ['^\\x41\\u00e9\\t$', 'Aé\t'],
      ['^\\ud83d\\ude00$', '😀'],
      ['^[^]$', '?'],
      ['^[\\s\\S]$', '?'],
    ];
    for (const [re, expected] of cases) assert.equal(glob(re), expected, re);
  });

  it('folds ASCII only with $options i', () => {
    assert.equal(glob('^AbC$', true), 'abc');
    assert.equal(glob('^[A-C]$', true), '[a-c]');
    assert.equal(glob('^[^A-C]$', true), '[^a-c]');
    assert.equal(glob('^\\x41É$', true), 'aÉ');
    // A-z is A-Z [ \ ] ^ _ ` a-z; folded: [ \ ] ^ _ ` a-z, with ] first and ^ last.
    assert.equal(glob('^[A-z]$', true), '[][\\_-z^]');
    assert.equal(glob('^\\W$', true), '[^0-9_a-z]');
  });

  it('refuses the rest, saying what is supported', () => {
    const cases: [string, RegExp][] = [
      ['a|b', /alternation/],
      ['(ab)', /groups/],
      ['(?=a)', /groups/],
      ['a*', /quantifier \* is supported only as \.\* and \.\+/],
      ['a+', /quantifier \+/],
      ['a?', /quantifier \?/],
      ['a{2}', /quantifier \{/],
      ['[ab]+', /quantifier \+/],
      ['\\d*', /quantifier \*/],
      ['*a', /quantifier \*/],
      ['.?', /quantifier \?/],
      ['a^b', /\^ is supported only at the start/],
      ['a$b', /\$ is supported only at the end/],
      ['\\bword', /word boundaries/],
      ['\\1', /escape \\1 is not supported/],
      ['\\p{L}', /escape \\p is not supported/],
      ['\\u{1F600}', /\\u\{…\} is not supported/],
      ['\\xZZ', /needs 2 hex digits/],
      ['\\u0000', /NUL/],
      ['\\ud800', /lone surrogate/],
      ['[abc', /unterminated class/],
      ['[]', /empty class/],
      ['[^\\s\\S]', /matches no character/],
      ['[\\d-z]', /range cannot start or end with a class escape/],
      ['[z-a]', /range out of order/],
      ['abc\\', /lone backslash/],
    ];
    for (const [re, msg] of cases) {
      assert.throws(
        () => glob(re),
        (err: unknown) =>
          err instanceof FindQueryError &&
          msg.test(err.message) &&
          /supported|not supported|refused|never|NUL|digits|class|range|backslash|only/.test(err.message),
        re,
      );
    }
    assert.match(
      String(
        (() => {
          try {
            glob('a|b');
          } catch (e) {
            return (e as Error).message;
          }
        })(),
      ),
      /supported: \^ first, \$ last/,
    );
  });

  it('GLOB → POSIX regex for PostgreSQL escapes every literal', () => {
    assert.equal(globToPosixRegex('a*b?c'), '^a.*b.c$');
    assert.equal(globToPosixRegex('[^a-c]x'), '^[^a-c]x$');
    assert.equal(globToPosixRegex('[]a-]'), '^[\\U0000005da\\U0000002d]$');
    assert.equal(globToPosixRegex('.$^(|'), '^\\U0000002e\\U00000024\\U0000005e\\U00000028\\U0000007c$');
    assert.equal(globToPosixRegex('[-^]'), '^[\\U0000002d\\U0000005e]$');
    assert.throws(() => globToPosixRegex('[abc'), /unterminated/);
  });
});

describe('find: sort keys', () => {
  it('refuses malformed sorts', () => {
    const bad: [unknown, RegExp][] = [
      ['name', /must be an array/],
      [[{ field: 1 }], /\{field, order\}/],
      [[{ field: 'name', order: 2 }], /order is 1, -1/],
      [[{ field: 'name', order: { $gt: 1 } }], /order is 1, -1/],
      [[{ field: 'nope' }], /unknown field "nope"/],
      [[{ field: '__proto__' }], /unknown field "__proto__"/],
      [Array.from({ length: FIND_LIMITS.sortKeys + 1 }, () => ({ field: 'name' })), /at most 8 keys/],
    ];
    for (const [s, re] of bad)
      assert.throws(
        () => compileSort(s, resolve, json),
        (e: unknown) => e instanceof FindQueryError && re.test(e.message),
        JSON.stringify(s),
      );
    assert.deepEqual(compileSort(undefined, resolve, json), []);
    assert.equal(compileSort([{ field: 'name' }, { field: 'properties.a', order: 'desc' }], resolve, json).length, 5);
  });
});
