/**
 * Generators for the Lucene property tests: well-formed query strings from the grammar, malformed
 * ones, canonical ASTs with a printer (for parse ∘ print = id), random run documents, and the AST
 * invariants of ast.ts as a checker.
 */
import fc from 'fast-check';
import { Q, type QueryNode } from '../../src/query/lucene/index.ts';

const FIELDS = [
  'id',
  'status',
  'modelId',
  'tags',
  'finish_reason',
  'interaction',
  'environment',
  'result',
  'prompt',
  'token_use.total',
  'token_use.prompt',
  'execution_time',
  'updated_at',
  'created_at',
  'parameters.customer.id',
  'parameters.topic',
  'parameters.count',
  'config.model',
  'source.principal_id',
] as const;

const field = fc.constantFrom(...FIELDS);
const ws = fc.constantFrom(' ', ' ', ' ', '  ', '\t', '\n', ' \r\n ');

// ---- well-formed query strings --------------------------------------------------------------

/** Characters that may appear unescaped inside a term (not at its start for the second set). */
const PLAIN = [..."abcxyzABCXYZ0123456789_.@#$%,;='é日ßΩ"];
/** Characters that must be escaped in a term. */
const SPECIAL = [...'+-!():^[]"{}~*?\\/ &|<>\t'];

const wordItem = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...PLAIN) },
  { weight: 1, arbitrary: fc.constantFrom(...SPECIAL).map((c) => `\\${c}`) },
  { weight: 1, arbitrary: fc.constantFrom('*', '?') },
);
/** A term as typed: escapes, wildcards, unicode; never an operator keyword. */
const word = fc
  .array(wordItem, { minLength: 1, maxLength: 8 })
  .map((items) => items.join(''))
  .map((w) => (w === 'AND' || w === 'OR' || w === 'NOT' ? `x${w}` : w));
const plainWord = fc
  .array(fc.constantFrom(...PLAIN), { minLength: 1, maxLength: 8 })
  .map((a) => a.join(''))
  .map((w) => (/^(AND|OR|NOT|TO)$/.test(w) ? `x${w}` : w));

const phrase = fc
  .array(
    fc.oneof(
      { weight: 5, arbitrary: fc.constantFrom(...PLAIN, ' ', '*', '(', ':', '-') },
      { weight: 1, arbitrary: fc.constantFrom('\\"', '\\\\') },
    ),
    { maxLength: 10 },
  )
  .map((items) => `"${items.join('')}"`);

const termMods = fc.constantFrom('', '', '', '~', '~1', '~0.5', '^2', '^1.5', '~2^3');
const phraseMods = fc.constantFrom('', '', '', '~3', '^2', '~1^4');
const boost = fc.constantFrom('', '', '^2');

const numberLit = fc.oneof(
  fc.integer({ min: -1000, max: 100000 }).map(String),
  fc.double({ min: -1e6, max: 1e6, noNaN: true }).map((d) => d.toFixed(2)),
);
const dateLit = fc
  .date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2030-12-31T23:59:59Z'), noInvalidDate: true })
  .chain((d) =>
    fc.constantFrom(
      d.toISOString(),
      d.toISOString().slice(0, 10),
      d.toISOString().slice(0, 7),
      d.toISOString().slice(0, 16),
    ),
  );
const bound = fc.oneof(numberLit, dateLit, plainWord, fc.constant('*'), phrase);
/** After `>` a value may not start with `=` (that would read as `>=`). */
const compareValue = fc.oneof(
  numberLit,
  dateLit,
  plainWord.map((w) => w.replace(/^=/, 'e')),
  phrase,
);

const rangeBody = fc
  .tuple(fc.constantFrom('[', '{'), bound, ws, ws, bound, fc.constantFrom(']', '}'), boost)
  .map(([o, lo, w1, w2, hi, c, b]) => `${o}${lo}${w1}TO${w2}${hi}${c}${b}`);
const compareBody = fc
  .tuple(fc.constantFrom('>', '>=', '<', '<='), compareValue, boost)
  .map(([op, v, b]) => `${op}${v}${b}`);

/** A value in field context (after `f:` or inside `f:( … )`). */
const fieldValue = fc.oneof(
  fc.tuple(word, termMods).map(([w, m]) => w + m),
  fc.tuple(phrase, phraseMods).map(([p, m]) => p + m),
  fc.nat(50).map(String),
  rangeBody,
  compareBody,
);

