/** The reference evaluator (evaluate.ts) on hand-built runs, and the value rules it rests on. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  Q,
  UnknownFieldError,
  compareCodePoints,
  compileMatcher,
  globParts,
  globToRegExp,
  instantToIso,
  matches,
  parseDateInterval,
  parseLucene,
  parseNumber,
  promptText,
  resultText,
  runText,
  tokenize,
  type MatchOptions,
  type RunDocument,
} from '../../src/query/lucene/index.ts';

const RUNS: RunDocument[] = [
  {
    id: 'r1',
    status: 'completed',
    modelId: 'gpt-4o',
    tags: ['alpha', 'beta'],
    interaction: { id: 'ix1', name: 'Summarize' },
    environment: { id: 'env1', name: 'openai-prod' },
    parameters: {
      customer: { id: 'c-42', name: 'Ada Lovelace' },
      topic: 'Quarterly report',
      count: 3,
      flag: true,
      items: [{ sku: 'A-1' }, { sku: 'B-2' }],
    },
    result: [{ type: 'text', value: 'Hello world! The café is open.' }],
    prompt: [
      { role: 'system', content: 'You are helpful.' },
      { role: 'user', content: 'Summarize the quarterly report' },
    ],
    token_use: { prompt: 100, result: 50, total: 150 },
    execution_time: 1234,
    created_at: '2024-03-05T09:59:00.000Z',
    updated_at: '2024-03-05T10:00:00.000Z',
    finish_reason: 'stop',
    config: { model: 'gpt-4o', temperature: 0.7 },
    source: { type: 'api', principal_id: 'user:123' },
  },
  {
    id: 'r2',
    status: 'failed',
    modelId: 'claude-3',
    tags: [],
    interaction: 'ix2',
    environment: 'env2',
    parameters: { topic: 'Hello there', count: '3', list: ['one two', 'three'] },
    prompt: 'Translate: hello world',
    token_use: { prompt: 10, result: 0, total: 10 },
    execution_time: 99.5,
    created_at: '2023-12-31T23:00:00.000Z',
    updated_at: '2024-01-01T00:00:00.000Z',
    finish_reason: null,
    config: { model: 'claude-3' },
    source: { type: 'ui', principal_id: 'apikey:9' },
  },
  {
    id: 'r3',
    status: 'processing',
    modelId: 'GPT-4O',
    tags: ['Alpha', 'a b', 'x*y'],
    interaction: { id: 'ix1', name: 'Summarize' },
    result: [
      { type: 'json', value: { answer: 'hello' } },
      { type: 'text', value: 'Ωmega 日本語 テキスト ÉTÉ' },
    ],
    prompt: [],
    token_use: { prompt: 1, result: 1, total: 2 },
    updated_at: '2025-06-15T12:30:45.500Z',
    parameters: {},
  },
];

const ids = (query: string, opts: MatchOptions = {}): string[] => {
  const test = compileMatcher(parseLucene(query), opts);
  return RUNS.filter(test).map((r) => r.id as string);
};

/** [query, matching ids] over RUNS, without a default path. */
const CASES: [string, string[]][] = [
  ['*', ['r1', 'r2', 'r3']],
  ['', ['r1', 'r2', 'r3']],
  // keyword fields: exact and case-sensitive
  ['status:completed', ['r1']],
  ['status:Completed', []],
  ['status:complete', []],
  ['status:"completed"', ['r1']],
  ['modelId:gpt-4o', ['r1']],
  ['modelId:GPT-4O', ['r3']],
  ['modelId:gpt*', ['r1']],
  ['modelId:*4?', ['r1', 'r3']],
  ['modelId:gpt\\-4o', ['r1']],
  ['id:r?', ['r1', 'r2', 'r3']],
  ['tags:alpha', ['r1']],
  ['tags:Alpha', ['r3']],
  ['tags:"a b"', ['r3']],
  ['tags:a', []],
  ['tags:x\\*y', ['r3']],
  ['tags:x\\*', []],
  ['tags:(alpha OR Alpha)', ['r1', 'r3']],
  ['tags:(+alpha +beta)', ['r1']],
  ['finish_reason:stop', ['r1']],
  ['source.principal_id:user\\:123', ['r1']],
  ['source.principal_id:user*', ['r1']],
  ['config.model:claude-3', ['r2']],
  ['config.temperature:0.7', ['r1']],
  ['config.temperature:.70', ['r1']],
  // ref fields: id or name
  ['interaction:ix1', ['r1', 'r3']],
  ['interaction:Summarize', ['r1', 'r3']],
  ['interaction:summarize', []],
  ['interaction:ix2', ['r2']],
  ['environment:openai-prod', ['r1']],
  ['environment:env*', ['r1', 'r2']],
  // text fields: words, case-insensitive, phrases
  ['result:hello', ['r1']],
  ['result:HELLO', ['r1']],
  ['result:hell', []],
  ['result:hel*', ['r1']],
  ['result:"hello world"', ['r1']],
  ['result:"world hello"', []],
  ['result:hello-world', ['r1']],
  ['result:café', ['r1']],
  ['result:cafe', []],
  // r3 is still processing: its text is not searched until it ends (rule 1; see the test below)
  ['result:été', []],
  ['result:日本語', []],
  ['result:ωmega', []],
  ['result:>A', ['r1', 'r3']], // ranges read the document, ended or not
  ['result:answer', []],
  ['result:"!!!"', []],
  ['prompt:quarterly', ['r1']],
  ['prompt:"helpful summarize"', ['r1']],
  ['prompt:translate', ['r2']],
  ['prompt:"you are"', ['r1']],
  ['parameters.customer.name:lovelace', ['r1']],
  ['parameters.customer.name:"ada lovelace"', ['r1']],
  ['parameters.topic:hello', ['r2']],
  ['parameters.topic:"report quarterly"', []],
  ['parameters.list:"two three"', []],
  ['parameters.list:two', ['r2']],
  ['parameters.items.sku:b-2', ['r1']],
  ['parameters.count:3', ['r1', 'r2']],
  ['parameters.flag:true', ['r1']],
  ['parameters.flag:TRUE', []],
  // the default field: prompt, result and parameter strings
  ['hello', ['r1', 'r2']], // r3's hello is in a JSON part, which is not text
  ['lovelace', ['r1']],
  ['"quarterly report"', ['r1']],
  ['"report hello"', ['r1']], // a phrase may run from the prompt into the result
  ['"open you"', []],
  ['summar*', ['r1']],
  ['answer', []],
  ['gpt', []],
  // numbers
  ['token_use.total:150', ['r1']],
  ['token_use.total:150.0', ['r1']],
  ['token_use.total:1.5e2', ['r1']],
  ['token_use.total:15*', []],
  ['token_use.total:[10 TO 150]', ['r1', 'r2']],
  ['token_use.total:{10 TO 150}', []],
  ['token_use.total:[10 TO 150}', ['r2']],
  ['token_use.total:>=10', ['r1', 'r2']],
  ['token_use.total:>10', ['r1']],
  ['token_use.total:<10', ['r3']],
  ['token_use.total:<=10', ['r2', 'r3']],
  ['token_use.total:[* TO 2]', ['r3']],
  ['token_use.total:[a TO z]', []],
  ['token_use.total:>abc', []],
  ['execution_time:>99', ['r1', 'r2']],
  ['execution_time:<99.6', ['r2']],
  ['parameters.count:>2', ['r1', 'r2']], // r2's count is the string '3': compared as a string
  ['parameters.count:[3 TO 3]', ['r1', 'r2']],
  // dates
  ['updated_at:2024', ['r1', 'r2']],
  ['updated_at:2024-03', ['r1']],
  ['updated_at:2024-03-05', ['r1']],
  ['updated_at:2024-03-05T10\\:00', ['r1']],
  ['updated_at:"2024-03-05T11:00+01:00"', ['r1']],
  ['updated_at:"2024-03-05T10:00:00Z"', ['r1']],
  ['updated_at:"2024-03-05T10:00:01Z"', []],
  ['updated_at:"2025-06-15T12:30:45.5Z"', ['r3']],
  ['updated_at:2024-13', []],
  ['updated_at:yesterday', []],
  ['updated_at:2024-03*', ['r1']],
  ['updated_at:>=2024-03-05T10:00:00Z', ['r1', 'r3']],
  ['updated_at:>2024-03-05T10:00:00Z', ['r3']],
  ['updated_at:>2024-03-05T11:00:00+02:00', ['r1', 'r3']],
  ['updated_at:<2024-01-01', []],
  ['updated_at:<=2024-01-01', ['r2']],
  ['updated_at:[2024-01-01 TO 2024-12-31]', ['r1', 'r2']],
  ['updated_at:{2024-01-01 TO 2024-12-31]', ['r1']],
  ['updated_at:[2024 TO *]', ['r1', 'r2', 'r3']],
  ['updated_at:[garbage TO *]', []],
  ['created_at:2023', ['r2']],
  // lexical ranges on strings
  ['id:[r1 TO r2]', ['r1', 'r2']],
  ['id:{r1 TO r3}', ['r2']],
  ['id:>r1', ['r2', 'r3']],
  ['tags:[a TO b]', ['r1', 'r3']],
  ['modelId:[A TO Z]', ['r3']],
  ['parameters.count:[2 TO 4]', ['r1', 'r2']],
  ['parameters.count:[20 TO 4]', ['r2']],
  ['interaction:[ix2 TO ix9]', ['r2']],
  // exists
  ['_exists_:finish_reason', ['r1']],
  ['_exists_:result', ['r1', 'r3']],
  ['_exists_:prompt', ['r1', 'r2']],
  ['_exists_:tags', ['r1', 'r3']],
  ['_exists_:execution_time', ['r1', 'r2']],
  ['_exists_:parameters', ['r1', 'r2', 'r3']],
  ['_exists_:parameters.customer', ['r1']],
  ['_exists_:parameters.items.sku', ['r1']],
  ['_exists_:environment', ['r1', 'r2']],
  ['tags:*', ['r1', 'r3']],
  ['token_use.total:[* TO *]', ['r1', 'r2', 'r3']],
  // booleans
  ['status:completed OR status:failed', ['r1', 'r2']],
  ['status:completed AND tags:beta', ['r1']],
  ['NOT status:completed', ['r2', 'r3']],
  ['-status:completed', ['r2', 'r3']],
  ['!status:completed', ['r2', 'r3']],
  ['NOT finish_reason:stop', ['r2', 'r3']],
  ['-_exists_:result', ['r2']],
  ['-*', []],
  ['+interaction:ix1 status:failed', ['r1', 'r3']],
  ['+interaction:ix1 -status:processing', ['r1']],
  ['status:failed status:processing', ['r2', 'r3']],
  ['hello -status:failed', ['r1']],
  ['tags:alpha && tags:beta', ['r1']],
  ['tags:alpha || tags:Alpha', ['r1', 'r3']],
  ['(status:failed OR status:processing) AND token_use.total:>5', ['r2']],
  ['interaction:ix1 AND NOT (result:hello OR tags:beta)', ['r3']],
  ['roam~ OR hello^2', ['r1', 'r2']],
  ['result:helo~1', []],
];

