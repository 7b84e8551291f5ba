/** Every syntax form of the issue → the expected AST. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_QUERY_TERMS, Q, parseLucene, type QueryNode } from '../../src/query/lucene/index.ts';

const t = (field: string | null, value: string): QueryNode => Q.term(field, value);
const ph = (field: string | null, value: string): QueryNode => Q.term(field, value, { phrase: true });
const wc = (field: string | null, value: string): QueryNode => Q.term(field, value, { wildcard: true });
const r = (field: string, lo: string | null, hi: string | null, il = true, iu = true): QueryNode =>
  Q.range(field, lo, hi, il, iu);
const { and, or, not, exists, all } = Q;

const CASES: [string, QueryNode][] = [
  // empty and match-all
  ['', all()],
  ['   \n\t', all()],
  ['*', all()],
  ['*:*', all()],
  // terms and fields
  ['hello', t(null, 'hello')],
  ['status:completed', t('status', 'completed')],
  ['status: completed', t('status', 'completed')],
  ['parameters.customer.id:c-42', t('parameters.customer.id', 'c-42')],
  ['token_use.total:42', t('token_use.total', '42')],
  ['token_use.total:-5', t('token_use.total', '-5')],
  ['config.model:gpt-4o', t('config.model', 'gpt-4o')],
  ['source.principal_id:user\\:123', t('source.principal_id', 'user:123')],
  ['café', t(null, 'café')],
  ['prompt:日本語', t('prompt', '日本語')],
  ['ANDROID', t(null, 'ANDROID')],
  ['and', t(null, 'and')],
  ['a|b a&b', or(t(null, 'a|b'), t(null, 'a&b'))],
  // phrases
  ['"hello world"', ph(null, 'hello world')],
  ['result:"hello world"', ph('result', 'hello world')],
  ['"say \\"hi\\" \\\\ now"', ph(null, 'say "hi" \\ now')],
  ['"a*b?"', ph(null, 'a*b?')],
  ['""', ph(null, '')],
  ['"AND"', ph(null, 'AND')],
  // wildcards
  ['hel*', wc(null, 'hel*')],
  ['h?llo', wc(null, 'h?llo')],
  ['tags:*beta', wc('tags', '*beta')],
  ['modelId:gpt-4\\*', t('modelId', 'gpt-4*')],
  ['modelId:gpt\\*4*', wc('modelId', 'gpt\\*4*')],
  ['modelId:a\\\\*', wc('modelId', 'a\\\\*')],
  ['status:*', exists('status')],
  ['?', wc(null, '?')],
  // ranges
  ['token_use.total:[1 TO 5]', r('token_use.total', '1', '5')],
  ['token_use.total:{1 TO 5}', r('token_use.total', '1', '5', false, false)],
  ['token_use.total:[1 TO 5}', r('token_use.total', '1', '5', true, false)],
  ['token_use.total:{1 TO 5]', r('token_use.total', '1', '5', false, true)],
  ['token_use.total:[100 TO *]', r('token_use.total', '100', null, true, false)],
  ['token_use.total:{* TO 100}', r('token_use.total', null, '100', false, false)],
  ['token_use.total:[* TO *]', exists('token_use.total')],
  ['updated_at:[2024-01-01T00:00:00Z TO 2024-02-01]', r('updated_at', '2024-01-01T00:00:00Z', '2024-02-01')],
  ['id:[ "a b" TO "c\\"d" ]', r('id', 'a b', 'c"d')],
  ['id:["*" TO *]', r('id', '*', null, true, false)],
  ['id:[a\\]b TO z]', r('id', 'a]b', 'z')],
  // comparisons
  ['token_use.total:>100', r('token_use.total', '100', null, false, false)],
  ['token_use.total:>=100', r('token_use.total', '100', null, true, false)],
  ['token_use.total:<100', r('token_use.total', null, '100', false, false)],
  ['token_use.total:<=100', r('token_use.total', null, '100', false, true)],
  ['execution_time:>-1.5', r('execution_time', '-1.5', null, false, false)],
  ['updated_at:>=2024-03-05T10:00:00Z', r('updated_at', '2024-03-05T10:00:00Z', null, true, false)],
  ['updated_at:<"2024-03-05T10:00:00+02:00"', r('updated_at', null, '2024-03-05T10:00:00+02:00', false, false)],
  // boolean operators
  ['a AND b', and(t(null, 'a'), t(null, 'b'))],
  ['a && b', and(t(null, 'a'), t(null, 'b'))],
  ['a&&b', and(t(null, 'a'), t(null, 'b'))],
  ['a OR b', or(t(null, 'a'), t(null, 'b'))],
  ['a || b', or(t(null, 'a'), t(null, 'b'))],
  ['a||b', or(t(null, 'a'), t(null, 'b'))],
  ['NOT a', not(t(null, 'a'))],
  ['!a', not(t(null, 'a'))],
  ['! a', not(t(null, 'a'))],
  ['NOT NOT a', t(null, 'a')],
  ['a AND NOT b', and(t(null, 'a'), not(t(null, 'b')))],
  ['a OR NOT b', or(t(null, 'a'), not(t(null, 'b')))],
  ['a && !b', and(t(null, 'a'), not(t(null, 'b')))],
  ['a AND b OR c', or(and(t(null, 'a'), t(null, 'b')), t(null, 'c'))],
  ['a OR b AND c', or(t(null, 'a'), and(t(null, 'b'), t(null, 'c')))],
  ['a AND b AND c', and(t(null, 'a'), t(null, 'b'), t(null, 'c'))],
  ['NOT a AND b', and(not(t(null, 'a')), t(null, 'b'))],
  // juxtaposition and +/- (Lucene's required / prohibited / optional)
  ['a b c', or(t(null, 'a'), t(null, 'b'), t(null, 'c'))],
  ['+a', t(null, 'a')],
  ['-a', not(t(null, 'a'))],
  ['+a c', t(null, 'a')],
  ['+a +b c', and(t(null, 'a'), t(null, 'b'))],
  ['+a -b c', and(t(null, 'a'), not(t(null, 'b')))],
  ['a -b', and(t(null, 'a'), not(t(null, 'b')))],
  ['a b -c', and(or(t(null, 'a'), t(null, 'b')), not(t(null, 'c')))],
  ['a NOT b', and(t(null, 'a'), not(t(null, 'b')))],
  ['a !b', and(t(null, 'a'), not(t(null, 'b')))],
  ['-a -b', and(not(t(null, 'a')), not(t(null, 'b')))],
  ['+status:failed', t('status', 'failed')],
  ['-status:failed', not(t('status', 'failed'))],
  ['+status:failed -tags:x', and(t('status', 'failed'), not(t('tags', 'x')))],
  ['a AND b c', or(and(t(null, 'a'), t(null, 'b')), t(null, 'c'))],
  ['+a OR b', or(t(null, 'a'), t(null, 'b'))],
  ['-a OR b', or(not(t(null, 'a')), t(null, 'b'))],
  ['a AND -b', and(t(null, 'a'), not(t(null, 'b')))],
  ['"a b" -"c d"', and(ph(null, 'a b'), not(ph(null, 'c d')))],
  // grouping and field groups
  ['(a OR b) AND c', and(or(t(null, 'a'), t(null, 'b')), t(null, 'c'))],
  ['a AND (b OR c)', and(t(null, 'a'), or(t(null, 'b'), t(null, 'c')))],
  ['((a))', t(null, 'a')],
  ['-(a b)', not(or(t(null, 'a'), t(null, 'b')))],
  ['+(a b) c', or(t(null, 'a'), t(null, 'b'))],
  ['!(a)', not(t(null, 'a'))],
  ['NOT(a)', not(t(null, 'a'))],
  ['a(b)', or(t(null, 'a'), t(null, 'b'))],
  ['tags:(a OR b)', or(t('tags', 'a'), t('tags', 'b'))],
  ['tags:(a b)', or(t('tags', 'a'), t('tags', 'b'))],
  ['tags:(+a -b)', and(t('tags', 'a'), not(t('tags', 'b')))],
  ['tags:("a b" c*)', or(ph('tags', 'a b'), wc('tags', 'c*'))],
  ['tags:(a OR (b AND c))', or(t('tags', 'a'), and(t('tags', 'b'), t('tags', 'c')))],
  ['-tags:(a b)', not(or(t('tags', 'a'), t('tags', 'b')))],
  [
    'token_use.total:(>10 AND <20)',
    and(r('token_use.total', '10', null, false, false), r('token_use.total', null, '20', false, false)),
  ],
  ['token_use.total:([1 TO 5] OR 9)', or(r('token_use.total', '1', '5'), t('token_use.total', '9'))],
  ['tags:(a status:b)', or(t('tags', 'a'), t('status', 'b'))],
  ['tags:(*)', exists('tags')],
  // _exists_
  ['_exists_:finish_reason', exists('finish_reason')],
  ['_exists_:parameters.customer.id', exists('parameters.customer.id')],
  ['NOT _exists_:result', not(exists('result'))],
  ['_exists_:(result prompt)', or(exists('result'), exists('prompt'))],
  ['_exists_:"result"', exists('result')],
  // escapes
  ['foo\\:bar', t(null, 'foo:bar')],
  ['a\\ b', t(null, 'a b')],
  ['\\(1\\+1\\)', t(null, '(1+1)')],
  ['\\-a', t(null, '-a')],
  ['\\AND', t(null, 'AND')],
  ['c\\+\\+', t(null, 'c++')],
  ['c++', t(null, 'c++')],
  ['a\\/b', t(null, 'a/b')],
  ['path\\/to\\/x', t(null, 'path/to/x')],
  ['x:\\"q\\"', t('x', '"q"')],
  ['2024-01-01', t(null, '2024-01-01')],
  ['he\\llo', t(null, 'hello')],
  // fuzzy, proximity, boost: accepted and dropped
  ['roam~', t(null, 'roam')],
  ['roam~1', t(null, 'roam')],
  ['roam~0.8', t(null, 'roam')],
  ['roam~2 foam', or(t(null, 'roam'), t(null, 'foam'))],
  ['"jakarta apache"~10', ph(null, 'jakarta apache')],
  ['jakarta^4 apache', or(t(null, 'jakarta'), t(null, 'apache'))],
  ['jakarta^0.5', t(null, 'jakarta')],
  ['roam~1^2', t(null, 'roam')],
  ['roam^2~1', t(null, 'roam')],
  ['"a b"^2', ph(null, 'a b')],
  ['(a b)^3', or(t(null, 'a'), t(null, 'b'))],
  ['token_use.total:[1 TO 2]^2', r('token_use.total', '1', '2')],
  ['status:completed^2', t('status', 'completed')],
  // whitespace and lines
  ['a\n\tAND\r\nb', and(t(null, 'a'), t(null, 'b'))],
  ['  status:failed  ', t('status', 'failed')],
];

describe('parseLucene: syntax forms', () => {
  for (const [query, expected] of CASES) {
    it(JSON.stringify(query), () => assert.deepEqual(parseLucene(query), expected));
  }

  it('returns frozen nodes', () => {
    const node = parseLucene('a AND (b OR c) -d');
    assert.ok(Object.isFrozen(node));
    assert.equal(node.kind, 'and');
    if (node.kind === 'and') {
      assert.ok(Object.isFrozen(node.nodes));
      for (const n of node.nodes) assert.ok(Object.isFrozen(n));
    }
  });

  it('handles long flat queries without recursion trouble, and refuses them past the term bound', () => {
    const query = Array.from({ length: MAX_QUERY_TERMS }, (_, i) => `t${i}`).join(' OR ');
    const node = parseLucene(query);
    assert.equal(node.kind, 'or');
    if (node.kind === 'or') assert.equal(node.nodes.length, MAX_QUERY_TERMS);
    const long = Array.from({ length: 600 }, (_, i) => `t${i}`).join(' OR ');
    assert.throws(() => parseLucene(long), /more than 256 terms/);
  });

  it('accepts nesting up to the limit', () => {
    assert.deepEqual(parseLucene(`${'('.repeat(60)}a${')'.repeat(60)}`), t(null, 'a'));
  });
});