const bareTerm = fc.oneof(
  fc.tuple(word, termMods).map(([w, m]) => w + m),
  fc.tuple(phrase, phraseMods).map(([p, m]) => p + m),
);

const { query } = fc.letrec<{ query: string; clause: string; primary: string; groupInner: string }>((tie) => ({
  primary: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    bareTerm,
    fc.tuple(field, fieldValue).map(([f, v]) => `${f}:${v}`),
    fc.tuple(field, fc.integer({ min: -50, max: -1 })).map(([f, n]) => `${f}:${n}`),
    field.map((f) => `_exists_:${f}`),
    fc.constantFrom('*', '*:*'),
    fc.tuple(tie('query'), boost).map(([q, b]) => `(${q})${b}`),
    fc.tuple(field, tie('groupInner'), boost).map(([f, q, b]) => `${f}:(${q})${b}`),
  ),
  /** Inside a field group: values without a field, combined like a query. */
  groupInner: fc
    .array(fc.tuple(fc.constantFrom('', '', '+', '-', 'NOT ', '!'), fieldValue), { minLength: 1, maxLength: 3 })
    .chain((parts) =>
      fc
        .tuple(...parts.map(() => fc.constantFrom(' ', ' AND ', ' OR ', ' && ', ' || ')))
        .map((ops) => parts.map(([p, v], i) => (i === 0 ? '' : ops[i]) + p + v).join('')),
    ),
  clause: fc.oneof(
    { depthSize: 'small' },
    tie('primary'),
    fc.tuple(fc.constantFrom('+', '-', '!', 'NOT ', '! ', 'NOT NOT '), tie('primary')).map(([p, c]) => p + c),
  ),
  query: fc
    .array(
      fc.tuple(
        tie('clause'),
        fc.constantFrom(' ', ' ', ' AND ', ' OR ', ' && ', ' || ', ' AND NOT ', ' OR NOT ', '\n'),
      ),
      { minLength: 1, maxLength: 4 },
    )
    .map((parts) => parts.map(([c, op], i) => (i === parts.length - 1 ? c : c + op)).join('')),
}));

/** Well-formed queries, with random whitespace around them. */
export const wellFormed = fc.tuple(ws, query, ws).map(([a, q, b]) => a + q + b);

// ---- malformed query strings ----------------------------------------------------------------

const corruptions: fc.Arbitrary<(q: string) => string>[] = [
  fc.constantFrom(' AND', ' OR', ' &&', ' ||', ' NOT', ' !', ' -', ' +', ' AND NOT').map((op) => (q: string) => q + op),
  fc.constantFrom('AND ', 'OR ', '&& ', '|| ').map((op) => (q: string) => op + q),
  fc.constantFrom(' AND AND ', ' OR OR ', ' AND OR ', ' && || ', ' - ', ' + ').map((op) => (q: string) => `${q}${op}x`),
  fc.constant((q: string) => `${q} (${q}`),
  fc.constant((q: string) => `(${q}`),
  fc.constant((q: string) => `${q} )`),
  fc.constant((q: string) => `${q})`),
  fc.constant((q: string) => `${q} "unterminated phrase`),
  fc.constant((q: string) => `"${q.replace(/["\\]/g, '')}`),
  fc.tuple(field, fc.constantFrom('', ' ', ')', ' )')).map(
    ([f, tail]) =>
      (q: string) =>
        `${q} ${f}:${tail}`,
  ),
  fc
    .tuple(
      field,
      fc.constantFrom(
        '[1 TO 5',
        '[1 5]',
        '[1 TO]',
        '[TO 5]',
        '{a TO b c}',
        '[1 TO 5]]',
        '>',
        '>= 5',
        '<',
        '[]',
        '[1 TO 5]~2',
      ),
    )
    .map(
      ([f, r]) =>
        (q: string) =>
          `${q} ${f}:${r}`,
    ),
  fc.constantFrom('[1 TO 5]', '>5', '<=2024-01-01').map((r) => (q: string) => `${q} ${r}`),
  fc
    .constantFrom(
      ' ^2',
      ' ~',
      ' x^',
      ' x^y',
      ' x~y',
      ' x^2^3',
      ' ()',
      ' a:b:c',
      ' /regex/',
      ' \\',
      ' x\\',
      ' *:x',
      ' x*:y',
      ' ]',
      ' }',
      ' :x',
    )
    .map((s) => (q: string) => q + s),
  fc
    .constantFrom('status:+x', 'status:-x', 'status:!x', '_exists_:a*', '_exists_:[a TO b]')
    .map((s) => (q: string) => `${q} ${s}`),
  fc.constant((q: string) => `${'('.repeat(70)}${q}${')'.repeat(70)}`),
];
/** Queries that are malformed whatever `q` is: a corruption applied to a well-formed query. */
export const malformed = fc.tuple(query, fc.oneof(...corruptions)).map(([q, corrupt]) => corrupt(q));