describe('matches: the spec on hand-built runs', () => {
  for (const [query, expected] of CASES) {
    it(`${query || '(empty)'} → ${expected.join(',') || 'none'}`, () => assert.deepEqual(ids(query), expected));
  }

  it('searches the text of a run once it ended, and its fields from the start', () => {
    const processing = RUNS[2];
    const ended = { ...processing, status: 'completed' };
    for (const q of ['result:été', 'result:日本語', 'result:ωmega', 'テキスト', 'result:ÉTÉ']) {
      assert.equal(matches(parseLucene(q), processing), false, q);
      assert.equal(matches(parseLucene(q), ended), true, q);
    }
    const withParams = { ...processing, parameters: { topic: 'Quarterly report' } };
    assert.equal(matches(parseLucene('parameters.topic:report'), withParams), true);
    assert.equal(matches(parseLucene('report'), withParams), false);
    assert.equal(matches(parseLucene('report'), { ...withParams, status: 'failed' }), true);
    assert.equal(matches(parseLucene('tags:Alpha'), processing), true);
  });

  it('searches defaultPath for bare terms when given', () => {
    assert.deepEqual(ids('alpha', { defaultPath: 'tags' }), ['r1']);
    assert.deepEqual(ids('alp*', { defaultPath: 'tags' }), ['r1']);
    assert.deepEqual(ids('hello', { defaultPath: 'result' }), ['r1']);
    assert.deepEqual(ids('hello', { defaultPath: 'parameters.topic' }), ['r2']);
    assert.deepEqual(ids('summarize OR status:failed', { defaultPath: 'interaction' }), ['r2']);
    assert.deepEqual(ids('Summarize OR status:failed', { defaultPath: 'interaction' }), ['r1', 'r2', 'r3']);
    assert.deepEqual(ids('2024-03', { defaultPath: 'updated_at' }), ['r1']);
    // fields named explicitly are not affected
    assert.deepEqual(ids('result:hello', { defaultPath: 'tags' }), ['r1']);
  });

  it('refuses an unknown field or default path', () => {
    assert.throws(() => matches(Q.term('colour', 'red'), RUNS[0]), UnknownFieldError);
    assert.throws(() => matches(Q.exists('colour'), RUNS[0]), UnknownFieldError);
    assert.throws(() => matches(Q.term(null, 'x'), RUNS[0], { defaultPath: 'colour' }), UnknownFieldError);
  });

  it('matches() agrees with compileMatcher()', () => {
    const node = parseLucene('hello -status:failed');
    for (const run of RUNS) assert.equal(matches(node, run), compileMatcher(node)(run));
  });
});