/** Anything at all, biased towards Lucene's special characters. */
export const noise = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc
    .array(fc.constantFrom(...SPECIAL, ...PLAIN, 'AND', 'OR', 'NOT', 'TO', ' ', ':', 'status', '_exists_'), {
      maxLength: 30,
    })
    .map((a) => a.join('')),
);

// ---- canonical ASTs and their printer -------------------------------------------------------

const valueText = fc.string({ unit: fc.constantFrom(...PLAIN, ...SPECIAL, ' ', 'a', 'b'), maxLength: 8 });
const globText = fc
  .array(
    fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom(...PLAIN, 'a').map((c) => c) },
      fc.constantFrom('\\*', '\\?', '\\\\'),
      fc.constantFrom('*', '?'),
    ),
    { minLength: 1, maxLength: 6 },
  )
  .map((a) => a.join(''))
  .filter((g) => /(^|[^\\])(\\\\)*[*?]/.test(g) && g !== '*');

const astTerm = fc.oneof(
  fc
    .tuple(
      fc.option(field, { nil: null }),
      valueText.filter((v) => v !== ''),
    )
    .map(([f, v]) => Q.term(f, v)),
  fc.tuple(fc.option(field, { nil: null }), valueText).map(([f, v]) => Q.term(f, v, { phrase: true })),
  fc.tuple(fc.option(field, { nil: null }), globText).map(([f, v]) => Q.term(f, v, { wildcard: true })),
);
const astLeaf: fc.Arbitrary<QueryNode> = fc.oneof(
  { weight: 4, arbitrary: astTerm },
  fc
    .tuple(field, fc.option(valueText, { nil: null }), fc.option(valueText, { nil: null }), fc.boolean(), fc.boolean())
    .map(([f, lo, hi, il, iu]) => Q.range(f, lo, hi, il, iu)),
  field.map((f) => Q.exists(f)),
  fc.constant(Q.all()),
);
export const { ast } = fc.letrec<{ ast: QueryNode }>((tie) => ({
  ast: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    astLeaf,
    fc.array(tie('ast'), { minLength: 2, maxLength: 3 }).map((ns) => Q.and(...ns)),
    fc.array(tie('ast'), { minLength: 2, maxLength: 3 }).map((ns) => Q.or(...ns)),
    tie('ast').map((n) => Q.not(n)),
  ),
}));

const escapeAll = (s: string): string => s.replace(/[^\p{L}\p{N}]/gu, (c) => `\\${c}`);
const printValue = (v: string): string => (/^(AND|OR|NOT)$/.test(v) ? `\\${v}` : escapeAll(v));
const printGlob = (g: string): string => {
  let out = '';
  for (let i = 0; i < g.length; i++) {
    if (g[i] === '\\') out += `\\${g[++i]}`;
    else if (g[i] === '*' || g[i] === '?') out += g[i];
    else out += escapeAll(g[i]);
  }
  return out;
};
const printPhrase = (v: string): string => `"${v.replace(/["\\]/g, '\\$&')}"`;
const printBound = (b: string | null): string => (b === null ? '*' : b === '' ? '""' : escapeAll(b));

/** A Lucene string that parses back to `node` (fully parenthesised, everything escaped). */
export const printQuery = (node: QueryNode): string => {
  switch (node.kind) {
    case 'term': {
      const v = node.phrase ? printPhrase(node.value) : node.wildcard ? printGlob(node.value) : printValue(node.value);
      return node.field === null ? v : `${node.field}:${v}`;
    }
    case 'range':
      return `${node.field}:${node.includeLower ? '[' : '{'}${printBound(node.lower)} TO ${printBound(node.upper)}${node.includeUpper ? ']' : '}'}`;
    case 'exists':
      return `_exists_:${node.field}`;
    case 'and':
      return `(${node.nodes.map(printQuery).join(' AND ')})`;
    case 'or':
      return `(${node.nodes.map(printQuery).join(' OR ')})`;
    case 'not':
      return `NOT ${printQuery(node.node)}`;
    case 'all':
      return '*:*';
  }
};

// ---- invariants -----------------------------------------------------------------------------

/** Throws when `node` breaks an invariant of ast.ts. */
export const checkInvariants = (node: QueryNode): void => {
  const fail = (why: string): never => {
    throw new Error(`${why}: ${JSON.stringify(node)}`);
  };
  if (!Object.isFrozen(node)) fail('node not frozen');
  switch (node.kind) {
    case 'term':
      if (node.phrase && node.wildcard) fail('phrase and wildcard');
      if (node.wildcard && !/(^|[^\\])(\\\\)*[*?]/.test(node.value)) fail('wildcard without an unescaped * or ?');
      if (!node.phrase && !node.wildcard && node.value === '') fail('empty term');
      return;
    case 'range':
      if (node.lower === null && node.upper === null) fail('range with two open ends');
      if ((node.lower === null && node.includeLower) || (node.upper === null && node.includeUpper))
        fail('open end marked inclusive');
      return;
    case 'exists':
    case 'all':
      return;
    case 'and':
    case 'or':
      if (!Object.isFrozen(node.nodes)) fail('children not frozen');
      if (node.nodes.length < 2) fail(`${node.kind} with fewer than two nodes`);
      for (const n of node.nodes) {
        if (n.kind === node.kind) fail(`${node.kind} directly inside ${node.kind}`);
        checkInvariants(n);
      }
      return;
    case 'not':
      if (node.node.kind === 'not') fail('double negation');
      checkInvariants(node.node);
      return;
  }
};

// ---- random run documents -------------------------------------------------------------------

const pick = <T>(...xs: T[]) => fc.constantFrom(...xs);
const text = fc
  .array(
    pick(
      'hello',
      'world',
      'Quarterly',
      'report',
      'café',
      'été',
      '日本',
      'x',
      '42',
      'a-b',
      'foo_bar',
      '!',
      ' ',
      '\n',
      'HELLO',
    ),
    { maxLength: 8 },
  )
  .map((a) => a.join(' '));
const iso = fc
  .date({ min: new Date('2020-01-01T00:00:00Z'), max: new Date('2026-01-01T00:00:00Z'), noInvalidDate: true })
  .map((d) => d.toISOString());
/** Usually run-shaped, sometimes with the wrong types, so the evaluator's guards are exercised. */
const weird = fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.constant(null));
const maybe = <T>(a: fc.Arbitrary<T>) => fc.oneof({ weight: 5, arbitrary: a }, { weight: 1, arbitrary: weird });

export const runDoc = fc.record(
  {
    id: maybe(fc.stringMatching(/^[0-9a-z]{6}$/)),
    status: maybe(pick('created', 'processing', 'completed', 'failed')),
    modelId: maybe(pick('gpt-4o', 'claude-3', 'llama')),
    tags: maybe(fc.array(pick('alpha', 'beta', 'Gamma', 'a b', '*'), { maxLength: 3 })),
    interaction: maybe(
      fc.oneof(fc.record({ id: pick('ix1', 'ix2'), name: pick('Summarize', 'Translate') }), pick('ix3')),
    ),
    environment: maybe(fc.oneof(fc.record({ id: pick('env1', 'env2'), name: pick('openai', 'local') }), pick('env3'))),
    parameters: maybe(
      fc.record(
        {
          customer: fc.record({ id: pick('c-1', 'c-2'), name: text }),
          topic: text,
          count: fc.integer({ min: 0, max: 5 }),
        },
        { requiredKeys: [] },
      ),
    ),
    result: maybe(
      fc.array(
        fc.oneof(
          fc.record({ type: fc.constant('text'), value: text }),
          fc.record({ type: fc.constant('json'), value: weird }),
        ),
        { maxLength: 2 },
      ),
    ),
    prompt: maybe(
      fc.oneof(text, fc.array(fc.record({ role: pick('user', 'system'), content: text }), { maxLength: 3 })),
    ),
    token_use: maybe(fc.record({ prompt: fc.nat(500), result: fc.nat(500), total: fc.nat(1000) })),
    execution_time: maybe(fc.nat(10_000)),
    updated_at: maybe(iso),
    created_at: maybe(iso),
    finish_reason: maybe(pick('stop', 'length')),
    config: maybe(
      fc.record({ model: pick('gpt-4o', 'claude-3'), temperature: fc.double({ min: 0, max: 2, noNaN: true }) }),
    ),
    source: maybe(fc.record({ type: pick('api', 'ui'), principal_id: pick('user:1', 'apikey:2') })),
  },
  { requiredKeys: ['id'] },
);