describe('run text', () => {
  it('joins result text parts, prompt contents, parameter strings', () => {
    assert.equal(resultText(RUNS[2].result), 'Ωmega 日本語 テキスト ÉTÉ');
    assert.equal(resultText('plain'), 'plain');
    assert.equal(resultText([{ value: 'untyped' }, 'bare', { type: 'json', value: 'x' }, 3]), 'untyped\nbare');
    assert.equal(resultText(undefined), '');
    assert.equal(promptText(RUNS[0].prompt), 'You are helpful.\nSummarize the quarterly report');
    assert.equal(promptText('p'), 'p');
    assert.equal(promptText([{ content: ['x'] }, 'y']), 'y');
    assert.equal(runText(RUNS[1]), 'Translate: hello world\nHello there\n3\none two\nthree');
  });
});

describe('value rules', () => {
  it('parseNumber is strict', () => {
    for (const [s, n] of [
      ['42', 42],
      ['-1.5', -1.5],
      ['+2', 2],
      ['.5', 0.5],
      ['5.', 5],
      ['1e3', 1000],
      ['-0', -0],
    ] as const)
      assert.equal(parseNumber(s), n, s);
    for (const s of ['', ' 1', '1 ', '0x10', '1_000', 'Infinity', 'NaN', '1e999', '--1', '1.2.3', 'abc', '.'])
      assert.equal(parseNumber(s), null, s);
  });

  it('parseDateInterval covers the precision written', () => {
    const iv = (s: string) => {
      const r = parseDateInterval(s);
      return r && [instantToIso(r.from), instantToIso(r.to)];
    };
    assert.deepEqual(iv('2024'), ['2024-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z']);
    assert.deepEqual(iv('2024-02'), ['2024-02-01T00:00:00.000Z', '2024-03-01T00:00:00.000Z']);
    assert.deepEqual(iv('2024-12'), ['2024-12-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z']);
    assert.deepEqual(iv('2024-02-29'), ['2024-02-29T00:00:00.000Z', '2024-03-01T00:00:00.000Z']);
    assert.deepEqual(iv('2024-03-05T10:00'), ['2024-03-05T10:00:00.000Z', '2024-03-05T10:01:00.000Z']);
    assert.deepEqual(iv('2024-03-05T10:00:30'), ['2024-03-05T10:00:30.000Z', '2024-03-05T10:00:31.000Z']);
    assert.deepEqual(iv('2024-03-05T10:00:30.25Z'), ['2024-03-05T10:00:30.250Z', '2024-03-05T10:00:30.251Z']);
    assert.deepEqual(iv('2024-03-05t10:00:30z'), ['2024-03-05T10:00:30.000Z', '2024-03-05T10:00:31.000Z']);
    assert.deepEqual(iv('2024-03-05 10:00+02:00'), ['2024-03-05T08:00:00.000Z', '2024-03-05T08:01:00.000Z']);
    assert.deepEqual(iv('2024-03-05T01:00-0130'), ['2024-03-05T02:30:00.000Z', '2024-03-05T02:31:00.000Z']);
    assert.deepEqual(iv('0050-01-01'), ['0050-01-01T00:00:00.000Z', '0050-01-02T00:00:00.000Z']);
    for (const s of [
      '2023-02-29',
      '2024-00',
      '2024-13-01',
      '2024-01-32',
      '2024-01-01T24:00',
      '2024-01-01T10:60',
      '2024-01-01Z',
      '24-01-01',
      '2024-1-1',
      'x',
      '',
    ]) {
      assert.equal(parseDateInterval(s), null, s);
    }
  });

  it('tokenize lower-cases runs of letters, digits and marks', () => {
    assert.deepEqual(tokenize('Hello, World! foo_bar a-b 42x'), ['hello', 'world', 'foo', 'bar', 'a', 'b', '42x']);
    assert.deepEqual(tokenize('Café ÉTÉ Ωmega'), ['café', 'été', 'ωmega']);
    assert.deepEqual(tokenize('नमस्ते दुनिया'), ['नमस्ते', 'दुनिया']);
    assert.deepEqual(tokenize('日本語 テキスト'), ['日本語', 'テキスト']);
    assert.deepEqual(tokenize('  !!! '), []);
  });

  it('globs: * any run, ? one code point, \\ escapes', () => {
    assert.deepEqual(globParts('a\\*b*?'), [{ kind: 'literal', text: 'a*b' }, { kind: 'any' }, { kind: 'one' }]);
    assert.ok(globToRegExp('a*').test('a\nb'));
    assert.ok(globToRegExp('?').test('😀'));
    assert.ok(!globToRegExp('?').test('ab'));
    assert.ok(globToRegExp('a.b(c)[d]{e}|f^$+/-').test('a.b(c)[d]{e}|f^$+/-'));
    assert.ok(!globToRegExp('a.b').test('axb'));
    assert.ok(globToRegExp('x\\*y').test('x*y'));
    assert.ok(!globToRegExp('x\\*y').test('xzy'));
    assert.ok(globToRegExp('x\\\\*').test('x\\abc'));
  });

  it('compareCodePoints orders by code point, not UTF-16 unit', () => {
    assert.equal(compareCodePoints('a', 'b'), -1);
    assert.equal(compareCodePoints('b', 'a'), 1);
    assert.equal(compareCodePoints('ab', 'ab'), 0);
    assert.equal(compareCodePoints('a', 'ab'), -1);
    assert.equal(compareCodePoints('ab', 'a'), 1);
    assert.equal(compareCodePoints('Z', 'a'), -1);
    // U+FF5E (BMP) sorts before U+1F600 by code point, after it by UTF-16 unit
    assert.equal(compareCodePoints('\uff5e', '😀'), -1);
    assert.ok('\uff5e' > '😀');
  });
});
